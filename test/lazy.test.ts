/**
 * `Lazy.schema`: a stand-in that builds its Schema at the first use, once, and is then that Schema
 * to everything Effect does with one (decode, encode, guards, containing Schemas, annotations,
 * `make`); `Lazy.fn`: a function made at its first call.
 */
import { describe, expect, it } from "vitest"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import * as Lazy from "../src/Lazy.ts"
import { CanonicalBody, isEphemeral, LogHeader } from "../src/log/Event.ts"
import { McpServer, UserBlock } from "../src/Vocabulary.ts"

describe("Lazy.schema", () => {
  it("builds nothing until used, then once, and is the Schema for decoding, guards and other Schemas", () => {
    let builds = 0
    const Point = Lazy.schema("test.Point", () => {
      builds++
      return Schema.Struct({ x: Schema.Number, y: Schema.optionalKey(Schema.Number) })
    })
    expect(builds).toBe(0)
    expect(Lazy.isBuilt("test.Point")).toBe(false)

    expect(Schema.decodeUnknownSync(Point)({ x: 1 })).toEqual({ x: 1 })
    expect(builds).toBe(1)
    expect(Lazy.isBuilt("test.Point")).toBe(true)
    expect(Exit.isFailure(Schema.decodeUnknownExit(Point)({ x: "1" }))).toBe(true)
    expect(Schema.is(Point)({ x: 2, y: 3 })).toBe(true)
    expect(Schema.encodeSync(Point)({ x: 4 })).toEqual({ x: 4 })

    // Inside another Schema, annotated, piped, made: all the one Schema, built once.
    const Line = Schema.Struct({ from: Point, to: Point })
    expect(Schema.decodeUnknownSync(Line)({ from: { x: 0 }, to: { x: 1, y: 1 } })).toEqual({ from: { x: 0 }, to: { x: 1, y: 1 } })
    expect(Schema.decodeUnknownSync(Schema.Array(Point))([{ x: 5 }])).toEqual([{ x: 5 }])
    expect(Point.make({ x: 6 })).toEqual({ x: 6 })
    expect(Object.keys(Point.fields)).toEqual(["x", "y"])
    expect(Schema.isSchema(Point)).toBe(true)
    expect(typeof Point).toBe("function")
    expect(Point.annotate({ description: "a point" }).ast.annotations?.description).toBe("a point")
    expect(Point.pipe(Schema.Array).ast._tag).toBe("Arrays")
    expect(builds).toBe(1)
  })

  it("a failure to build is the caller's, and the next use tries again", () => {
    let attempts = 0
    const Broken = Lazy.schema("test.Broken", () => {
      attempts++
      if (attempts === 1) throw new Error("not yet")
      return Schema.String
    })
    expect(() => Broken.ast).toThrow("not yet")
    expect(Lazy.isBuilt("test.Broken")).toBe(false)
    expect(Schema.decodeUnknownSync(Broken)("ok")).toBe("ok")
    expect(attempts).toBe(2)
  })

  it("the vocabulary's and the log's Schemas decode as they always did", () => {
    expect(Schema.decodeUnknownSync(UserBlock)({ type: "text", text: "hi" })).toEqual({ type: "text", text: "hi" })
    expect(Schema.decodeUnknownSync(McpServer)({ type: "http", name: "s", url: "http://x", headers: [] })).toEqual({ type: "http", name: "s", url: "http://x", headers: [] })
    expect(CanonicalBody.members.map((member) => member.fields.type.literal)).toContain("tool_call")
    expect(Schema.is(CanonicalBody)({ type: "turn_end", data: { stopReason: "end_turn" } })).toBe(true)
    expect(Schema.is(CanonicalBody)({ type: "turn_end", data: { stopReason: "done" } })).toBe(false)
    expect(isEphemeral({ type: "text_delta", data: { text: "x" } })).toBe(true)
    expect(isEphemeral({ type: "turn_end", data: { stopReason: "end_turn" } })).toBe(false)
    expect(Exit.isFailure(Schema.decodeUnknownExit(LogHeader)({ type: "session", v: 5, id: "a", cwd: "/" }))).toBe(true)
  })
})

describe("Lazy.fn", () => {
  it("makes the function at its first call, once", () => {
    let made = 0
    const double = Lazy.fn(() => {
      made++
      return (n: number) => n * 2
    })
    expect(made).toBe(0)
    expect(double(2)).toBe(4)
    expect(double(5)).toBe(10)
    expect(made).toBe(1)
  })
})
