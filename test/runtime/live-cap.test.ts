/**
 * The cap on live sessions: past it, opening a session closes the least recently used idle
 * one (its log keeps everything; loading brings it back as it was); busy or recently used
 * sessions are never closed for room, and with none to close the new one is refused.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

import * as TestClock from "effect/testing/TestClock"
import { EVICT_AFTER_IDLE_MS } from "../../src/runtime/Config.ts"
import { localOf, record, submit, text, withSkein } from "../support/Sessions.ts"

const script = {
  turns: [
    { calls: [[{ text: "one" }]] },
    { calls: [[{ text: "busy" }, { sleep_ms: 60_000 }]] },
    { calls: [[{ text: "two" }]] }
  ]
}
const idle = () => TestClock.adjust(EVICT_AFTER_IDLE_MS + 1)
const live = (ids: ReadonlyArray<string>) => [...ids].sort()

describe("Runtime: the cap on live sessions", () => {
  it.effect("closes the least recently used idle session for a new one, and loads it back as it was", () =>
    withSkein({ script, maxLiveSessions: 2 }, ({ runtime, cwd }) =>
      Effect.gen(function*() {
        const a = yield* runtime.newSession({ cwd })
        assert.deepStrictEqual(yield* a.prompt(text("first")), { stopReason: "end_turn" })
        const b = yield* runtime.newSession({ cwd })

        // Both were used just now: neither is closed, the third is refused.
        const refused = yield* Effect.flip(runtime.newSession({ cwd }))
        assert.strictEqual(refused.reason, "limit")
        assert.include(refused.message, "Too many live sessions (2)")

        yield* idle()
        yield* runtime.getSession(b.id) // b is used again: a is now the least recently used
        const c = yield* runtime.newSession({ cwd })
        const ids = (yield* runtime.liveSessions).map((s) => s.id)
        assert.deepStrictEqual(live(ids), live([b.id, c.id]))
        // Asked for, a comes back from its log, but only when there is room for it again.
        assert.strictEqual((yield* Effect.flip(runtime.getSession(a.id))).reason, "limit")

        // Loading a brings back its history; it takes the place of the least recently used idle one.
        yield* idle()
        yield* runtime.getSession(c.id)
        const loaded = yield* runtime.loadSession({ sessionId: a.id })
        assert.deepStrictEqual(loaded.events.filter((e) => e.type === "turn_end").length, 1)
        assert.deepStrictEqual(live((yield* runtime.liveSessions).map((s) => s.id)), live([a.id, c.id]))
      })))

  it.effect("never closes a session with a turn running", () =>
    withSkein({ script, maxLiveSessions: 1 }, ({ runtime, cwd }) =>
      Effect.gen(function*() {
        const a = yield* runtime.newSession({ cwd })
        yield* a.prompt(text("first"))
        yield* submit(a, text("second")) // sleeps inside the turn
        yield* idle()
        assert.isUndefined(localOf(a).idleSince())
        const refused = yield* Effect.flip(runtime.newSession({ cwd }))
        assert.strictEqual(refused.reason, "limit")
        yield* a.cancel
        yield* Effect.yieldNow
        assert.deepStrictEqual((yield* runtime.liveSessions).map((s) => s.id), [a.id])
      })))

  it.effect("counts the end of a long turn as use: a session that just finished one is not closed", () =>
    withSkein({ script, maxLiveSessions: 1 }, ({ runtime, cwd }) =>
      Effect.gen(function*() {
        const a = yield* runtime.newSession({ cwd })
        yield* a.prompt(text("first"))
        const events = yield* record(a)
        const ticket = yield* submit(a, text("second")) // a minute-long turn
        // Once the turn is in its sleep, let the minute pass, a second at a time until the turn is
        // over. Its end is all in memory (the log too): it runs as soon as this fiber yields to it,
        // with no wait on a disk.
        yield* events.until((e) => e.type === "text_delta")
        const over = Deferred.isDone(ticket.outcome)
        const settle = Effect.gen(function*() {
          for (let i = 0; i < 1_000 && !(yield* over); i++) yield* Effect.yieldNow
        })
        for (let i = 0; i < 120 && !(yield* over); i++) {
          yield* TestClock.adjust(1_000)
          yield* settle
        }
        const outcome = (yield* over) ? Option.some(yield* Deferred.await(ticket.outcome)) : Option.none()
        assert.deepStrictEqual(outcome, Option.some({ stopReason: "end_turn" as const }))
        // Opened long ago, but its turn ended just now.
        assert.strictEqual((yield* Effect.flip(runtime.newSession({ cwd }))).reason, "limit")
        yield* idle()
        const b = yield* runtime.newSession({ cwd })
        assert.deepStrictEqual((yield* runtime.liveSessions).map((s) => s.id), [b.id])
      })))
})
