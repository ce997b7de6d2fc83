/**
 * One turn presented at a terminal: submits the prompt, shows the turn's events in order, and
 * answers its permission questions at the keyboard in their place (after everything that led
 * to them). Ctrl-C while the turn runs cancels it; Ctrl-C at a question ends the run (`quit`):
 * the turn is cancelled and the caller exits.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { SessionEvent, UserBlock } from "../../log/Event.ts"
import type { Session, TurnOutcome } from "../../runtime/Session.ts"
import type { PermissionAsked } from "../../Vocabulary.ts"
import type { Input } from "./Input.ts"
import * as Question from "./Question.ts"
import type { View } from "./Render.ts"
import * as Terminal from "./Terminal.ts"

export type Presented =
  | { readonly _tag: "Ended"; readonly outcome: TurnOutcome }
  /** Ctrl-C at a question: the turn was cancelled and the run should end. */
  | { readonly _tag: "Quit"; readonly outcome: TurnOutcome }

export interface Options {
  /** Shows each event (people's rendering, or JSON lines). */
  readonly show: (event: SessionEvent) => void
  /** The people's view, when there is one (the spinner, diffs already shown). */
  readonly view?: View | undefined
  /** The keyboard, when stdin is a terminal: questions are asked there and Ctrl-C cancels. */
  readonly input?: Input | undefined
}

export const turn = (session: Session, content: ReadonlyArray<UserBlock>, options: Options) =>
  Effect.scoped(Effect.gen(function*() {
    const events = yield* session.subscribe
    const withdrawals = yield* session.subscribe
    const ticket = yield* session.submit(content)
    const input = options.input

    // A question the session stops waiting for (its permission timeout) is taken back at once,
    // even while the keyboard is being read: a second subscription watches for that.
    const withdrawn = new Map<string, Deferred.Deferred<void>>()
    const withdrawal = (requestId: string) => {
      const existing = withdrawn.get(requestId)
      if (existing !== undefined) return existing
      const made = Deferred.makeUnsafe<void>()
      withdrawn.set(requestId, made)
      return made
    }
    yield* Stream.fromSubscription(withdrawals).pipe(
      Stream.filter((e) => e.turn === ticket.turn && e.type === "question_withdrawn"),
      Stream.runForEach((e) => Deferred.succeed(withdrawal((e.data as { requestId: string }).requestId), undefined)),
      Effect.forkScoped
    )
    if (input !== undefined) {
      yield* input.interrupt.pipe(
        Effect.andThen(Effect.sync(() => Terminal.noteLine("Cancelling the turn…", Terminal.dim))),
        Effect.andThen(session.cancel),
        Effect.forever,
        Effect.forkScoped
      )
    }

    let quit = false
    const answer = (asked: PermissionAsked) =>
      Effect.gen(function*() {
        // No keyboard, or the run is ending: nothing to wait for, the call is denied.
        if (input === undefined || quit) return yield* Effect.ignore(session.answer(asked.requestId, { outcome: "cancelled" }))
        options.view?.pause()
        if (asked.toolCall.content !== undefined && asked.toolCall.content.length > 0) options.view?.diffShown(asked.toolCall.toolCallId)
        const reply = yield* Question.ask(input, asked).pipe(
          Effect.raceFirst(Effect.as(Deferred.await(withdrawal(asked.requestId)), "withdrawn" as const))
        )
        if (reply === "withdrawn") {
          Terminal.noteLine("The question was withdrawn (no answer in time): the call was not run.", Terminal.dim)
        } else if (reply === "quit") {
          quit = true
          yield* session.cancel
        } else {
          // The question may have been withdrawn meanwhile: then the answer is not needed.
          yield* Effect.ignore(session.answer(asked.requestId, reply))
        }
        if (!quit) options.view?.waiting()
      })

    options.view?.waiting()
    yield* Stream.fromSubscription(events).pipe(
      Stream.filter((e) => e.turn === ticket.turn),
      Stream.takeUntil((e) => e.type === "turn_end"),
      Stream.runForEach((e) => {
        options.show(e)
        return e.type === "permission_asked" ? answer(e.data) : Effect.void
      })
    )
    const outcome = yield* Deferred.await(ticket.outcome)
    return quit ? { _tag: "Quit", outcome } as const : { _tag: "Ended", outcome } as const
  }))
