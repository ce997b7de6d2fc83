/**
 * One session's events for its page: its log after `fromSeq`, then what happens next.
 *
 * - A session live in the runtime the monitor watches is followed with `Subscribe {fromSeq}`
 *   (its log, then its live events, none twice). When it stops being live, the stream goes on
 *   as for any other session.
 * - Any other session is read from its log (`ReadSession`), and read again whenever its row
 *   says the log changed (another process may be writing it: an editor's `skein acp`); once it
 *   becomes live here, it is followed live from the last event shown.
 *
 * Looking at a session never opens it: a session is followed live only once something else
 * made it live (a monitor is read-only about which sessions run).
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { isEphemeral, type SessionEvent } from "../log/Event.ts"
import type { Runtime } from "../runtime/Api.ts"

export interface Watch {
  readonly runtime: Runtime["Service"]
  /** Whether the runtime's sessions can be live (false: only logs are read). */
  readonly live: boolean
  /** Whether the session is live now. */
  readonly isLive: (sessionId: string) => Effect.Effect<boolean>
  /** When the session's log last changed, as last seen (to read it again only then). */
  readonly changedAt: (sessionId: string) => number | undefined
  /** How long to wait between looks at a session that is not live. */
  readonly pollMs: number
}

export type Followed = { readonly _tag: "events"; readonly events: ReadonlyArray<SessionEvent> } | { readonly _tag: "gone"; readonly message: string }

/** The session's events after `fromSeq`, in batches, for as long as the stream is read. */
export const follow = (watch: Watch, sessionId: string, fromSeq: number): Stream.Stream<Followed> => {
  let last = fromSeq
  const seen = (events: ReadonlyArray<SessionEvent>) => {
    for (const event of events) if (!isEphemeral(event)) last = Math.max(last, event.seq)
  }

  const live: Stream.Stream<Followed> = Stream.unwrap(Effect.map(
    Effect.result(watch.runtime.getSession(sessionId)),
    (got) =>
      got._tag === "Failure"
        ? Stream.empty
        : got.success.subscribe(last).pipe(
          Stream.mapArray((events) => {
            // Logged events after the last one shown; live ones as they come.
            const fresh = events.filter((event) => event.seq > last || isEphemeral(event))
            seen(fresh)
            return [{ _tag: "events" as const, events: fresh }]
          }),
          Stream.filter((batch) => batch.events.length > 0),
          Stream.catchCause(() => Stream.empty)
        )
  ))

  /** The log's events after the last shown, read again only when it changed. */
  const fromLog = (readAt: number | undefined): Effect.Effect<{ readonly batch: Followed | undefined; readonly readAt: number | undefined }> =>
    Effect.gen(function*() {
      const changed = watch.changedAt(sessionId)
      if (readAt !== undefined && changed !== undefined && changed <= readAt) return { batch: undefined, readAt }
      const record = yield* Effect.result(watch.runtime.readSession(sessionId))
      if (record._tag === "Failure") {
        return record.failure.reason === "not_found"
          ? { batch: { _tag: "gone" as const, message: record.failure.message }, readAt }
          : { batch: undefined, readAt }
      }
      const events = record.success.events.filter((event) => event.seq > last)
      seen(events)
      return { batch: events.length > 0 ? { _tag: "events" as const, events } : undefined, readAt: changed ?? 0 }
    })

  const step = (readAt: number | undefined, first: boolean): Stream.Stream<Followed> =>
    Stream.unwrap(Effect.gen(function*() {
      if (watch.live && (yield* watch.isLive(sessionId))) {
        return Stream.concat(live, Stream.suspend(() => step(undefined, false)))
      }
      if (!first) yield* Effect.sleep(watch.pollMs)
      const read = yield* fromLog(readAt)
      const batch = read.batch
      if (batch?._tag === "gone") return Stream.make(batch)
      const rest = Stream.suspend(() => step(read.readAt, false))
      return batch === undefined ? rest : Stream.concat(Stream.make(batch), rest)
    }))

  return step(undefined, true)
}
