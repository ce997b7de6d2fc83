import { defineConfig } from "vitest/config"

/**
 * Explicit checks, left out of `npm test` because they are slow and audit the machine's
 * installed programs rather than Skein: `npm run check:commands`.
 */
export default defineConfig({
  test: {
    include: ["test/**/*.check.ts"],
    testTimeout: 30_000,
    pool: "forks"
  }
})
