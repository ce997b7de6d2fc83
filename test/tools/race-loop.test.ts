/**
 * The same races by brute force: a child process flips a directory of the workspace (and a
 * file in it) between the real thing and a symlink to a directory outside, in a tight loop,
 * while the file tools run over and over. Nothing outside may ever be read, written or created,
 * whichever way each call goes (done, refused, or failed because the file was briefly gone).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { spawn } from "node:child_process"
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { edit } from "../../src/tools/edit.ts"
import { grep } from "../../src/tools/grep.ts"
import { read } from "../../src/tools/read.ts"
import type * as Edges from "../../src/tools/Edges.ts"
import * as Tool from "../../src/tools/Tool.ts"
import { write } from "../../src/tools/write.ts"
import * as TempDir from "../support/TempDir.ts"
import * as ToolServices from "../support/ToolServices.ts"

const MARKER = "SECRET-MARKER-c41d"
const RUNS = 150
const MAX_RUNS = 3_000

/** Flips `ws/sub` and `ws/file.txt` between their real selves (kept inside) and symlinks outside. */
const FLIPPER = `
const fs = require("node:fs")
const [ws, outside] = process.argv.slice(1)
const quiet = (f) => { try { f() } catch {} }
process.stdout.write("ready\\n")
for (;;) {
  quiet(() => fs.renameSync(ws + "/sub", ws + "/.sub-real"))
  quiet(() => fs.symlinkSync(outside, ws + "/sub"))
  quiet(() => fs.renameSync(ws + "/file.txt", ws + "/.file-real"))
  quiet(() => fs.symlinkSync(outside + "/file.txt", ws + "/file.txt"))
  quiet(() => fs.unlinkSync(ws + "/sub"))
  quiet(() => fs.renameSync(ws + "/.sub-real", ws + "/sub"))
  quiet(() => fs.unlinkSync(ws + "/file.txt"))
  quiet(() => fs.renameSync(ws + "/.file-real", ws + "/file.txt"))
}
`

const snapshot = (dir: string): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const name of (readdirSync(dir, { recursive: true }) as Array<string>).map(String).sort()) {
    const info = statSync(join(dir, name))
    out[name] = info.isFile() ? `${readFileSync(join(dir, name), "utf8")}@${info.mtimeMs}` : "dir"
  }
  return out
}

const setup = Effect.gen(function*() {
  const base = yield* TempDir.make()
  const ws = join(base, "ws")
  const outside = join(base, "outside")
  mkdirSync(join(ws, "sub"), { recursive: true })
  mkdirSync(outside)
  writeFileSync(join(ws, "sub", "file.txt"), "inside one\ninside two\n")
  writeFileSync(join(ws, "file.txt"), "inside one\ninside two\n")
  // The outside files also hold the text the edits look for, so an edit that reached them would apply.
  writeFileSync(join(outside, "file.txt"), `inside one\ninside two\n${MARKER}\n`)
  const before = snapshot(outside)
  const ctx: Tool.ToolContext = { sessionId: "s-1", toolCallId: "call-1", cwd: ws, roots: [ws] }
  yield* Effect.acquireRelease(
    Effect.callback<ReturnType<typeof spawn>>((resume) => {
      const child = spawn(process.execPath, ["-e", FLIPPER, ws, outside], { stdio: ["ignore", "pipe", "inherit"] })
      child.stdout!.once("data", () => resume(Effect.succeed(child)))
    }),
    (child) =>
      Effect.callback<void>((resume) => {
        child.once("exit", () => resume(Effect.void))
        child.kill("SIGKILL")
      })
  )
  const results: Array<Tool.ToolOutput> = []
  // RUNS calls, and more (up to MAX_RUNS) while none has gone through: on a busy machine the
  // flipper can win every race of a first batch.
  const runMany = (tool: Tool.Tool<any, Edges.Services>, args: (i: number) => unknown) =>
    Effect.gen(function*() {
      for (let i = 0; i < MAX_RUNS && (i < RUNS || !results.some((out) => out.ok)); i++) {
        results.push(yield* Tool.run(tool, args(i), ctx).pipe(ToolServices.provide(), Effect.provide(TempDir.platform)))
      }
    })
  /** Nothing outside changed and no call saw outside content; some calls did succeed. */
  const check = () => {
    assert.deepStrictEqual(snapshot(outside), before, "the outside directory is unchanged")
    const leaked = results.filter((out) => JSON.stringify(out).includes(MARKER))
    assert.strictEqual(leaked.length, 0, `outside content reached ${leaked.length} results, e.g. ${JSON.stringify(leaked[0])}`)
    assert.isAbove(results.filter((out) => out.ok).length, 0, "some calls went through")
  }
  return { runMany, check }
})

describe("tools against a symlink flipped in a loop", () => {
  it.effect("read never returns outside content", () =>
    Effect.gen(function*() {
      const { runMany, check } = yield* setup
      yield* runMany(read, (i) => ({ path: i % 2 === 0 ? "sub/file.txt" : "file.txt" }))
      check()
    }), 60_000)

  it.effect("write never writes or creates anything outside", () =>
    Effect.gen(function*() {
      const { runMany, check } = yield* setup
      yield* runMany(write, (i) => ({ path: ["sub/file.txt", "file.txt", `sub/new-${i}.txt`, `sub/d${i}/new.txt`][i % 4], content: `inside ${i}\n` }))
      check()
    }), 60_000)

  it.effect("edit never changes or reads anything outside", () =>
    Effect.gen(function*() {
      const { runMany, check } = yield* setup
      // Alternating edits, so each one that finds the file changes it.
      yield* runMany(edit, (i) => ({
        path: i % 4 < 2 ? "sub/file.txt" : "file.txt",
        edits: [i % 2 === 0 ? { oldText: "inside one", newText: "inside uno" } : { oldText: "inside uno", newText: "inside one" }]
      }))
      check()
    }), 60_000)

  it.effect("grep never searches outside", () =>
    Effect.gen(function*() {
      const { runMany, check } = yield* setup
      yield* runMany(grep, (i) => ({ pattern: "inside|SECRET", path: i % 2 === 0 ? "sub" : "." }))
      check()
    }), 60_000)
})
