/**
 * The interpreter of a session's step (`SessionState.ts`): one `Ref` holds the state, and
 * `perform` carries out what the step decided. Messages reach the step two ways:
 *
 * - through the mailbox (`send`, `request`): one fiber takes them in order, steps and performs.
 *   Prompts, steering, cancels, settings, a turn's end and its presenter letting go go this
 *   way; a request waits for its reply, or for the session to close.
 * - at once, in the sender's fiber (`now`, `nowSync`): what its sender needs the answer to
 *   before it goes on, and what must not wait behind the mailbox — a question and its answer,
 *   the steering a turn takes at a safe point, a logged change, a model call's cost, a turn's
 *   loop starting.
 *
 * Either way a message is one atomic step of the one state (JavaScript runs the step to its
 * end before anything else), and its outputs are performed in order after it. The mailbox never
 * waits for a turn: a turn is a fiber of its own (`start`), which tells the mailbox when it ends.
 */
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as MutableRef from "effect/MutableRef"
import * as Queue from "effect/Queue"
import * as Ref from "effect/Ref"
import * as Scope from "effect/Scope"
import type { CanonicalBody, EphemeralBody } from "../log/Event.ts"
import type { LogError } from "../log/LogError.ts"
import type { SendResult, SessionError } from "../session/Protocol.ts"
import * as SessionState from "./SessionState.ts"
import * as TurnEnd from "./TurnEnd.ts"

/** What the interpreter needs of the session's journal (`Journal.ts`). */
interface Journal {
  readonly canonical: (turn: number | null, body: CanonicalBody, committed?: () => void) => Effect.Effect<void, LogError>
  readonly ephemeral: (turn: number, body: EphemeralBody) => Effect.Effect<void>
  readonly repair: Effect.Effect<void, LogError>
  readonly sync: Effect.Effect<void>
  readonly behind: () => boolean
  readonly lost: () => LogError | undefined
}

interface Edges {
  readonly journal: Journal
  /** Runs a turn in a fiber of its own (it tells `TurnDone` when it ends). */
  readonly start: (turn: SessionState.Queued, cancelled: boolean) => Effect.Effect<void>
  /** Closes the session (its scope belongs to the runtime), saying why. */
  readonly close: (reason: string) => Effect.Effect<void>
  readonly logProblem: (what: string) => (cause: Cause.Cause<unknown>) => Effect.Effect<void>
}

export interface Actor {
  /** The state as it is now. */
  readonly state: () => SessionState.State
  /** Sends a message to the mailbox. */
  readonly send: (message: SessionState.Message) => Effect.Effect<void>
  /** Sends a request to the mailbox and waits for its reply, or for the session to close. */
  readonly request: (message: (reply: SessionState.Reply) => SessionState.Message) => Effect.Effect<SendResult, SessionError>
  /** Steps a message now, in this fiber, and performs its outputs. */
  readonly now: (message: SessionState.Message) => Effect.Effect<void>
  /** Steps a message now and returns its outputs without performing them (for outputs that are only data). */
  readonly nowSync: (message: SessionState.Message) => ReadonlyArray<SessionState.Output>
  /** Another Skein took the session over: it is closed, and says why to whoever asks for it. */
  readonly lose: (error: SessionError) => Effect.Effect<void>
  /** Answers a request the log refused; a session taken over by another Skein is closed. */
  readonly refused: (error: LogError, what: string, reply?: SessionState.Reply | undefined) => Effect.Effect<void>
}

/** The event that logs a change of a setting. */
const changeBody = (change: SessionState.Change): CanonicalBody =>
  change.id === "mode" ? { type: "mode_changed", data: { mode: change.value } } : { type: "config_changed", data: change }

/** Starts the mailbox of a session in `scope`; on close, the state is closed and waiting requests give up. */
export const make = (initial: SessionState.State, edges: Edges, scope: Scope.Scope): Effect.Effect<Actor> =>
  Effect.gen(function*() {
    const ref = Ref.makeUnsafe(initial)
    const mailbox = yield* Queue.unbounded<SessionState.Message>()
    // Completed when the session starts closing: requests waiting on the mailbox give up.
    const closing = yield* Deferred.make<void>()
    const { journal } = edges

    const nowSync = (message: SessionState.Message): ReadonlyArray<SessionState.Output> => {
      const { outputs, state } = SessionState.step(MutableRef.get(ref.ref), message)
      MutableRef.set(ref.ref, state)
      return outputs
    }

    const apply = (message: SessionState.Message): Effect.Effect<void> =>
      Effect.flatMap(
        Ref.modify(ref, (state) => {
          const { outputs, state: next } = SessionState.step(state, message)
          return [outputs, next]
        }),
        (outputs) => Effect.forEach(outputs, perform, { discard: true })
      )

    const lose = (error: SessionError) => apply({ _tag: "Lose", error })

    const refused = (error: LogError, what: string, reply?: SessionState.Reply | undefined) =>
      Effect.gen(function*() {
        yield* edges.logProblem(what.toLowerCase())(Cause.fail(error))
        if (reply !== undefined) yield* Deferred.fail(reply, TurnEnd.refusal(error, what))
        if (error.reason === "locked") yield* lose(TurnEnd.refusal(error, "This session was closed"))
      })

    /** Logs a change; the state takes it once it is logged. A change the log refused is not made; one logged but not synced is (the next write syncs first). */
    const logChange = (change: SessionState.Change, reply: SessionState.Reply) =>
      Effect.gen(function*() {
        const logged = yield* Effect.exit(journal.canonical(null, changeBody(change), () => void nowSync({ _tag: "Changed", change })))
        if (Exit.isFailure(logged)) return yield* refused(TurnEnd.errorOf(logged), `The ${change.id} was not changed`, reply)
        yield* journal.sync
        yield* Deferred.succeed(reply, {})
      })

    const perform = (output: SessionState.Output): Effect.Effect<void> => {
      switch (output._tag) {
        case "Reply":
          return Effect.asVoid(Deferred.succeed(output.reply, output.result))
        case "Refuse":
          return Effect.asVoid(Deferred.fail(output.reply, output.error))
        case "Start":
          return edges.start(output.turn, output.cancelled)
        case "Interrupt":
          // Not on this fiber: interrupting waits for the loop's finalizers.
          return Effect.asVoid(Effect.forkDetach(Fiber.interrupt(output.loop)))
        case "Resubmit":
          return Effect.asVoid(Queue.offer(mailbox, { _tag: "Submit", content: output.content, presented: false }))
        case "Log":
          return logChange(output.change, output.reply)
        case "Emit":
          return journal.ephemeral(output.turn, output.body)
        case "Tell":
          return Effect.asVoid(Deferred.succeed(output.asker, output.answer))
        case "Steered":
          return Effect.void
        case "CloseSession":
          // Not in this fiber: closing the scope waits for the turns that run in it.
          return Effect.asVoid(Effect.forkDetach(edges.close(output.error.message)))
        default:
          return output satisfies never
      }
    }

    /** A prompt's reply, when the message may start a turn. */
    const prompting = (message: SessionState.Message): { readonly reply: SessionState.Reply | undefined } | undefined => {
      const state = MutableRef.get(ref.ref)
      if (state.closed) return undefined
      if (message._tag === "Submit") return { reply: message.reply }
      if (message._tag === "Steer" && !SessionState.steerable(state)) return { reply: message.reply }
      return undefined
    }

    const handle = (message: SessionState.Message): Effect.Effect<void> => {
      const prompt = prompting(message)
      // A log that misses a turn's end takes no new prompt before it has it.
      if (prompt !== undefined && (journal.behind() || journal.lost() !== undefined)) {
        return Effect.flatMap(Effect.exit(journal.repair), (repaired) =>
          Exit.isSuccess(repaired) ? apply(message) : refused(TurnEnd.errorOf(repaired), "The prompt was not run", prompt.reply))
      }
      return apply(message)
    }

    yield* Effect.forkIn(Effect.forever(Effect.flatMap(Queue.take(mailbox), handle)), scope)

    // On close: nothing more is taken, and requests still waiting give up. Finalizers run in
    // reverse order, so this one (registered after the mailbox's) runs first, before the mailbox stops.
    yield* Scope.addFinalizer(scope, Effect.andThen(apply({ _tag: "Close" }), Deferred.succeed(closing, undefined)))

    const closedError = () => SessionState.closedError(MutableRef.get(ref.ref))

    const request = (message: (reply: SessionState.Reply) => SessionState.Message): Effect.Effect<SendResult, SessionError> =>
      Effect.suspend(() => {
        if (MutableRef.get(ref.ref).closed) return Effect.fail(closedError())
        const reply = Deferred.makeUnsafe<SendResult, SessionError>()
        return Effect.andThen(
          Queue.offer(mailbox, message(reply)),
          Effect.raceFirst(Deferred.await(reply), Effect.andThen(Deferred.await(closing), Effect.suspend(() => Effect.fail(closedError()))))
        )
      })

    return {
      state: () => MutableRef.get(ref.ref),
      send: (message) => Effect.asVoid(Queue.offer(mailbox, message)),
      request,
      now: apply,
      nowSync,
      lose,
      refused
    }
  })
