/**
 * A session's journal: the one way its events reach the log and the bus. A canonical event is
 * stamped (its `seq`), scrubbed of secrets, appended, folded into the history and then
 * published, as one uninterruptible step; an ephemeral one is stamped and published.
 *
 * When the store refuses a write, nothing of it is stamped for good, folded or published:
 *
 * - `io` (a full disk, an I/O error, a database that does not answer): the write fails, and
 *   so does whatever asked for it. A turn's end that was refused (`end`) is kept, and written
 *   first by the next write the store takes (`repair`, or any later event): the log never
 *   misses a turn's end once the store works again, and nothing later is published before it.
 *   A log whose sync failed is synced first the same way; a turn end that waited for that sync
 *   is published only then.
 * - `locked` (another Skein took the session over: its write lease is gone): the journal
 *   writes nothing more; every later write fails with that error (`lost`), and its session is
 *   closed by its owner.
 *
 * Bounded: what waits to be written is one turn's end per turn that ended while the store
 * refused it, and a session that still misses one accepts no new prompt (see `Session.ts`).
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Semaphore from "effect/Semaphore"
import type { Canonical, CanonicalBody, EphemeralBody, SessionEvent } from "../log/Event.ts"
import * as History from "../log/History.ts"
import type { LogError } from "../log/LogError.ts"
import * as Recovery from "../log/Recovery.ts"
import * as Stamp from "../log/Stamp.ts"
import type { Writer } from "../log/Store.ts"
import * as EventScrub from "../secrets/EventScrub.ts"
import type * as Bus from "./Bus.ts"
import { errorOf } from "./TurnEnd.ts"

/** An event waiting to be logged, with its turn (`null`: session-level). */
interface Pending {
  readonly turn: number | null
  readonly body: CanonicalBody
}

/** How a turn's end went: logged (and published), refused by the store (kept for later), or not written because the session was taken over. */
type Ending =
  | { readonly _tag: "Logged" }
  | { readonly _tag: "Refused"; readonly error: LogError }
  | { readonly _tag: "Lost"; readonly error: LogError }

export interface Journal {
  /** Logs, folds and publishes a canonical event (after what the log misses); `committed` runs once it is logged. */
  readonly canonical: (turn: number | null, body: CanonicalBody, committed?: () => void) => Effect.Effect<void, LogError>
  /** Publishes an ephemeral event, numbered after the last logged one. */
  readonly ephemeral: (turn: number, body: EphemeralBody) => Effect.Effect<void>
  /**
   * Ends a turn: logs `bodies` (the last one its `turn_end`) in one write, after `start` when
   * the turn's `turn_start` was never logged, syncs, then publishes them. Never fails: a
   * refusal is kept for later (`Refused`), or ends the journal (`Lost`).
   */
  readonly end: (turn: number, bodies: ReadonlyArray<CanonicalBody>, start?: CanonicalBody) => Effect.Effect<Ending>
  /** Session-level events to log now, or first thing once the store takes writes again. */
  readonly soon: (bodies: ReadonlyArray<CanonicalBody>) => Effect.Effect<void>
  /** Writes and syncs what the log misses (then publishes it); fails while the store still refuses. */
  readonly repair: Effect.Effect<void, LogError>
  /** Syncs the log now; a failed sync is left for the next write to try first (the journal is `behind`). */
  readonly sync: Effect.Effect<void>
  /** Whether the log misses something: a turn's end, or a sync. */
  readonly behind: () => boolean
  /** Why nothing more may be written (another Skein took the session over), if so. */
  readonly lost: () => LogError | undefined
}

interface Options {
  readonly sessionId: string
  readonly writer: Writer
  /** Where what is logged (and every ephemeral event) goes once it is: the bus, for a live session. */
  readonly bus: Pick<Bus.Bus["Service"], "publish">
  /** Folded with every event logged. */
  readonly history: History.History
  /** The `seq` of the last event the log holds. */
  readonly lastSeq: number
}

export const make = (options: Options): Effect.Effect<Journal> =>
  Effect.gen(function*() {
    const { bus, history, sessionId, writer } = options
    const lock = yield* Semaphore.make(1)
    const scrub = EventScrub.make()
    let seq = options.lastSeq
    /** Refused, to be written before anything else (already scrubbed). */
    let missing: Array<Pending> = []
    /** Written since a sync that failed. */
    let unsynced = false
    /** Written, and published once the sync that failed succeeds. */
    let held: Array<SessionEvent> = []
    let lostWith: LogError | undefined

    const stamp = <B extends CanonicalBody | EphemeralBody>(body: B, at: number, turn: number | null, n: number) =>
      Stamp.stamp(body, { sessionId, seq: n, ts: at, turn })

    /** Notes what a refusal means: `locked` ends the journal. */
    const refused = (error: LogError) =>
      Effect.sync(() => {
        if (error.reason !== "locked") return
        lostWith = error
        missing = []
        held = []
        unsynced = false
      })

    /** Appends events in one write, then folds them (under the lock). */
    const append = (entries: ReadonlyArray<Pending>, at: number): Effect.Effect<Array<SessionEvent>, LogError> => {
      const events = entries.map((entry, i) => stamp(entry.body, at, entry.turn, seq + 1 + i))
      return writer.append(events as ReadonlyArray<Canonical>).pipe(
        Effect.map(() => {
          seq += events.length
          for (const event of events) History.apply(history, event as Canonical, event.seq)
          return events
        }),
        Effect.tapError(refused)
      )
    }

    /** An event the store calls invalid can never be written: it is left out, and said so. */
    const leftOut = (error: LogError) => Effect.logWarning(`session ${sessionId}: left out of its log: ${error.message}`)

    /**
     * Writes what the log misses (under the lock), in one write; when the store calls one of
     * them invalid, one by one, leaving that one out. What is written waits for the sync
     * (`held`); what the store refused stays missing.
     */
    const writeMissing = (at: number): Effect.Effect<void, LogError> =>
      Effect.gen(function*() {
        const whole = yield* Effect.exit(append(missing, at))
        if (Exit.isSuccess(whole)) {
          missing = []
          held.push(...whole.value)
          unsynced = true
          return
        }
        const error = errorOf(whole)
        if (error.reason !== "invalid") return yield* error
        while (missing.length > 0) {
          const next = missing[0]!
          const one = yield* Effect.exit(append([next], at))
          if (Exit.isFailure(one) && errorOf(one).reason !== "invalid") return yield* errorOf(one)
          missing = missing.slice(1)
          if (Exit.isSuccess(one)) {
            held.push(...one.value)
            unsynced = true
            continue
          }
          yield* leftOut(errorOf(one))
          // A response left out opens no tool call: the calls it asked for get no result either.
          if (next.body.type === "model_response") {
            const ids = new Set(next.body.data.parts.flatMap((part) => (part.type === "tool_call" ? [part.id] : [])))
            missing = missing.filter((entry) =>
              !(entry.turn === next.turn && (entry.body.type === "tool_call" || entry.body.type === "tool_result") && ids.has(entry.body.data.id))
            )
          }
        }
      })

    const upToDate: Effect.Effect<ReadonlyArray<SessionEvent>> = Effect.succeed([])
    /**
     * Brings the log up to date (under the lock): writes what it misses, and syncs what was
     * written since the last sync that failed (or since that write); gives the events to
     * publish now, in order.
     */
    const catchUp = (at: number): Effect.Effect<ReadonlyArray<SessionEvent>, LogError> =>
      lostWith === undefined && missing.length === 0 && !unsynced ? upToDate : Effect.gen(function*() {
        if (lostWith !== undefined) return yield* lostWith
        if (missing.length > 0) yield* writeMissing(at)
        if (!unsynced) return []
        yield* Effect.tapError(writer.sync, refused)
        unsynced = false
        const released = held
        held = []
        return released
      })

    const publish = (events: ReadonlyArray<SessionEvent>) =>
      events.length === 0 ? Effect.void : Effect.forEach(events, bus.publish, { discard: true })

    const canonical = (turn: number | null, raw: CanonicalBody, committed?: () => void): Effect.Effect<void, LogError> =>
      lock.withPermits(1)(Effect.uninterruptible(Effect.gen(function*() {
        const at = yield* Clock.currentTimeMillis
        // Secrets never reach the log, the model's history or a presenter; held-back deltas go first.
        const flushed = scrub.flush().map((body) => stamp(body, at, turn, seq))
        const body = scrub.canonical(raw)
        const written = yield* Effect.exit(Effect.flatMap(catchUp(at), (released) =>
          Effect.map(append([{ turn, body }], at), (events) => [...released, ...flushed, ...events])))
        if (Exit.isFailure(written)) return { publish: flushed, failure: errorOf(written) }
        committed?.()
        return { publish: written.value, failure: undefined }
      }))).pipe(
        // Deltas are ephemeral: shown even when the event after them could not be logged.
        Effect.flatMap(({ failure, publish: events }) => failure === undefined ? publish(events) : Effect.andThen(publish(events), Effect.fail(failure)))
      )

    const ephemeral = (turn: number, raw: EphemeralBody): Effect.Effect<void> =>
      Effect.clockWith((clock) => {
        const ts = clock.currentTimeMillisUnsafe()
        const bodies = scrub.ephemeral(raw)
        const one = (body: EphemeralBody) => bus.publish(stamp(body, ts, turn, seq))
        return bodies.length === 1 ? one(bodies[0]!) : Effect.forEach(bodies, one, { discard: true })
      })

    const end = (turn: number, bodies: ReadonlyArray<CanonicalBody>, start?: CanonicalBody): Effect.Effect<Ending> =>
      lock.withPermits(1)(Effect.uninterruptible(Effect.gen(function*() {
        if (lostWith !== undefined) return { ending: { _tag: "Lost", error: lostWith } as Ending, publish: [] }
        const at = yield* Clock.currentTimeMillis
        const flushed = scrub.flush().map((body) => stamp(body, at, turn, seq))
        // Written after what the log misses, whole, and synced before any of it is published.
        for (const body of start === undefined ? bodies : [start, ...bodies]) missing.push({ turn, body: scrub.canonical(body) })
        unsynced = true
        const released = yield* Effect.exit(catchUp(at))
        if (Exit.isSuccess(released)) return { ending: { _tag: "Logged" } as Ending, publish: [...flushed, ...released.value] }
        const error = errorOf(released)
        return { ending: (lostWith !== undefined ? { _tag: "Lost", error } : { _tag: "Refused", error }) as Ending, publish: flushed }
      }))).pipe(Effect.flatMap(({ ending, publish: events }) => Effect.as(publish(events), ending)))

    const repair: Effect.Effect<void, LogError> = lock.withPermits(1)(Effect.uninterruptible(
      Effect.flatMap(Clock.currentTimeMillis, (at) => Effect.exit(catchUp(at)))
    )).pipe(Effect.flatMap((exit) => Exit.isSuccess(exit) ? publish(exit.value) : exit))

    // Not synced: the next turn's end (or the session's close) syncs them, and nothing waits for the disk.
    const soon = (bodies: ReadonlyArray<CanonicalBody>): Effect.Effect<void> =>
      bodies.length === 0 ? Effect.void : lock.withPermits(1)(Effect.uninterruptible(Effect.gen(function*() {
        if (lostWith !== undefined) return []
        const entries = bodies.map((body): Pending => ({ turn: null, body: scrub.canonical(body) }))
        if (missing.length > 0 || unsynced) {
          missing.push(...entries)
          return []
        }
        const at = yield* Clock.currentTimeMillis
        const written = yield* Effect.exit(append(entries, at))
        if (Exit.isSuccess(written)) return written.value
        if (errorOf(written).reason === "invalid") yield* leftOut(errorOf(written))
        else if (lostWith === undefined) missing.push(...entries)
        return []
      }))).pipe(Effect.flatMap(publish))

    const sync: Effect.Effect<void> = lock.withPermits(1)(Effect.uninterruptible(Effect.suspend(() =>
      lostWith !== undefined || unsynced ? Effect.void : writer.sync.pipe(
        Effect.catch((error) => Effect.andThen(refused(error), Effect.sync(() => void (unsynced = lostWith === undefined))))
      )
    )))

    return {
      canonical,
      sync,
      ephemeral,
      end,
      soon,
      repair,
      behind: () => missing.length > 0 || unsynced,
      lost: () => lostWith
    } satisfies Journal
  })

/**
 * Closes the turn a crash left open at the end of a log (`events`, folded into `history`) the
 * way the session would have: the closing events (`Recovery.closing`) go through a journal —
 * numbered after the last event, scrubbed, written in one write, synced and folded into
 * `history`. Gives them as written (none when the log ended cleanly); fails, writing nothing,
 * when the store refuses them. Nothing is published: nobody presents a log being opened.
 */
export const recover = (options: {
  readonly sessionId: string
  readonly writer: Writer
  readonly history: History.History
  readonly events: ReadonlyArray<Canonical>
}): Effect.Effect<ReadonlyArray<Canonical>, LogError> =>
  Effect.gen(function*() {
    const closing = Recovery.closing(options.events, options.history)
    if (closing === undefined) return []
    const written: Array<Canonical> = []
    const journal = yield* make({
      sessionId: options.sessionId,
      writer: options.writer,
      history: options.history,
      lastSeq: options.events.length > 0 ? options.events[options.events.length - 1]!.seq : 0,
      bus: { publish: (event) => Effect.sync(() => void written.push(event as Canonical)) }
    })
    const ending = yield* journal.end(closing.turn, closing.bodies)
    if (ending._tag !== "Logged") return yield* ending.error
    return written
  })
