/**
 * The live sessions of a runtime: each in its own scope, with when it was last used. A session
 * leaves the registry when its scope closes. Past the cap on live top-level sessions, the one
 * idle longest (and at least `EVICT_AFTER_IDLE_MS`) is closed to make room (`evict`): it comes
 * back from its log when asked for. A session closed for a reason (another Skein took it
 * over) is answered with that reason until it is opened, closed or deleted again.
 *
 * The registry is one value (`State`); which session to evict is a pure function of it.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import type { SessionInfo } from "../session/Protocol.ts"
import { RuntimeError } from "./Api.ts"
import { EVICT_AFTER_IDLE_MS } from "./Config.ts"
import type * as Session from "./SessionDeps.ts"

interface Entry {
  readonly session: Session.Session
  readonly scope: Scope.Closeable
  /** When it was last asked for. */
  used: number
  /** A child session (a subagent): its parent's turn owns it; it is never evicted nor counted against the cap. */
  readonly child: boolean
}

interface State {
  readonly live: Map<string, Entry>
  /** Sessions closed to make room: they come back when asked for. */
  readonly evicted: Set<string>
  /** Sessions closed for a reason, with it (the latest `ENDED_KEPT`). */
  readonly ended: Map<string, string>
}

const ENDED_KEPT = 1024

/** What a request for a session finds. */
type Found =
  | { readonly _tag: "Live"; readonly session: Session.Session }
  | { readonly _tag: "Ended"; readonly reason: string }
  | { readonly _tag: "Evicted" }
  | { readonly _tag: "Missing" }

/**
 * The session to close to make room at `now`: the top-level one used least recently among
 * those idle (no turn running or queued) for at least `EVICT_AFTER_IDLE_MS`; none when none is.
 */
const toEvict = (live: Iterable<Entry>, now: number): Entry | undefined => {
  let oldest: Entry | undefined
  let oldestUse = Infinity
  for (const entry of live) {
    if (entry.child) continue
    const idleSince = entry.session.idleSince()
    if (idleSince === undefined) continue
    const lastUse = Math.max(entry.used, idleSince)
    if (now - lastUse < EVICT_AFTER_IDLE_MS || lastUse >= oldestUse) continue
    oldest = entry
    oldestUse = lastUse
  }
  return oldest
}

const info = (session: Session.Session): SessionInfo => ({
  id: session.id,
  cwd: session.cwd,
  additionalDirectories: session.additionalDirectories,
  created: session.created,
  ...(session.parent !== undefined ? { parent: session.parent } : {}),
  ...(session.agent !== undefined ? { agent: session.agent } : {})
})

/** A registry for at most `maxLive` live top-level sessions; closing its scope closes them all. */
export const make = (maxLive: number) =>
  Effect.gen(function*() {
    const state: State = { live: new Map(), evicted: new Set(), ended: new Map() }

    yield* Effect.addFinalizer(() =>
      Effect.suspend(() =>
        Effect.forEach([...state.live.values()], (entry) => Scope.close(entry.scope, Exit.void), { concurrency: "unbounded", discard: true })
      )
    )

    /** Registers a live session (`child`: a subagent); it leaves the registry when its scope closes. */
    const add = (session: Session.Session, scope: Scope.Closeable, child = false) =>
      Effect.gen(function*() {
        state.live.set(session.id, { session, scope, used: yield* Clock.currentTimeMillis, child })
        yield* Scope.addFinalizer(scope, Effect.sync(() => state.live.delete(session.id)))
        return session
      })

    /** The live session `id`, marked used now. */
    const use = (id: string): Effect.Effect<Session.Session | undefined> =>
      Effect.suspend(() => {
        const entry = state.live.get(id)
        if (entry === undefined) return Effect.succeed(undefined)
        return Effect.map(Clock.currentTimeMillis, (now) => {
          entry.used = now
          return entry.session
        })
      })

    /** What a request for `id` finds (a live one is marked used now). */
    const find = (id: string): Effect.Effect<Found> =>
      Effect.map(use(id), (session): Found => {
        if (session !== undefined) return { _tag: "Live", session }
        const reason = state.ended.get(id)
        if (reason !== undefined) return { _tag: "Ended", reason }
        return state.evicted.has(id) ? { _tag: "Evicted" } : { _tag: "Missing" }
      })

    /**
     * Makes room for one more live top-level session, closing idle ones past the cap (their
     * logs have everything). When none qualifies, the new session is refused: memory stays
     * bounded whatever a client does.
     */
    const makeRoom: Effect.Effect<void, RuntimeError> = Effect.gen(function*() {
      const topLevel = () => {
        let n = 0
        for (const entry of state.live.values()) if (!entry.child) n++
        return n
      }
      while (topLevel() >= maxLive) {
        const oldest = toEvict(state.live.values(), yield* Clock.currentTimeMillis)
        if (oldest === undefined) {
          return yield* new RuntimeError({
            reason: "limit",
            message: `Too many live sessions (${maxLive}) and none idle to close: close one (session/close) or allow more (--max-live-sessions)`
          })
        }
        yield* Effect.logInfo(`Closed the idle session ${oldest.session.id} to stay within ${maxLive} live sessions; it can be loaded again`)
        yield* Scope.close(oldest.scope, Exit.void)
        state.evicted.add(oldest.session.id)
      }
    })

    /** Closes a session; `reason`: what its later requests are answered with. */
    const close = (id: string, reason?: string) =>
      Effect.suspend(() => {
        state.ended.delete(id)
        if (reason !== undefined) {
          state.ended.set(id, reason)
          if (state.ended.size > ENDED_KEPT) state.ended.delete(state.ended.keys().next().value!)
        }
        state.evicted.delete(id)
        const entry = state.live.get(id)
        return entry === undefined ? Effect.void : Scope.close(entry.scope, Exit.void)
      })

    return {
      add,
      use,
      find,
      makeRoom,
      close,
      /** Whether `id` is live here. */
      has: (id: string) => state.live.has(id),
      /** A session is being opened again: a reason it ended for no longer answers for it. */
      opening: (id: string) => Effect.sync(() => void state.ended.delete(id)),
      /** A session was opened again: it is no longer an evicted one. */
      opened: (id: string) => Effect.sync(() => void state.evicted.delete(id)),
      list: Effect.sync(() => [...state.live.values()].map((entry) => info(entry.session)))
    }
  })

export type Registry = Effect.Success<ReturnType<typeof make>>
