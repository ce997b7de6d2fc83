/**
 * The order of a session's turns as a pure step (`Mailbox.step`): one at a time in the order
 * accepted; the next starts only once the running one's loop is done and its presenter let go;
 * a cancel interrupts the running turn and makes everything accepted before it start
 * cancelled; a presenter that leaves a queued turn leaves it to run unpresented.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Mailbox from "../../src/runtime/Mailbox.ts"

const text = (t: string) => [{ type: "text" as const, text: t }]
const submit = (t: string, presented = true): Mailbox.Input => ({ _tag: "Submit", content: text(t), presented })

/** Runs inputs through the step from `state`; returns the final state and every output, tagged. */
const run = (state: Mailbox.State, inputs: ReadonlyArray<Mailbox.Input>) => {
  const outputs: Array<string> = []
  for (const input of inputs) {
    const [next, out] = Mailbox.step(state, input)
    state = next
    for (const o of out) {
      outputs.push(o._tag === "Start" ? `Start ${o.turn.turn}${o.cancelled ? " cancelled" : ""}` : `${o._tag} ${o.turn}`)
    }
  }
  return { state, outputs }
}

describe("Mailbox: the order of turns", () => {
  it("numbers turns on from the log's, starts the first at once and queues the rest", () => {
    const { state, outputs } = run(Mailbox.initial(3), [submit("a"), submit("b")])
    assert.deepStrictEqual(outputs, ["Accepted 4", "Start 4", "Accepted 5"])
    assert.strictEqual(state.running?.turn, 4)
    assert.deepStrictEqual(state.queue.map((q) => q.turn), [5])
  })

  it("the next turn waits for the running one's loop and for its presenter, in either order", () => {
    const a = run(Mailbox.initial(0), [submit("a"), submit("b"), { _tag: "TurnDone", turn: 1 }])
    assert.deepStrictEqual(a.outputs.slice(3), [], "the presenter still holds turn 1")
    assert.deepStrictEqual(run(a.state, [{ _tag: "Released", turn: 1 }]).outputs, ["Start 2"])

    const b = run(Mailbox.initial(0), [submit("a"), submit("b"), { _tag: "Released", turn: 1 }])
    assert.deepStrictEqual(b.outputs, ["Accepted 1", "Start 1", "Accepted 2", "Abandoned 1"])
    assert.deepStrictEqual(run(b.state, [{ _tag: "TurnDone", turn: 1 }]).outputs, ["Start 2"])
  })

  it("a turn nobody presents needs only its loop to end", () => {
    const { outputs } = run(Mailbox.initial(0), [submit("a", false), submit("b", false), { _tag: "TurnDone", turn: 1 }])
    assert.deepStrictEqual(outputs, ["Accepted 1", "Start 1", "Accepted 2", "Start 2"])
  })

  it("cancel interrupts the running turn; what was accepted before it starts cancelled, what comes after runs", () => {
    const { outputs } = run(Mailbox.initial(0), [
      submit("a", false),
      submit("b", false),
      { _tag: "Cancel" },
      submit("c", false),
      { _tag: "TurnDone", turn: 1 },
      { _tag: "TurnDone", turn: 2 }
    ])
    assert.deepStrictEqual(outputs, ["Accepted 1", "Start 1", "Accepted 2", "Interrupt 1", "Accepted 3", "Start 2 cancelled", "Start 3"])
  })

  it("a cancel with nothing running interrupts nothing; a late TurnDone or Released changes nothing", () => {
    const idle = run(Mailbox.initial(0), [{ _tag: "Cancel" }, { _tag: "TurnDone", turn: 7 }, { _tag: "Released", turn: 7 }])
    assert.deepStrictEqual(idle.outputs, [])
    assert.isTrue(Mailbox.idle(idle.state))
    const done = run(Mailbox.initial(0), [submit("a"), { _tag: "TurnDone", turn: 1 }, { _tag: "Cancel" }])
    assert.deepStrictEqual(done.outputs, ["Accepted 1", "Start 1"], "a done turn is not interrupted")
  })

  it("a presenter leaving a queued turn leaves it to run unpresented", () => {
    const { state, outputs } = run(Mailbox.initial(0), [submit("a", false), submit("b"), { _tag: "Released", turn: 2 }, { _tag: "TurnDone", turn: 1 }])
    assert.deepStrictEqual(outputs, ["Accepted 1", "Start 1", "Accepted 2", "Start 2"])
    assert.strictEqual(state.running?.presented, false)
  })
})
