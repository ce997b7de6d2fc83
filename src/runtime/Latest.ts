/**
 * A value read from outside (a session's skills and commands) kept as last read, with a read
 * that refreshes it in the background at most once per interval, by the `Clock`: callers in
 * quick succession (a script, a benchmark) share one read. `known` starts no read, and waits
 * only for one already running (so that what it gives is no older than the last `refresh`).
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import type * as Scope from "effect/Scope"

export interface Latest<A> {
  /** Reads now and keeps what it read. */
  readonly fresh: Effect.Effect<A>
  /** The value as of the last read started: waits for a read still running, starts none (reads now when there is no value yet). */
  readonly known: Effect.Effect<A>
  /** Starts a background read unless one runs or the last is recent. */
  readonly refresh: Effect.Effect<void>
}

export const make = <A>(read: Effect.Effect<A>, options: { readonly everyMs: number; readonly scope: Scope.Scope }): Latest<A> => {
  let known: { readonly value: A } | undefined
  let readAt = Number.NEGATIVE_INFINITY
  /** The background read running, if any. */
  let running: Fiber.Fiber<A> | undefined
  // A read is as old as its start: what changed after it started may not be in it.
  const fresh = Effect.flatMap(Clock.currentTimeMillis, (startedAt) =>
    Effect.tap(read, (value) =>
      Effect.sync(() => {
        known = { value }
        readAt = startedAt
      })))
  const busy = () => running !== undefined && running.pollUnsafe() === undefined
  const refresh = Effect.flatMap(Clock.currentTimeMillis, (now) => {
    if (busy() || now - readAt < options.everyMs) return Effect.void
    return Effect.asVoid(Effect.tap(Effect.forkIn(fresh, options.scope), (fiber) => Effect.sync(() => void (running = fiber))))
  })
  const current = Effect.suspend(() => known === undefined ? fresh : Effect.succeed(known.value))
  const knownNow = Effect.suspend(() =>
    busy()
      // A read that failed or was interrupted leaves the value as it was.
      ? Effect.flatMap(Fiber.await(running!), (exit) => (Exit.isSuccess(exit) ? Effect.succeed(exit.value) : current))
      : current
  )
  return { fresh, known: knownNow, refresh }
}
