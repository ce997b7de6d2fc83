/**
 * The Bus's bounded buffers: a reader that falls behind gets adjacent deltas merged (and a
 * tool's running output and usage replaced by the newer one); past the bound the publisher
 * waits until the reader takes; canonical events are never dropped or merged; closing a
 * channel lets readers take what it held and releases waiting publishers. A reader woken by a
 * publish takes it and waits again at once.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Scheduler from "effect/Scheduler"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { SessionEvent } from "../../src/log/Event.ts"
import { Bus, MAX_WEIGHT, toStream, toStreamOf } from "../../src/runtime/Bus.ts"

const at = (seq: number, turn = 1) => ({ sessionId: "s", seq, ts: 0, turn })
const delta = (text: string, turn = 1): SessionEvent => ({ type: "text_delta", data: { text }, ...at(0, turn) }) as SessionEvent
const thought = (text: string): SessionEvent => ({ type: "thinking_delta", data: { text }, ...at(0) }) as SessionEvent
const progress = (id: string, output: string): SessionEvent => ({ type: "tool_progress", data: { id, output }, ...at(0) }) as SessionEvent
const canonical = (seq: number): SessionEvent => ({ type: "turn_start", data: { content: [] }, ...at(seq) }) as SessionEvent

const render = (events: ReadonlyArray<SessionEvent>) =>
  events.map((e) => ("text" in (e.data as object) ? `${e.type}:${(e.data as { text: string }).text}` : e.type === "tool_progress" ? `progress:${(e.data as { output: string }).output}` : `${e.type}#${e.seq}`))

describe("Bus", () => {
  it.effect("a reader behind gets adjacent deltas of a turn merged; canonical events stay as they are, in order", () =>
    Effect.gen(function*() {
      const bus = yield* Bus
      yield* bus.register("s")
      const sub = (yield* bus.subscribe("s"))!
      for (const e of [delta("a"), delta("b"), thought("x"), thought("y"), canonical(1), delta("c"), delta("d", 2), progress("t", "1"), progress("t", "12"), canonical(2)]) {
        yield* bus.publish(e)
      }
      assert.deepStrictEqual(render(yield* sub.takeAll), [
        "text_delta:ab",
        "thinking_delta:xy",
        "turn_start#1",
        "text_delta:c",
        "text_delta:d",
        "progress:12",
        "turn_start#2"
      ])
    }).pipe(Effect.scoped, Effect.provide(Bus.layer)))

  it.effect("past its bound a reader holds the publisher back until it takes; memory stays bounded", () =>
    Effect.gen(function*() {
      const bus = yield* Bus
      yield* bus.register("s")
      const sub = (yield* bus.subscribe("s"))!
      const chunk = "x".repeat(64 * 1024)
      let published = 0
      const publisher = yield* Effect.forkChild(
        Effect.gen(function*() {
          for (let i = 0; i < 64; i++) {
            yield* bus.publish(delta(chunk))
            yield* bus.publish(canonical(i + 1))
            published++
          }
        }),
        { startImmediately: true }
      )
      // The reader takes nothing: the publisher stops at the bound (about 1 MiB of text held).
      yield* Effect.yieldNow
      assert.isBelow(published, 64)
      assert.isAtMost(published * chunk.length, MAX_WEIGHT + chunk.length)
      // Reading lets it go on; every canonical event arrives, none lost.
      const seen: Array<SessionEvent> = []
      while (seen.filter((e) => e.type === "turn_start").length < 64) seen.push(...(yield* sub.takeAll))
      yield* Fiber.join(publisher)
      assert.deepStrictEqual(seen.filter((e) => e.type === "turn_start").map((e) => e.seq), Array.from({ length: 64 }, (_, i) => i + 1))
      assert.strictEqual(seen.filter((e) => e.type === "text_delta").map((e) => (e.data as { text: string }).text).join("").length, 64 * chunk.length)
    }).pipe(Effect.scoped, Effect.provide(Bus.layer)))

  it.effect("a reader that goes away releases the publisher it held; a closed channel's last events can still be taken", () =>
    Effect.gen(function*() {
      const bus = yield* Bus
      const channelScope = yield* Scope.make()
      yield* bus.register("s").pipe(Scope.provide(channelScope))
      const reader = (yield* bus.subscribe("s"))!
      const heldScope = yield* Scope.make()
      yield* bus.subscribe("s").pipe(Scope.provide(heldScope))
      // Both buffers go over their bound: the publisher waits for both.
      const publisher = yield* Effect.forkChild(bus.publish(delta("x".repeat(MAX_WEIGHT + 1))), { startImmediately: true })
      assert.strictEqual((yield* reader.takeAll).length, 1)
      yield* Effect.yieldNow
      assert.isUndefined(publisher.pollUnsafe(), "still held by the reader that never reads")
      yield* Scope.close(heldScope, Exit.void)
      yield* Fiber.join(publisher)
      // The channel closes with events still buffered: they can be taken, then it ends.
      yield* bus.publish(canonical(7))
      yield* Scope.close(channelScope, Exit.void)
      assert.deepStrictEqual(render(yield* reader.takeAll), ["turn_start#7"])
      assert.deepStrictEqual(yield* reader.takeAll, [])
    }).pipe(Effect.scoped, Effect.provide(Bus.layer)))
  it.effect("a selection of a subscription: the events kept, up to the last one (included); or until the channel closes", () =>
    Effect.gen(function*() {
      const bus = yield* Bus
      const channelScope = yield* Scope.make()
      yield* bus.register("s").pipe(Scope.provide(channelScope))
      const sub = (yield* bus.subscribe("s"))!
      const other = (yield* bus.subscribe("s"))!
      const end = (seq: number, turn: number): SessionEvent => ({ type: "turn_end", data: { stopReason: "end_turn" }, ...at(seq, turn) }) as SessionEvent
      const ofTurn2 = (s: typeof sub) => Stream.runCollect(toStreamOf(s, (e) => e.turn === 2, (e) => e.type === "turn_end"))
      const reader = yield* Effect.forkChild(ofTurn2(sub), { startImmediately: true })
      for (const e of [delta("a", 1), delta("b", 2), end(3, 1), canonical(4), delta("c", 2), end(5, 2), delta("d", 2)]) yield* bus.publish(e)
      assert.deepStrictEqual(render(yield* Fiber.join(reader)), ["text_delta:b", "text_delta:c", "turn_end#5"])
      // Without its last event, the selection ends with the channel.
      const cut = yield* Effect.forkChild(Stream.runCollect(toStreamOf(other, (e) => e.turn === 1, (e) => e.type === "turn_end" && e.seq > 100)), { startImmediately: true })
      yield* Scope.close(channelScope, Exit.void)
      assert.deepStrictEqual(render(yield* Fiber.join(cut)), ["text_delta:a", "turn_end#3", "turn_start#4"])
    }).pipe(Effect.scoped, Effect.provide(Bus.layer)))

  it.effect("a reader woken by a publish takes it and waits again, without spinning on the wake-up", () => {
    // Counts the steps of every fiber (the scheduler is asked once per step whether to yield).
    let steps = 0
    const base = new Scheduler.MixedScheduler()
    const counting: Scheduler.Scheduler = {
      executionMode: base.executionMode,
      shouldYield: (fiber) => {
        steps++
        return base.shouldYield(fiber)
      },
      makeDispatcher: () => base.makeDispatcher()
    }
    return Effect.gen(function*() {
      const bus = yield* Bus
      yield* bus.register("s")
      const sub = (yield* bus.subscribe("s"))!
      const seen: Array<SessionEvent> = []
      // Reads as a child session's driver does: every take handled at once, no yield in between.
      yield* Effect.forkChild(Stream.runForEachArray(toStream(sub), (events) => Effect.sync(() => seen.push(...events))), { startImmediately: true })
      for (const text of ["a", "b", "c"]) {
        const before = steps
        // The reader waits: the publish resumes it on this stack, and returns once it waits again.
        yield* bus.publish(delta(text))
        assert.deepStrictEqual(render(seen.splice(0)), [`text_delta:${text}`])
        // A few steps, not the thousands of a fiber's whole budget before it yields.
        assert.isBelow(steps - before, 100)
      }
    }).pipe(Effect.scoped, Effect.provide(Bus.layer), Effect.provideService(Scheduler.Scheduler, counting))
  })
})
