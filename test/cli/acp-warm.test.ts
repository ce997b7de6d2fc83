/**
 * When `skein acp` warms its provider: from the server's `onSessionOpened`, which runs once the
 * answer that opened a session is written (test/server/session-opened.test.ts), `WARM_AFTER_MS`
 * later (a client that prompts at once starts its call first); once per process. Nothing else
 * has to be written for it to start.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/testing/TestClock"
import { WARM_AFTER_MS, warmAfterFirstSession } from "../../src/cli/acp.ts"

describe("skein acp: when the warm-up starts", () => {
  it.effect("WARM_AFTER_MS after the first session opened, once, with nothing written since", () =>
    Effect.gen(function*() {
      const events: Array<string> = []
      const opened = warmAfterFirstSession(Effect.sync(() => void events.push("warm")), yield* Effect.scope)
      assert.isDefined(opened)
      const idle = (ms: number) => Effect.andThen(TestClock.adjust(ms), Effect.yieldNow)

      // No session yet: nothing.
      yield* idle(10 * WARM_AFTER_MS)
      assert.deepStrictEqual(events, [])

      // A session opened (its answer written): the client gets a moment to prompt first.
      yield* opened!
      yield* idle(WARM_AFTER_MS - 1)
      assert.deepStrictEqual(events, [])
      yield* idle(1)
      assert.deepStrictEqual(events, ["warm"])

      // Once per process.
      yield* opened!
      yield* idle(10 * WARM_AFTER_MS)
      assert.deepStrictEqual(events, ["warm"])
    }))

  it("a provider without a warm-up: no hook", () => {
    assert.isUndefined(warmAfterFirstSession(undefined, undefined as never))
  })
})
