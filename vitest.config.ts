import { availableParallelism } from "node:os"
import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    // Most files spend their time waiting on the processes they start (the built agent, git,
    // bubblewrap, PostgreSQL), not on a core: vitest's default of a worker per core but one
    // would run them one at a time on a 2-core machine. Each file still runs in a fresh worker
    // of its own (`isolate`): files share no module state.
    maxWorkers: Math.max(2, availableParallelism() - 1)
  }
})
