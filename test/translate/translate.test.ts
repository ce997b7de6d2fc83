/**
 * Translate (Event → ACP `session/update`) against the official ACP v1 JSON Schema: every update
 * `live` and `replay` produce for any event, wrapped as a `SessionNotification`, must validate;
 * and the mapping itself is pinned down by examples.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Schema from "effect/Schema"
import * as fc from "fast-check"
import * as Update from "../../src/acp/Update.ts"
import * as Framing from "../../src/jsonrpc/Framing.ts"
import * as Protocol from "../../src/jsonrpc/Protocol.ts"
import {
  type Canonical,
  CanonicalBody,
  type EphemeralBody,
  type EventBody,
  isEphemeral,
  type SessionEvent,
  ToolStatus
} from "../../src/log/Event.ts"
import { type AssistantPart, type ModeId, modes, type ToolDetails, type UserBlock } from "../../src/Vocabulary.ts"
import * as Translate from "../../src/translate/Translate.ts"
import { validateDef } from "../support/AcpSchema.ts"

/** What Translate produces: the wire side of the ACP Schema of `session/update`. */
type SessionUpdate = typeof Update.SessionUpdate.Encoded

// ---------------------------------------------------------------------------
// Arbitraries
// ---------------------------------------------------------------------------

/** Strings with the characters that break naive JSON or line handling, plus any code point. */
const str = fc.string({
  unit: fc.oneof(
    { weight: 3, arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 1 }) },
    { weight: 1, arbitrary: fc.constantFrom("\u2028", "\u2029", "\r\n", "\n", "😀", "é", "中", "\u0000", "\"", "\\", "\ud800") }
  ),
  maxLength: 24
})
const int = fc.integer({ min: 0, max: 2 ** 31 - 1 })
const modeId = fc.constantFrom<ModeId>(...modes.map((m) => m.id))

const jsonValue: fc.Arbitrary<unknown> = fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.parse(JSON.stringify(v)) as unknown)

const opt = <K extends string, V>(key: K, arb: fc.Arbitrary<V>): fc.Arbitrary<{ [P in K]?: V }> =>
  fc.option(arb, { nil: undefined }).map((v) => (v === undefined ? {} : { [key]: v }) as { [P in K]?: V })

const userBlock: fc.Arbitrary<UserBlock> = fc.oneof(
  fc.record({ type: fc.constant("text" as const), text: str }),
  fc.tuple(str, str, opt("mimeType", str), opt("title", str), opt("description", str), opt("size", int)).map(
    ([uri, name, a, b, c, d]) => ({ type: "resource_link" as const, uri, name, ...a, ...b, ...c, ...d })
  ),
  fc.tuple(str, str, opt("uri", str)).map(([data, mimeType, u]) => ({ type: "image" as const, data, mimeType, ...u })),
  fc.tuple(str, opt("mimeType", str), opt("text", str), opt("blob", str)).map(
    ([uri, m, t, b]) => ({ type: "resource" as const, uri, ...m, ...t, ...b })
  )
)

const assistantPart: fc.Arbitrary<AssistantPart> = fc.oneof(
  fc.record({ type: fc.constant("text" as const), text: str }),
  fc.tuple(str, opt("signature", str)).map(([text, s]) => ({ type: "thinking" as const, text, ...s })),
  fc.record({ type: fc.constant("tool_call" as const), id: str, name: str, args: jsonValue })
)

const toolDetails: fc.Arbitrary<ToolDetails> = fc.tuple(
  opt("diff", fc.array(fc.record({ path: str, oldText: fc.option(str, { nil: null }), newText: str }), { maxLength: 3 })),
  opt("exitCode", fc.option(fc.integer({ min: -255, max: 255 }), { nil: null })),
  opt("output", str),
  opt("truncated", fc.boolean()),
  opt("terminalId", str)
).map(([a, b, c, d, e]) => ({ ...a, ...b, ...c, ...d, ...e }))

const canonicalBody: fc.Arbitrary<CanonicalBody> = fc.oneof(
  fc.tuple(
    fc.array(userBlock, { maxLength: 4 }),
    opt("command", fc.tuple(str, str, opt("local", fc.boolean())).map(([name, args, l]) => ({ name, arguments: args, ...l })))
  ).map(([content, c]) => ({ type: "turn_start" as const, data: { content, ...c } })),
  fc.tuple(
    str,
    fc.constantFrom("manual", "threshold", "overflow" as const),
    fc.tuple(int, int, int),
    str,
    str,
    fc.tuple(int, int),
    opt("focus", str)
  ).map(([id, trigger, [fromSeq, toSeq, keepFromSeq], summaryForModel, summaryForUser, [usageBefore, usageAfter], f]) => ({
    type: "compaction" as const,
    data: { id, trigger, fromSeq, toSeq, keepFromSeq, promptHash: "0".repeat(64), summaryForModel, summaryForUser, usageBefore, usageAfter, ...f }
  })),
  fc.record({ type: fc.constant("skill_activation" as const), data: fc.record({ name: str, path: str, sha256: str, body: str }) }),
  fc.record({ type: fc.constant("turn_input" as const), data: fc.record({ content: fc.array(userBlock, { maxLength: 3 }) }) }),
  fc.tuple(int, fc.array(str, { maxLength: 3 }), fc.array(str, { maxLength: 3 }), opt("refused", str)).map(([turn, restored, removed, r]) => ({
    type: "undo" as const,
    data: { turn, restored, removed, ...r }
  })),
  fc.tuple(int, fc.constantFrom("before", "after" as const), str, fc.array(str, { maxLength: 3 }), opt("skipped", fc.array(str, { maxLength: 2 }))).map((
    [turn, at, id, roots, k]
  ) => ({ type: "checkpoint" as const, data: { turn, at, id, roots, ...k } })),
  fc.tuple(int, int, opt("checkpoint", str), fc.array(str, { maxLength: 3 }), fc.array(str, { maxLength: 3 }), fc.array(str, { maxLength: 2 }), opt("refused", str)).map((
    [toTurn, fromSeq, c, restored, removed, skipped, r]
  ) => ({ type: "rewound" as const, data: { toTurn, fromSeq, ...c, restored, removed, skipped, ...r } })),
  fc.tuple(
    fc.integer({ min: 1, max: 50 }),
    fc.array(assistantPart, { maxLength: 5 }),
    opt("usage", fc.tuple(int, int, opt("cached", int)).map(([input, output, c]) => ({ input, output, ...c }))),
    fc.constantFrom("end_turn", "tool_use", "max_tokens", "refusal", "error", "cancelled" as const),
    opt("error", str),
    opt("compaction", str)
  ).map(([call, parts, u, stop, e, c]) => ({ type: "model_response" as const, data: { call, parts, stop, ...u, ...e, ...c } })),
  fc.tuple(
    fc.integer({ min: 1, max: 50 }),
    fc.array(
      fc.oneof(
        fc.record({ type: fc.constant("text" as const), text: str }),
        fc.tuple(str, opt("signature", str)).map(([text, s]) => ({ type: "thinking" as const, text, ...s }))
      ),
      { maxLength: 4 }
    )
  ).map(([call, parts]) => ({ type: "model_partial" as const, data: { call, parts } })),
  fc.tuple(
    str,
    str,
    jsonValue,
    str,
    fc.constantFrom("read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other" as const),
    opt("locations", fc.array(fc.tuple(str, opt("line", fc.integer({ min: 1, max: 2 ** 32 - 1 }))).map(([path, l]) => ({ path, ...l })), { maxLength: 3 }))
  ).map(([id, name, args, title, kind, l]) => ({ type: "tool_call" as const, data: { id, name, args, title, kind, ...l } })),
  fc.tuple(str, opt("title", str), fc.constantFrom(...ToolStatus.literals), str, opt("details", toolDetails)).map(
    ([id, t, status, content, d]) => ({ type: "tool_result" as const, data: { id, ...t, ok: status === "done", status, content, ...d } })
  ),
  fc.tuple(fc.constantFrom("end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled" as const), opt("error", str)).map(
    ([stopReason, e]) => ({ type: "turn_end" as const, data: { stopReason, ...e } })
  ),
  fc.record({ type: fc.constant("mode_changed" as const), data: fc.record({ mode: modeId }) }),
  fc.record({ type: fc.constant("config_changed" as const), data: fc.record({ id: str, value: str }) }),
  fc.record({
    type: fc.constant("plan" as const),
    data: fc.record({
      entries: fc.array(
        fc.record({
          content: str,
          status: fc.constantFrom("pending", "in_progress", "completed" as const),
          priority: fc.constantFrom("high", "medium", "low" as const)
        }),
        { maxLength: 4 }
      )
    })
  }),
  fc.tuple(
    str,
    fc.constantFrom("allow_once", "allow_always", "reject_once", "reject_always", "cancelled", "timeout", "unanswerable" as const),
    opt("rule", fc.record({ decision: fc.constantFrom("allow", "reject" as const), kind: fc.constantFrom("path", "command", "tool", "host" as const), value: str, label: str }))
  ).map(([toolCallId, outcome, r]) => ({ type: "permission" as const, data: { toolCallId, outcome, ...r } })),
  fc.tuple(str, opt("source", str)).map(([text, r]) => ({ type: "notice" as const, data: { text, ...r } })),
  fc.tuple(
    fc.constantFrom("PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SessionStart" as const),
    str,
    fc.constantFrom("none", "allow", "ask", "deny", "block" as const),
    opt("toolCallId", str),
    opt("reason", str),
    opt("context", str),
    opt("message", str),
    opt("stop", str)
  ).map(([event, command, decision, t, r, c, m, s]) => ({ type: "hook" as const, data: { event, command, decision, ...t, ...r, ...c, ...m, ...s } })),
  fc.record({
    type: fc.constant("mcp_servers" as const),
    data: fc.record({
      servers: fc.array(
        fc.tuple(str, fc.constantFrom("stdio", "http", "sse" as const), opt("command", str), opt("env", fc.array(str, { maxLength: 2 })))
          .map(([name, transport, c, e]) => ({ name, transport, ...c, ...e })),
        { maxLength: 2 }
      )
    })
  }),
  fc.tuple(
    fc.constantFrom("spawned", "state", "result", "closed", "input" as const),
    str,
    opt("agent", str),
    opt("task", str),
    opt("state", fc.constantFrom("running", "idle", "failed", "timed_out", "cancelled", "closed" as const)),
    opt("answer", str),
    opt("error", str)
  ).map(([event, id, a, t, st, an, e]) => ({ type: "subagent" as const, data: { event, id, ...a, ...t, ...st, ...an, ...e } }))
)

/** Every canonical type the log schema knows, read off the schema itself. */
const canonicalTypes: ReadonlyArray<string> = CanonicalBody.members.map((m) => m.fields.type.literal)
const ephemeralTypes: ReadonlyArray<string> = [
  "text_delta",
  "thinking_delta",
  "tool_running",
  "tool_progress",
  "tool_terminal",
  "permission_asked",
  "client_call",
  "question_withdrawn",
  "child_event",
  "compacting"
]

const ephemeralBody: fc.Arbitrary<EphemeralBody> = fc.oneof(
  fc.record({ type: fc.constant("text_delta" as const), data: fc.record({ text: str }) }),
  fc.record({ type: fc.constant("thinking_delta" as const), data: fc.record({ text: str }) }),
  fc.record({ type: fc.constant("tool_running" as const), data: fc.record({ id: str }) }),
  fc.record({ type: fc.constant("tool_progress" as const), data: fc.record({ id: str, output: str }) }),
  fc.record({ type: fc.constant("tool_terminal" as const), data: fc.record({ id: str, terminalId: str }) }),
  fc.record({
    type: fc.constant("permission_asked" as const),
    data: fc.record({
      requestId: str,
      toolCall: fc.record({ toolCallId: str, title: str, kind: fc.constant("edit" as const), status: fc.constant("pending" as const), rawInput: jsonValue }),
      options: fc.constant([])
    })
  }),
  fc.record({ type: fc.constant("client_call" as const), data: fc.record({ requestId: str, op: fc.record({ method: fc.constant("fs/read_text_file" as const), params: fc.record({ path: str }) }) }) }),
  fc.record({ type: fc.constant("question_withdrawn" as const), data: fc.record({ requestId: str }) }),
  fc.record({ type: fc.constant("child_event" as const), data: fc.record({ event: fc.record({ type: fc.constant("text_delta"), data: fc.record({ text: str }) }) }) }),
  fc.record({ type: fc.constant("compacting" as const), data: fc.record({ id: str, trigger: fc.constantFrom("manual", "threshold", "overflow" as const) }) })
)

const stamp = <B extends EventBody>(body: fc.Arbitrary<B>): fc.Arbitrary<SessionEvent<B>> =>
  fc.tuple(body, fc.uuid(), fc.nat(), fc.nat(), fc.option(fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 1000 })), { nil: null })).map(
    ([b, sessionId, seq, ts, turn]) => ({ ...b, sessionId, seq, ts, turn }) as SessionEvent<B>
  )

const canonicalEvent: fc.Arbitrary<Canonical> = stamp(canonicalBody)
const anyEvent: fc.Arbitrary<SessionEvent> = fc.oneof(stamp(canonicalBody), stamp(ephemeralBody))

// ---------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------

/** Paths to values JSON cannot carry (they would vanish or change on the wire). */
const nonJson = (value: unknown, path = "$"): Array<string> => {
  if (value === undefined) return [path]
  if (typeof value === "number") return Number.isFinite(value) && !Object.is(value, -0) ? [] : [path]
  if (typeof value === "function" || typeof value === "symbol" || typeof value === "bigint") return [path]
  if (Array.isArray(value)) return value.flatMap((item, i) => nonJson(item, `${path}[${i}]`))
  if (typeof value === "object" && value !== null) return Object.entries(value).flatMap(([k, v]) => nonJson(v, `${path}.${k}`))
  return []
}

/** Asserts an update is a valid `SessionNotification` payload, exactly as it would be written. */
const assertValid = (sessionId: string, update: SessionUpdate) => {
  const notification = { sessionId, update }
  assert.deepStrictEqual(nonJson(notification), [], "the update must survive JSON unchanged")
  const wire = JSON.parse(JSON.stringify(notification)) as unknown
  const result = validateDef("SessionNotification", wire)
  if (!result.ok) assert.fail(`invalid SessionNotification ${JSON.stringify(update)}: ${result.errors}`)
}

const ev = <B extends EventBody>(body: B, turn: number | null = 1): SessionEvent<B> =>
  ({ ...body, sessionId: "s-1", seq: 7, ts: 1_700_000_000_000, turn }) as SessionEvent<B>

describe("Translate: every update is valid ACP (property)", () => {
  it("live(event) for any canonical or ephemeral event validates as SessionNotification", () => {
    fc.assert(
      fc.property(anyEvent, (event) => {
        for (const update of [...Translate.live(event), ...Translate.live(event, { compaction: true })]) assertValid(event.sessionId, update)
      }),
      { numRuns: 600 }
    )
  })

  it("replay(event) for any canonical event validates as SessionNotification", () => {
    fc.assert(
      fc.property(canonicalEvent, (event) => {
        for (const update of [...Translate.replay(event), ...Translate.replay(event, { compaction: true })]) assertValid(event.sessionId, update)
      }),
      { numRuns: 600 }
    )
  })

  it("the arbitraries reach every event type and every update kind", () => {
    // Guards the two properties above against vacuity: they must see each kind of update.
    const events = fc.sample(anyEvent, { numRuns: 3000, seed: 42 })
    assert.deepStrictEqual([...new Set(events.map((e) => e.type))].sort(), [...canonicalTypes, ...ephemeralTypes].sort())
    const kinds = new Set<string>()
    for (const e of events) {
      for (const options of [{}, { compaction: true }]) {
        for (const u of Translate.live(e, options)) kinds.add(u.sessionUpdate)
        if (!isEphemeral(e)) for (const u of Translate.replay(e, options)) kinds.add(u.sessionUpdate)
      }
    }
    assert.deepStrictEqual([...kinds].sort(), [
      "agent_message_chunk",
      "agent_thought_chunk",
      "compaction_update",
      "config_option_update",
      "current_mode_update",
      "plan",
      "tool_call",
      "tool_call_update",
      "user_message_chunk"
    ])
  })

  it("live text deltas carry their text unchanged; replay of a response carries its texts in order", () => {
    fc.assert(
      fc.property(str, fc.array(assistantPart, { maxLength: 6 }), (delta, parts) => {
        assert.deepStrictEqual(Translate.live(ev({ type: "text_delta", data: { text: delta } })), [
          { sessionUpdate: "agent_message_chunk", content: { type: "text", text: delta } }
        ])
        const replayed = Translate.replay(ev({ type: "model_response", data: { call: 1, parts, stop: "end_turn" } }))
        const expected = parts.flatMap((p): Array<SessionUpdate> =>
          p.type === "text" && p.text.length > 0
            ? [{ sessionUpdate: "agent_message_chunk", content: { type: "text", text: p.text } }]
            : p.type === "thinking" && p.text.length > 0
            ? [{ sessionUpdate: "agent_thought_chunk", content: { type: "text", text: p.text } }]
            : []
        )
        assert.deepStrictEqual(replayed, expected)
      })
    )
  })
})

const decodeUpdate = Schema.decodeUnknownSync(Update.SessionUpdate)
const encodeUpdate = Schema.encodeSync(Update.SessionUpdate)

/** Every update Translate makes of an event, live and (for a canonical one) in replay. */
const updatesOf = (event: SessionEvent): ReadonlyArray<SessionUpdate> =>
  isEphemeral(event) ? Translate.live(event) : [...Translate.live(event), ...Translate.replay(event)]

describe("Translate: the ACP Schemas of src/acp/ are its shapes (property)", () => {
  it("every update is exactly what the SessionUpdate Schema writes for it: decoded and encoded again, it is unchanged", () => {
    // Unknown keys, `null` where the Schema omits a key, values it would drop: each breaks this.
    fc.assert(
      fc.property(anyEvent, (event) => {
        for (const update of updatesOf(event)) assert.deepStrictEqual(encodeUpdate(decodeUpdate(update)), update)
      }),
      { numRuns: 600 }
    )
  })

  it("the precompiled encoder writes the bytes Framing.encode writes for the same notification (what Peer.notify sends)", () => {
    fc.assert(
      fc.property(anyEvent, str, fc.option(str, { nil: undefined }), (event, sessionId, messageId) => {
        const encode = Translate.encoder(sessionId)
        for (const plain of updatesOf(event)) {
          // Chunks carry message ids (as the view stamps them), in any order of ids.
          const update = messageId !== undefined && "content" in plain && !Array.isArray(plain.content) ? { ...plain, messageId } : plain
          assert.strictEqual(encode(update), Framing.encode(Protocol.makeNotification("session/update", { sessionId, update })))
        }
      }),
      { numRuns: 600 }
    )
    const line = Translate.encoder("s\u2028")({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "a\u2028b\u2029c😀" } })
    assert.strictEqual(
      line,
      `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s\\u2028","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a\\u2028b\\u2029c😀"}}}}\n`
    )
  })
})

describe("Translate: examples", () => {
  it("text_delta → agent_message_chunk; thinking_delta → agent_thought_chunk", () => {
    assert.deepStrictEqual(Translate.live(ev({ type: "text_delta", data: { text: "Hel" } })), [
      { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Hel" } }
    ])
    assert.deepStrictEqual(Translate.live(ev({ type: "thinking_delta", data: { text: "hmm" } })), [
      { sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "hmm" } }
    ])
  })

  it("live model_partial sends nothing: its text went out as deltas", () => {
    assert.deepStrictEqual(Translate.live(ev({ type: "model_partial", data: { call: 1, parts: [{ type: "text", text: "Hel" }] } })), [])
  })

  it("the first turn's start gives the session its title (shortened); a later turn's does not", () => {
    const long = "Fix   the failing test in src/a.ts\nand then " + "x".repeat(300)
    const [update] = Translate.titleUpdate(ev({ type: "turn_start", data: { content: [{ type: "text", text: long }] } }))
    assert.strictEqual(update?.sessionUpdate, "session_info_update")
    assert.isTrue(update?.sessionUpdate === "session_info_update" && typeof update.title === "string" && update.title.startsWith("Fix the failing test in src/a.ts and then") && update.title.endsWith("…"))
    assert.deepStrictEqual(Translate.titleUpdate(ev({ type: "turn_start", data: { content: [{ type: "text", text: "again" }] } }, 2)), [])
    assert.deepStrictEqual(Translate.titleUpdate(ev({ type: "text_delta", data: { text: "x" } })), [])
  })

  it("live model_response and turn_start send nothing (the final text is never re-sent)", () => {
    const response = ev({
      type: "model_response",
      data: {
        call: 1,
        parts: [{ type: "thinking", text: "plan" }, { type: "text", text: "Done." }, { type: "tool_call", id: "c1", name: "read", args: {} }],
        stop: "tool_use"
      }
    })
    assert.deepStrictEqual(Translate.live(response), [])
    assert.deepStrictEqual(Translate.live(ev({ type: "turn_start", data: { content: [{ type: "text", text: "hi" }] } })), [])
  })

  it("replay model_response → thought and message chunks in order, skipping tool calls and empty texts", () => {
    const response = ev({
      type: "model_response",
      data: {
        call: 2,
        parts: [
          { type: "thinking", text: "plan" },
          { type: "text", text: "" },
          { type: "text", text: "Done." },
          { type: "tool_call", id: "c1", name: "read", args: { path: "a" } }
        ],
        stop: "end_turn"
      }
    })
    assert.deepStrictEqual(Translate.replay(response), [
      { sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "plan" } },
      { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Done." } }
    ])
  })

  it("replay turn_start → user_message_chunks with ACP content blocks", () => {
    const start = ev({
      type: "turn_start",
      data: {
        content: [
          { type: "text", text: "look" },
          { type: "resource", uri: "file:///a.txt", text: "A", mimeType: "text/plain" },
          { type: "resource", uri: "file:///b.bin", blob: "AAE=" },
          { type: "resource_link", uri: "file:///c", name: "c", size: 3 }
        ]
      }
    })
    const updates = Translate.replay(start)
    assert.deepStrictEqual(updates, [
      { sessionUpdate: "user_message_chunk", content: { type: "text", text: "look" } },
      {
        sessionUpdate: "user_message_chunk",
        content: { type: "resource", resource: { uri: "file:///a.txt", text: "A", mimeType: "text/plain" } }
      },
      { sessionUpdate: "user_message_chunk", content: { type: "resource", resource: { uri: "file:///b.bin", blob: "AAE=" } } },
      { sessionUpdate: "user_message_chunk", content: { type: "resource_link", uri: "file:///c", name: "c", size: 3 } }
    ])
    for (const u of updates) assertValid("s-1", u)
  })

  it("tool_call → pending live, in_progress in replay, with its input and locations", () => {
    const call = ev({
      type: "tool_call",
      data: { id: "c1", name: "read", args: { path: "a.txt" }, title: "Read a.txt", kind: "read", locations: [{ path: "/w/a.txt", line: 3 }] }
    })
    const expected: SessionUpdate = {
      sessionUpdate: "tool_call",
      toolCallId: "c1",
      title: "Read a.txt",
      kind: "read",
      status: "pending",
      rawInput: { path: "a.txt" },
      locations: [{ path: "/w/a.txt", line: 3 }]
    }
    assert.deepStrictEqual(Translate.live(call), [expected])
    assert.deepStrictEqual(Translate.replay(call), [{ ...expected, status: "in_progress" }])
    assert.deepStrictEqual(Translate.live(ev({ type: "tool_running", data: { id: "c1" } })), [
      { sessionUpdate: "tool_call_update", toolCallId: "c1", status: "in_progress" }
    ])
  })

  it("tool_result with diff details → diff content, then the output text, and status from ok", () => {
    const result = ev({
      type: "tool_result",
      data: {
        id: "c2",
        ok: true,
        status: "done",
        content: "Edited a.txt",
        details: {
          diff: [{ path: "/w/a.txt", oldText: "x", newText: "y" }, { path: "/w/new.txt", oldText: null, newText: "n" }],
          exitCode: 0
        }
      }
    })
    const [update] = Translate.live(result)
    assert.deepStrictEqual(update, {
      sessionUpdate: "tool_call_update",
      toolCallId: "c2",
      status: "completed",
      content: [
        { type: "diff", path: "/w/a.txt", oldText: "x", newText: "y" },
        { type: "diff", path: "/w/new.txt", newText: "n" },
        { type: "content", content: { type: "text", text: "Edited a.txt" } }
      ],
      rawOutput: { ok: true, content: "Edited a.txt", exitCode: 0 }
    })
    assertValid("s-1", update!)
    assert.deepStrictEqual(Translate.replay(result), Translate.live(result))

    const failed = Translate.live(ev({ type: "tool_result", data: { id: "c3", ok: false, status: "failed", content: "boom", details: { output: "out", exitCode: 2 } } }))
    assert.deepStrictEqual(failed, [{
      sessionUpdate: "tool_call_update",
      toolCallId: "c3",
      status: "failed",
      content: [{ type: "content", content: { type: "text", text: "out" } }],
      rawOutput: { ok: false, content: "boom", exitCode: 2 }
    }])
  })

  it("a finished call repeats its title; one that ran in a client terminal keeps the terminal live, and shows its output in replay", () => {
    const result = ev({
      type: "tool_result",
      data: { id: "b1", title: "`make`", ok: true, status: "done", content: "built\n[exit code 0]", details: { output: "built\n", exitCode: 0, terminalId: "term-1" } }
    })
    const [live] = Translate.live(result)
    assert.deepStrictEqual(live, {
      sessionUpdate: "tool_call_update",
      toolCallId: "b1",
      title: "`make`",
      status: "completed",
      content: [{ type: "terminal", terminalId: "term-1" }],
      rawOutput: { ok: true, content: "built\n[exit code 0]", exitCode: 0 }
    })
    assertValid("s-1", live!)
    assert.deepStrictEqual(Translate.replay(result) as Array<unknown>, [{ ...(live as object), content: [{ type: "content", content: { type: "text", text: "built\n" } }] }])
    assert.deepStrictEqual(Translate.live(ev({ type: "tool_terminal", data: { id: "b1", terminalId: "term-1" } })), [
      { sessionUpdate: "tool_call_update", toolCallId: "b1", content: [{ type: "terminal", terminalId: "term-1" }] }
    ])
  })

  it("questions are the presenter's to ask: no session/update for them", () => {
    assert.deepStrictEqual(Translate.live(ev({ type: "question_withdrawn", data: { requestId: "1.1" } })), [])
    assert.deepStrictEqual(
      Translate.live(ev({ type: "client_call", data: { requestId: "1.2", op: { method: "fs/read_text_file", params: { path: "/w/a" } } } })),
      []
    )
  })

  it("turn_end with an error → the error as an agent_message_chunk; without → nothing", () => {
    const failed = ev({ type: "turn_end", data: { stopReason: "end_turn", error: "The model call failed: rate limited" } })
    const expected: Array<SessionUpdate> = [
      { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "The model call failed: rate limited" } }
    ]
    assert.deepStrictEqual(Translate.live(failed), expected)
    assert.deepStrictEqual(Translate.replay(failed), expected)
    assert.deepStrictEqual(Translate.live(ev({ type: "turn_end", data: { stopReason: "cancelled" } })), [])
  })

  it("mode_changed → current_mode_update and a config_option_update naming the new mode", () => {
    const updates = Translate.live(ev({ type: "mode_changed", data: { mode: "plan" } }, null))
    assert.strictEqual(updates.length, 2)
    assert.deepStrictEqual(updates[0], { sessionUpdate: "current_mode_update", currentModeId: "plan" })
    const config = updates[1]!
    assert.strictEqual(config.sessionUpdate, "config_option_update")
    if (config.sessionUpdate === "config_option_update") {
      assert.strictEqual(config.configOptions[0]!.currentValue, "plan")
    }
    for (const u of updates) assertValid("s-1", u)
  })

  it("config_changed has no update; plan → plan", () => {
    assert.deepStrictEqual(Translate.live(ev({ type: "config_changed", data: { id: "model", value: "x" } })), [])
    const entries = [{ content: "Write tests", status: "in_progress" as const, priority: "high" as const }]
    assert.deepStrictEqual(Translate.live(ev({ type: "plan", data: { entries } })), [{ sessionUpdate: "plan", entries }])
  })

  it("configOptions and modeState validate against SessionConfigOption and SessionModeState for every mode", () => {
    for (const mode of modes) {
      const options = Translate.configOptions({ mode: mode.id })
      assert.strictEqual(options.length >= 1, true)
      for (const option of options) {
        const result = validateDef("SessionConfigOption", JSON.parse(JSON.stringify(option)))
        assert.isTrue(result.ok, result.ok ? "" : result.errors)
      }
      const modeOption = options.find((o) => o.category === "mode")!
      assert.strictEqual(modeOption.currentValue, mode.id)
      assert.deepStrictEqual(modeOption.options.map((o) => o.value), modes.map((m) => m.id))

      const state = Translate.modeState(mode.id)
      const result = validateDef("SessionModeState", JSON.parse(JSON.stringify(state)))
      assert.isTrue(result.ok, result.ok ? "" : result.errors)
      assert.strictEqual(state.currentModeId, mode.id)
      assert.deepStrictEqual(state.availableModes.map((m) => m.id), ["default", "acceptEdits", "plan", "bypassPermissions"])
    }
  })

  it("the validator rejects a broken update (the checks above can fail)", () => {
    const bad = validateDef("SessionNotification", { sessionId: "s", update: { sessionUpdate: "agent_message_chunk", content: { type: "txt" } } })
    assert.isFalse(bad.ok)
  })
})
