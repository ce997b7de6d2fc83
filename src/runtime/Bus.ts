/**
 * The Bus: carries every event of every session to its subscribers, with bounded memory.
 *
 * Each subscriber has its own buffer. A publisher never waits to enqueue (a canonical event
 * is never dropped), but a subscriber that falls behind gets its deltas coalesced (adjacent
 * text or thinking deltas of a turn merged into one; a tool's running output and a usage
 * update replaced by the newer one), and once its buffer holds more than `MAX_WEIGHT`
 * (characters of text, plus a fixed cost per event) the publisher waits until it has taken
 * some: the turn slows to the pace of its slowest reader instead of growing memory. A
 * subscription that ends (its scope closes) releases whoever waits on it.
 *
 * Each session has its own channel, so a subscriber to one session never sees, or waits on,
 * another's events; subscribers to every session (`subscribeAll`) get all of them.
 */
import type * as Arr from "effect/Array"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { absurd } from "effect/Function"
import type { SessionEvent } from "../log/Event.ts"

/** How much a subscriber may hold before publishers wait for it. */
export const MAX_WEIGHT = 1 << 20
/** What an event costs in a buffer beyond its text. */
const EVENT_WEIGHT = 256

const weightOf = (event: SessionEvent): number => {
  switch (event.type) {
    case "text_delta":
    case "thinking_delta":
      return EVENT_WEIGHT + event.data.text.length
    case "tool_progress":
      return EVENT_WEIGHT + event.data.output.length
    case "turn_start":
    case "model_response":
    case "model_partial":
    case "tool_call":
    case "tool_result":
    case "turn_end":
    case "mode_changed":
    case "config_changed":
    case "plan":
    case "permission":
    case "notice":
    case "mcp_servers":
    case "subagent":
    case "compaction":
    case "skill_activation":
    case "turn_input":
    case "undo":
    case "hook":
    case "tool_running":
    case "usage":
    case "permission_asked":
    case "client_call":
    case "question_withdrawn":
    case "tool_terminal":
    case "child_event":
    case "compacting":
    case "turn_aborted":
    case "checkpoint":
    case "rewound":
      return EVENT_WEIGHT
    default:
      return absurd(event)
  }
}

/** The event that stands for `last` followed by `next`, when they coalesce. */
const coalesce = (last: SessionEvent, next: SessionEvent): SessionEvent | undefined => {
  if (last.type !== next.type || last.turn !== next.turn || last.sessionId !== next.sessionId) return undefined
  switch (next.type) {
    case "text_delta":
    case "thinking_delta":
      return { ...next, data: { text: (last as typeof next).data.text + next.data.text } }
    case "tool_progress":
      return (last as typeof next).data.id === next.data.id ? next : undefined
    case "usage":
      return next
    case "turn_start":
    case "model_response":
    case "model_partial":
    case "tool_call":
    case "tool_result":
    case "turn_end":
    case "mode_changed":
    case "config_changed":
    case "plan":
    case "permission":
    case "notice":
    case "mcp_servers":
    case "subagent":
    case "compaction":
    case "skill_activation":
    case "turn_input":
    case "undo":
    case "hook":
    case "tool_running":
    case "permission_asked":
    case "client_call":
    case "question_withdrawn":
    case "tool_terminal":
    case "child_event":
    case "compacting":
    case "turn_aborted":
    case "checkpoint":
    case "rewound":
      return undefined
    default:
      return absurd(next)
  }
}

/** One subscriber's buffer. */
export interface Subscription {
  /** Waits for at least one event, then takes every buffered one; empty once the channel closed. */
  readonly takeAll: Effect.Effect<ReadonlyArray<SessionEvent>>
  /** Takes every buffered event without waiting (maybe none). */
  readonly poll: Effect.Effect<ReadonlyArray<SessionEvent>>
}

class Buffer {
  items: Array<SessionEvent> = []
  weight = 0
  closed = false
  private taker: Deferred.Deferred<void> | undefined
  private space: Deferred.Deferred<void> | undefined

  offer(event: SessionEvent): void {
    if (this.closed) return
    const last = this.items.length > 0 ? this.items[this.items.length - 1]! : undefined
    const merged = last === undefined ? undefined : coalesce(last, event)
    if (merged !== undefined) {
      this.weight += weightOf(merged) - weightOf(last!)
      this.items[this.items.length - 1] = merged
    } else {
      this.items.push(event)
      this.weight += weightOf(event)
    }
    this.wake()
  }

  /** Completes once this buffer is back under its bound (or closed). */
  readonly roomFor: Effect.Effect<void> = Effect.suspend(() => {
    if (this.closed || this.weight <= MAX_WEIGHT) return Effect.void
    this.space ??= Deferred.makeUnsafe<void>()
    return Effect.andThen(Deferred.await(this.space), this.roomFor)
  })

  readonly poll: Effect.Effect<ReadonlyArray<SessionEvent>> = Effect.sync(() => {
    const taken = this.items
    this.items = []
    this.weight = 0
    this.release()
    return taken
  })

  readonly takeAll: Effect.Effect<ReadonlyArray<SessionEvent>> = Effect.suspend(() => {
    if (this.items.length > 0) {
      const taken = this.items
      this.items = []
      this.weight = 0
      this.release()
      return Effect.succeed(taken)
    }
    if (this.closed) return Effect.succeed([])
    this.taker ??= Deferred.makeUnsafe<void>()
    return Effect.andThen(Deferred.await(this.taker), this.takeAll)
  })

  /** Ends the buffer: what it holds can still be taken (a session's last events reach its readers); then it is empty. */
  close(): void {
    this.closed = true
    this.release()
    this.wake()
  }

  /**
   * Wakes the reader waiting to take. It resumes inside `doneUnsafe`, on this very stack, so the
   * deferred is let go of first: a reader that takes everything and asks again before
   * `doneUnsafe` returns would otherwise find the completed deferred still in place and loop on
   * it until its fiber's op budget ran out (thousands of steps for each event). The same holds
   * for publishers waiting for room (`release`).
   */
  private wake(): void {
    const taker = this.taker
    if (taker === undefined) return
    this.taker = undefined
    Deferred.doneUnsafe(taker, Effect.void)
  }

  private release(): void {
    const space = this.space
    if (space === undefined) return
    this.space = undefined
    Deferred.doneUnsafe(space, Effect.void)
  }
}

/** Subscribers of one channel. */
class Channel {
  readonly buffers = new Set<Buffer>()
  closed = false

  subscribe(): Effect.Effect<Subscription, never, Scope.Scope> {
    return Effect.acquireRelease(
      Effect.sync(() => {
        const buffer = new Buffer()
        if (this.closed) buffer.close()
        else this.buffers.add(buffer)
        return buffer
      }),
      (buffer) =>
        Effect.sync(() => {
          this.buffers.delete(buffer)
          buffer.close()
        })
    )
  }

  close(): void {
    this.closed = true
    for (const buffer of this.buffers) buffer.close()
    this.buffers.clear()
  }
}

/** Enqueues `event` on every buffer of the channels, then waits until each has room again. */
const publishTo = (event: SessionEvent, a: Channel | undefined, b: Channel | undefined): Effect.Effect<void> => {
  let full: Array<Buffer> | undefined
  for (const channel of [a, b]) {
    if (channel === undefined) continue
    for (const buffer of channel.buffers) {
      buffer.offer(event)
      if (buffer.weight > MAX_WEIGHT) (full ??= []).push(buffer)
    }
  }
  return full === undefined ? Effect.void : Effect.forEach(full, (buffer) => buffer.roomFor, { discard: true })
}

/** A subscription as a Stream of events (ends when the channel closes). */
export const toStream = (subscription: Subscription): Stream.Stream<SessionEvent> =>
  Stream.fromPull(Effect.succeed(Effect.flatMap(subscription.takeAll, (events) =>
    events.length === 0 ? Cause.done() : Effect.succeed(events as Arr.NonEmptyReadonlyArray<SessionEvent>))))

/**
 * The events of a subscription that `keep` accepts, up to the first one `last` accepts (which
 * ends the stream, included), or until the channel closes: `toStream` with `Stream.filter` and
 * `Stream.takeUntil`, in one stream step per take (a turn's presenter takes each delta alone).
 */
export const toStreamOf = (
  subscription: Subscription,
  keep: (event: SessionEvent) => boolean,
  last: (event: SessionEvent) => boolean
): Stream.Stream<SessionEvent> =>
  Stream.fromPull(Effect.sync(() => {
    let ended = false
    const pull: Effect.Effect<Arr.NonEmptyReadonlyArray<SessionEvent>, Cause.Done> = Effect.suspend(() =>
      ended ? Cause.done() : Effect.flatMap(subscription.takeAll, (events) => {
        if (events.length === 0) return Cause.done()
        const kept: Array<SessionEvent> = []
        for (const event of events) {
          if (!keep(event)) continue
          kept.push(event)
          if (last(event)) {
            ended = true
            break
          }
        }
        return kept.length === 0 ? pull : Effect.succeed(kept as unknown as Arr.NonEmptyReadonlyArray<SessionEvent>)
      })
    )
    return pull
  }))

export class Bus extends Context.Service<Bus, {
  /** Registers a session's channel; closed (its subscribers' streams end) when the scope closes. */
  readonly register: (sessionId: string) => Effect.Effect<void, never, Scope.Scope>
  /** Enqueues for every subscriber, then waits while one of them is over its bound. */
  readonly publish: (event: SessionEvent) => Effect.Effect<void>
  /** A subscription to one session's events, from now on; undefined when it is not registered. */
  readonly subscribe: (sessionId: string) => Effect.Effect<Subscription | undefined, never, Scope.Scope>
  /** A subscription to every session's events, from now on. */
  readonly subscribeAll: Effect.Effect<Subscription, never, Scope.Scope>
}>()("skein/runtime/Bus") {
  static readonly layer = Layer.sync(Bus, () => {
    const all = new Channel()
    const channels = new Map<string, Channel>()
    return Bus.of({
      register: (sessionId) =>
        Effect.acquireRelease(
          Effect.sync(() => {
            const channel = new Channel()
            channels.set(sessionId, channel)
            return channel
          }),
          (channel) =>
            Effect.sync(() => {
              if (channels.get(sessionId) === channel) channels.delete(sessionId)
              channel.close()
            })
        ).pipe(Effect.asVoid),
      publish: (event) => publishTo(event, channels.get(event.sessionId), all.buffers.size > 0 ? all : undefined),
      subscribe: (sessionId) =>
        Effect.suspend(() => {
          const channel = channels.get(sessionId)
          return channel === undefined ? Effect.succeed(undefined) : channel.subscribe()
        }),
      subscribeAll: Effect.suspend(() => all.subscribe())
    })
  })
}
