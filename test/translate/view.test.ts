/**
 * The per-session view: message ids are the same live (deltas as they stream) and replayed
 * (the logged responses), for any shape of turn; every card update repeats its title and kind;
 * a question is preceded by its call's card. Pure: events in, updates out.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import type { Canonical, CanonicalBody, EventBody, SessionEvent } from "../../src/log/Event.ts"
import type { AssistantPart } from "../../src/Vocabulary.ts"
import type * as Translate from "../../src/translate/Translate.ts"
import * as View from "../../src/translate/View.ts"

type Update = Translate.Update

/** Stamps bodies as a session does: canonical events take the next seq, ephemeral ones the last. */
type Entry = { readonly body: EventBody; readonly canonical: boolean; readonly session?: boolean }
const stamp = (turns: ReadonlyArray<ReadonlyArray<Entry>>): Array<SessionEvent> => {
  let seq = 0
  return turns.flatMap((bodies, t) =>
    bodies.map(({ body, canonical, session }) =>
      ({ ...body, sessionId: "s", seq: canonical ? ++seq : seq, ts: 0, turn: session === true ? null : t + 1 }) as SessionEvent
    )
  )
}

/** A text split into the deltas that streamed it (a split may leave pieces empty). */
const pieces = (text: string, cuts: ReadonlyArray<number>) => {
  const at = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b)
  return [0, ...at].map((start, i, all) => text.slice(start, all[i + 1] ?? text.length))
}

const part: fc.Arbitrary<AssistantPart> = fc.oneof(
  fc.record({ type: fc.constant("text" as const), text: fc.string({ maxLength: 6 }) }),
  fc.record({ type: fc.constant("thinking" as const), text: fc.string({ maxLength: 6 }) }),
  fc.record({ type: fc.constant("tool_call" as const), id: fc.constant("c"), name: fc.constant("read"), args: fc.constant({}) })
)
/** A model call: its parts, the cuts of each part's text into deltas, and what the turn logs after it. */
const modelCall = fc.record({
  parts: fc.array(part, { maxLength: 5 }),
  cuts: fc.array(fc.nat(8), { maxLength: 3 }),
  after: fc.constantFrom("nothing", "notice", "steering", "mode")
})
const turn = fc.record({ calls: fc.array(modelCall, { minLength: 1, maxLength: 4 }), failed: fc.boolean() })

/** One turn as it is published live (deltas, then each response) and logged (responses only). */
interface Turn {
  readonly calls: ReadonlyArray<{ readonly parts: ReadonlyArray<AssistantPart>; readonly cuts: ReadonlyArray<number>; readonly after: string }>
  readonly failed: boolean
}
const shapes = (t: Turn) => {
  const live: Array<Entry> = []
  const logged: Array<Entry> = []
  const both = (body: CanonicalBody, session = false) => {
    live.push({ body, canonical: true, session })
    logged.push({ body, canonical: true, session })
  }
  both({ type: "turn_start", data: { content: [{ type: "text", text: "go" }] } })
  t.calls.forEach((c, i) => {
    for (const p of c.parts) {
      if (p.type === "tool_call") continue
      // Empty deltas are never published (the turn skips them).
      for (const text of pieces(p.text, c.cuts)) if (text.length > 0) live.push({ body: { type: p.type === "text" ? "text_delta" : "thinking_delta", data: { text } }, canonical: false })
    }
    both({ type: "model_response", data: { call: i + 1, parts: c.parts, stop: "end_turn" } })
    if (c.after === "notice") both({ type: "notice", data: { text: "note" } })
    // A session-level event logged while the turn runs (a mode change) ends no message.
    if (c.after === "mode") both({ type: "mode_changed", data: { mode: "plan" } }, true)
    if (c.after === "steering") both({ type: "turn_input", data: { content: [{ type: "text", text: "more" }] } })
  })
  both({ type: "turn_end", data: t.failed ? { stopReason: "end_turn", error: "it failed" } : { stopReason: "end_turn" } })
  return { live, logged }
}

/** Chunks folded as a client folds them: by message id, in order, with their kind and whole text. */
const messages = (updates: ReadonlyArray<Update>) => {
  const out = new Map<string, [string, string]>()
  for (const u of updates) {
    if (u.sessionUpdate !== "agent_message_chunk" && u.sessionUpdate !== "agent_thought_chunk" && u.sessionUpdate !== "user_message_chunk") continue
    assert.isString(u.messageId)
    const id = u.messageId as string
    const known = out.get(id)
    if (known !== undefined) {
      assert.strictEqual(known[0], u.sessionUpdate, `message ${id} mixes kinds`)
      known[1] += (u.content as { text: string }).text
    } else out.set(id, [u.sessionUpdate, (u.content as { text: string }).text])
  }
  return [...out].map(([id, [kind, text]]) => [id, kind, text])
}

describe("View: message ids", () => {
  it("live deltas and replayed responses give the same messages with the same ids, for any turns (property)", () => {
    fc.assert(
      fc.property(fc.array(turn, { minLength: 1, maxLength: 3 }), (turns) => {
        const built = turns.map(shapes)
        const liveView = View.make()
        const replayView = View.make()
        const live = stamp(built.map((b) => b.live)).flatMap((e) => liveView.live(e))
        const replayed = stamp(built.map((b) => b.logged)).flatMap((e) => replayView.replay(e as Canonical))
        // The replay adds the prompts (`u<turn>`); everything else is the same message for message.
        const shown = messages(replayed)
        assert.deepStrictEqual(shown.filter(([id]) => !/^u\d+$/.test(id!)), messages(live))
        // A message never spans a kind: each run of text or thinking has its own id.
        const ids = shown.map(([id]) => id)
        assert.strictEqual(new Set(ids).size, ids.length)
      }),
      { numRuns: 500 }
    )
  })

  it("the runs of a turn: thinking then text are two messages; tool calls inside a call do not split one; the next call starts anew", () => {
    const view = View.make()
    const calls: Array<CanonicalBody> = [
      { type: "turn_start", data: { content: [{ type: "text", text: "go" }] } },
      {
        type: "model_response",
        data: {
          call: 1,
          stop: "tool_use",
          parts: [
            { type: "thinking", text: "Hm." },
            { type: "text", text: "A" },
            { type: "tool_call", id: "c", name: "read", args: {} },
            { type: "text", text: "B" }
          ]
        }
      },
      { type: "model_response", data: { call: 2, stop: "end_turn", parts: [{ type: "text", text: "C" }] } }
    ]
    const updates = stamp([calls.map((body) => ({ body, canonical: true }))]).flatMap((e) => view.replay(e as Canonical))
    assert.deepStrictEqual(messages(updates), [
      ["u1", "user_message_chunk", "go"],
      ["m1.1", "agent_thought_chunk", "Hm."],
      ["m1.2", "agent_message_chunk", "AB"],
      ["m1.3", "agent_message_chunk", "C"]
    ])
    assert.deepStrictEqual(updates[0], { sessionUpdate: "session_info_update", title: "go" })
  })
})

describe("View: cards", () => {
  const e = (body: EventBody, seq = 1): SessionEvent => ({ ...body, sessionId: "s", seq, ts: 0, turn: 1 }) as SessionEvent

  it("every update of a call repeats its title and kind, whoever made it", () => {
    const view = View.make()
    view.live(e({ type: "tool_call", data: { id: "b1", name: "bash", args: { command: "ls" }, title: "`ls`", kind: "execute" } }))
    for (const body of [
      { type: "tool_running", data: { id: "b1" } },
      { type: "tool_progress", data: { id: "b1", output: "a\n" } },
      { type: "tool_terminal", data: { id: "b1", terminalId: "t1" } },
      { type: "tool_result", data: { id: "b1", ok: true, content: "a\n" } }
    ] as Array<EventBody>) {
      for (const u of view.live(e(body))) assert.deepInclude(u, { title: "`ls`", kind: "execute" })
    }
    // An update made elsewhere (a child's card) is completed the same way.
    assert.deepInclude(view.card({ sessionUpdate: "tool_call_update", toolCallId: "b1", status: "failed" }), { title: "`ls`", kind: "execute" })
  })

  it("a question about a call the client was not told of announces it first, with its change; about a known one, adds the change", () => {
    const view = View.make()
    const asked = {
      toolCallId: "x/w1",
      title: "general — Write a.txt",
      kind: "edit" as const,
      status: "pending" as const,
      rawInput: { path: "a.txt" },
      locations: [{ path: "/w/a.txt" }],
      content: [{ type: "diff" as const, path: "/w/a.txt", oldText: null, newText: "new\n" }]
    }
    assert.deepStrictEqual(view.announce(asked), [{
      sessionUpdate: "tool_call",
      toolCallId: "x/w1",
      title: "general — Write a.txt",
      kind: "edit",
      status: "pending",
      rawInput: { path: "a.txt" },
      locations: [{ path: "/w/a.txt" }],
      content: [{ type: "diff", path: "/w/a.txt", newText: "new\n" }]
    }])
    assert.deepStrictEqual(view.announce(asked), [{
      sessionUpdate: "tool_call_update",
      toolCallId: "x/w1",
      title: "general — Write a.txt",
      kind: "edit",
      content: [{ type: "diff", path: "/w/a.txt", newText: "new\n" }],
      locations: [{ path: "/w/a.txt" }]
    }])
    assert.deepStrictEqual(view.announce({ ...asked, content: undefined } as never), [])
  })
})
