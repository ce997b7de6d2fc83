/**
 * grep, glob and large edits do their CPU work on worker threads: a pattern that backtracks
 * catastrophically is stopped by the time limit with an error that names it, interrupting a
 * search (the user cancels) terminates its worker at once, leaving no thread behind, and a large
 * edit gives the same result there as a small one here.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { edit } from "../../src/tools/edit.ts"
import { glob } from "../../src/tools/glob.ts"
import { grep } from "../../src/tools/grep.ts"
import * as ToolWorker from "../../src/tools/worker/ToolWorker.ts"
import type * as Edges from "../../src/tools/Edges.ts"
import * as Tool from "../../src/tools/Tool.ts"
import * as TempDir from "../support/TempDir.ts"
import * as ToolServices from "../support/ToolServices.ts"

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
  const ctx: Tool.ToolContext = { sessionId: "s-1", toolCallId: "c-1", cwd, roots: [cwd] }
  const read = (name: string) => readFileSync(join(cwd, name), "utf8")
  const files = (entries: Record<string, string>) => {
    for (const [name, content] of Object.entries(entries)) {
      mkdirSync(dirname(join(cwd, name)), { recursive: true })
      writeFileSync(join(cwd, name), content)
    }
  }
  const run = (tool: Tool.Tool<any, Edges.Services>, args: unknown, limit?: Duration.Duration) =>
    Tool.run(tool, args, ctx).pipe(ToolServices.provide(),
      limit === undefined ? (effect) => effect : Effect.provideService(ToolWorker.TimeLimit, limit),
      Effect.provide(TempDir.platform)
    )
  return { files, read, run }
})

describe("tool worker", () => {
  it.live("a grep past its time limit ends with an error naming the limit, keeps what it found, and frees its worker", () =>
    Effect.gen(function*() {
      const { files, run } = yield* setup
      files({ "a.txt": "aaa\n", "z.txt": PATHOLOGICAL })
      // A warm worker, so that the limit measures the search, not a worker's start on a loaded machine.
      yield* run(grep, { pattern: "a", path: "a.txt" })
      // A limit generous enough that a.txt is searched first even on a loaded machine.
      const out = yield* run(grep, { pattern: "(a+)+$" }, Duration.seconds(3))
      assert.isFalse(out.ok)
      assert.match(out.content, /^a\.txt:1: aaa\n\n\[grep stopped: the search for \/\(a\+\)\+\$\/ did not finish within its time limit of 3 s \(1 file searched; the matches above were found by then\)\./)
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

  it.live("a search that stops early, with files still being matched, keeps its worker warm", () =>
    Effect.gen(function*() {
      const { files, run } = yield* setup
      const tree: Record<string, string> = {}
      for (let i = 0; i < 300; i++) tree[`f${String(i).padStart(3, "0")}.txt`] = "needle\n".repeat(50)
      files(tree)
      const out = yield* run(grep, { pattern: "needle" })
      assert.match(out.content, /\n\n\[10000 matches or more in 200 files; .* search stopped after 10000 matches; there may be more\.\]$/)
      assert.strictEqual(ToolWorker.liveWorkers(), 1)
    }))

  it.live("an edit whose scanning is large runs in the worker, with the same result as a small one here", () =>
    Effect.gen(function*() {
      const { files, read, run } = yield* setup
      const filler = "filler line\r\n".repeat(100_000)
      files({ "small.txt": "one\r\ntwo\r\n", "big.txt": `one\r\n${filler}two\r\n${filler}three\r\n` })
      const edits = [{ oldText: "two\n", newText: "2\n" }, { oldText: "three", newText: "3" }]

      const small = yield* run(edit, { path: "small.txt", edits: [edits[0]] })
      assert.strictEqual(small.content, "Edited small.txt: 1 edit applied at line 2.")
      assert.strictEqual(read("small.txt"), "one\r\n2\r\n")
      assert.strictEqual(ToolWorker.liveWorkers(), 0)

      assert.isAbove(read("big.txt").length * edits.length, ToolWorker.INLINE_EDIT_WORK)
      const big = yield* run(edit, { path: "big.txt", edits })
      assert.strictEqual(big.content, "Edited big.txt: 2 edits applied, first change at line 100002.")
      assert.strictEqual(read("big.txt"), `one\r\n${filler}2\r\n${filler}3\r\n`)
      assert.strictEqual(ToolWorker.liveWorkers(), 1)

      const ambiguous = yield* run(edit, { path: "big.txt", edits: [{ oldText: "filler line", newText: "x" }] })
      assert.isFalse(ambiguous.ok)
      assert.match(ambiguous.content, /^The edit failed: oldText matches 200000 places in big\.txt \(lines 2, 3, 4, 5, 6, …\)/)
    }))
})
