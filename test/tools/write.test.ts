/**
 * The write tool through `Tool.run` on real files: creation with parents, replacement keeping
 * the mode, confinement, atomicity (no temp files left), and writing through the client.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as SafeFs from "../../src/fs/SafeFs.ts"
import type { ClientAccess } from "../../src/session/ClientCalls.ts"
import * as Tool from "../../src/tools/Tool.ts"
import { write } from "../../src/tools/write.ts"
import * as TempDir from "../support/TempDir.ts"
import * as ToolServices from "../support/ToolServices.ts"

const setup = (client?: ClientAccess) =>
  Effect.gen(function*() {
    const base = yield* TempDir.make()
    const cwd = join(base, "ws")
    mkdirSync(cwd)
    const ctx: Tool.ToolContext = { sessionId: "s-1", toolCallId: "call-1", cwd, roots: [cwd] }
    const run = (args: unknown) => Tool.run(write, args, ctx).pipe(ToolServices.provide({ client }), Effect.provide(TempDir.platform))
    return { base, cwd, ctx, run }
  })

/** Every entry under `dir`, recursively, relative. */
const tree = (dir: string): Array<string> =>
  (readdirSync(dir, { recursive: true }) as Array<string>).map(String).sort()

describe("write", () => {
  it.effect("creates a file in new nested directories and reports a diff with oldText null", () =>
    Effect.gen(function*() {
      const { cwd, run } = yield* setup()
      const out = yield* run({ path: "src/deep/a.ts", content: "one\ntwo\n" })
      assert.deepStrictEqual(out, {
        ok: true,
        content: "Created src/deep/a.ts (2 lines)",
        details: { diff: [{ path: join(cwd, "src/deep/a.ts"), oldText: null, newText: "one\ntwo\n" }] }
      })
      assert.strictEqual(readFileSync(join(cwd, "src/deep/a.ts"), "utf8"), "one\ntwo\n")
      assert.deepStrictEqual(tree(cwd), ["src", "src/deep", "src/deep/a.ts"])
    }))

  it.effect("replaces a file, keeps its mode, and leaves no temp file", () =>
    Effect.gen(function*() {
      const { cwd, run } = yield* setup()
      const file = join(cwd, "run.sh")
      writeFileSync(file, "#!/bin/sh\necho old\n")
      chmodSync(file, 0o751)
      const out = yield* run({ path: file, content: "#!/bin/sh\necho new\nexit 0\n" })
      assert.isTrue(out.ok)
      assert.strictEqual(out.content, "Replaced run.sh (2 lines before, 3 lines now)")
      assert.deepStrictEqual(out.details?.diff, [{ path: file, oldText: "#!/bin/sh\necho old\n", newText: "#!/bin/sh\necho new\nexit 0\n" }])
      assert.strictEqual(readFileSync(file, "utf8"), "#!/bin/sh\necho new\nexit 0\n")
      assert.strictEqual(statSync(file).mode & 0o7777, 0o751)
      assert.deepStrictEqual(tree(cwd), ["run.sh"])
    }))

  it.effect("refuses paths outside the roots and creates nothing", () =>
    Effect.gen(function*() {
      const { base, cwd, run } = yield* setup()
      const outside = yield* run({ path: "../escape/x.txt", content: "no" })
      assert.isFalse(outside.ok)
      assert.match(outside.content, /outside the workspace/)
      assert.isFalse(existsSync(join(base, "escape")))
      const absolute = yield* run({ path: join(base, "x.txt"), content: "no" })
      assert.isFalse(absolute.ok)
      assert.isFalse(existsSync(join(base, "x.txt")))
      assert.deepStrictEqual(tree(cwd), [])
    }))

  it.effect("a failed write leaves no temp file behind (parent is a file; target is a directory)", () =>
    Effect.gen(function*() {
      const { cwd, run } = yield* setup()
      writeFileSync(join(cwd, "plain"), "x")
      const under = yield* run({ path: "plain/child.txt", content: "data" })
      assert.isFalse(under.ok)
      // Refused while resolving (a path component is a file) or when creating the directory.
      assert.include(under.content, "plain/child.txt")
      mkdirSync(join(cwd, "dir"))
      const dir = yield* run({ path: "dir", content: "data" })
      assert.deepStrictEqual(dir, { ok: false, content: "dir is a directory; give the path of a file", details: undefined })
      assert.deepStrictEqual(tree(cwd), ["dir", "plain"])
      assert.strictEqual(readFileSync(join(cwd, "plain"), "utf8"), "x")
    }))

  it.effect("a failed rename removes the temp file", () =>
    Effect.gen(function*() {
      const { cwd, run } = yield* setup()
      const steps: Array<string> = []
      // After the temp file was written and fsynced, a directory takes the target's name: rename fails.
      const hooks: SafeFs.Hooks = {
        before: (step, target) => {
          steps.push(step)
          mkdirSync(target)
          writeFileSync(join(target, "keep"), "k")
        }
      }
      const out = yield* run({ path: "a.txt", content: "new" }).pipe(Effect.provideService(SafeFs.Hooks, hooks))
      assert.deepStrictEqual(out, { ok: false, content: "Cannot write a.txt: bad resource (EISDIR)", details: undefined })
      assert.deepStrictEqual(steps, ["replace"])
      assert.deepStrictEqual(tree(cwd), ["a.txt", "a.txt/keep"])
    }))

  it.effect("a new file gets 0666 less the umask; a replaced one keeps its mode, setuid bits aside from umask", () =>
    Effect.gen(function*() {
      const { cwd, run } = yield* setup()
      const umask = process.umask()
      assert.isTrue((yield* run({ path: "new.txt", content: "x" })).ok)
      assert.strictEqual(statSync(join(cwd, "new.txt")).mode & 0o7777, 0o666 & ~umask)
      writeFileSync(join(cwd, "private.txt"), "old")
      chmodSync(join(cwd, "private.txt"), 0o600)
      assert.isTrue((yield* run({ path: "private.txt", content: "new" })).ok)
      assert.strictEqual(statSync(join(cwd, "private.txt")).mode & 0o7777, 0o600)
      assert.strictEqual(readFileSync(join(cwd, "private.txt"), "utf8"), "new")
    }))

  it.effect("writes through the client's writeTextFile when offered, not to disk", () =>
    Effect.gen(function*() {
      const calls: Array<[string, string]> = []
      const client: ClientAccess = {
        writeTextFile: (path, content) => Effect.sync(() => void calls.push([path, content]))
      }
      const { cwd, run } = yield* setup(client)
      const out = yield* run({ path: "a.txt", content: "hello\n" })
      assert.isTrue(out.ok)
      assert.strictEqual(out.content, "Created a.txt (1 line)")
      assert.deepStrictEqual(calls, [[join(cwd, "a.txt"), "hello\n"]])
      assert.isFalse(existsSync(join(cwd, "a.txt")))
    }))

  it.effect("when the client cannot read the file it replaces, the diff's oldText is what the disk held (never empty)", () =>
    Effect.gen(function*() {
      const client: ClientAccess = {
        readTextFile: () => Effect.fail("the editor cannot read it"),
        writeTextFile: () => Effect.void
      }
      const { cwd, run } = yield* setup(client)
      writeFileSync(join(cwd, "a.txt"), "on disk\n")
      const out = yield* run({ path: "a.txt", content: "new\n" })
      assert.isTrue(out.ok)
      assert.deepStrictEqual(out.details?.diff, [{ path: join(cwd, "a.txt"), oldText: "on disk\n", newText: "new\n" }])
    }))

  it.effect("a client write failure is a tool error; confinement still applies first", () =>
    Effect.gen(function*() {
      const calls: Array<string> = []
      const client: ClientAccess = {
        writeTextFile: (path) => Effect.sync(() => calls.push(path)).pipe(Effect.andThen(Effect.fail("buffer is read-only")))
      }
      const { run } = yield* setup(client)
      const failed = yield* run({ path: "a.txt", content: "x" })
      assert.deepStrictEqual(failed, { ok: false, content: "Cannot write a.txt through the editor: buffer is read-only", details: undefined })
      const outside = yield* run({ path: "/etc/passwd", content: "x" })
      assert.isFalse(outside.ok)
      assert.strictEqual(calls.length, 1)
    }))

  it("scope covers the file's directory", () => {
    assert.deepStrictEqual(write.scope?.({ path: "src/a/b.ts", content: "" }, "/p"), { kind: "path", value: "/p/src/a", label: "edits in src/a/" })
    assert.deepStrictEqual(write.scope?.({ path: "b.ts", content: "" }, "/p"), { kind: "path", value: "/p", label: "edits in this project" })
    assert.deepStrictEqual(write.scope?.({ path: "/q/b.ts", content: "" }, "/p"), { kind: "path", value: "/q", label: "edits in /q/" })
    assert.deepStrictEqual(write.scope?.({ path: "..cache/b.ts", content: "" }, "/p"), { kind: "path", value: "/p/..cache", label: "edits in ..cache/" })
    assert.deepStrictEqual(write.locations({ path: "x/../b.ts", content: "" }, "/p"), [{ path: "/p/b.ts" }])
  })
})
