/**
 * The peer's single writer: one fiber drains a bounded queue of encoded lines
 * into the transport, in enqueue order, batching what has piled up. Senders
 * wait while the queue is full, so a slow reader slows us down instead of
 * growing our memory.
 *
 * Shutdown is bounded. A client that stopped reading leaves the writer in a
 * write that never completes, and every sender blocked behind it; waiting for
 * them would keep the process alive forever (stdin's end and SIGTERM alike).
 * So once shutdown starts, the output gets a deadline: at the deadline the
 * writer is interrupted, its exit shuts the queue down, and that releases
 * every blocked sender (its line is dropped).
 *
 * `sendWritten` also waits until the transport has taken its line: what a peer does once it
 * has answered (`RequestContext.onResponded`) then starts after the answer went out, not on
 * the same turn of the event loop, ahead of the writer.
 */
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"

interface Writer {
  /** Enqueues one or more complete lines; waits while the queue is full. Dropped once the writer is gone. */
  readonly send: (line: string) => Effect.Effect<void>
  /** Enqueues lines like `send`, then waits until the transport has taken them, or the writer is gone. */
  readonly sendWritten: (line: string) => Effect.Effect<void>
  /** Output not written within `ms` from now is dropped. The first deadline set stands. */
  readonly deadline: (ms: number) => Effect.Effect<void>
  /** Writes what is enqueued (within the deadline, `ms` when none is set yet), then stops. Idempotent. */
  readonly close: (ms: number) => Effect.Effect<void>
}

const MAX_BATCH = 1024

export const make = Effect.fnUntraced(function*(
  write: (chunk: string) => Effect.Effect<void>,
  capacity: number
): Effect.fn.Return<Writer, never, Scope.Scope> {
  // A line, or a mark that the lines before it have been written (`sendWritten`).
  const queue = yield* Queue.bounded<string | Deferred.Deferred<void>, Cause.Done>(capacity)
  /** The marks not reached yet: released when the writer stops. */
  const marks = new Set<Deferred.Deferred<void>>()
  const reached = (mark: Deferred.Deferred<void>) => {
    marks.delete(mark)
    Deferred.doneUnsafe(mark, Exit.void)
  }

  const fiber = yield* Effect.forkScoped(
    Effect.gen(function*() {
      while (true) {
        const batch = yield* Queue.takeBetween(queue, 1, MAX_BATCH)
        // No mark waits (the common case, every update): no mark is in the batch either.
        if (marks.size === 0) {
          const text = batch as ReadonlyArray<string>
          yield* write(text.length === 1 ? text[0] : text.join(""))
          continue
        }
        let lines: Array<string> = []
        for (const item of batch) {
          if (typeof item === "string") {
            lines.push(item)
            continue
          }
          if (lines.length > 0) yield* write(lines.length === 1 ? lines[0] : lines.join(""))
          lines = []
          reached(item)
        }
        if (lines.length > 0) yield* write(lines.length === 1 ? lines[0] : lines.join(""))
      }
    }).pipe(
      Effect.catchCause((cause) =>
        Cause.hasFails(cause) || Cause.hasInterruptsOnly(cause) ? Effect.void : Effect.logError("writer stopped", cause)
      ),
      // If the writer stops, senders must not wait on a queue nobody drains, nor on a mark.
      Effect.ensuring(Effect.andThen(Queue.shutdown(queue), Effect.sync(() => marks.forEach(reached))))
    )
  )

  let watchdog: Fiber.Fiber<void> | undefined

  const deadline = (ms: number): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (watchdog !== undefined) return Effect.void
      const expire = Effect.andThen(
        Effect.sleep(ms),
        Effect.andThen(Effect.logWarning("output not written in time at shutdown; dropped"), Fiber.interrupt(fiber))
      )
      return Effect.map(Effect.forkDetach(expire), (f) => {
        watchdog = f
      })
    })

  const close = (ms: number): Effect.Effect<void> =>
    Effect.andThen(
      deadline(ms),
      Effect.andThen(
        Queue.end(queue),
        Effect.andThen(Fiber.await(fiber), Effect.suspend(() => (watchdog === undefined ? Effect.void : Fiber.interrupt(watchdog))))
      )
    )

  return {
    send: (line) => Effect.asVoid(Queue.offer(queue, line)),
    sendWritten: (line) =>
      Effect.suspend(() => {
        const mark = Deferred.makeUnsafe<void>()
        marks.add(mark)
        return Queue.offerAll(queue, [line, mark]).pipe(
          // Not taken (the writer is gone): nothing will be written.
          Effect.tap((left) => Effect.sync(() => left.includes(mark) && reached(mark))),
          Effect.andThen(Deferred.await(mark))
        )
      }),
    deadline,
    close
  }
})
