/**
 * The Bus: carries every event of every session to its subscribers.
 *
 * Each session has its own PubSub (so a subscriber to one session never sees,
 * or waits on, another's deltas), and every event also goes to a global
 * PubSub for subscribers to all sessions. Events are published only after the
 * canonical ones were appended to the log.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as PubSub from "effect/PubSub"
import type * as Scope from "effect/Scope"
import type { SessionEvent } from "../log/Event.ts"

export class Bus extends Context.Service<Bus, {
  /** Registers a session's channel; removed when the scope closes. */
  readonly register: (sessionId: string) => Effect.Effect<void, never, Scope.Scope>
  readonly publish: (event: SessionEvent) => Effect.Effect<void>
  /** A subscription to one session's events, from now on. */
  readonly subscribe: (sessionId: string) => Effect.Effect<PubSub.Subscription<SessionEvent> | undefined, never, Scope.Scope>
  /** A subscription to every session's events, from now on. */
  readonly subscribeAll: Effect.Effect<PubSub.Subscription<SessionEvent>, never, Scope.Scope>
}>()("skein/runtime/Bus") {
  static readonly layer = Layer.effect(
    Bus,
    Effect.gen(function*() {
      const all = yield* PubSub.unbounded<SessionEvent>()
      yield* Effect.addFinalizer(() => PubSub.shutdown(all))
      const channels = new Map<string, PubSub.PubSub<SessionEvent>>()

      const register = Effect.fn("Bus.register")(function*(sessionId: string) {
        const channel = yield* PubSub.unbounded<SessionEvent>()
        channels.set(sessionId, channel)
        yield* Effect.addFinalizer(() =>
          Effect.suspend(() => {
            if (channels.get(sessionId) === channel) channels.delete(sessionId)
            return PubSub.shutdown(channel)
          })
        )
      })

      // Subscribers to every session (Runtime.events): none in `skein acp`, so publish skips it.
      let allSubscribers = 0
      const subscribeAll = Effect.acquireRelease(
        Effect.sync(() => {
          allSubscribers++
        }),
        () =>
          Effect.sync(() => {
            allSubscribers--
          })
      ).pipe(Effect.andThen(PubSub.subscribe(all)))
      const publish = (event: SessionEvent): Effect.Effect<void> => {
        const channel = channels.get(event.sessionId)
        if (allSubscribers === 0) return channel === undefined ? Effect.void : Effect.asVoid(PubSub.publish(channel, event))
        const toAll = PubSub.publish(all, event)
        return channel === undefined ? Effect.asVoid(toAll) : Effect.andThen(PubSub.publish(channel, event), toAll)
      }

      const subscribe = (sessionId: string) =>
        Effect.suspend(() => {
          const channel = channels.get(sessionId)
          return channel === undefined ? Effect.succeed(undefined) : PubSub.subscribe(channel)
        })

      return Bus.of({ register, publish, subscribe, subscribeAll })
    })
  )
}
