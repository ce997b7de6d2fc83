/**
 * The NDJSON of `SessionRpcs` over sockets: the same messages however the bytes are cut, each
 * byte looked at once however many chunks a message comes in (a peer that sends a long message
 * a byte at a time costs the server no more than one that sends it whole), and a message past
 * the bound refused as soon as it passes it.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { RpcSerialization } from "effect/rpc"
import * as Ndjson from "../../src/remote/Ndjson.ts"

const encoder = new TextEncoder()

/** `bytes` cut at `cuts` (positions taken modulo its length). */
const cut = (bytes: Uint8Array, cuts: ReadonlyArray<number>): Array<Uint8Array> => {
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b)
  const out: Array<Uint8Array> = []
  let from = 0
  for (const c of at) {
    out.push(bytes.subarray(from, c))
    from = c
  }
  out.push(bytes.subarray(from))
  return out
}

/**
 * Counts the characters (or bytes) that `indexOf` looks at on strings and byte arrays while
 * `body` runs: the work of finding line ends, whichever way a decoder represents its buffer.
 */
const scanned = (body: () => void): number => {
  let count = 0
  const stringIndexOf = String.prototype.indexOf
  const bytesIndexOf = Uint8Array.prototype.indexOf
  String.prototype.indexOf = function(this: string, search: string, from?: number) {
    const found = stringIndexOf.call(this, search, from)
    count += (found < 0 ? this.length : found + 1) - Math.max(0, from ?? 0)
    return found
  }
  Uint8Array.prototype.indexOf = function(this: Uint8Array, search: number, from?: number) {
    const found = bytesIndexOf.call(this, search, from)
    count += (found < 0 ? this.length : found + 1) - Math.max(0, from ?? 0)
    return found
  }
  try {
    body()
  } finally {
    String.prototype.indexOf = stringIndexOf
    Uint8Array.prototype.indexOf = bytesIndexOf
  }
  return count
}

describe("Ndjson", () => {
  it("decodes the messages (objects) it encodes, however the bytes are cut (UTF-8 split included)", () => {
    fc.assert(fc.property(fc.array(fc.dictionary(fc.string(), fc.jsonValue()), { maxLength: 8 }), fc.array(fc.nat(), { maxLength: 12 }), (messages, cuts) => {
      const serialization = Ndjson.make()
      const bytes = encoder.encode(messages.map((m) => serialization.makeUnsafe().encode(m) as string).join(""))
      const parser = serialization.makeUnsafe()
      const decoded = cut(bytes, cuts).flatMap((chunk) => parser.decode(chunk))
      assert.deepStrictEqual(decoded, JSON.parse(JSON.stringify(messages)))
    }))
  })

  it("looks at each byte once: a message sent a byte at a time costs what it costs whole", () => {
    const message = { _tag: "Request", id: "1", tag: "Info", payload: { text: "x".repeat(200_000) }, headers: [] }
    const bytes = encoder.encode(`${JSON.stringify(message)}\n`)
    const whole = Ndjson.make().makeUnsafe()
    let decoded: ReadonlyArray<unknown> = []
    const once = scanned(() => {
      decoded = whole.decode(bytes)
    })
    const split = Ndjson.make().makeUnsafe()
    const pieces: Array<unknown> = []
    const byByte = scanned(() => {
      for (let i = 0; i < bytes.length; i++) pieces.push(...split.decode(bytes.subarray(i, i + 1)))
    })
    assert.deepStrictEqual(decoded, [message])
    assert.deepStrictEqual(pieces, [message])
    // A rescanning decoder looks at ~n²/2 = 2·10¹⁰ characters here; this one at the bytes, once.
    assert.isAtMost(once, bytes.length)
    assert.isAtMost(byByte, bytes.length)
  })

  it("a message longer than the bound (in characters) is refused as it passes it, without waiting for its end", () => {
    const parser = Ndjson.make(1024).makeUnsafe()
    assert.deepStrictEqual(parser.decode(encoder.encode("{\"a\":1}\n")), [{ a: 1 }])
    parser.decode(encoder.encode("x".repeat(1000)))
    assert.throws(() => parser.decode(encoder.encode("x".repeat(100))), RpcSerialization.MaxBufferSizeExceeded)
  })

  it("a line that is not JSON is a decode error", () => {
    assert.throws(() => Ndjson.make().makeUnsafe().decode(encoder.encode("not json\n")), RpcSerialization.NdjsonDecodeError)
  })
})
