import { availableParallelism } from "node:os"
import { configDefaults, defineConfig } from "vitest/config"
import { SHARED } from "./test/support/Projects.ts"
import { LongestFirst } from "./test/support/Sequencer.ts"

export default defineConfig({
  test: {
    // Only a hang reaches these (tests assert what happens, never how fast): generous, since
    // files share the machine with each other, and a busy machine must not fail the suite.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Most files spend their time waiting on the processes they start (the built agent, git,
    // bubblewrap, PostgreSQL), not on a core: vitest's default of a worker per core but one
    // would run them one at a time on a 2-core machine.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // The longest files first (test/durations.json on a fresh clone): no 30 s file starts last.
    sequence: { sequencer: LongestFirst },
    // V8's compile cache for what each fresh worker imports natively (see the file).
    setupFiles: ["test/support/setup.ts"],
    projects: [
      // A fresh worker per file: the files that start processes, set the environment, mock…
      { extends: true, test: { name: "isolated", include: ["test/**/*.test.ts"], exclude: [...configDefaults.exclude, ...SHARED] } },
      // …and workers reused from file to file for those that only import and call (see the file),
      // which then load Effect and the runtime once per worker instead of once per file.
      { extends: true, test: { name: "shared", include: [...SHARED], isolate: false } }
    ]
  }
})
