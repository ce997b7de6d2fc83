/**
 * The read tool through `Tool.run` with raw model arguments, on real files: numbering, windows,
 * caps, binary and image files, directories, missing files, bad arguments.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { DEFAULT_LIMIT, read } from "../../src/tools/read.ts"
import { MAX_BYTES, MAX_LINE_CHARS } from "../../src/tools/TextWindow.ts"
import * as Tool from "../../src/tools/Tool.ts"
import * as TempDir from "../support/TempDir.ts"
import * as ToolServices from "../support/ToolServices.ts"

const setup = Effect.gen(function*() {
  const base = yield* TempDir.make()
  const cwd = join(base, "ws")
  mkdirSync(cwd)
  const ctx: Tool.ToolContext = { sessionId: "s-1", toolCallId: "c-1", cwd, roots: [cwd] }
  const file = (name: string, content: string | Uint8Array) => {
    writeFileSync(join(cwd, name), content)
    return name
  }
  const run = (args: unknown) => Tool.run(read, args, ctx).pipe(ToolServices.provide(), Effect.provide(TempDir.platform))
  return { base, cwd, ctx, file, run }
})

const lines = (n: number, make: (i: number) => string = (i) => `line ${i}`) =>
  Array.from({ length: n }, (_, i) => make(i + 1)).join("\n") + "\n"

describe("read", () => {
  it.effect("numbers lines from 1, right-aligned, tab-separated; CRLF endings are dropped", () =>
    Effect.gen(function*() {
      const { file, run } = yield* setup
      file("a.txt", lines(12))
      const out = yield* run({ path: "a.txt" })
      assert.isTrue(out.ok)
      const shown = out.content.split("\n")
      assert.strictEqual(shown.length, 12)
      assert.strictEqual(shown[0], " 1\tline 1")
      assert.strictEqual(shown[11], "12\tline 12")

      file("crlf.txt", "one\r\ntwo\r\n")
      assert.deepStrictEqual(yield* run({ path: "crlf.txt" }), { ok: true, content: "1\tone\n2\ttwo", details: undefined })

      file("no-newline.txt", "only")
      assert.strictEqual((yield* run({ path: "no-newline.txt" })).content, "1\tonly")
    }))

  it.effect("offset and limit select a window and say where to continue", () =>
    Effect.gen(function*() {
      const { file, run } = yield* setup
      file("a.txt", lines(10))
      const middle = yield* run({ path: "a.txt", offset: 3, limit: 2 })
      assert.strictEqual(middle.content, "3\tline 3\n4\tline 4\n\n[Lines 3-4 shown; more lines follow. Continue with offset=5.]")
      const tail = yield* run({ path: "a.txt", offset: 9 })
      assert.strictEqual(tail.content, " 9\tline 9\n10\tline 10")
      const exact = yield* run({ path: "a.txt", offset: 10, limit: 1 })
      assert.strictEqual(exact.content, "10\tline 10")
      const past = yield* run({ path: "a.txt", offset: 11 })
      assert.deepStrictEqual(past, { ok: false, content: "Offset 11 is past the end of a.txt (10 lines)", details: undefined })
    }))

  it.effect("the default limit is DEFAULT_LIMIT lines", () =>
    Effect.gen(function*() {
      const { file, run } = yield* setup
      file("long.txt", lines(DEFAULT_LIMIT + 5, (i) => String(i)))
      const out = yield* run({ path: "long.txt" })
      const body = out.content.split("\n\n[")[0]!.split("\n")
      assert.strictEqual(body.length, DEFAULT_LIMIT)
      assert.match(out.content, new RegExp(`Continue with offset=${DEFAULT_LIMIT + 1}\\.\\]$`))
    }))

  it.effect("output is capped at MAX_BYTES, and the message names the line to continue from", () =>
    Effect.gen(function*() {
      const { file, run } = yield* setup
      // 1,000 lines of 100 characters: about 100 KB, twice the cap.
      file("big.txt", lines(1000, (i) => `${String(i).padStart(5, "0")}${"x".repeat(95)}`))
      const out = yield* run({ path: "big.txt" })
      assert.isTrue(out.ok)
      const match = /\[Lines 1-(\d+) shown \(output capped at 50 KB\); more lines follow\. Continue with offset=(\d+)\.\]$/.exec(out.content)
      assert.isNotNull(match, out.content.slice(-200))
      const last = Number(match![1])
      assert.strictEqual(Number(match![2]), last + 1)
      assert.isTrue(last > 400 && last < 520, `stopped at ${last}`)
      // The cap counts line text; the line-number prefixes ("  123\t") come on top.
      const bytes = Buffer.byteLength(out.content, "utf8")
      assert.isTrue(bytes > MAX_BYTES - 200 && bytes <= MAX_BYTES + last * 8, `${bytes} bytes`)
      // The continuation picks up exactly there.
      const next = yield* run({ path: "big.txt", offset: last + 1, limit: 1 })
      assert.match(next.content, new RegExp(`^${last + 1}\\t${String(last + 1).padStart(5, "0")}x{95}\\n`))
    }))

  // The cap counts UTF-8 bytes, not UTF-16 code units: CJK text (3 bytes a character) is held to
  // the "about 50 KB" the tool description promises the model, not three times that.
  it.effect("the cap is in bytes, also for multi-byte text", () =>
    Effect.gen(function*() {
      const { file, run } = yield* setup
      file("cjk.txt", lines(1000, () => "中".repeat(100)))
      const out = yield* run({ path: "cjk.txt" })
      const bytes = Buffer.byteLength(out.content, "utf8")
      assert.isTrue(bytes <= MAX_BYTES + 8 * DEFAULT_LIMIT, `${bytes} bytes`)
    }))

  it.effect("a line longer than MAX_LINE_CHARS is cut and marked", () =>
    Effect.gen(function*() {
      const { file, run } = yield* setup
      file("wide.txt", "short\n" + "y".repeat(MAX_LINE_CHARS * 3) + "\nend\n")
      const shown = (yield* run({ path: "wide.txt" })).content.split("\n")
      assert.strictEqual(shown[0], "1\tshort")
      assert.strictEqual(shown[1], `2\t${"y".repeat(MAX_LINE_CHARS)}… [line truncated]`)
      assert.strictEqual(shown[2], "3\tend")
    }))

  it.effect("multi-byte characters survive the 64 KB read chunks", () =>
    Effect.gen(function*() {
      const { file, run } = yield* setup
      // Each line is 4 emoji (16 bytes) + "\n": chunk boundaries fall inside characters.
      const line = "😀é中😀"
      file("emoji.txt", lines(6000, () => line))
      const out = yield* run({ path: "emoji.txt", offset: 4000, limit: 3 })
      assert.strictEqual(out.content.split("\n\n[")[0], `4000\t${line}\n4001\t${line}\n4002\t${line}`)
    }))

  it.effect("an empty file says so", () =>
    Effect.gen(function*() {
      const { file, run } = yield* setup
      file("empty.txt", "")
      assert.deepStrictEqual(yield* run({ path: "empty.txt" }), { ok: true, content: "empty.txt is empty.", details: undefined })
    }))

  it.effect("a binary file is described, not dumped", () =>
    Effect.gen(function*() {
      const { file, run } = yield* setup
      file("blob.bin", new Uint8Array([0x7f, 0x45, 0x4c, 0x46, 0x00, 0x01, 0x02, 0x41]))
      assert.deepStrictEqual(yield* run({ path: "blob.bin" }), {
        ok: true,
        content: "blob.bin is a binary file (8 bytes); its contents are not shown.",
        details: undefined
      })
    }))

  it.effect("an image is recognised by its extension", () =>
    Effect.gen(function*() {
      const { file, run } = yield* setup
      file("pic.PNG", new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))
      const out = yield* run({ path: "pic.PNG" })
      assert.deepStrictEqual(out, { ok: true, content: "pic.PNG is an image (image/png, 8 bytes); its contents are not shown as text.", details: undefined })
    }))

  it.effect("a directory, a missing file and a path outside are tool errors", () =>
    Effect.gen(function*() {
      const { cwd, base, run } = yield* setup
      mkdirSync(join(cwd, "sub"))
      assert.deepStrictEqual(yield* run({ path: "sub" }), { ok: false, content: "sub is a directory; use glob to list files", details: undefined })
      assert.deepStrictEqual(yield* run({ path: "nope/missing.txt" }), { ok: false, content: "File not found: nope/missing.txt", details: undefined })
      writeFileSync(join(base, "secret.txt"), "s")
      const outside = yield* run({ path: "../secret.txt" })
      assert.isFalse(outside.ok)
      assert.match(outside.content, /outside the workspace/)
    }))

  it.effect("an absolute path inside is shown relative to the cwd", () =>
    Effect.gen(function*() {
      const { cwd, run } = yield* setup
      mkdirSync(join(cwd, "sub"))
      assert.strictEqual((yield* run({ path: join(cwd, "sub") })).content, "sub is a directory; use glob to list files")
    }))

  it.effect("bad arguments are tool errors the model reads, never a throw", () =>
    Effect.gen(function*() {
      const { file, run } = yield* setup
      file("a.txt", "x\n")
      for (const args of [{}, { path: 5 }, { path: "a.txt", offset: -1 }, { path: "a.txt", offset: 0 }, { path: "a.txt", limit: 1.5 }, null, "a.txt"]) {
        const out = yield* run(args)
        assert.isFalse(out.ok, JSON.stringify(args))
        assert.match(out.content, /^Invalid arguments for read: /, JSON.stringify(args))
      }
      // Extra keys the model adds are ignored.
      assert.strictEqual((yield* run({ path: "a.txt", verbose: true })).content, "1\tx")
    }))

  it("title, locations, kind and schema for presenters and providers", () => {
    assert.strictEqual(read.title({ path: "a.txt" }), "Read a.txt")
    assert.strictEqual(read.title({ path: "a.txt", offset: 5 }), "Read a.txt from line 5")
    assert.deepStrictEqual(read.locations({ path: "src/a.ts", offset: 3 }, "/w/"), [{ path: "/w/src/a.ts", line: 3 }])
    assert.deepStrictEqual(read.locations({ path: "/abs/a.ts" }, "/w"), [{ path: "/abs/a.ts" }])
    assert.strictEqual(read.kind, "read")
    assert.isFalse(read.mutating)
    const schema = Tool.jsonSchema(read)
    assert.strictEqual(schema["type"], "object")
    assert.deepStrictEqual(schema["required"], ["path"])
  })
})
