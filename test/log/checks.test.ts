/**
 * The checks of logged events come from the event Schemas: every canonical type's data is held
 * to its Schema when read (and when written), whatever the Schema allows reads back, and a new
 * member of the union needs no change in the reader or the stores.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { isDeepStrictEqual } from "node:util"
import * as Checks from "../../src/log/Checks.ts"
import { type Canonical, CanonicalBody, LOG_VERSION } from "../../src/log/Event.ts"
import * as Reader from "../../src/log/Reader.ts"
import { SessionLog } from "../../src/log/SessionLog.ts"
import { LogError } from "../../src/log/LogError.ts"
import type { Provider, StreamPart } from "../../src/providers/Provider.ts"
import * as Tool from "../../src/tools/Tool.ts"
import * as Toolkit from "../../src/tools/Toolkit.ts"
import { withPieces } from "../support/Sessions.ts"
import * as TempDir from "../support/TempDir.ts"

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
    ["tool_result", { id: "c1", ok: true, status: "done", content: "x", details: { exitCode: SECRET } }, "details.exitCode: Expected"],
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

const stamp = (seq: number, type: string, data: unknown): Canonical => ({ sessionId: "s", seq, ts: seq, turn: null, type, data }) as unknown as Canonical
const storeIn = <E, R>(layer: Layer.Layer<SessionLog, E, R>) =>
  Effect.provide(
    Effect.gen(function*() {
      return yield* SessionLog
    }),
    layer
  )

describe("a check is built for the types it meets", () => {
  it("compiles a type's Schema at its first check, never the other members' (a process checks the few types it logs, not every one)", () => {
    const looked: Array<string> = []
    // The same members, each telling when its data Schema is taken.
    const watched: Checks.EventUnion = {
      members: CanonicalBody.members.map((member) => ({
        fields: {
          type: member.fields.type,
          get data() {
            looked.push(member.fields.type.literal)
            return member.fields.data as Schema.ConstraintDecoder<unknown>
          }
        }
      }))
    }
    const check = Checks.of(watched)
    assert.deepStrictEqual(looked, [])
    assert.isUndefined(check("turn_start", { content: [{ type: "text", text: "hi" }] }))
    assert.isUndefined(check("turn_start", { content: [] }))
    assert.strictEqual(check("bookmark", {}), "unknown event type")
    assert.deepStrictEqual(looked, ["turn_start"])
    assert.include(check("turn_end", { stopReason: SECRET }) ?? "", "a turn_end whose data does not match its schema (stopReason: Expected")
    assert.deepStrictEqual([...new Set(looked)], ["turn_start", "turn_end"])
  })
})

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

  for (
    const [name, layerOf] of [
      ["files", (events?: typeof Extended) => Effect.map(TempDir.make(), (home) => SessionLog.layer({ home, events }))],
      ["memory", (events?: typeof Extended) => Effect.succeed(SessionLog.layerMemory({ events }))]
    ] as const
  ) {
    it.effect(`the ${name} store, given the union, writes and reopens a log that uses it`, () =>
      Effect.gen(function*() {
        const store = yield* storeIn(yield* layerOf(Extended))
        yield* Effect.scoped(Effect.gen(function*() {
          const writer = yield* store.create({ type: "session", v: LOG_VERSION, id: "b1", cwd: "/w", created: 1 })
          yield* writer.append([stamp(1, "bookmark", { label: "here", at: 3 })])
          // Its Schema holds on the way in too: the line is not written.
          const refused = yield* Effect.flip(writer.append([stamp(2, "bookmark", { label: SECRET })]))
          assert.strictEqual(refused.reason, "invalid")
          assert.include(refused.message, "a bookmark whose data does not match its schema (at: Missing key)")
          assert.notInclude(refused.message, SECRET)
        }))
        const opened = yield* Effect.scoped(store.open("b1"))
        assert.deepStrictEqual(opened.contents.events.map((e) => [e.seq, e.type]), [[1, "bookmark"]])
      }).pipe(Effect.provide(TempDir.platform)))

    it.effect(`the ${name} store never writes a line its reader would call corrupt`, () =>
      Effect.gen(function*() {
        const store = yield* storeIn(yield* layerOf())
        yield* Effect.scoped(Effect.gen(function*() {
          const writer = yield* store.create({ type: "session", v: LOG_VERSION, id: "b2", cwd: "/w", created: 1 })
          const bad = [
            stamp(1, "turn_start", { content: [{ type: "text", text: "hi" }] }),
            stamp(2, "tool_result", { id: "c", ok: true, status: "done", content: "x", details: { exitCode: SECRET } })
          ]
          const refused = yield* Effect.flip(writer.append(bad))
          assert.strictEqual(refused.reason, "invalid")
          assert.include(refused.message, "a tool_result whose data does not match its schema (details.exitCode: Expected")
          assert.notInclude(refused.message, SECRET)
          assert.strictEqual((yield* Effect.flip(writer.append([stamp(1, "bookmark", { label: "x", at: 1 })]))).reason, "invalid")
          yield* writer.append([bad[0]!])
        }))
        const read = yield* store.read("b2")
        assert.deepStrictEqual(read.events.map((e) => e.type), ["turn_start"])
      }).pipe(Effect.provide(TempDir.platform)))
  }
})

describe("a session never writes a log it could not load again", () => {
  // A provider of an embedding program, within its type (`args: unknown`), and a tool returning
  // details its Schema does not allow: each would have left a line that no reader accepts.
  const provider = (args: unknown): Provider => ({
    name: "custom",
    stream: () => Stream.make<Array<StreamPart>>({ _tag: "TextDelta", text: "ok" }, { _tag: "ToolCall", id: "c1", name: "odd", args }, { _tag: "Finish", stop: "tool_use" })
  })
  const odd = Tool.define<{}>({
    name: "odd",
    description: "odd (test tool)",
    kind: "other",
    mutating: false,
    parameters: Schema.Struct({}),
    title: () => "Run odd",
    locations: () => [],
    execute: () => Effect.succeed(Tool.ok("done", { exitCode: SECRET } as never))
  })

  for (
    const [what, args, where] of [
      ["an undefined tool argument", undefined, "a model_response whose data does not match its schema (parts[1].args: Missing key)"],
      ["tool details of the wrong type", {}, "a tool_result whose data does not match its schema (details.exitCode: Expected"]
    ] as const
  ) {
    it.live(`${what}: the turn fails, saying why, and the log still loads`, () =>
      withPieces({ provider: provider(args), toolkit: Toolkit.make([odd]) }, ({ runtime, cwd }) =>
        Effect.gen(function*() {
          const session = yield* runtime.newSession({ cwd, mode: "bypassPermissions" })
          const outcome = yield* session.prompt([{ type: "text", text: "go" }])
          assert.include(outcome.error, where)
          assert.notInclude(outcome.error, SECRET)
          yield* runtime.closeSession(session.id)
          const { events } = yield* runtime.loadSession({ sessionId: session.id })
          assert.strictEqual(events[0]!.type, "turn_start")
          assert.strictEqual(events.at(-1)!.type, "turn_end")
          // Every result in the log answers a call a logged response asked for.
          const asked = new Set(events.flatMap((e) => (e.type === "model_response" ? e.data.parts.flatMap((p) => (p.type === "tool_call" ? [p.id] : [])) : [])))
          for (const e of events) if (e.type === "tool_result") assert.isTrue(asked.has(e.data.id), `a result for ${e.data.id}, which no logged response asked for`)
        })).pipe(Effect.provide(Logger.layer([]))))
  }
})
