/**
 * The edit tool through `Tool.run` on real files: exact-match replacement in order, all or
 * nothing, precise errors, CRLF preserved, mode kept, and editing through the client.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { edit } from "../../src/tools/edit.ts"
import { rewrite as editedText } from "../../src/tools/worker/edits.ts"
import type { ClientAccess } from "../../src/session/ClientCalls.ts"
import * as Tool from "../../src/tools/Tool.ts"
import * as TempDir from "../support/TempDir.ts"
import * as ToolServices from "../support/ToolServices.ts"

const setup = (client?: ClientAccess) =>
  Effect.gen(function*() {
    const base = yield* TempDir.make()
    const cwd = join(base, "ws")
    mkdirSync(cwd)
    const ctx: Tool.ToolContext = { sessionId: "s-1", toolCallId: "call-1", cwd, roots: [cwd] }
    const file = (name: string, content: string | Uint8Array) => {
      writeFileSync(join(cwd, name), content)
      return join(cwd, name)
    }
    const run = (args: unknown) => Tool.run(edit, args, ctx).pipe(ToolServices.provide({ client }), Effect.provide(TempDir.platform))
    return { cwd, file, run }
  })

const source = "function a() {\n  return 1\n}\n\nfunction b() {\n  return 2\n}\n"

describe("edit", () => {
  it.effect("replaces one exact match and reports the whole old and new text", () =>
    Effect.gen(function*() {
      const { cwd, file, run } = yield* setup()
      const path = file("a.ts", source)
      const out = yield* run({ path: "a.ts", edits: [{ oldText: "  return 2", newText: "  return 20" }] })
      const expected = source.replace("return 2", "return 20")
      assert.deepStrictEqual(out, {
        ok: true,
        content: "Edited a.ts: 1 edit applied at line 6.",
        details: { diff: [{ path, oldText: source, newText: expected }] }
      })
      assert.strictEqual(readFileSync(path, "utf8"), expected)
      assert.deepStrictEqual(readdirSync(cwd), ["a.ts"])
    }))

  it.effect("applies several edits in order, each to the previous result; `$` in newText is literal", () =>
    Effect.gen(function*() {
      const { file, run } = yield* setup()
      const path = file("a.ts", source)
      const out = yield* run({
        path: "a.ts",
        edits: [
          { oldText: "function b", newText: "function c" },
          { oldText: "function c() {\n  return 2", newText: "function c() {\n  return '$&$1'" },
          { oldText: "return 1", newText: "return 10" }
        ]
      })
      assert.isTrue(out.ok)
      assert.strictEqual(out.content, "Edited a.ts: 3 edits applied, first change at line 2.")
      assert.strictEqual(readFileSync(path, "utf8"), "function a() {\n  return 10\n}\n\nfunction c() {\n  return '$&$1'\n}\n")
    }))

  it.effect("no match names the failing edit, hints at its first line, and changes nothing", () =>
    Effect.gen(function*() {
      const { file, run } = yield* setup()
      const path = file("a.ts", source)
      const before = readFileSync(path)
      const out = yield* run({
        path: "a.ts",
        edits: [
          { oldText: "return 1", newText: "return 10" },
          { oldText: "function b() {\n    return 2", newText: "x" },
          { oldText: "}", newText: "" }
        ]
      })
      assert.isFalse(out.ok)
      assert.match(out.content, /^Edit 2 of 3 failed: oldText was not found in a\.ts\./)
      assert.include(out.content, "\"function b() {\") appears at line 5")
      assert.include(out.content, "The file was not changed")
      assert.isUndefined(out.details)
      assert.isTrue(readFileSync(path).equals(before))
    }))

  it.effect("an ambiguous match names the edit and the number of matches", () =>
    Effect.gen(function*() {
      const { file, run } = yield* setup()
      const path = file("a.ts", source)
      const before = readFileSync(path)
      const out = yield* run({ path: "a.ts", edits: [{ oldText: "a", newText: "A" }, { oldText: "return", newText: "yield" }] })
      assert.isFalse(out.ok)
      assert.match(out.content, /^Edit 2 of 2 failed: oldText matches 2 places in a\.ts \(lines 2, 6\); include more surrounding lines/)
      assert.isTrue(readFileSync(path).equals(before))
    }))

  it.effect("empty oldText, missing files, directories and binary files are errors", () =>
    Effect.gen(function*() {
      const { cwd, file, run } = yield* setup()
      const path = file("a.ts", source)
      const empty = yield* run({ path: "a.ts", edits: [{ oldText: "", newText: "x" }] })
      assert.isFalse(empty.ok)
      assert.match(empty.content, /^The edit failed: oldText is empty/)
      assert.strictEqual(readFileSync(path, "utf8"), source)
      const missing = yield* run({ path: "nope.ts", edits: [{ oldText: "a", newText: "b" }] })
      assert.deepStrictEqual(missing, { ok: false, content: "File not found: nope.ts. edit changes existing files; use write to create one.", details: undefined })
      mkdirSync(join(cwd, "dir"))
      assert.isFalse((yield* run({ path: "dir", edits: [{ oldText: "a", newText: "b" }] })).ok)
      file("bin", new Uint8Array([97, 0, 98]))
      const binary = yield* run({ path: "bin", edits: [{ oldText: "a", newText: "b" }] })
      assert.deepStrictEqual(binary, { ok: false, content: "bin is a binary file; edit changes text files only", details: undefined })
      const none = yield* run({ path: "a.ts", edits: [] })
      assert.isFalse(none.ok)
    }))

  it.effect("keeps CRLF line endings, for edits written with LF or CRLF, and keeps the mode", () =>
    Effect.gen(function*() {
      const { file, run } = yield* setup()
      const path = file("win.txt", "one\r\ntwo\r\nthree\r\n")
      chmodSync(path, 0o640)
      const out = yield* run({
        path: "win.txt",
        edits: [{ oldText: "one\ntwo", newText: "ONE\nTWO\nextra" }, { oldText: "three\r\n", newText: "3\r\n" }]
      })
      assert.isTrue(out.ok)
      assert.strictEqual(readFileSync(path, "utf8"), "ONE\r\nTWO\r\nextra\r\n3\r\n")
      assert.deepStrictEqual(out.details?.diff?.[0]?.oldText, "one\r\ntwo\r\nthree\r\n")
      assert.strictEqual(statSync(path).mode & 0o7777, 0o640)
    }))

  it.effect("a file with a BOM keeps it", () =>
    Effect.gen(function*() {
      const { file, run } = yield* setup()
      const path = file("bom.txt", "\uFEFFhello\n")
      assert.isTrue((yield* run({ path: "bom.txt", edits: [{ oldText: "hello", newText: "bye" }] })).ok)
      assert.deepStrictEqual([...readFileSync(path).subarray(0, 3)], [0xef, 0xbb, 0xbf])
      assert.strictEqual(readFileSync(path, "utf8"), "\uFEFFbye\n")
    }))

  it.effect("reads and writes through the client when it offers fs access", () =>
    Effect.gen(function*() {
      const writes: Array<[string, string]> = []
      const reads: Array<string> = []
      const client: ClientAccess = {
        // The editor's buffer differs from the disk (unsaved changes): the edit applies to the buffer.
        readTextFile: (path) => Effect.sync(() => reads.push(path)).pipe(Effect.as("buffer line\n")),
        writeTextFile: (path, content) => Effect.sync(() => void writes.push([path, content]))
      }
      const { file, run } = yield* setup(client)
      const path = file("a.txt", "disk line\n")
      const out = yield* run({ path: "a.txt", edits: [{ oldText: "buffer", newText: "edited" }] })
      assert.isTrue(out.ok)
      assert.deepStrictEqual(reads, [path])
      assert.deepStrictEqual(writes, [[path, "edited line\n"]])
      assert.deepStrictEqual(out.details?.diff, [{ path, oldText: "buffer line\n", newText: "edited line\n" }])
      assert.strictEqual(readFileSync(path, "utf8"), "disk line\n")
      const failing = yield* run({ path: "a.txt", edits: [{ oldText: "disk", newText: "x" }] })
      assert.isFalse(failing.ok)
      assert.strictEqual(writes.length, 1)
    }))

  it.effect("paths outside the roots are refused", () =>
    Effect.gen(function*() {
      const { run } = yield* setup()
      const out = yield* run({ path: "../x.txt", edits: [{ oldText: "a", newText: "b" }] })
      assert.isFalse(out.ok)
      assert.match(out.content, /outside the workspace/)
    }))

  it("editedText is the tool's new content without touching a file (CRLF kept, errors as data)", () => {
    assert.deepStrictEqual(editedText("a\r\nb\r\n", [{ oldText: "a\nb", newText: "x\ny" }], "f.txt"), { _tag: "ok", text: "x\r\ny\r\n", firstLine: 1 })
    assert.deepStrictEqual(editedText("a\nb\n", [{ oldText: "b", newText: "c" }], "f.txt"), { _tag: "ok", text: "a\nc\n", firstLine: 2 })
    const missing = editedText("a\n", [{ oldText: "zz", newText: "c" }], "f.txt")
    assert.strictEqual(missing._tag, "error")
  })
})
