/**
 * How a turn ends, as pure functions: the events that close what its loop left open (a model
 * call cut short, tool calls without a result, then `turn_end`), and what a request is told
 * when the session's log refused a write (`refusal`).
 *
 * A refusal names what did not happen and why, and what the user can do:
 * - the store refused (`io`: a full disk, an I/O error): once it takes writes again, the
 *   session's next request writes what is missing first, and the session goes on;
 * - another Skein took the session over (`locked`): this Skein writes nothing more to it and
 *   closes it; it is loaded again where it is open now.
 */
import type * as Arr from "effect/Array"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import * as Stream from "effect/Stream"
import type { CanonicalBody, SessionEvent, ToolStatus } from "../log/Event.ts"
import type { History } from "../log/History.ts"
import { isFull, LogError } from "../log/LogError.ts"
import { SessionError, type TurnOutcome } from "../session/Protocol.ts"
import type { Subscription } from "./Bus.ts"
import type { TurnState } from "../session/TurnContract.ts"

/** The result logged for a tool call a cancel stopped, and for one a failed turn never ran. */
export const CANCELLED_TOOL = "Cancelled by the user"
export const NOT_RUN_TOOL = "Not run: the turn failed"
/** The result logged for a tool call whose own result the session's log refused. */
export const NOT_LOGGED_TOOL = "Unknown: the session's log could not record what this call did"

/** The store's refusal that failed a turn (an error of the log other than an event it called invalid), if that is why. */
export const refusedBy = (exit: Exit.Exit<unknown, unknown>): LogError | undefined => {
  if (exit._tag === "Success") return undefined
  for (const reason of exit.cause.reasons) {
    if (reason._tag === "Fail" && reason.error instanceof LogError && reason.error.reason !== "invalid") return reason.error
  }
  return undefined
}

/** The outcome of a turn from how its loop ended. */
export const outcomeOf = (exit: Exit.Exit<TurnOutcome, unknown>): TurnOutcome => {
  if (exit._tag === "Success") return exit.value
  if (Cause.hasInterruptsOnly(exit.cause)) return { stopReason: "cancelled" }
  const store = refusedBy(exit)
  if (store !== undefined) return { stopReason: "end_turn", error: `The turn stopped: the session's log refused one of its events (${store.message}).` }
  const error = Cause.squash(exit.cause)
  const detail = error instanceof Error ? error.message : typeof error === "object" && error !== null && "message" in error ? String(error.message) : String(error)
  return { stopReason: "end_turn", error: `The turn failed inside Skein: ${detail}` }
}

/**
 * The events that close a turn: the model call in progress (its streamed parts, cut short), a
 * result for each tool call left open (announced first when it never was), then `turn_end`.
 * `storeFailed`: the loop stopped because the log refused an event (an announced call may have run).
 */
export const closing = (history: History, state: TurnState, outcome: TurnOutcome, storeFailed: boolean): Array<CanonicalBody> => {
  const bodies: Array<CanonicalBody> = []
  // An announced call may have run when the log refused its result; one never announced never ran.
  const ended = (id: string): { readonly status: ToolStatus; readonly content: string } =>
    outcome.stopReason === "cancelled"
      ? { status: "cancelled", content: CANCELLED_TOOL }
      : storeFailed && history.announced.has(id)
      ? { status: "not_logged", content: NOT_LOGGED_TOOL }
      : { status: "not_run", content: NOT_RUN_TOOL }
  // The calls left open, with those of the call cut short (its response, logged here, opens them).
  const open = new Map(history.openToolCalls)
  if (state.partial !== undefined) {
    if (state.compaction === undefined) for (const part of state.partial) if (part.type === "tool_call") open.set(part.id, part.name)
    bodies.push({
      type: "model_response",
      data: {
        call: state.call,
        parts: state.partial,
        stop: outcome.stopReason === "cancelled" ? "cancelled" : "error",
        ...(state.compaction !== undefined ? { compaction: state.compaction } : {})
      }
    })
  }
  for (const [id, name] of open) {
    // A call the model asked for but that never started is shown too, so every result a
    // client sees belongs to a tool call it was told about.
    const title = history.announced.get(id) ?? name
    if (!history.announced.has(id)) bodies.push({ type: "tool_call", data: { id, name, args: state.requested.get(id) ?? {}, title, kind: "other" } })
    bodies.push({ type: "tool_result", data: { id, title, ok: false, ...ended(id) } })
  }
  bodies.push({ type: "turn_end", data: { stopReason: outcome.stopReason, ...(outcome.error !== undefined ? { error: outcome.error } : {}) } })
  return bodies
}

/** What a request is told when the session's log refused a write; `what` says what did not happen. */
export const refusal = (error: LogError, what: string): SessionError =>
  new SessionError({
    reason: "log",
    message: error.reason === "locked"
      ? `${what}: ${error.message}. This Skein writes nothing more to the session and has closed it: load it again to go on.`
      : `${what}: the session's log cannot be written (${error.message}). Once it can${
        isFull(error) ? " (free some disk space)" : ""
      }, the session goes on: its next request first writes what is missing.`
  })

/** The store's error of a failed write (a defect in the store is reported as an `io` failure). */
export const errorOf = (exit: Exit.Failure<unknown, LogError>): LogError => {
  for (const reason of exit.cause.reasons) if (reason._tag === "Fail") return reason.error
  const defect = Cause.squash(exit.cause)
  return new LogError({ reason: "io", message: `The session's log failed: ${defect instanceof Error ? defect.message : String(defect)}` })
}

/**
 * The events of turn `turn` from a session's subscription, up to its `turn_end`. A
 * `turn_aborted` ends it instead: as a failure that says why (a cancelled turn: as the
 * stream's end, so its presenter answers `cancelled`). A subscription that closes first ends
 * it too, as a failure when the session was closed for a reason (`closedWith`).
 */
export const events = (
  subscription: Subscription,
  turn: number,
  closedWith: () => SessionError | undefined
): Stream.Stream<SessionEvent, SessionError> =>
  Stream.fromPull(Effect.sync(() => {
    let ended: Effect.Effect<never, SessionError | Cause.Done> | undefined
    const pull: Effect.Effect<Arr.NonEmptyReadonlyArray<SessionEvent>, SessionError | Cause.Done> = Effect.suspend(() =>
      ended !== undefined ? ended : Effect.flatMap(subscription.takeAll, (taken) => {
        if (taken.length === 0) {
          const why = closedWith()
          return why === undefined ? Cause.done() : Effect.fail(why)
        }
        const kept: Array<SessionEvent> = []
        for (const event of taken) {
          if (event.turn !== turn) continue
          if (event.type === "turn_aborted") {
            ended = event.data.stopReason === "cancelled" ? Cause.done() : Effect.fail(new SessionError({ reason: "log", message: event.data.error }))
            break
          }
          kept.push(event)
          if (event.type === "turn_end") {
            ended = Cause.done()
            break
          }
        }
        return kept.length === 0 ? pull : Effect.succeed(kept as unknown as Arr.NonEmptyReadonlyArray<SessionEvent>)
      })
    )
    return pull
  }))
