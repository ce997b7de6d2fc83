/**
 * A session's questions as data: the turn's presenter (whoever runs `turn()`) gets
 * `permission_asked` in order with the other events, and the session waits for `answer`; a
 * question the session stops waiting for is withdrawn; an answer to no open question is
 * refused; a presenter that goes away leaves its questions unanswered and the turn goes on; a
 * turn nobody presents denies at once.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/testing/TestClock"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import type { SessionEvent } from "../../src/log/Event.ts"
import { outcomeOf } from "../../src/session/Protocol.ts"
import { record, text, withSkein } from "../support/Sessions.ts"

const writeScript = {
  turns: [
    { calls: [[{ text: "Writing." }, { tool: "write", args: { path: "out.txt", content: "made\n" }, id: "w1" }], [{ text: "done" }]] },
    { calls: [[{ tool: "write", args: { path: "late.txt", content: "x" }, id: "w2" }], [{ text: "after" }]] }
  ]
}

describe("Session questions", () => {
  it.live("the presenter of a turn is asked in order, and its answer is taken", () =>
    withSkein({ script: writeScript }, ({ runtime, cwd }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        const seen: Array<SessionEvent> = []
        yield* session.turn(text("go")).pipe(
          Stream.runForEach((e) =>
            Effect.gen(function*() {
              seen.push(e)
              if (e.type === "permission_asked") {
                assert.deepStrictEqual(e.data.toolCall.content, [{ type: "diff", path: join(cwd, "out.txt"), oldText: null, newText: "made\n" }])
                yield* session.answer(e.data.requestId, { outcome: "selected", optionId: "allow_once" })
                // Answered once: a second answer finds no open question.
                const again = yield* Effect.flip(session.answer(e.data.requestId, { outcome: "selected", optionId: "allow_once" }))
                assert.strictEqual(again.reason, "unknown_request")
              }
            })
          )
        )
        const order = seen.map((e) => e.type).filter((t) => ["text_delta", "tool_call", "permission_asked", "permission", "tool_result"].includes(t))
        assert.deepStrictEqual(order, ["text_delta", "tool_call", "permission_asked", "permission", "tool_result", "text_delta"])
        assert.deepStrictEqual(outcomeOf(seen.at(-1)!), { stopReason: "end_turn" })
        assert.strictEqual(readFileSync(join(cwd, "out.txt"), "utf8"), "made\n")
      })))

  it.live("two answers race: the first wins, the second is refused, and everyone else sees the question withdrawn as answered", () =>
    withSkein({ script: writeScript }, ({ runtime, cwd, readLog }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        // Another place that shows the question (a web monitor): it reads every event, answers nothing.
        const watcher = yield* record(session)
        const seen: Array<SessionEvent> = []
        const results: Array<string> = []
        yield* session.turn(text("go")).pipe(
          Stream.runForEach((e) =>
            Effect.gen(function*() {
              seen.push(e)
              if (e.type !== "permission_asked") return
              // Two answers at once (the editor allows, the monitor rejects): exactly one is taken.
              const answers = yield* Effect.all([
                Effect.result(session.answer(e.data.requestId, { outcome: "selected", optionId: "reject_once" })),
                Effect.result(session.answer(e.data.requestId, { outcome: "selected", optionId: "allow_once" }))
              ], { concurrency: "unbounded" })
              for (const a of answers) results.push(a._tag === "Success" ? "taken" : a.failure.reason)
            })
          )
        )
        assert.deepStrictEqual(results, ["taken", "unknown_request"])
        const question = seen.find((e) => e.type === "permission_asked")!
        const requestId = (question.data as { requestId: string }).requestId
        // The presenter and the watcher both see it withdrawn, as answered, once.
        for (const events of [seen, yield* watcher.drain]) {
          const withdrawals = events.filter((e) => e.type === "question_withdrawn")
          assert.deepStrictEqual(withdrawals.map((e) => e.data), [{ requestId, answered: true }])
        }
        const permission = (yield* readLog(session.id)).events.find((e) => e.type === "permission")!
        assert.deepStrictEqual(permission.data, { toolCallId: "w1", outcome: "reject_once" })
        assert.isFalse(existsSync(join(cwd, "out.txt")))
      })))

  it.live("cancel withdraws an open question; a turn nobody presents is denied without asking", () =>
    withSkein({ script: writeScript }, ({ runtime, cwd, readLog }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        const seen = yield* session.turn(text("go")).pipe(
          Stream.tap((e) => (e.type === "permission_asked" ? session.cancel : Effect.void)),
          Stream.runCollect
        )
        const question = seen.find((e) => e.type === "permission_asked")!
        const withdrawn = seen.find((e) => e.type === "question_withdrawn")!
        assert.deepStrictEqual(withdrawn.data, { requestId: (question.data as { requestId: string }).requestId })
        assert.deepStrictEqual(outcomeOf(seen.at(-1)!), { stopReason: "cancelled" })
        assert.isFalse(existsSync(join(cwd, "out.txt")))

        // Nobody presents a prompt sent as a command: its question is never asked.
        const rec = yield* record(session)
        assert.deepStrictEqual(yield* session.prompt(text("go")), { stopReason: "end_turn" })
        assert.isFalse((yield* rec.drain).some((e) => e.type === "permission_asked"))
        assert.isFalse(existsSync(join(cwd, "late.txt")))
        const permissions = (yield* readLog(session.id)).events.filter((e) => e.type === "permission").map((e) => e.data)
        assert.deepStrictEqual(permissions.at(-1), { toolCallId: "w2", outcome: "unanswerable" })
      })))

  it.live("a presenter that goes away leaves its question unanswered; the turn goes on without it", () =>
    withSkein({ script: writeScript }, ({ runtime, cwd, readLog }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        const rec = yield* record(session)
        // The presenter stops reading right after the question arrives (a client disconnecting).
        const first = yield* session.turn(text("go")).pipe(Stream.takeUntil((e) => e.type === "permission_asked"), Stream.runCollect)
        assert.strictEqual(first.at(-1)!.type, "permission_asked")
        const end = yield* rec.until((e) => e.type === "turn_end" && e.turn === 1)
        assert.deepStrictEqual(end.data, { stopReason: "end_turn" })
        assert.isTrue(rec.seen.some((e) => e.type === "question_withdrawn"))
        assert.isFalse(existsSync(join(cwd, "out.txt")))
        const permission = (yield* readLog(session.id)).events.find((e) => e.type === "permission")!
        assert.deepStrictEqual(permission.data, { toolCallId: "w1", outcome: "unanswerable" })
        // The next turn starts once the first ended: the session is not stuck.
        const fiber = yield* Effect.forkChild(session.prompt(text("go")))
        assert.deepStrictEqual(yield* Fiber.join(fiber), { stopReason: "end_turn" })
      })))

  it.effect("an unanswered question is denied when its time runs out (on the test clock), and the turn goes on", () =>
    withSkein({ script: writeScript, permissionTimeoutMs: 60_000 }, ({ runtime, cwd, readLog }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        const rec = yield* record(session)
        // The presenter reads on and never answers.
        const asked = yield* Effect.forkChild(Stream.runCollect(session.turn(text("go"))))
        yield* rec.until((e) => e.type === "permission_asked")
        // Nearly the whole time passes: still waiting.
        yield* TestClock.adjust("59 seconds")
        assert.isFalse(rec.seen.some((e) => e.type === "permission"))
        yield* TestClock.adjust("1 second")
        const seen = yield* Fiber.join(asked)
        assert.deepStrictEqual(outcomeOf(seen.at(-1)!), { stopReason: "end_turn" })
        const permission = (yield* readLog(session.id)).events.find((e) => e.type === "permission")!
        assert.deepStrictEqual(permission.data, { toolCallId: "w1", outcome: "timeout" })
        assert.isFalse(existsSync(join(cwd, "out.txt")))
      })))
})
