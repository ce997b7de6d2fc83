/**
 * The pure parts of `/rewind`: which turn it goes back to (and which it refuses), which
 * checkpoint pairs tell someone else's changes, how History folds a `rewound` event, and that
 * `/undo` leaves rewound turns alone.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Rewind from "../../src/checkpoints/Rewind.ts"
import type { Canonical, CanonicalBody } from "../../src/log/Event.ts"
import * as History from "../../src/log/History.ts"
import * as Undo from "../../src/session/Undo.ts"

const makeLog = () => {
  const events: Array<Canonical> = []
  const push = (turn: number | null, body: CanonicalBody) => {
    const event = { ...body, sessionId: "s", seq: events.length + 1, ts: 1, turn } as Canonical
    events.push(event)
    return event
  }
  const prompt = (turn: number, text: string, command?: string) =>
    push(turn, { type: "turn_start", data: { content: [{ type: "text", text }], ...(command !== undefined ? { command: { name: command, arguments: "", local: true } } : {}) } })
  const answer = (turn: number, text: string) => {
    push(turn, { type: "model_response", data: { call: 1, parts: [{ type: "text", text }], stop: "end_turn" } })
    push(turn, { type: "turn_end", data: { stopReason: "end_turn" } })
  }
  const checkpoint = (turn: number, at: "before" | "after", id: string) => push(turn, { type: "checkpoint", data: { turn, at, id, roots: ["/w"] } })
  return { events, push, prompt, answer, checkpoint }
}

describe("Rewind.target", () => {
  it("defaults to the last turn the model still sees; refuses a missing, rewound, /rewind or non-numeric turn", () => {
    const log = makeLog()
    log.prompt(1, "one")
    log.answer(1, "A1")
    log.prompt(2, "two")
    log.answer(2, "A2")
    assert.deepStrictEqual(Rewind.target(log.events, 3, ""), { _tag: "Target", toTurn: 2, fromSeq: 4 })
    assert.deepStrictEqual(Rewind.target(log.events, 3, " 1 "), { _tag: "Target", toTurn: 1, fromSeq: 1 })
    assert.strictEqual((Rewind.target(log.events, 3, "3") as { why: string }).why, "there is no turn 3 before this one")
    assert.match((Rewind.target(log.events, 3, "two") as { why: string }).why, /is not a turn number/)
    log.prompt(3, "/rewind 2", "rewind")
    log.push(3, { type: "rewound", data: { toTurn: 2, fromSeq: 4, restored: [], removed: [], skipped: [] } })
    log.push(3, { type: "turn_end", data: { stopReason: "end_turn" } })
    // Turn 2 is gone and turn 3 was the rewind: the default is turn 1.
    assert.deepStrictEqual(Rewind.target(log.events, 4, ""), { _tag: "Target", toTurn: 1, fromSeq: 1 })
    assert.strictEqual((Rewind.target(log.events, 4, "2") as { why: string }).why, "turn 2 was rewound already")
    assert.strictEqual((Rewind.target(log.events, 4, "3") as { why: string }).why, "turn 3 was itself a /rewind")
  })

  it("a refused rewind leaves every turn in place; a compaction after the turn began refuses it", () => {
    const log = makeLog()
    log.prompt(1, "one")
    log.answer(1, "A1")
    log.prompt(2, "/rewind 1", "rewind")
    log.push(2, { type: "rewound", data: { toTurn: 1, fromSeq: 1, restored: [], removed: [], skipped: [], refused: "no" } })
    assert.strictEqual(Rewind.target(log.events, 3, "1")._tag, "Target")
    log.prompt(3, "three")
    log.push(3, {
      type: "compaction",
      data: { id: "c", trigger: "manual", fromSeq: 1, toSeq: 3, keepFromSeq: 4, promptHash: "h", summaryForModel: "s", summaryForUser: "s", usageBefore: 1, usageAfter: 1 }
    })
    assert.match((Rewind.target(log.events, 4, "1") as { why: string }).why, /compacted in turn 3, after turn 1 began/)
  })
})

describe("Rewind.checkpointsFrom and Rewind.gaps", () => {
  it("starts at the first before-checkpoint from the turn on; someone else's window is each after and what follows it", () => {
    const log = makeLog()
    log.checkpoint(1, "before", "b1")
    log.checkpoint(1, "after", "a1")
    log.checkpoint(3, "before", "b3")
    log.checkpoint(3, "after", "a3")
    log.checkpoint(4, "before", "b4") // a turn that crashed: no after
    const from2 = Rewind.checkpointsFrom(log.events, 2, 5)
    assert.deepStrictEqual(from2.map((e) => e.data.id), ["b3", "a3", "b4"])
    assert.deepStrictEqual(Rewind.gaps(from2, "now"), [["a3", "b4"]])
    assert.deepStrictEqual(Rewind.gaps(Rewind.checkpointsFrom(log.events, 1, 4), "now"), [["a1", "b3"], ["a3", "now"]])
    assert.deepStrictEqual(Rewind.checkpointsFrom(log.events, 5, 6), [])
  })
})

describe("History and Undo after a rewind", () => {
  it("the model's view drops everything from the rewound turn's turn_start on; a refused rewind drops nothing; /undo skips rewound turns", () => {
    const log = makeLog()
    log.prompt(1, "one")
    log.answer(1, "A1")
    log.prompt(2, "two")
    log.push(2, { type: "tool_call", data: { id: "w", name: "write", args: {}, title: "write", kind: "edit" } })
    log.push(2, { type: "tool_result", data: { id: "w", ok: true, status: "done", content: "ok", details: { diff: [{ path: "/w/a", oldText: null, newText: "a" }] } } })
    log.answer(2, "A2")
    log.prompt(3, "/rewind 2", "rewind")
    const history = History.make()
    for (const event of log.events) History.apply(history, event)
    assert.strictEqual(history.messages.length, 5)
    assert.strictEqual(Undo.lastChangingTurn(log.events), 2)
    History.apply(history, log.push(3, { type: "rewound", data: { toTurn: 2, fromSeq: 4, restored: [], removed: [], skipped: [], refused: "no" } }))
    assert.strictEqual(history.messages.length, 5)
    History.apply(history, log.push(3, { type: "rewound", data: { toTurn: 2, fromSeq: 4, restored: [], removed: ["/w/a"], skipped: [] } }))
    assert.deepStrictEqual(history.messages.map((m) => m.role), ["user", "assistant"])
    assert.strictEqual(JSON.stringify(history.messages).includes("two"), false)
    assert.strictEqual(Undo.lastChangingTurn(log.events), undefined)
  })
})
