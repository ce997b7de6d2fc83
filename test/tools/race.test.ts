/**
 * Check-then-use races in the file tools, made deterministic: the file system the tools see is
 * Node's, except that the moment `Workspace.resolve` has taken the real path of a chosen path
 * (the check), a path component is swapped for a symlink to a directory outside the workspace.
 * Whatever the tool does next must not read, write or create anything outside.
 */
import { assert, describe, it } from "@effect/vitest"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import { mkdirSync, readdirSync, readFileSync, renameSync, statSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { edit } from "../../src/tools/edit.ts"
import { glob } from "../../src/tools/glob.ts"
import { grep } from "../../src/tools/grep.ts"
import { read } from "../../src/tools/read.ts"
import * as SafeFs from "../../src/fs/SafeFs.ts"
import type * as Edges from "../../src/tools/Edges.ts"
import * as Tool from "../../src/tools/Tool.ts"
import { write } from "../../src/tools/write.ts"
import * as TempDir from "../support/TempDir.ts"
import * as ToolServices from "../support/ToolServices.ts"

const MARKER = "SECRET-MARKER-7f3a"

/** Every entry under `dir` with its content (files) and mtime, to compare before and after. */
const snapshot = (dir: string): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const name of (readdirSync(dir, { recursive: true }) as Array<string>).map(String).sort()) {
    const info = statSync(join(dir, name))
    out[name] = info.isFile() ? `${readFileSync(join(dir, name), "utf8")}@${info.mtimeMs}` : "dir"
  }
  return out
}

/**
 * A workspace `ws` with `sub/file.txt` and `file.txt`, and a directory `outside` holding files
 * of the same names (and one only it has), all full of the marker.
 */
const setup = Effect.gen(function*() {
  const base = yield* TempDir.make()
  const ws = join(base, "ws")
  const outside = join(base, "outside")
  mkdirSync(join(ws, "sub"), { recursive: true })
  mkdirSync(outside)
  writeFileSync(join(ws, "sub", "file.txt"), "inside one\ninside two\n")
  writeFileSync(join(ws, "file.txt"), "inside one\ninside two\n")
  for (const name of ["file.txt", "only-outside.txt"]) writeFileSync(join(outside, name), `${MARKER} one\n${MARKER} two\n`)
  writeFileSync(join(base, "secret.txt"), `${MARKER}\n`)
  const ctx: Tool.ToolContext = { sessionId: "s-1", toolCallId: "call-1", cwd: ws, roots: [ws] }
  const before = snapshot(outside)

  /** Runs a tool; right after `realPath(trigger)` answers, `swap` runs once. */
  const run = (tool: Tool.Tool<any, Edges.Services>, args: unknown, trigger: string, swap: () => void, hooks: SafeFs.Hooks = {}) => {
    let swapped = false
    const racing = Layer.effect(
      FileSystem.FileSystem,
      Effect.gen(function*() {
        const fs = yield* FileSystem.FileSystem
        return FileSystem.FileSystem.of({
          ...fs,
          realPath: (path) =>
            fs.realPath(path).pipe(Effect.tap(() =>
              Effect.sync(() => {
                if (path !== trigger || swapped) return
                swapped = true
                swap()
              })
            ))
        })
      })
    ).pipe(Layer.provide(NodeFileSystem.layer))
    return Tool.run(tool, args, ctx).pipe(ToolServices.provide(),
      Effect.provide(Layer.mergeAll(racing, NodePath.layer)),
      Effect.provideService(SafeFs.Hooks, hooks),
      Effect.tap(() => Effect.sync(() => assert.isTrue(swapped, "the swap ran")))
    )
  }

  /** `ws/sub` becomes a symlink to `outside` (the real directory is kept inside the workspace). */
  const swapSub = () => {
    renameSync(join(ws, "sub"), join(ws, ".sub-moved"))
    symlinkSync(outside, join(ws, "sub"))
  }
  /** `ws/file.txt` becomes a symlink to the outside file of that name. */
  const swapFile = () => {
    unlinkSync(join(ws, "file.txt"))
    symlinkSync(join(outside, "file.txt"), join(ws, "file.txt"))
  }

  /** Nothing outside changed, and no marker reached the result or the workspace's regular files. */
  const untouched = (out: Tool.ToolOutput) => {
    assert.deepStrictEqual(snapshot(outside), before, "the outside directory is unchanged")
    assert.notInclude(JSON.stringify(out), MARKER, "no outside content in the result")
    assert.notInclude(JSON.stringify(out), "only-outside", "no outside name in the result")
    const visit = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name)
        if (entry.isDirectory()) visit(path)
        else if (entry.isFile()) assert.notInclude(readFileSync(path, "utf8"), MARKER, `${path} holds no outside content`)
      }
    }
    visit(ws)
  }
  /** Runs a tool with SafeFs hooks and no swap at the check. */
  const runHooked = (tool: Tool.Tool<any, Edges.Services>, args: unknown, hooks: SafeFs.Hooks) =>
    Tool.run(tool, args, ctx).pipe(ToolServices.provide(), Effect.provide(TempDir.platform), Effect.provideService(SafeFs.Hooks, hooks))
  return { base, ws, outside, run, runHooked, swapSub, swapFile, untouched }
})

/** The refusal the model reads when a path changed under a tool. */
const RACED = /changed while in use/

describe("a symlink swapped in between the check and the use", () => {
  it.effect("read: an intermediate directory", () =>
    Effect.gen(function*() {
      const { ws, run, swapSub, untouched } = yield* setup
      const out = yield* run(read, { path: "sub/file.txt" }, join(ws, "sub", "file.txt"), swapSub)
      untouched(out)
      assert.isFalse(out.ok)
      assert.match(out.content, RACED)
    }))

  it.effect("read: the file itself", () =>
    Effect.gen(function*() {
      const { ws, run, swapFile, untouched } = yield* setup
      const out = yield* run(read, { path: "file.txt" }, join(ws, "file.txt"), swapFile)
      untouched(out)
      assert.isFalse(out.ok)
      assert.match(out.content, RACED)
    }))

  it.effect("write: an existing file under an intermediate directory", () =>
    Effect.gen(function*() {
      const { ws, run, swapSub, untouched } = yield* setup
      const out = yield* run(write, { path: "sub/file.txt", content: "new\n" }, join(ws, "sub", "file.txt"), swapSub)
      untouched(out)
      assert.isFalse(out.ok)
      assert.match(out.content, RACED)
    }))

  it.effect("write: a new file under an intermediate directory", () =>
    Effect.gen(function*() {
      const { ws, run, swapSub, untouched } = yield* setup
      // The new file does not exist: resolve's last real path is that of `sub`.
      const out = yield* run(write, { path: "sub/new.txt", content: "new\n" }, join(ws, "sub"), swapSub)
      untouched(out)
      assert.isFalse(out.ok)
      assert.match(out.content, RACED)
    }))

  it.effect("write: new directories under an intermediate directory are not created outside", () =>
    Effect.gen(function*() {
      const { ws, run, swapSub, untouched } = yield* setup
      const out = yield* run(write, { path: "sub/a/b/new.txt", content: "new\n" }, join(ws, "sub"), swapSub)
      untouched(out)
      assert.isFalse(out.ok)
      assert.match(out.content, RACED)
    }))

  it.effect("write: the file itself (its content is not read into the diff; the link, not its target, would be replaced)", () =>
    Effect.gen(function*() {
      const { ws, run, swapFile, untouched } = yield* setup
      const out = yield* run(write, { path: "file.txt", content: "new\n" }, join(ws, "file.txt"), swapFile)
      untouched(out)
      assert.isFalse(out.ok)
      assert.match(out.content, RACED)
    }))

  it.effect("edit: an intermediate directory", () =>
    Effect.gen(function*() {
      const { ws, run, swapSub, untouched } = yield* setup
      const out = yield* run(edit, { path: "sub/file.txt", edits: [{ oldText: "one", newText: "1" }] }, join(ws, "sub", "file.txt"), swapSub)
      untouched(out)
      assert.isFalse(out.ok)
      assert.match(out.content, RACED)
    }))

  it.effect("edit: the file itself (outside content is not copied into the workspace)", () =>
    Effect.gen(function*() {
      const { ws, run, swapFile, untouched } = yield* setup
      const out = yield* run(edit, { path: "file.txt", edits: [{ oldText: "one", newText: "1" }] }, join(ws, "file.txt"), swapFile)
      untouched(out)
      assert.isFalse(out.ok)
      assert.match(out.content, RACED)
    }))

  it.effect("grep: the searched directory", () =>
    Effect.gen(function*() {
      const { ws, run, swapSub, untouched } = yield* setup
      const out = yield* run(grep, { pattern: "one", path: "sub" }, join(ws, "sub"), swapSub)
      untouched(out)
    }))

  it.effect("grep: one searched file", () =>
    Effect.gen(function*() {
      const { ws, run, swapFile, untouched } = yield* setup
      const out = yield* run(grep, { pattern: "one", path: "file.txt" }, join(ws, "file.txt"), swapFile)
      untouched(out)
      assert.isFalse(out.ok)
    }))

  it.effect("glob: the listed directory", () =>
    Effect.gen(function*() {
      const { ws, run, swapSub, untouched } = yield* setup
      const out = yield* run(glob, { pattern: "**/*.txt", path: "sub" }, join(ws, "sub"), swapSub)
      untouched(out)
    }))
})

describe("after the temp file is written, before it replaces the target", () => {
  it.effect("edit: a change made on disk since the edit read the file is not lost", () =>
    Effect.gen(function*() {
      const { ws, runHooked } = yield* setup
      const file = join(ws, "sub", "file.txt")
      const out = yield* runHooked(edit, { path: "sub/file.txt", edits: [{ oldText: "one", newText: "1" }] }, {
        before: () => writeFileSync(file, "inside one\ninside two\nadded by someone else\n")
      })
      assert.deepStrictEqual(out, {
        ok: false,
        content: "sub/file.txt changed on disk while it was being edited; the edit was not applied. Read it again and retry.",
        details: undefined
      })
      assert.strictEqual(readFileSync(file, "utf8"), "inside one\ninside two\nadded by someone else\n")
      assert.deepStrictEqual(readdirSync(join(ws, "sub")), ["file.txt"])
    }))

  it.effect("edit: the file replaced by another one (a new inode) since it was read is not overwritten", () =>
    Effect.gen(function*() {
      const { ws, runHooked } = yield* setup
      const file = join(ws, "sub", "file.txt")
      const out = yield* runHooked(edit, { path: "sub/file.txt", edits: [{ oldText: "one", newText: "1" }] }, {
        before: () => {
          writeFileSync(join(ws, "sub", "other"), "inside one\ninside two\n")
          renameSync(join(ws, "sub", "other"), file)
        }
      })
      assert.match(out.content, /changed on disk while it was being edited/)
      assert.deepStrictEqual(readdirSync(join(ws, "sub")), ["file.txt"])
    }))

  it.effect("write: a directory swapped for a symlink now is not followed; the file lands in the directory verified", () =>
    Effect.gen(function*() {
      const { ws, runHooked, swapSub, untouched } = yield* setup
      const out = yield* runHooked(write, { path: "sub/file.txt", content: "new\n" }, { before: swapSub })
      untouched(out)
      assert.isTrue(out.ok)
      assert.strictEqual(readFileSync(join(ws, ".sub-moved", "file.txt"), "utf8"), "new\n")
      assert.deepStrictEqual(readdirSync(join(ws, ".sub-moved")), ["file.txt"])
    }))
})

describe("without /proc (the descriptor checked by device and inode)", () => {
  const noProc: SafeFs.Hooks = { noProc: true }

  it.effect("read, write and edit work", () =>
    Effect.gen(function*() {
      const { ws, runHooked } = yield* setup
      assert.strictEqual((yield* runHooked(read, { path: "sub/file.txt" }, noProc)).content, "1\tinside one\n2\tinside two")
      assert.isTrue((yield* runHooked(write, { path: "sub/a/b/new.txt", content: "new\n" }, noProc)).ok)
      assert.strictEqual(readFileSync(join(ws, "sub", "a", "b", "new.txt"), "utf8"), "new\n")
      assert.isTrue((yield* runHooked(edit, { path: "sub/file.txt", edits: [{ oldText: "one", newText: "1" }] }, noProc)).ok)
      assert.strictEqual(readFileSync(join(ws, "sub", "file.txt"), "utf8"), "inside 1\ninside two\n")
    }))

  it.effect("a file under an intermediate directory swapped after the check is refused", () =>
    Effect.gen(function*() {
      const { ws, run, swapSub, untouched } = yield* setup
      const readOut = yield* run(read, { path: "sub/file.txt" }, join(ws, "sub", "file.txt"), swapSub, noProc)
      untouched(readOut)
      assert.match(readOut.content, RACED)
    }))

  it.effect("a new file under an intermediate directory swapped after the check is refused", () =>
    Effect.gen(function*() {
      const { ws, run, swapSub, untouched } = yield* setup
      const writeOut = yield* run(write, { path: "sub/new.txt", content: "new\n" }, join(ws, "sub"), swapSub, noProc)
      untouched(writeOut)
      assert.match(writeOut.content, RACED)
    }))
})
