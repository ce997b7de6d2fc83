/**
 * A session's questions as data: a presented session publishes `permission_asked` in order with
 * its other events and waits for `answer`; a question it stops waiting for is withdrawn; an
 * answer to no open question is refused; an unpresented session denies at once.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import type { SessionEvent } from "../../src/log/Event.ts"
import { text, withSkein } from "../support/Sessions.ts"

const writeScript = {
  turns: [
    { calls: [[{ text: "Writing." }, { tool: "write", args: { path: "out.txt", content: "made\n" }, id: "w1" }], [{ text: "done" }]] },
    { calls: [[{ tool: "write", args: { path: "late.txt", content: "x" }, id: "w2" }], [{ text: "never" }]] }
  ]
}

describe("Session questions", () => {
  it.live("a presented session asks in order, waits for the answer, and takes it", () =>
    withSkein({ script: writeScript }, ({ runtime, cwd }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd, presented: true })
        const seen: Array<SessionEvent> = []
        const answering = yield* session.events.pipe(
          Stream.takeUntil((e) => e.type === "turn_end"),
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
          ),
          Effect.forkChild({ startImmediately: true })
        )
        assert.deepStrictEqual(yield* session.prompt(text("go")), { stopReason: "end_turn" })
        yield* Fiber.join(answering)
        const order = seen.map((e) => e.type).filter((t) => ["text_delta", "tool_call", "permission_asked", "permission", "tool_result"].includes(t))
        assert.deepStrictEqual(order, ["text_delta", "tool_call", "permission_asked", "permission", "tool_result", "text_delta"])
        assert.strictEqual(readFileSync(join(cwd, "out.txt"), "utf8"), "made\n")
      })))

  it.live("cancel withdraws an open question; an unpresented session denies without asking", () =>
    withSkein({ script: writeScript }, ({ runtime, cwd }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd, presented: true })
        const asked = yield* session.events.pipe(
          Stream.filter((e) => e.type === "permission_asked" || e.type === "question_withdrawn"),
          Stream.take(2),
          Stream.runCollect,
          Effect.forkChild({ startImmediately: true })
        )
        const outcome = yield* Effect.forkChild(session.prompt(text("go")))
        const first = yield* session.events.pipe(Stream.filter((e) => e.type === "permission_asked"), Stream.runHead)
        yield* session.cancel
        assert.deepStrictEqual(yield* Fiber.join(outcome), { stopReason: "cancelled" })
        const [question, withdrawn] = yield* Fiber.join(asked)
        assert.strictEqual(question!.type, "permission_asked")
        assert.deepStrictEqual(withdrawn!.data, { requestId: (question!.data as { requestId: string }).requestId })
        assert.strictEqual(first._tag, "Some")
        assert.isFalse(existsSync(join(cwd, "out.txt")))

        const alone = yield* runtime.newSession({ cwd })
        assert.deepStrictEqual(yield* alone.prompt(text("go")), { stopReason: "end_turn" })
        assert.isFalse(existsSync(join(cwd, "out.txt")))
      })))
})
