import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import * as fc from "fast-check"
import * as Framing from "../../src/jsonrpc/Framing.ts"

const utf8 = new TextEncoder()
const bytes = (s: string) => utf8.encode(s)

const texts = (lines: ReadonlyArray<Framing.Line>) => lines.map((l) => (l._tag === "Line" ? l.text : "<TooLong>"))

/** Cuts `data` at the given (unsorted, possibly repeated) offsets. */
const cut = (data: Uint8Array, offsets: ReadonlyArray<number>): Array<Uint8Array> => {
  const points = [...new Set(offsets.map((o) => o % (data.length + 1)))].sort((a, b) => a - b)
  const chunks: Array<Uint8Array> = []
  let start = 0
  for (const p of points) {
    chunks.push(data.subarray(start, p))
    start = p
  }
  chunks.push(data.subarray(start))
  return chunks
}

/** How a sender may frame a value: raw JSON (U+2028 unescaped, as other clients send it), ours, or CRLF. */
const framing = fc.constantFrom<(v: unknown) => string>(
  (v) => `${JSON.stringify(v)}\n`,
  Framing.encode,
  (v) => `${JSON.stringify(v)}\r\n`
)

const splitAll = (chunks: ReadonlyArray<Uint8Array>, options?: Framing.Options) => {
  const splitter = Framing.makeSplitter(options)
  return [...chunks.flatMap((c) => splitter.push(c)), ...splitter.end()]
}

/** Strings rich in what breaks naive framing: separators, CR, LF, emoji, multi-byte text. */
const trickyString = fc.string({
  unit: fc.oneof(
    fc.constantFrom("\u2028", "\u2029", "\r", "\n", "\r\n", "😀", "é", "中", "\u0000", "\"", "\\"),
    fc.string({ unit: "binary", minLength: 1, maxLength: 1 })
  )
})

const jsonValue = fc.jsonValue({ stringUnit: "binary", maxDepth: 3 }).chain((base) =>
  fc.record({ base: fc.constant(base), s: trickyString, list: fc.array(trickyString, { maxLength: 3 }) })
)

describe("Framing.makeSplitter", () => {
  it("splits on LF only, strips a trailing CR, skips blank lines", () => {
    const lines = splitAll([bytes("a\u2028b\u2029c\r\n\n   \r\nd\re\nlast")])
    assert.deepStrictEqual(texts(lines), ["a\u2028b\u2029c", "d\re", "last"])
  })

  it("decodes a multi-byte character cut across chunks", () => {
    const data = bytes("{\"t\":\"😀é\"}\n")
    for (let i = 0; i <= data.length; i++) {
      assert.deepStrictEqual(texts(splitAll([data.subarray(0, i), data.subarray(i)])), ["{\"t\":\"😀é\"}"])
    }
  })

  it("does not keep references to the producer's buffers", () => {
    const buffer = bytes("abc")
    const splitter = Framing.makeSplitter()
    splitter.push(buffer)
    buffer.fill(0x78)
    assert.deepStrictEqual(texts(splitter.push(bytes("\n"))), ["abc"])
  })

  it("reports a too long line once and parses the next one", () => {
    const long = "x".repeat(100)
    for (const chunks of [[bytes(`${long}\n{"ok":1}\n`)], cut(bytes(`${long}\n{"ok":1}\n`), [3, 50, 99, 101])]) {
      assert.deepStrictEqual(texts(splitAll(chunks, { maxLineBytes: 64 })), ["<TooLong>", "{\"ok\":1}"])
    }
    // exactly at the limit is fine; the limit excludes the LF
    assert.deepStrictEqual(texts(splitAll([bytes(`${"y".repeat(64)}\n`)], { maxLineBytes: 64 })), ["y".repeat(64)])
    // an unterminated too-long tail is reported at the end
    assert.deepStrictEqual(texts(splitAll([bytes(`{"a":1}\n${long}`)], { maxLineBytes: 64 })), [
      "{\"a\":1}",
      "<TooLong>"
    ])
  })

  it("reports a too long line as soon as it passes the limit, not at its end (which may never come)", () => {
    const splitter = Framing.makeSplitter({ maxLineBytes: 64 })
    assert.deepStrictEqual(texts(splitter.push(bytes("x".repeat(64)))), [])
    assert.deepStrictEqual(texts(splitter.push(bytes("x"))), ["<TooLong>"])
    // Once: the rest of that line is dropped silently, then lines are read again.
    assert.deepStrictEqual(texts(splitter.push(bytes("x".repeat(500)))), [])
    assert.deepStrictEqual(texts(splitter.push(bytes("x\n{\"ok\":1}\n"))), ["{\"ok\":1}"])
    assert.deepStrictEqual(texts(splitter.push(bytes("y".repeat(100)))), ["<TooLong>"])
    assert.deepStrictEqual(texts(splitter.end()), [])
  })

  it("keeps memory bounded: a 50 MB line with a 1 MB limit", () => {
    const limit = 1024 * 1024
    const splitter = Framing.makeSplitter({ maxLineBytes: limit })
    const chunk = new Uint8Array(64 * 1024).fill(0x61)
    let maxBuffered = 0
    const out: Array<Framing.Line> = []
    for (let sent = 0; sent < 50 * 1024 * 1024; sent += chunk.length) {
      out.push(...splitter.push(chunk))
      maxBuffered = Math.max(maxBuffered, splitter.bufferedBytes())
    }
    out.push(...splitter.push(bytes("\n{\"after\":true}\n")))
    assert.isAtMost(maxBuffered, limit)
    assert.strictEqual(splitter.bufferedBytes(), 0)
    assert.deepStrictEqual(texts(out), ["<TooLong>", "{\"after\":true}"])
  })

  it("round-trips any JSON values cut into any chunks (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(jsonValue, framing), { maxLength: 8 }), fc.array(fc.nat(), { maxLength: 20 }), (framed, offsets) => {
        const values = framed.map(([v]) => v)
        const data = bytes(framed.map(([v, frame]) => frame(v)).join(""))
        const lines = splitAll(cut(data, offsets))
        assert.deepStrictEqual(
          lines.map((l) => (l._tag === "Line" ? JSON.parse(l.text) : l)),
          values.map((v) => JSON.parse(JSON.stringify(v)))
        )
      }),
      { numRuns: 300 }
    )
  })
})

describe("Framing.lines", () => {
  it.effect("splits a byte stream and emits the unterminated last line", () =>
    Effect.gen(function*() {
      const chunks = cut(bytes("{\"a\":\"😀\"}\n\n{\"b\":2}\r\n{\"c\":3}"), [2, 5, 6, 13, 20])
      const lines = yield* Stream.fromIterable(chunks).pipe(Framing.lines(), Stream.runCollect)
      assert.deepStrictEqual(texts(lines), ["{\"a\":\"😀\"}", "{\"b\":2}", "{\"c\":3}"])
    }))

  it.effect("reports TooLong in the stream and goes on", () =>
    Effect.gen(function*() {
      const lines = yield* Stream.fromIterable([bytes("z".repeat(40)), bytes("z\n1\n")]).pipe(
        Framing.lines({ maxLineBytes: 16 }),
        Stream.runCollect
      )
      assert.deepStrictEqual(texts(lines), ["<TooLong>", "1"])
    }))

  it("round-trips through the stream combinator (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(jsonValue, framing), { maxLength: 6 }), fc.array(fc.nat(), { maxLength: 10 }), (framed, offsets) => {
        const values = framed.map(([v]) => v)
        const data = bytes(framed.map(([v, frame]) => frame(v)).join(""))
        const lines = Effect.runSync(Stream.fromIterable(cut(data, offsets)).pipe(Framing.lines(), Stream.runCollect))
        assert.deepStrictEqual(
          lines.map((l) => (l._tag === "Line" ? JSON.parse(l.text) : l)),
          values.map((v) => JSON.parse(JSON.stringify(v)))
        )
      }),
      { numRuns: 100 }
    )
  })
})

describe("Framing.encode", () => {
  it("ends with LF, escapes U+2028/U+2029 and contains no raw line break", () => {
    const line = Framing.encode({ s: "a\u2028b\u2029c\nd\re" })
    assert.strictEqual(line, "{\"s\":\"a\\u2028b\\u2029c\\nd\\re\"}\n")
    assert.deepStrictEqual(JSON.parse(line), { s: "a\u2028b\u2029c\nd\re" })
  })

  it("never emits a character readline would split on (property)", () => {
    fc.assert(
      fc.property(jsonValue, (value) => {
        const body = Framing.encode(value).slice(0, -1)
        assert.isFalse(/[\n\r\u2028\u2029]/.test(body))
      })
    )
  })
})
