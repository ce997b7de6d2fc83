/**
 * One browser's stream, bounded: what the monitor will send it waits here, merged as it comes
 * (`Coalesce.push`), and leaves as one server-sent event at most every `BATCH_MS`. The source
 * is read as fast as it comes (a session's events are never held back by a slow browser);
 * what waits for the browser is bounded by `MAX_PENDING` — past it, the stream ends with an
 * `overflow` comment and the browser reconnects from the last event it has (its
 * `Last-Event-ID`), from the log.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import type { SessionEvent } from "../log/Event.ts"
import * as Coalesce from "./Coalesce.ts"
import { BATCH_MS } from "./Wire.ts"

/** What one browser may have waiting (in `Coalesce.weight` units: about characters). */
export const MAX_PENDING = 4 * 1024 * 1024

/** Events waiting for one browser. */
export class Pending {
  private events: Array<SessionEvent> = []
  private weight = 0
  private ended: "done" | "overflow" | undefined
  private waiter: Deferred.Deferred<void> | undefined

  /** Adds events; false (and the stream ends as `overflow`) once too much waits. */
  offer(events: ReadonlyArray<SessionEvent>): boolean {
    if (this.ended !== undefined) return false
    for (const event of events) {
      const before = this.events.length
      const last = before > 0 ? this.events[before - 1] : undefined
      Coalesce.push(this.events, event)
      const now = this.events[this.events.length - 1]!
      // Merged into the last one: only the difference counts.
      this.weight += this.events.length === before && last !== undefined ? Coalesce.weight(now) - Coalesce.weight(last) : Coalesce.weight(now)
    }
    if (this.weight > MAX_PENDING) {
      this.events = []
      this.weight = 0
      this.end("overflow")
      return false
    }
    this.wake()
    return true
  }

  end(reason: "done" | "overflow"): void {
    this.ended ??= reason
    this.wake()
  }

  /** Waits until something waits (or the source ended), then takes it all. */
  readonly take: Effect.Effect<{ readonly events: ReadonlyArray<SessionEvent>; readonly ended: "done" | "overflow" | undefined }> = Effect.suspend(() => {
    if (this.events.length > 0 || this.ended !== undefined) {
      const events = this.events
      this.events = []
      this.weight = 0
      return Effect.succeed({ events, ended: events.length > 0 ? undefined : this.ended })
    }
    this.waiter ??= Deferred.makeUnsafe<void>()
    return Effect.andThen(Deferred.await(this.waiter), this.take)
  })

  private wake() {
    const waiter = this.waiter
    this.waiter = undefined
    if (waiter !== undefined) Deferred.doneUnsafe(waiter, Effect.void)
  }
}

/** One server-sent event: an optional id, and JSON data on one line. */
export const frame = (data: unknown, id?: number): string => `${id !== undefined ? `id: ${id}\n` : ""}data: ${JSON.stringify(data)}\n\n`

/**
 * A server-sent event stream whose frames `produce` offers (it runs for as long as the browser
 * reads). A comment line every 15 s keeps proxies and the browser from timing it out.
 */
export const sse = (produce: (send: (text: string) => Effect.Effect<void>) => Effect.Effect<void, never, never>): Stream.Stream<Uint8Array> =>
  Stream.callback<string>((queue) =>
    Effect.gen(function*() {
      const send = (text: string) => Effect.asVoid(Queue.offer(queue, text))
      yield* Effect.forkScoped(Effect.forever(Effect.andThen(Effect.sleep("15 seconds"), send(": keep-alive\n\n"))))
      yield* Effect.forkScoped(Effect.andThen(produce(send), Queue.end(queue)))
    }), { bufferSize: 8 }).pipe(Stream.encodeText)

/**
 * Sends what `pending` holds as `message(events)` frames, at most one every `BATCH_MS`, until
 * its source ends; `id`: the SSE id of a batch (the last logged seq in it).
 */
export const drain = (
  pending: Pending,
  send: (text: string) => Effect.Effect<void>,
  message: (events: ReadonlyArray<SessionEvent>) => unknown,
  id: (events: ReadonlyArray<SessionEvent>) => number | undefined
): Effect.Effect<void> =>
  Effect.gen(function*() {
    for (;;) {
      const { events, ended } = yield* pending.take
      if (ended === "overflow") return yield* send(": overflow\n\n")
      if (ended === "done") return
      yield* send(frame(message(events), id(events)))
      yield* Effect.sleep(BATCH_MS)
    }
  })
