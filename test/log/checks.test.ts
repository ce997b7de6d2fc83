/**
 * The checks of logged events come from the event Schemas: every canonical type's data is held
 * to its Schema when read, whatever the Schema allows reads back, and a new member of the union
 * needs no change in the reader.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Schema from "effect/Schema"
import { isDeepStrictEqual } from "node:util"
import * as Checks from "../../src/log/Checks.ts"
import { CanonicalBody, LOG_VERSION } from "../../src/log/Event.ts"
import * as Reader from "../../src/log/Reader.ts"
import { LogError } from "../../src/log/LogError.ts"

const SECRET = "sk-live-0123456789"
const FILE = "/logs/s.ndjson"

const header = (v = LOG_VERSION) => JSON.stringify({ type: "session", v, id: "s", cwd: "/w", created: 1 }) + "\n"
const line = (seq: number, type: string, data: unknown, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ seq, ts: seq, turn: 1, type, data, ...extra }) + "\n"
const start = line(1, "turn_start", { content: [{ type: "text", text: "hi" }] })

const parse = (text: string, options?: Reader.Options): Reader.Contents | LogError => {
  const p = Reader.parser(FILE, options)
  p.push(new TextEncoder().encode(text))
  return p.end()
}

const corruption = (text: string, options?: Reader.Options): string => {
  const result = parse(text, options)
  assert.instanceOf(result, LogError)
  assert.strictEqual((result as LogError).reason, "corrupt")
  return (result as LogError).message
}

describe("Reader: each event type's data is held to its Schema", () => {
  // Each line was read as valid before: the hand-written checks looked only at a few fields.
  const cases: ReadonlyArray<readonly [string, unknown, string]> = [
    ["tool_call", { id: "c1", name: "read", title: "Read", kind: SECRET, args: {} }, "kind: Expected"],
    ["tool_call", { id: "c1", name: "read", title: "Read", kind: "read" }, "args: Missing key"],
    ["tool_result", { id: "c1", ok: true, content: "x", details: { exitCode: SECRET } }, "details.exitCode: Expected"],
    ["turn_end", { stopReason: SECRET }, "stopReason: Expected"],
    ["model_response", { call: 1, parts: [{ type: "text", text: "a" }], stop: SECRET }, "stop: Expected"],
    ["model_response", { call: 1, parts: [{ type: "tool_call", id: SECRET, name: "x" }], stop: "tool_use" }, "parts[0].args: Missing key"],
    ["model_response", { call: 1, parts: [{ type: "text", text: "a" }], stop: "end_turn", usage: { input: SECRET, output: 1 } }, "usage.input: Expected number"],
    ["turn_start", { content: [{ type: "image", data: SECRET }] }, "content[0].mimeType: Missing key"],
    ["plan", { entries: [{ content: SECRET, status: "done", priority: "high" }] }, "entries[0].status: Expected"],
    ["permission", { toolCallId: "c1", outcome: SECRET }, "outcome: Expected"],
    ["mcp_servers", { servers: [{ name: SECRET, transport: "ftp" }] }, "servers[0].transport: Expected"],
    ["notice", { text: 42 }, "text: Expected string"],
    ["mode_changed", {}, "mode: Missing key"],
    ["config_changed", { id: "model" }, "value: Missing key"],
    ["model_partial", { call: 1, parts: [{ type: "tool_call", text: SECRET }] }, "parts[0]"]
  ]
  for (const [type, data, where] of cases) {
    it(`a ${type} line whose data its Schema refuses is corruption, named by file, line, type and field (${where})`, () => {
      const message = corruption(header() + start + line(2, type, data) + line(3, "turn_end", { stopReason: "end_turn" }))
      assert.include(message, `Session log ${FILE} is corrupt at line 3: a ${type} whose data does not match its schema (${where}`)
      // Never a value: it may be a secret.
      assert.notInclude(message, SECRET)
    })
  }

  it("every canonical type has its check (a line with no fields is refused, named by its type)", () => {
    for (const member of CanonicalBody.members) {
      const type = member.fields.type.literal
      assert.include(corruption(header() + start + line(2, type, {})), `line 3: a ${type} whose data does not match its schema`)
    }
  })

  it("keeps the deliberate leniency: extra fields in the data, its parts and the envelope are read", () => {
    const result = parse(
      header() +
        line(1, "turn_start", { content: [{ type: "text", text: "hi", annotations: { x: 1 } }], later: true }, { extra: 1 }) +
        line(2, "model_response", { call: 1, parts: [{ type: "thinking", text: "t", redacted: false }], stop: "end_turn", usage: { input: 1, output: 2, reasoning: 3 } }) +
        line(3, "tool_call", { id: "c", name: "n", args: null, title: "t", kind: "other", locations: [{ path: "/a", line: 2, column: 3 }] }) +
        line(4, "turn_end", { stopReason: "end_turn", more: "x" })
    )
    assert.notInstanceOf(result, LogError)
    assert.deepStrictEqual((result as Reader.Contents).events.map((e) => e.seq), [1, 2, 3, 4])
  })

  it("an unknown type is corruption (a newer Skein's types come with a newer format, refused first)", () => {
    assert.include(corruption(header() + start + line(2, "text_delta", { text: "x" })), "line 3: unknown event type")
    const newer = parse(header(LOG_VERSION + 1) + line(1, "brand_new_type", {}))
    assert.instanceOf(newer, LogError)
    assert.strictEqual((newer as LogError).reason, "version")
  })
})

describe("whatever the Schemas allow reads back", () => {
  const check = Checks.canonical()
  for (const member of CanonicalBody.members) {
    it.prop(`${member.fields.type.literal}: any value of its Schema, as a log line, is read back and may be written`, [member], ([body]) => {
      // JSON has no undefined, NaN or -0: a value it cannot hold is not a line anyone can write.
      const wire = JSON.parse(JSON.stringify(body.data)) as unknown
      if (!isDeepStrictEqual(wire, body.data)) return
      assert.isUndefined(check(body.type, body.data))
      const result = parse(header() + line(1, body.type, body.data))
      assert.notInstanceOf(result, LogError, result instanceof LogError ? result.message : "")
      assert.deepStrictEqual((result as Reader.Contents).events[0]!.data, wire)
    })
  }
})

// A member a later Skein might add: nothing in the reader or the stores names it.
const Bookmark = Schema.Struct({ type: Schema.Literal("bookmark"), data: Schema.Struct({ label: Schema.String, at: Schema.Number }) })
const Extended = Schema.Union([...CanonicalBody.members, Bookmark])

describe("a new event type needs no change in the reader", () => {
  const log = header() + start + line(2, "bookmark", { label: "here", at: 3 }) + line(3, "turn_end", { stopReason: "end_turn" })

  it("a reader given a union with one more member reads its lines, and holds them to its Schema", () => {
    const result = parse(log, { events: Extended })
    assert.notInstanceOf(result, LogError)
    assert.deepStrictEqual((result as Reader.Contents).events[1]!.data as unknown, { label: "here", at: 3 })
    assert.include(
      corruption(header() + line(1, "bookmark", { label: SECRET }), { events: Extended }),
      "line 2: a bookmark whose data does not match its schema (at: Missing key)"
    )
    // Without it, the type is unknown.
    assert.include(corruption(log), "line 3: unknown event type")
  })

})
