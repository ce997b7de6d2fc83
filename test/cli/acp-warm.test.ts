/**
 * When `skein acp` warms its provider: only once a session was opened, after the answer that
 * opened it is written, and `WARM_AFTER_MS` later (a client that prompts at once starts its
 * call first); once per process.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/testing/TestClock"
import { WARM_AFTER_MS, warmAfterFirstSession } from "../../src/cli/acp.ts"

describe("skein acp: when the warm-up starts", () => {
  it.effect("after the first write that follows the first opened session, WARM_AFTER_MS later, once", () =>
    Effect.gen(function*() {
      const events: Array<string> = []
      const scope = yield* Effect.scope
      const warming = warmAfterFirstSession(
        { input: Stream.empty, write: (chunk) => Effect.sync(() => void events.push(`write ${chunk}`)) },
        Effect.sync(() => void events.push("warm")),
        scope
      )
      const write = warming.transport.write
      const idle = (ms: number) => Effect.andThen(TestClock.adjust(ms), Effect.yieldNow)

      // `initialize`, idle: no session, no warm-up.
      yield* write("initialize answer")
      yield* idle(10 * WARM_AFTER_MS)
      assert.deepStrictEqual(events, ["write initialize answer"])

      // A session opened (its answer queued): the warm-up waits for that answer to be written…
      yield* warming.opened
      yield* idle(10 * WARM_AFTER_MS)
      assert.deepStrictEqual(events, ["write initialize answer"])
      yield* write("session/new answer")
      // …and then for the client to stay quiet a moment.
      yield* idle(WARM_AFTER_MS - 1)
      assert.deepStrictEqual(events, ["write initialize answer", "write session/new answer"])
      yield* idle(1)
      assert.deepStrictEqual(events, ["write initialize answer", "write session/new answer", "warm"])

      // Once per process.
      yield* warming.opened
      yield* write("another session/new answer")
      yield* idle(10 * WARM_AFTER_MS)
      assert.strictEqual(events.filter((e) => e === "warm").length, 1)
    }))

  it.effect("a provider without a warm-up: writes pass through", () =>
    Effect.gen(function*() {
      const events: Array<string> = []
      const warming = warmAfterFirstSession(
        { input: Stream.empty, write: (chunk) => Effect.sync(() => void events.push(chunk)) },
        undefined,
        yield* Effect.scope
      )
      yield* warming.opened
      yield* warming.transport.write("a")
      yield* TestClock.adjust(10 * WARM_AFTER_MS)
      assert.deepStrictEqual(events, ["a"])
    }))
})
