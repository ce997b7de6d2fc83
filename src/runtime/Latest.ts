/**
 * A value read from outside (a session's skills and commands) kept as last read, with a read
 * that refreshes it in the background at most once per interval, by the `Clock`: callers in
 * quick succession (a script, a benchmark) share one read, and none waits for it.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"

export interface Latest<A> {
  /** Reads now and keeps what it read. */
  readonly fresh: Effect.Effect<A>
  /** The last value read (reading now when there is none yet), refreshing it meanwhile when it is older than the interval. */
  readonly last: Effect.Effect<A>
  /** Starts a background read unless one runs or the last is recent. */
  readonly refresh: Effect.Effect<void>
}

export const make = <A>(read: Effect.Effect<A>, options: { readonly everyMs: number; readonly scope: Scope.Scope }): Latest<A> => {
  let known: { readonly value: A } | undefined
  let readAt = Number.NEGATIVE_INFINITY
  let reading = false
  const fresh = Effect.tap(read, (value) =>
    Effect.map(Clock.currentTimeMillis, (now) => {
      known = { value }
      readAt = now
    }))
  const refresh = Effect.flatMap(Clock.currentTimeMillis, (now) => {
    if (reading || now - readAt < options.everyMs) return Effect.void
    reading = true
    return Effect.asVoid(Effect.forkIn(Effect.ensuring(fresh, Effect.sync(() => void (reading = false))), options.scope))
  })
  const last = Effect.suspend(() => known === undefined ? fresh : Effect.as(refresh, known.value))
  return { fresh, last, refresh }
}
