/**
 * The presenter of a turn, purely: events in, actions out. What the e2e tests show through the
 * built agent, here in the corners they cannot reach cheaply: a question about a call nobody
 * announced, a child whose result never came, a child's compaction in the native form.
 */
import { assert, describe, it } from "@effect/vitest"
import type { EventBody, SessionEvent } from "../../src/log/Event.ts"
import * as Present from "../../src/translate/Present.ts"
import type * as Shown from "../../src/translate/Shown.ts"

let seq = 0
const e = (body: EventBody, sessionId = "p", turn = 1): SessionEvent => ({ ...body, sessionId, seq: ++seq, ts: 0, turn }) as SessionEvent
const child = (body: EventBody, turn = 1) => e({ type: "child_event", data: { event: e(body, "c", turn) } })
const updatesOf = (actions: ReadonlyArray<Shown.Action>, sessionId = "p") =>
  actions.flatMap((a) => (a._tag === "update" && a.sessionId === sessionId ? [a.update as Record<string, unknown>] : []))

const asked = (toolCallId: string) => ({
  type: "permission_asked" as const,
  data: {
    requestId: "r1",
    toolCall: { toolCallId, title: "Write a.txt", kind: "edit" as const, status: "pending" as const, rawInput: { path: "a.txt" }, locations: [{ path: "/w/a.txt" }] },
    options: [{ optionId: "allow_once" as const, name: "Allow once", kind: "allow_once" as const }]
  }
})

describe("Present", () => {
  it("a question about a call the client was never told of is preceded by its tool_call", () => {
    const presenter = Present.make("p", { native: false })
    const actions = presenter.live(e(asked("x1")))
    assert.deepStrictEqual(actions.map((a) => a._tag), ["update", "ask"])
    assert.deepInclude(actions[0], { _tag: "update", sessionId: "p" })
    assert.deepInclude((actions[0] as { update: object }).update, { sessionUpdate: "tool_call", toolCallId: "x1", title: "Write a.txt", kind: "edit", status: "pending" })
  })

  it("fallback: the spawn_agent call is the child's card; its own result is not shown; a child without a result is finished at the turn's end", () => {
    const presenter = Present.make("p", { native: false })
    const shown = [
      e({ type: "tool_call", data: { id: "s1", name: "spawn_agent", args: { task: "Look" }, title: "Spawn explorer — Look", kind: "think" } }),
      e({ type: "subagent", data: { event: "spawned", id: "c", toolCallId: "s1", agent: "explorer", task: "Look" } }),
      e({ type: "tool_result", data: { id: "s1", ok: true, status: "done", content: "{\"id\":\"c\"}", details: { output: "Started explorer c" } } }),
      child({ type: "tool_call", data: { id: "r", name: "read", args: {}, title: "Read a.txt", kind: "read" } }),
      child({ type: "tool_result", data: { id: "r", ok: true, status: "done", content: "a" } }),
      e({ type: "turn_end", data: { stopReason: "cancelled" } })
    ].flatMap((event) => updatesOf(presenter.live(event)))
    const card = shown.filter((u) => u.toolCallId === "s1")
    assert.isFalse(card.some((u) => u.status === "completed"), "the spawn result does not finish the child's card")
    assert.isTrue(card.slice(1).every((u) => u.title === "explorer — Look" && u.kind === "think"))
    assert.deepInclude(card.at(-1)!, {
      status: "failed",
      content: [{ type: "content", content: { type: "text", text: "✓ Read a.txt\n\nIt ended without an answer." } }]
    })
    assert.isFalse(shown.some((u) => u.sessionUpdate === "tool_call" && u.toolCallId !== "s1"), "one card for the child")
  })

  it("native: a child's compaction is shown as the client shows compactions (compaction_update when it said so)", () => {
    const presenter = Present.make("p", { native: true, shown: { compaction: true } })
    const actions = [
      e({ type: "subagent", data: { event: "spawned", id: "c", toolCallId: "s1", agent: "general", task: "Work" } }),
      child({ type: "compacting", data: { id: "1.1", trigger: "threshold" } })
    ].flatMap((event) => presenter.live(event))
    assert.deepStrictEqual(updatesOf(actions, "c"), [{ sessionUpdate: "compaction_update", compactionId: "1.1", status: "in_progress" }])
  })
})
