/**
 * The turn's own edges are services, not fields of its context: the loop asks the `Permission`
 * it is provided (the gate), and the gate asks the `Questions` it is provided (whoever
 * presents the turn). Here the loop runs a scripted model over a real workspace with a gate and
 * a presenter the test provides as services.
 */
import { assert, describe, expectTypeOf, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import type { CanonicalBody } from "../../src/log/Event.ts"
import * as History from "../../src/log/History.ts"
import * as Scripted from "../../src/providers/Scripted.ts"
import * as Gate from "../../src/runtime/Gate.ts"
import * as Turn from "../../src/runtime/Turn.ts"
import * as TurnContract from "../../src/session/TurnContract.ts"
import * as Toolkit from "../../src/tools/Toolkit.ts"
import * as TempDir from "../support/TempDir.ts"
import * as ToolServices from "../support/ToolServices.ts"

const write = (path: string, id: string) => ({ tool: "write", args: { path, content: "hello\n" }, id })

/** A turn that writes `a.txt` then `b.txt`, then says it is done. */
const script: Scripted.Script = { turns: [{ calls: [[write("a.txt", "w1")], [write("b.txt", "w2")], [{ text: "Done." }]] }] }

/** One turn of the loop in `cwd`, its events kept in `logged`, with the turn's edges `edges`. */
const runTurn = (cwd: string, edges: Context.Context<TurnContract.Permission | TurnContract.Questions>) =>
  Effect.gen(function*() {
    const history = History.make()
    const logged: Array<CanonicalBody> = []
    const ctx: TurnContract.TurnContext = {
      sessionId: "s1",
      turn: 1,
      content: [{ type: "text", text: "write them" }],
      cwd,
      roots: [cwd],
      system: "",
      provider: Scripted.make(script),
      toolkit: Toolkit.builtin(),
      history,
      maxTurnRequests: 5,
      emit: {
        canonical: (body) => Effect.sync(() => (History.apply(history, body), void logged.push(body))),
        ephemeral: () => Effect.void
      },
      state: { partial: undefined, call: 0, requested: new Map() }
    }
    yield* ctx.emit.canonical({ type: "turn_start", data: { content: ctx.content } })
    const outcome = yield* Turn.run(ctx).pipe(Effect.provideContext(edges), ToolServices.provide())
    const results = logged.flatMap((e) => (e.type === "tool_result" ? [e.data] : []))
    return { outcome, results, logged }
  }).pipe(Effect.provide(TempDir.platform))

describe("the turn's edges as services", () => {
  it("a turn's context carries no gate and no asker: they are services", () => {
    expectTypeOf<TurnContract.TurnContext>().not.toHaveProperty("permit")
    expectTypeOf<TurnContract.TurnContext>().not.toHaveProperty("ask")
    expectTypeOf<TurnContract.TurnIO>().not.toHaveProperty("permit")
    expectTypeOf<TurnContract.TurnIO>().not.toHaveProperty("ask")
    // The loop needs the turn's Permission provided.
    type Needs = Effect.Services<ReturnType<typeof Turn.run>>
    expectTypeOf<TurnContract.Permission>().toExtend<Needs>()
  })

  it.effect("the loop asks the Permission it is provided, once per call, and a denial's reason reaches the model", () =>
    Effect.gen(function*() {
      const cwd = yield* TempDir.make()
      const asked: Array<string> = []
      const edges = Context.make(TurnContract.Permission, {
        permit: (call) =>
          Effect.sync(() => {
            asked.push(call.id)
            return call.id === "w1" ? { _tag: "allow" as const } : { _tag: "deny" as const, reason: "Not b.txt, says the test's gate." }
          })
      }).pipe(Context.add(TurnContract.Questions, TurnContract.Questions.none))
      const { outcome, results } = yield* runTurn(cwd, edges)
      assert.deepStrictEqual(outcome, { stopReason: "end_turn" })
      assert.deepStrictEqual(asked, ["w1", "w2"])
      assert.deepStrictEqual(results.map((r) => [r.id, r.status]), [["w1", "done"], ["w2", "denied"]])
      assert.strictEqual(results[1]!.content, "Not b.txt, says the test's gate.")
      assert.strictEqual(readFileSync(join(cwd, "a.txt"), "utf8"), "hello\n")
      assert.isFalse(existsSync(join(cwd, "b.txt")))
    }))

  it.effect("the session's gate asks the turn's Questions: an answer is taken, nobody there is a denial", () =>
    Effect.gen(function*() {
      // Whoever presents the turn allows the first write, rejects the second.
      const presenter = (asked: Array<string>): TurnContract.Questions["Service"] => ({
        ask: (question) =>
          Effect.sync(() => {
            asked.push(question.toolCall.toolCallId)
            return { outcome: "selected" as const, optionId: question.toolCall.toolCallId === "w1" ? "allow_once" : "reject_once" }
          }),
        canAsk: () => true
      })
      const withGate = (questions: TurnContract.Questions["Service"]) =>
        Effect.gen(function*() {
          const cwd = yield* TempDir.make()
          const logged: Array<CanonicalBody> = []
          const gate = yield* Gate.make({ cwd, roots: [cwd], mode: () => "default", history: History.make(), timeoutMs: 60_000, record: (body) => Effect.sync(() => void logged.push(body)) }).pipe(
            Effect.provideService(TurnContract.Questions, questions)
          )
          const edges = Context.make(TurnContract.Permission, gate).pipe(Context.add(TurnContract.Questions, questions))
          const turn = yield* runTurn(cwd, edges)
          return { ...turn, cwd, answers: logged.flatMap((e) => (e.type === "permission" ? [e.data.outcome] : [])) }
        })

      const asked: Array<string> = []
      const answered = yield* withGate(presenter(asked))
      assert.deepStrictEqual(asked, ["w1", "w2"])
      assert.deepStrictEqual(answered.results.map((r) => r.status), ["done", "denied"])
      assert.deepStrictEqual(answered.answers, ["allow_once", "reject_once"])
      assert.isTrue(existsSync(join(answered.cwd, "a.txt")))
      assert.isFalse(existsSync(join(answered.cwd, "b.txt")))

      // Nobody presents the turn: nothing that needs asking runs, and the log says why.
      const alone = yield* withGate(TurnContract.Questions.none)
      assert.deepStrictEqual(alone.results.map((r) => r.status), ["denied", "denied"])
      assert.deepStrictEqual(alone.answers, ["unanswerable", "unanswerable"])
      assert.isFalse(existsSync(join(alone.cwd, "a.txt")))
    }))
})
