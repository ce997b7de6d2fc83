/**
 * The monitor's view of a runtime, and the streams its browsers read. One `Events`
 * subscription and a periodic `ListSessions`/`LiveSessions` keep the overview (`Projection`)
 * up to date; each browser gets its own bounded stream of it (only what changed, at most every
 * `BATCH_MS`), or of one session (`Follow`, through an `Outbox.Pending`).
 *
 * The events are read as fast as they come, whatever the browsers do: a slow browser never
 * slows a turn. What a browser has not taken yet is bounded: for the overview, the set of rows
 * and questions that changed (at most the rows themselves); for a session, `Outbox.MAX_PENDING`.
 */
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { isEphemeral, type SessionEvent } from "../log/Event.ts"
import { type Runtime, type RuntimeError, type SessionSummary } from "../runtime/Api.ts"
import type { SessionError } from "../session/Protocol.ts"
import { VERSION } from "../version.ts"
import * as Coalesce from "./Coalesce.ts"
import * as Follow from "./Follow.ts"
import * as Outbox from "./Outbox.ts"
import * as Projection from "./Projection.ts"
import { BATCH_MS, type Hello, type OverviewMessage, type Question, type SessionMessage } from "./Wire.ts"

export interface Options {
  readonly runtime: Runtime["Service"]
  /** `live`: the runtime runs sessions (a `skein serve`); `logs`: only its logs are read. */
  readonly mode: "live" | "logs"
  readonly approve: boolean
  /** In a cluster: this runner (`host:port`); its live sessions are shown as there. */
  readonly runner?: string | undefined
  /** How often the listing is read again (live events keep live sessions current meanwhile). */
  readonly refreshMs?: number | undefined
}

export interface Hub {
  readonly hello: Hello
  /** The overview for one browser, as server-sent events. */
  readonly overview: Stream.Stream<Uint8Array>
  /** One session's events after `fromSeq` for one browser, as server-sent events. */
  readonly session: (sessionId: string, fromSeq: number) => Stream.Stream<Uint8Array>
  /** Answers an open question, if it is open and `optionId` is one it offers; the first answer wins. */
  readonly answer: (sessionId: string, requestId: string, optionId: string) => Effect.Effect<void, AnswerError>
}

export type AnswerError =
  | { readonly _tag: "closed" }
  | { readonly _tag: "failed"; readonly message: string }

/** A wake-up for one waiting reader. */
class Signal {
  private waiter: Deferred.Deferred<void> | undefined
  private raised = false
  raise() {
    this.raised = true
    const waiter = this.waiter
    this.waiter = undefined
    if (waiter !== undefined) Deferred.doneUnsafe(waiter, Effect.void)
  }
  readonly wait: Effect.Effect<void> = Effect.suspend(() => {
    if (this.raised) {
      this.raised = false
      return Effect.void
    }
    this.waiter ??= Deferred.makeUnsafe<void>()
    return Deferred.await(this.waiter)
  })
}

interface Subscriber {
  changes: Projection.Changes
  readonly signal: Signal
}

/** Pages of the listing read at start (the first `MAX_ROWS` sessions); later reads take the newest. */
const LIST_PAGE = 200
const REFRESH_NEWEST = 100

const mergeChanges = (into: Projection.Changes, from: Projection.Changes) => {
  for (const id of from.rows) {
    into.rows.add(id)
    into.removedRows.delete(id)
  }
  for (const id of from.removedRows) {
    into.rows.delete(id)
    into.removedRows.add(id)
  }
  for (const key of from.opened) if (!into.closed.delete(key)) into.opened.add(key)
  for (const key of from.closed) if (!into.opened.delete(key)) into.closed.add(key)
}

const isEmpty = (c: Projection.Changes) => c.rows.size === 0 && c.removedRows.size === 0 && c.opened.size === 0 && c.closed.size === 0

/** The SSE id of a batch: the last logged seq in it (a browser that reconnects goes on from there). */
const lastLogged = (events: ReadonlyArray<SessionEvent>): number | undefined => {
  for (let i = events.length - 1; i >= 0; i--) if (!isEphemeral(events[i]!)) return events[i]!.seq
  return undefined
}

export const make = (options: Options): Effect.Effect<Hub, RuntimeError, Scope.Scope> =>
  Effect.gen(function*() {
    const runtime = options.runtime
    const state = Projection.empty()
    const subscribers = new Set<Subscriber>()
    const hello: Hello = { type: "hello", mode: options.mode, approve: options.approve, version: VERSION, ...(options.runner !== undefined ? { runner: options.runner } : {}) }

    const publish = (changes: Projection.Changes) => {
      if (isEmpty(changes)) return
      for (const sub of subscribers) {
        mergeChanges(sub.changes, changes)
        sub.signal.raise()
      }
    }

    const catalog = (logged: ReadonlyArray<SessionSummary>, complete: boolean) =>
      Effect.gen(function*() {
        const live = options.mode === "live" ? yield* runtime.liveSessions : []
        const changes = Projection.noChanges()
        Projection.applyCatalog(state, changes, { logged, complete, live, runner: options.runner })
        publish(changes)
      })

    // The first listing, whole (up to MAX_ROWS), before any browser is served.
    const first: Array<SessionSummary> = []
    let cursor: string | undefined
    do {
      const page = yield* runtime.listSessions({ children: true, limit: LIST_PAGE, ...(cursor !== undefined ? { cursor } : {}) })
      first.push(...page.sessions)
      cursor = page.nextCursor
    } while (cursor !== undefined && first.length < Projection.MAX_ROWS)
    yield* catalog(first, cursor === undefined)

    if (options.mode === "live") {
      yield* Effect.forkScoped(
        Stream.runForEachArray(runtime.events, (events) =>
          Effect.sync(() => {
            const changes = Projection.noChanges()
            for (const event of events) Projection.applyEvent(state, changes, event)
            publish(changes)
          })).pipe(Effect.catchCause((cause) => Cause.hasInterruptsOnly(cause) ? Effect.void : Effect.logWarning("monitor: the runtime's events stopped", cause)))
      )
    }
    const refresh = Effect.gen(function*() {
      const page = yield* runtime.listSessions({ children: true, limit: REFRESH_NEWEST })
      yield* catalog(page.sessions, false)
    })
    // The live sessions (kept in memory, cheap to ask for) often; the listing (the store) less.
    const refreshLive = options.mode === "live" ? catalog([], false) : Effect.void
    const every = (ms: number, effect: Effect.Effect<void, RuntimeError>) =>
      Effect.forkScoped(Effect.forever(Effect.andThen(
        Effect.sleep(ms),
        Effect.catchCause(effect, (cause) => Effect.logWarning("monitor: could not list the sessions", cause))
      )))
    yield* every(options.refreshMs ?? (options.mode === "live" ? 5_000 : 2_000), refresh)
    if (options.mode === "live") yield* every(1_000, refreshLive)

    const overviewMessages = (changes: Projection.Changes, full: boolean): Array<OverviewMessage> => {
      const out: Array<OverviewMessage> = []
      const rows = full ? [...state.rows.values()] : [...changes.rows].flatMap((id) => state.rows.get(id) ?? [])
      if (full || rows.length > 0 || changes.removedRows.size > 0) out.push({ type: "sessions", full, rows, removed: full ? [] : [...changes.removedRows] })
      const added = full ? [...state.inbox.values()] : [...changes.opened].flatMap((key) => state.inbox.get(key) ?? [])
      if (full || added.length > 0 || changes.closed.size > 0) out.push({ type: "inbox", full, added, removed: full ? [] : [...changes.closed] })
      return out
    }

    const overview = Outbox.sse((send) => {
      const sub: Subscriber = { changes: Projection.noChanges(), signal: new Signal() }
      return Effect.gen(function*() {
        // A session opened that has said nothing yet is shown at once.
        yield* Effect.ignore(refreshLive)
        subscribers.add(sub)
        yield* send(Outbox.frame(hello))
        for (const message of overviewMessages(sub.changes, true)) yield* send(Outbox.frame(message))
        sub.changes = Projection.noChanges()
        for (;;) {
          yield* sub.signal.wait
          const changes = sub.changes
          sub.changes = Projection.noChanges()
          for (const message of overviewMessages(changes, false)) yield* send(Outbox.frame(message))
          yield* Effect.sleep(BATCH_MS)
        }
      }).pipe(Effect.ensuring(Effect.sync(() => subscribers.delete(sub))))
    })

    const watch: Follow.Watch = {
      runtime,
      live: options.mode === "live",
      isLive: (id) => Effect.sync(() => state.rows.get(id)?.live === true),
      changedAt: (id) => state.rows.get(id)?.updatedAt,
      pollMs: 1_000
    }

    const session = (sessionId: string, fromSeq: number) =>
      Outbox.sse((send) =>
        Effect.gen(function*() {
          yield* send(Outbox.frame(hello))
          const questions = [...state.inbox.values()].filter((q) => q.sessionId === sessionId)
          yield* send(Outbox.frame({ type: "session", row: state.rows.get(sessionId), questions } satisfies SessionMessage))
          const pending = new Outbox.Pending()
          yield* Effect.forkChild(
            Stream.runForEachWhile(Follow.follow(watch, sessionId, fromSeq), (batch) => {
              if (batch._tag === "gone") {
                return Effect.as(send(Outbox.frame({ type: "gone", message: batch.message } satisfies SessionMessage)), false).pipe(
                  Effect.ensuring(Effect.sync(() => pending.end("done")))
                )
              }
              return Effect.sync(() => pending.offer(batch.events))
            })
          )
          yield* Outbox.drain(
            pending,
            send,
            (events): SessionMessage => ({ type: "events", events: events.map(Coalesce.cut) }),
            lastLogged
          )
        })
      )

    const answer = (sessionId: string, requestId: string, optionId: string): Effect.Effect<void, AnswerError> =>
      Effect.gen(function*() {
        const question: Question | undefined = state.inbox.get(Projection.questionKey(sessionId, requestId))
        if (question === undefined || !question.options.some((option) => option.optionId === optionId)) {
          return yield* Effect.fail<AnswerError>({ _tag: "closed" })
        }
        const s = yield* Effect.mapError(runtime.getSession(sessionId), (e: RuntimeError): AnswerError => ({ _tag: "failed", message: e.message }))
        yield* Effect.mapError(
          s.answer(requestId, { outcome: "selected", optionId }),
          (e: SessionError): AnswerError => (e.reason === "unknown_request" ? { _tag: "closed" } : { _tag: "failed", message: e.message })
        )
      })

    return { hello, overview, session, answer }
  })
