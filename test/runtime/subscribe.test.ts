/**
 * `session.subscribe(fromSeq)`: the logged events after `fromSeq`, then the live ones, with
 * none twice and none missing, whether the subscription starts between turns or in the middle
 * of one.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import type { SessionEvent } from "../../src/log/Event.ts"
import { record, text, withSkein } from "../support/Sessions.ts"

const script = {
  turns: [
    { calls: [[{ text: "one" }]] },
    { calls: [[...Array.from({ length: 30 }, (_, i) => [{ text: `p${i} ` }, { sleep_ms: 5 }]).flat()]] }
  ]
}

const canonicalSeqs = (events: ReadonlyArray<SessionEvent>) =>
  events.filter((e) => !e.type.endsWith("_delta") && e.type !== "usage").map((e) => e.seq)

describe("Session.subscribe", () => {
  it.live("from a seq in the middle of a turn: the log after it, then live, each event once", () =>
    withSkein({ script }, ({ runtime, cwd, readLog }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        yield* session.prompt(text("first"))
        const rec = yield* record(session)
        const running = yield* Effect.forkChild(session.prompt(text("second")))
        // Somewhere inside the second turn: after a few of its deltas.
        const at = yield* rec.until((e) => e.type === "text_delta" && (e.data as { text: string }).text.includes("p5"))
        const fromSeq = at.seq - 1
        const seen = yield* session.subscribe(fromSeq).pipe(Stream.takeUntil((e) => e.type === "turn_end"), Stream.runCollect)
        yield* Fiber.join(running)
        const logged = (yield* readLog(session.id)).events.map((e) => e.seq).filter((seq) => seq > fromSeq)
        assert.deepStrictEqual(canonicalSeqs(seen), logged)
        // From 0: the whole log, the first turn's events included.
        const all = yield* session.subscribe(0).pipe(Stream.take(logged.length + fromSeq), Stream.runCollect)
        assert.deepStrictEqual(canonicalSeqs(all), (yield* readLog(session.id)).events.map((e) => e.seq))
      })))
})
