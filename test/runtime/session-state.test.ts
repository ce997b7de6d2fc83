/**
 * A session's state as a pure step (`SessionState.step`), fed messages, its outputs read:
 * turns one at a time in the order accepted, the next only once the running one's loop is done
 * and its presenter let go; a cancel interrupts the running turn (once its loop has started)
 * and makes everything accepted before it start cancelled; steering goes into the running turn
 * until its last safe point, and what it never took becomes the next prompt; settings change
 * once logged; questions go to the presenter; a closed session takes no prompt.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as fc from "fast-check"
import type * as Models from "../../src/providers/Models.ts"
import type { EphemeralBody } from "../../src/log/Event.ts"
import { type SendResult, SessionError } from "../../src/session/Protocol.ts"
import type { Answer } from "../../src/Vocabulary.ts"
import * as SessionState from "../../src/runtime/SessionState.ts"

const text = (t: string) => [{ type: "text" as const, text: t }]
const reply = (): SessionState.Reply => Deferred.makeUnsafe<SendResult, SessionError>()
const asker = (): SessionState.Asker => Deferred.makeUnsafe<Answer | undefined>()
/** What a question publishes (the step only passes it on). */
const asking = (requestId: string): EphemeralBody => ({ type: "question_withdrawn", data: { requestId } })
/** A fiber standing for a turn's loop (the step only passes it on). */
const loop = (): SessionState.Loop => Effect.runFork(Effect.never) as Fiber.Fiber<unknown, unknown>

const submit = (t: string, presented = true): Extract<SessionState.Message, { _tag: "Submit" }> => ({ _tag: "Submit", content: text(t), presented })
const done = (turn: number, interrupted = false, at = 0): SessionState.Message => ({ _tag: "TurnDone", turn, interrupted, at })

const catalog: Models.Catalog = {
  entries: [{ key: "p/small", provider: "p", info: { id: "small" } as Models.ModelInfo }, { key: "p/big", provider: "p", info: { id: "big" } as Models.ModelInfo }],
  defaultModel: "p/small",
  info: (model) => (model === "p/big" ? { id: "big", efforts: ["low", "high"] } as unknown as Models.ModelInfo : { id: "small" } as Models.ModelInfo)
}

const fresh = (turnsSoFar = 0, limits: SessionState.Limits = {}) =>
  SessionState.initial({ turnsSoFar, settings: { mode: "default", config: new Map() }, limits, now: 0 })

/** An output as a short line, for comparing sequences. */
const show = (o: SessionState.Output): string => {
  switch (o._tag) {
    case "Start":
      return `Start ${o.turn.turn}${o.cancelled ? " cancelled" : ""}`
    case "Interrupt":
      return `Interrupt ${o.turn}`
    case "Reply":
      return `Reply ${JSON.stringify(o.result)}`
    case "Refuse":
      return `Refuse ${o.error.reason}`
    case "Resubmit":
      return `Resubmit ${o.content.map((b) => (b.type === "text" ? b.text : b.type)).join("+")}`
    case "Log":
      return `Log ${o.change.id}=${o.change.value}`
    case "Emit":
      return `Emit ${o.turn} ${o.body.type}${o.body.type === "question_withdrawn" ? ` ${o.body.data.requestId}${o.body.data.answered === true ? " answered" : ""}` : ""}`
    case "Tell":
      return `Tell ${o.answer === undefined ? "nobody" : o.answer.outcome}`
    case "Steered":
      return `Steered ${o.items.length}`
    case "CloseSession":
      return `CloseSession ${o.error.reason}`
  }
}

/** Runs messages through the step from `state`; returns the final state and every output, shown. */
const run = (state: SessionState.State, messages: ReadonlyArray<SessionState.Message>) => {
  const outputs: Array<string> = []
  const raw: Array<SessionState.Output> = []
  for (const message of messages) {
    const next = SessionState.step(state, message)
    state = next.state
    raw.push(...next.outputs)
    outputs.push(...next.outputs.map(show))
  }
  return { state, outputs, raw }
}

describe("SessionState: the order of turns", () => {
  it("numbers turns on from the log's, starts the first at once and queues the rest", () => {
    const r = reply()
    const { state, outputs } = run(fresh(3), [{ ...submit("a"), reply: r }, submit("b")])
    assert.deepStrictEqual(outputs, ["Reply {\"turn\":4}", "Start 4"])
    assert.strictEqual(state.running?.turn, 4)
    assert.deepStrictEqual(state.queue.map((q) => q.turn), [5])
  })

  it("the next turn waits for the running one's loop and for its presenter, in either order", () => {
    const a = run(fresh(), [submit("a"), submit("b"), done(1)])
    assert.deepStrictEqual(a.outputs, ["Start 1"], "the presenter still holds turn 1")
    assert.deepStrictEqual(run(a.state, [{ _tag: "Released", turn: 1 }]).outputs, ["Start 2"])

    const b = run(fresh(), [submit("a"), submit("b"), { _tag: "Released", turn: 1 }])
    assert.deepStrictEqual(b.outputs, ["Start 1"])
    assert.deepStrictEqual(run(b.state, [done(1)]).outputs, ["Start 2"])
  })

  it("a turn nobody presents needs only its loop to end; the session is idle from when the last one ended", () => {
    const { outputs, state } = run(fresh(), [submit("a", false), submit("b", false), done(1, false, 5)])
    assert.deepStrictEqual(outputs, ["Start 1", "Start 2"])
    assert.strictEqual(state.idleSince, 0, "turn 2 still runs: not idle since turn 1")
    const after = run(state, [done(2, false, 9)]).state
    assert.isTrue(SessionState.resting(after))
    assert.strictEqual(after.idleSince, 9)
  })

  it("cancel of a running turn interrupts its loop; what was accepted before it starts cancelled, what comes after runs", () => {
    const l = loop()
    const { outputs, raw } = run(fresh(), [
      submit("a", false),
      { _tag: "Looping", turn: 1, loop: l },
      submit("b", false),
      { _tag: "Cancel" },
      submit("c", false),
      done(1, true),
      done(2, true)
    ])
    assert.deepStrictEqual(outputs, ["Start 1", "Interrupt 1", "Start 2 cancelled", "Start 3"])
    const interrupt = raw.find((o) => o._tag === "Interrupt")
    assert.strictEqual(interrupt?._tag === "Interrupt" ? interrupt.loop : undefined, l, "the running turn's own loop")
  })

  it("a cancel that comes before the running turn's loop started interrupts the loop once it starts", () => {
    const { outputs } = run(fresh(), [submit("a", false), { _tag: "Cancel" }, { _tag: "Looping", turn: 1, loop: loop() }])
    assert.deepStrictEqual(outputs, ["Start 1", "Interrupt 1"])
    const later = run(fresh(), [submit("a", false), { _tag: "Looping", turn: 1, loop: loop() }, { _tag: "Looping", turn: 9, loop: loop() }])
    assert.deepStrictEqual(later.outputs, ["Start 1"], "no cancel: nothing is interrupted; another turn's loop is not this one")
  })

  it("a cancel with nothing running interrupts nothing; a late TurnDone or Released changes nothing", () => {
    const idle = run(fresh(), [{ _tag: "Cancel" }, done(7), { _tag: "Released", turn: 7 }])
    assert.deepStrictEqual(idle.outputs, [])
    assert.isTrue(SessionState.idle(idle.state))
    const finished = run(fresh(), [submit("a"), { _tag: "Looping", turn: 1, loop: loop() }, done(1), { _tag: "Cancel" }])
    assert.deepStrictEqual(finished.outputs, ["Start 1"], "a done turn is not interrupted")
  })

  it("a presenter leaving a queued turn leaves it to run unpresented", () => {
    const { state, outputs } = run(fresh(), [submit("a", false), submit("b"), { _tag: "Released", turn: 2 }, done(1)])
    assert.deepStrictEqual(outputs, ["Start 1", "Start 2"])
    assert.strictEqual(state.running?.presented, false)
  })
})

describe("SessionState: steering", () => {
  it("goes into the running turn, is taken at its safe points, and starts a new turn once the last one passed", () => {
    const r1 = reply()
    const r2 = reply()
    const r3 = reply()
    const { outputs, state } = run(fresh(), [
      submit("a"),
      { _tag: "Steer", content: text("more"), reply: r1 },
      { _tag: "TakeSteering", turn: 1, final: false },
      { _tag: "TakeSteering", turn: 1, final: true },
      { _tag: "Steer", content: text("late"), reply: r2 }
    ])
    assert.deepStrictEqual(outputs, [
      "Start 1",
      "Reply {\"turn\":1,\"steering\":\"injected\"}",
      "Steered 1",
      "Steered 0",
      "Reply {\"turn\":2,\"steering\":\"startedNewTurn\"}"
    ])
    assert.deepStrictEqual(state.queue.map((q) => [q.turn, q.presented]), [[2, false]])
    // A turn that is done takes no more steering.
    const over = run(fresh(), [submit("a", false), done(1), { _tag: "Steer", content: text("x"), reply: r3 }])
    assert.deepStrictEqual(over.outputs, ["Start 1", "Reply {\"turn\":2,\"steering\":\"startedNewTurn\"}", "Start 2"])
  })

  it("what the turn never took becomes the next prompt; a cancelled turn drops it", () => {
    const steered = (interrupted: boolean) =>
      run(fresh(), [submit("a", false), { _tag: "Steer", content: text("x"), reply: reply() }, { _tag: "Steer", content: text("y"), reply: reply() }, done(1, interrupted)]).outputs
    assert.deepStrictEqual(steered(false).slice(-1), ["Resubmit x+y"])
    assert.notInclude(steered(true).join("\n"), "Resubmit")
  })

  it("a turn that starts cancelled takes no steering: it starts a new turn", () => {
    const { outputs } = run(fresh(), [submit("a", false), submit("b", false), { _tag: "Cancel" }, done(1, true), { _tag: "Steer", content: text("s"), reply: reply() }])
    assert.deepStrictEqual(outputs, ["Start 1", "Start 2 cancelled", "Reply {\"turn\":3,\"steering\":\"startedNewTurn\"}"])
  })
})

describe("SessionState: settings", () => {
  it("a mode change during a turn is logged, then taken; the same mode again is no change", () => {
    const { outputs, state } = run(fresh(), [
      submit("a"),
      { _tag: "Configure", change: { id: "mode", value: "plan" }, reply: reply() }
    ])
    assert.deepStrictEqual(outputs, ["Start 1", "Log mode=plan"])
    assert.strictEqual(state.settings.mode, "default", "not before it is logged")
    const logged = run(state, [{ _tag: "Changed", change: { id: "mode", value: "plan" } }, { _tag: "Configure", change: { id: "mode", value: "plan" }, reply: reply() }])
    assert.strictEqual(logged.state.settings.mode, "plan")
    assert.deepStrictEqual(logged.outputs, ["Reply {}"])
    assert.strictEqual(logged.state.running?.turn, 1, "the turn runs on")
  })

  it("refuses an unknown mode, a broader mode in a child, an unknown model or effort, an unknown option", () => {
    const child = fresh(0, { ceiling: "default", models: catalog, model: "p/small" })
    const refused = (change: SessionState.Change) => run(child, [{ _tag: "Configure", change, reply: reply() }]).raw
    const reasons = [
      refused({ id: "mode", value: "yolo" }),
      refused({ id: "mode", value: "acceptEdits" }),
      refused({ id: "model", value: "p/huge" }),
      refused({ id: "thought_level", value: "high" }),
      refused({ id: "colour", value: "red" })
    ].map((outs) => outs.map((o) => (o._tag === "Refuse" ? o.error.reason : o._tag)).join())
    assert.deepStrictEqual(reasons, ["invalid_mode", "invalid_mode", "invalid_config", "invalid_config", "invalid_config"])
    assert.deepStrictEqual(run(child, [{ _tag: "Configure", change: { id: "mode", value: "plan" }, reply: reply() }]).outputs, ["Log mode=plan"], "narrowing is allowed")
    // The effort is checked against the model chosen once it is logged.
    const big = run(child, [{ _tag: "Changed", change: { id: "model", value: "p/big" } }, { _tag: "Configure", change: { id: "thought_level", value: "high" }, reply: reply() }])
    assert.deepStrictEqual(big.outputs, ["Log thought_level=high"])
    assert.strictEqual(SessionState.model(big.state), "p/big")
  })
})

describe("SessionState: questions", () => {
  it("a question goes to the presenter of the running turn; the first answer wins and is withdrawn for the others", () => {
    const a = asker()
    const r = reply()
    const { outputs, raw } = run(fresh(), [
      submit("a"),
      { _tag: "Ask", turn: 1, body: asking, asker: a },
      { _tag: "Answer", requestId: "1.1", answer: { outcome: "selected", optionId: "allow_once" }, reply: r },
      { _tag: "Answer", requestId: "1.1", answer: { outcome: "selected", optionId: "allow_once" }, reply: reply() }
    ])
    assert.deepStrictEqual(outputs, ["Start 1", "Emit 1 question_withdrawn 1.1", "Tell selected", "Emit 1 question_withdrawn 1.1 answered", "Reply {}", "Refuse unknown_request"])
    const told = raw.find((o) => o._tag === "Tell")
    assert.strictEqual(told?._tag === "Tell" ? told.asker : undefined, a)
  })

  it("an answer to an unknown question is refused; a turn nobody presents is asked nothing", () => {
    const { outputs, state } = run(fresh(), [
      { _tag: "Answer", requestId: "9.9", answer: { outcome: "cancelled" }, reply: reply() },
      submit("a", false),
      { _tag: "Ask", turn: 1, body: asking, asker: asker() }
    ])
    assert.deepStrictEqual(outputs, ["Refuse unknown_request", "Start 1", "Tell nobody"])
    assert.deepStrictEqual(state.questions, [])
  })

  it("a presenter that leaves the running turn withdraws its questions before their askers hear nobody; an asker that stops waiting withdraws its own", () => {
    const a = asker()
    const b = asker()
    const { outputs, state } = run(fresh(), [submit("a"), { _tag: "Ask", turn: 1, body: asking, asker: a }, { _tag: "Ask", turn: 1, body: asking, asker: b }, { _tag: "Withdraw", asker: a }, { _tag: "Withdraw", asker: a }, { _tag: "Released", turn: 1 }])
    assert.deepStrictEqual(outputs.slice(3), ["Emit 1 question_withdrawn 1.1", "Emit 1 question_withdrawn 1.2", "Tell nobody"])
    assert.deepStrictEqual(state.questions, [])
  })
})

describe("SessionState: close", () => {
  it("with a turn running: its loop is interrupted, no prompt is taken, and what was queued starts cancelled", () => {
    const r = reply()
    const { outputs, state } = run(fresh(), [
      submit("a", false),
      { _tag: "Looping", turn: 1, loop: loop() },
      submit("b", false),
      { _tag: "Close" },
      { ...submit("c"), reply: r },
      { _tag: "Steer", content: text("s"), reply: reply() },
      done(1, true)
    ])
    assert.deepStrictEqual(outputs, ["Start 1", "Interrupt 1", "Refuse closed", "Refuse closed", "Start 2 cancelled"])
    assert.isTrue(state.closed)
  })

  it("a session lost to another Skein closes once, and says why", () => {
    const lost = new SessionError({ reason: "log", message: "taken over" })
    const { outputs, state } = run(fresh(), [{ _tag: "Lose", error: lost }, { _tag: "Lose", error: new SessionError({ reason: "log", message: "again" }) }, { _tag: "Close" }, { ...submit("a"), reply: reply() }])
    assert.deepStrictEqual(outputs, ["CloseSession log", "Refuse log"])
    assert.strictEqual(SessionState.closedError(state).message, "taken over")
  })
})

describe("SessionState: properties", () => {
  /** A message from a small alphabet, resolved against the state when it is fed. */
  const move = fc.oneof(
    fc.record({ kind: fc.constant("submit" as const), presented: fc.boolean() }),
    fc.record({ kind: fc.constant("cancel" as const) }),
    fc.record({ kind: fc.constant("loop" as const) }),
    fc.record({ kind: fc.constant("done" as const), interrupted: fc.boolean() }),
    fc.record({ kind: fc.constant("release" as const), back: fc.nat(3) }),
    fc.record({ kind: fc.constant("steer" as const) }),
    fc.record({ kind: fc.constant("close" as const) })
  )
  type Move = typeof move extends fc.Arbitrary<infer A> ? A : never

  const toMessage = (state: SessionState.State, m: Move): SessionState.Message => {
    const running = state.running?.turn ?? state.accepted
    switch (m.kind) {
      case "submit":
        return { ...submit("p", m.presented), reply: reply() }
      case "cancel":
        return { _tag: "Cancel" }
      case "loop":
        return { _tag: "Looping", turn: running, loop: loop() }
      case "done":
        return done(running, m.interrupted)
      case "release":
        return { _tag: "Released", turn: Math.max(1, state.accepted - m.back) }
      case "steer":
        return { _tag: "Steer", content: text("s"), reply: reply() }
      case "close":
        return { _tag: "Close" }
    }
  }

  it("turns start once each, in the order accepted, one at a time; every prompt is answered once; a turn ends up started once everything lets go", () => {
    fc.assert(fc.property(fc.array(move, { maxLength: 40 }), (moves) => {
      let state = fresh()
      const started: Array<number> = []
      let replies = 0
      let prompts = 0
      const feed = (message: SessionState.Message) => {
        if (message._tag === "Submit" || message._tag === "Steer") prompts++
        const before = state.running
        const next = SessionState.step(state, message)
        for (const o of next.outputs) {
          if (o._tag === "Reply" || o._tag === "Refuse") replies++
          if (o._tag === "Start") {
            // The turn before it is over: its loop done and its presenter gone, now or before.
            if (before !== undefined) {
              assert.isTrue(before.done || (message._tag === "TurnDone" && message.turn === before.turn), `turn ${o.turn.turn} started while turn ${before.turn} ran`)
              assert.isTrue(!before.presented || (message._tag === "Released" && message.turn === before.turn), `turn ${o.turn.turn} started while turn ${before.turn} was presented`)
            }
            assert.strictEqual(o.turn.turn, started.length + 1, "in the order accepted")
            started.push(o.turn.turn)
          }
          if (o._tag === "Interrupt") assert.strictEqual(o.turn, before?.turn, "only the running turn is interrupted")
        }
        state = next.state
      }
      for (const m of moves) feed(toMessage(state, m))
      assert.strictEqual(replies, prompts, "every prompt and steer answered once")
      // Let every turn end and every presenter go: all accepted turns have started.
      for (let i = 0; i < 100 && !SessionState.idle(state); i++) {
        const turn = state.running!.turn
        feed(done(turn, true))
        feed({ _tag: "Released", turn })
      }
      assert.isTrue(SessionState.idle(state))
      assert.deepStrictEqual(started, Array.from({ length: state.accepted }, (_, i) => i + 1))
    }))
  })
})
