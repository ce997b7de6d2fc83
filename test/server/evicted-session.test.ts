/**
 * A session the runtime closed to stay within its cap of live sessions comes back, resumed
 * from its log, when its client uses it again; one the client closed itself does not.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/testing/TestClock"
import { mkdirSync } from "node:fs"
import { join } from "node:path"
import { Skein } from "../../src/index.ts"
import * as Scripted from "../../src/providers/Scripted.ts"
import { EVICT_AFTER_IDLE_MS } from "../../src/runtime/Config.ts"
import * as InProcess from "../support/InProcess.ts"
import { readLog } from "../support/Sessions.ts"
import * as TempDir from "../support/TempDir.ts"

describe("ACP: sessions past the live cap", () => {
  it.effect("an evicted session is resumed when its client prompts it again", () =>
    Effect.gen(function*() {
      const base = yield* TempDir.make()
      const home = join(base, "home")
      const cwd = join(base, "ws")
      mkdirSync(cwd)
      const turns = ["one", "two", "three"].map((t) => ({ calls: [[{ text: t }]] }))
      const script = yield* Scripted.parse(JSON.stringify({ turns }), "cap.json")
      const { request } = yield* InProcess.serve(Skein.layer({ home, script, maxLiveSessions: 1 }))
      const prompt = (sessionId: string, text: string) => request("session/prompt", { sessionId, prompt: [{ type: "text", text }] })
      const idle = TestClock.adjust(EVICT_AFTER_IDLE_MS + 1)

      yield* request("initialize", { protocolVersion: 1 })
      const a = (yield* request("session/new", { cwd, mcpServers: [] })).result.sessionId
      assert.deepStrictEqual((yield* prompt(a, "hi")).result, { stopReason: "end_turn" })
      yield* idle
      const b = (yield* request("session/new", { cwd, mcpServers: [] })).result.sessionId // a is closed for room
      yield* idle
      const again = yield* prompt(a, "again") // a comes back, b is closed for room
      assert.deepStrictEqual(again.result, { stopReason: "end_turn" })
      assert.deepStrictEqual(again.notifications.map((u) => u.params.update.content?.text).filter(Boolean), ["two"])
      assert.strictEqual(readLog(home, a).events.filter((e) => e.type === "turn_end").length, 2)

      // Closed by the client: gone for good, until it loads it.
      yield* request("session/close", { sessionId: b })
      yield* idle
      const closed = yield* prompt(b, "hello?")
      assert.strictEqual(closed.error.code, -32002)
    }).pipe(Effect.provide(TempDir.platform)))
})
