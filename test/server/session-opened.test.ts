/**
 * The server's `onSessionOpened` hook (what `skein acp` starts its provider's warm-up from):
 * it runs for each session opened by `session/new`, `session/load` and `session/resume`, once
 * that session's answer is written (nothing it does delays the answer), and not for a request
 * that failed or opened nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdirSync } from "node:fs"
import { join } from "node:path"
import { Skein } from "../../src/index.ts"
import * as Scripted from "../../src/providers/Scripted.ts"
import * as InProcess from "../support/InProcess.ts"
import * as TempDir from "../support/TempDir.ts"

describe("ACP: onSessionOpened", () => {
  it.effect("runs once per session opened, after its answer, never for failures or other requests", () =>
    Effect.gen(function*() {
      const base = yield* TempDir.make()
      const home = join(base, "home")
      const cwd = join(base, "ws")
      mkdirSync(cwd)
      const script = yield* Scripted.parse(JSON.stringify({ turns: [{ calls: [[{ text: "hi" }]] }] }), "opened.json")
      let opened = 0
      /** What the client had been sent when the hook ran. */
      const sentBefore: Array<string> = []
      const client: { mt?: InProcess.Client["mt"] } = {}
      const { request, end, mt } = yield* InProcess.serve(Skein.layer({ home, script }), {
        onSessionOpened: Effect.suspend(() => {
          opened++
          return Effect.map(client.mt!.output, (output) => void sentBefore.push(output))
        })
      })
      client.mt = mt

      yield* request("initialize", { protocolVersion: 1 })
      yield* request("session/list", {})
      assert.strictEqual(opened, 0)
      const bad = yield* request("session/new", { cwd: join(base, "missing"), mcpServers: [] })
      assert.isDefined(bad.error)
      assert.strictEqual(opened, 0)

      const a = (yield* request("session/new", { cwd, mcpServers: [] })).result.sessionId
      assert.strictEqual(opened, 1)
      assert.include(sentBefore[0], `"sessionId":"${a}"`)
      yield* request("session/prompt", { sessionId: a, prompt: [{ type: "text", text: "x" }] })
      yield* request("session/close", { sessionId: a })
      assert.strictEqual(opened, 1)
      const loaded = yield* request("session/load", { sessionId: a, cwd, mcpServers: [] })
      assert.isUndefined(loaded.error)
      assert.strictEqual(opened, 2)
      assert.match(sentBefore[1], /"id":\d+,"result":\{"modes"/)
      yield* request("session/close", { sessionId: a })
      yield* request("session/resume", { sessionId: a, cwd, mcpServers: [] })
      assert.strictEqual(opened, 3)
      const missing = yield* request("session/load", { sessionId: "no-such-session", cwd, mcpServers: [] })
      assert.isDefined(missing.error)
      assert.strictEqual(opened, 3)
      yield* end
    }))
})
