/**
 * grep and glob do their matching on worker threads: a pattern that backtracks catastrophically
 * is stopped by the time limit with an error that names it, and interrupting a search (the user
 * cancels) terminates its worker at once, leaving no thread behind.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { glob } from "../../src/tools/glob.ts"
import { grep } from "../../src/tools/grep.ts"
import * as ToolWorker from "../../src/tools/worker/ToolWorker.ts"
import * as Tool from "../../src/tools/Tool.ts"
import * as TempDir from "../support/TempDir.ts"

/** Lines on which `(a+)+$` tries 2^26 splits of the `a`s before failing: seconds each, minutes in all. */
const PATHOLOGICAL = `${"a".repeat(26)}b\n`.repeat(40)
/** A glob of 8,192 brace alternatives, each a long run of `*a`: tens of ms per long file name. */
const COSTLY_GLOB = `**/${"*a".repeat(40)}${"{a,b}".repeat(13)}c`

/** Threads of this process, from the kernel (Linux); undefined elsewhere. */
const osThreads = (): number | undefined => {
  try {
    return Number(/^Threads:\s+(\d+)$/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1])
  } catch {
    return undefined
  }
}

const setup = Effect.gen(function*() {
  // Each test starts without a warm worker left by the one before.
  yield* ToolWorker.endIdle
  assert.strictEqual(ToolWorker.liveWorkers(), 0)
  const base = yield* TempDir.make()
  const cwd = join(base, "ws")
  mkdirSync(cwd)
  const ctx: Tool.ToolContext = { sessionId: "s-1", toolCallId: "c-1", cwd, roots: [cwd], progress: () => Effect.void, plan: () => Effect.void }
  const files = (entries: Record<string, string>) => {
    for (const [name, content] of Object.entries(entries)) {
      mkdirSync(dirname(join(cwd, name)), { recursive: true })
      writeFileSync(join(cwd, name), content)
    }
  }
  const run = (tool: Tool.Tool, args: unknown, limit?: Duration.Duration) =>
    Tool.run(tool, args, ctx).pipe(
      limit === undefined ? (effect) => effect : Effect.provideService(ToolWorker.TimeLimit, limit),
      Effect.provide(TempDir.platform)
    )
  return { files, run }
})

describe("tool worker", () => {
  it.live("a grep past its time limit ends with an error naming the limit, keeps what it found, and frees its worker", () =>
    Effect.gen(function*() {
      const { files, run } = yield* setup
      files({ "a.txt": "aaa\n", "z.txt": PATHOLOGICAL })
      // A warm worker, so that the limit measures the search, not a worker's start on a loaded machine.
      yield* run(grep, { pattern: "a", path: "a.txt" })
      const out = yield* run(grep, { pattern: "(a+)+$" }, Duration.seconds(1))
      assert.isFalse(out.ok)
      assert.match(out.content, /^a\.txt:1: aaa\n\n\[grep stopped: the search for \/\(a\+\)\+\$\/ did not finish within its time limit of 1 s \(1 file searched; the matches above were found by then\)\./)
      assert.strictEqual(ToolWorker.liveWorkers(), 0)

      const single = yield* run(grep, { pattern: "(a+)+$", path: "z.txt" }, Duration.millis(300))
      assert.isFalse(single.ok)
      assert.match(single.content, /^\[grep stopped: .* time limit of 0\.3 s \(0 files searched\)/)
      assert.strictEqual(ToolWorker.liveWorkers(), 0)
    }))

  it.live("a costly glob, in the glob tool or as grep's filter, is stopped by the time limit too", () =>
    Effect.gen(function*() {
      const { files, run } = yield* setup
      const tree: Record<string, string> = {}
      for (let i = 0; i < 200; i++) tree[`d/${"a".repeat(200)}${i}`] = "x\n"
      files(tree)
      const listed = yield* run(glob, { pattern: COSTLY_GLOB }, Duration.millis(300))
      assert.isFalse(listed.ok)
      assert.match(listed.content, /^glob stopped: listing .* did not finish within its time limit of 0\.3 s/)
      const filtered = yield* run(grep, { pattern: "x", glob: COSTLY_GLOB }, Duration.millis(300))
      assert.isFalse(filtered.ok)
      assert.match(filtered.content, /^\[grep stopped: .* time limit of 0\.3 s \(0 files searched\)/)
      assert.strictEqual(ToolWorker.liveWorkers(), 0)
    }))

  it.live("interrupting a search terminates its worker at once; the next search starts a fresh one", () =>
    Effect.gen(function*() {
      const { files, run } = yield* setup
      files({ "big.txt": PATHOLOGICAL, "small.txt": "aaa\n" })
      // After a search that ended normally, its worker stays warm.
      assert.strictEqual((yield* run(grep, { pattern: "a+", path: "small.txt" })).content, "small.txt:1: aaa\n\n[1 match in small.txt]")
      assert.strictEqual(ToolWorker.liveWorkers(), 1)
      const threads = osThreads()

      const fiber = yield* Effect.forkChild(run(grep, { pattern: "(a+)+$", path: "big.txt" }))
      yield* Effect.sleep(Duration.millis(500))
      // The pattern would run for minutes: this returns only because the worker was terminated.
      yield* Fiber.interrupt(fiber)
      assert.strictEqual(ToolWorker.liveWorkers(), 0)
      if (threads !== undefined) assert.isBelow(osThreads()!, threads)

      assert.strictEqual((yield* run(grep, { pattern: "a+", path: "small.txt" })).content, "small.txt:1: aaa\n\n[1 match in small.txt]")
      assert.strictEqual(ToolWorker.liveWorkers(), 1)
      if (threads !== undefined) assert.strictEqual(osThreads(), threads)
    }))

  it.live("searches at once in separate sessions each get a worker; only one stays warm", () =>
    Effect.gen(function*() {
      const { files, run } = yield* setup
      files({ "a.txt": "needle\n" })
      const outs = yield* Effect.all(Array.from({ length: 3 }, () => run(grep, { pattern: "needle" })), { concurrency: "unbounded" })
      for (const out of outs) assert.strictEqual(out.content, "a.txt:1: needle\n\n[1 match in 1 file.]")
      assert.strictEqual(ToolWorker.liveWorkers(), 1)
    }))
})
