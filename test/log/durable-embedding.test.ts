/**
 * Durable sessions through the public embedding API (`src/index.ts`) only: list, load, read,
 * replay as updates and transcript, re-run, delete — all as Effects.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { join } from "node:path"
import { AcpReplay, Replay, Rerun, Runtime, Skein } from "../../src/index.ts"
import { makeDirs, text } from "../support/Sessions.ts"

const script = {
  turns: [
    { calls: [[{ text: "Reading." }, { tool: "read", args: { path: "notes.txt" } }], [{ text: "It says hello." }]] },
    { calls: [[{ text: "More." }]] }
  ]
}

describe("Embedding: durable sessions", () => {
  it.live("an Effect program lists, loads, replays, re-runs and deletes sessions", () =>
    Effect.gen(function*() {
      const { home, cwd, base } = yield* makeDirs
      const id = yield* Effect.gen(function*() {
        const runtime = yield* Runtime
        const session = yield* runtime.newSession({ cwd })
        yield* session.prompt(text("Summarise notes.txt"))
        return session.id
      }).pipe(Effect.scoped, Effect.provide(Skein.layer({ home, script })))

      yield* Effect.gen(function*() {
        const runtime = yield* Runtime
        const page = yield* runtime.listSessions({ cwd })
        assert.deepStrictEqual(page.sessions.map((s) => [s.id, s.title]), [[id, "Summarise notes.txt"]])

        const { session, events } = yield* runtime.loadSession({ sessionId: id, cwd })
        assert.deepStrictEqual(AcpReplay.updates(events).map((u) => u.sessionUpdate), [
          "session_info_update",
          "user_message_chunk",
          "agent_message_chunk",
          "tool_call",
          "tool_call_update",
          "agent_message_chunk"
        ])
        const record = yield* runtime.readSession(id)
        assert.include(Replay.transcript(record.header, record.events), "> Summarise notes.txt")
        assert.deepStrictEqual(yield* session.prompt(text("More please")), { stopReason: "end_turn" })

        const again = yield* runtime.readSession(id)
        const report = yield* Rerun.run({ header: again.header, events: again.events, home: join(base, "rerun-home") })
        assert.isFalse(report.diverged)
        assert.deepStrictEqual(report.turns.map((t) => t.compared), [1, 0])
        // The re-run wrote its own log in its own home, and nothing to this runtime.
        assert.strictEqual(report.rerunLog, join(base, "rerun-home", "sessions", `${report.rerunSessionId}.ndjson`))
        assert.deepStrictEqual((yield* runtime.listSessions()).sessions.map((s) => s.id), [id])

        yield* runtime.deleteSession(id)
        assert.deepStrictEqual((yield* runtime.listSessions()).sessions, [])
      }).pipe(Effect.scoped, Effect.provide(Skein.layer({ home, script })))
    }))
})
