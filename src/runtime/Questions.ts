/**
 * A session's open questions: a permission request or a client call put to whoever presents
 * the running turn, published as an event (`permission_asked`, `client_call`) in order with
 * everything else, and waiting for `answer(requestId, …)`.
 *
 * A turn nobody presents gets no question: the asker hears "nobody" at once (a permission is
 * then `unanswerable`). A question the session stops waiting for (the turn was cancelled, the
 * wait timed out) is withdrawn; so are the open questions of a turn whose presenter went away
 * (`abandon`), and their askers hear "nobody".
 *
 * A question may be shown in more than one place (an editor and a web monitor): the first
 * answer wins, and the question is then withdrawn (`answered: true`) for everyone else, so no
 * other place keeps offering it. A later answer finds no open question (`unknown_request`).
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { EphemeralBody } from "../log/Event.ts"
import { SessionError } from "../session/Protocol.ts"
import type { Answer } from "../Vocabulary.ts"

interface Questions {
  /** Asks the presenter of turn `turn`; None when nobody presents it (or it went away meanwhile). */
  readonly ask: (turn: number, body: (requestId: string) => EphemeralBody) => Effect.Effect<Option.Option<Answer>>
  readonly answer: (requestId: string, answer: Answer) => Effect.Effect<void, SessionError>
  /** The presenter of `turn` went away: its open questions are withdrawn, unanswered. */
  readonly abandon: (turn: number) => Effect.Effect<void>
}

interface Open {
  readonly turn: number
  readonly reply: Deferred.Deferred<Option.Option<Answer>>
}

export const make = (options: {
  /** Publishes an event of turn `turn`. */
  readonly emit: (turn: number, body: EphemeralBody) => Effect.Effect<void>
  /** Whether someone presents turn `turn` now. */
  readonly presented: (turn: number) => boolean
}): Questions => {
  const open = new Map<string, Open>()
  let asked = 0
  const withdrawn = (turn: number, requestId: string) => options.emit(turn, { type: "question_withdrawn", data: { requestId } })

  const ask = (turn: number, body: (requestId: string) => EphemeralBody): Effect.Effect<Option.Option<Answer>> =>
    Effect.suspend(() => {
      if (!options.presented(turn)) return Effect.succeed(Option.none())
      const requestId = `${turn}.${++asked}`
      const reply = Deferred.makeUnsafe<Option.Option<Answer>>()
      open.set(requestId, { turn, reply })
      return options.emit(turn, body(requestId)).pipe(
        Effect.andThen(Deferred.await(reply)),
        Effect.onExit((exit) =>
          open.delete(requestId) && exit._tag === "Failure" ? withdrawn(turn, requestId) : Effect.void
        )
      )
    })

  const answer = (requestId: string, value: Answer): Effect.Effect<void, SessionError> =>
    Effect.suspend(() => {
      const question = open.get(requestId)
      if (question === undefined) {
        return Effect.fail(
          new SessionError({ reason: "unknown_request", message: `No question ${JSON.stringify(requestId.slice(0, 64))} is waiting for an answer` })
        )
      }
      open.delete(requestId)
      // The asker has its answer before anyone hears of it; the withdrawal only tells the other
      // places that show the question (an interrupted answerer may miss it: it answered).
      return Effect.andThen(
        Deferred.succeed(question.reply, Option.some(value)),
        options.emit(question.turn, { type: "question_withdrawn", data: { requestId, answered: true } })
      )
    })

  const abandon = (turn: number): Effect.Effect<void> =>
    Effect.suspend(() => {
      const left = [...open].filter(([, question]) => question.turn === turn)
      for (const [requestId] of left) open.delete(requestId)
      // Withdrawn before its asker hears "nobody": the asker's turn goes on from there (on this
      // very stack, maybe to its end), and what it does next comes after the withdrawal.
      return Effect.forEach(left, ([requestId, question]) =>
        Effect.andThen(withdrawn(turn, requestId), Deferred.succeed(question.reply, Option.none())), { discard: true })
    })

  return { ask, answer, abandon }
}
