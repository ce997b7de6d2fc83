import { availableParallelism } from "node:os"
import { defineConfig } from "vitest/config"
import { LongestFirst } from "./test/support/Sequencer.ts"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Only a hang reaches these (tests assert what happens, never how fast): generous, since
    // files share the machine with each other, and a busy machine must not fail the suite.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Most files spend their time waiting on the processes they start (the built agent, git,
    // bubblewrap, PostgreSQL), not on a core: vitest's default of a worker per core but one
    // would run them one at a time on a 2-core machine. Each file still runs in a fresh worker
    // of its own (`isolate`): files share no module state.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // The longest files first (test/durations.json on a fresh clone): no 30 s file starts last.
    sequence: { sequencer: LongestFirst },
    // V8's compile cache for what each fresh worker imports natively (see the file).
    setupFiles: ["test/support/setup.ts"]
  }
})
