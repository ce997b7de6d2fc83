/**
 * Providers as an ACP client sees them: the model and reasoning effort as
 * config options (switchable per session, remembered in the log), the system
 * prompt with the project's instructions, and `usage_update` with the context
 * of the last call against the model's window. Every message written is
 * checked against the official ACP schema.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Skein } from "../../src/index.ts"
import * as Registry from "../../src/providers/Registry.ts"
import * as InProcess from "../support/InProcess.ts"
import { readLog } from "../support/Sessions.ts"
import * as TempDir from "../support/TempDir.ts"
import * as SseServer from "./support/SseServer.ts"

const config = (url: string) => ({
  provider: "local",
  providers: {
    local: {
      dialect: "openai-chat",
      baseUrl: `${url}/v1`,
      models: [
        { id: "llama3", contextWindow: 8192, price: { input: 1, output: 2 } },
        { id: "qwq", name: "QwQ", contextWindow: 32768, reasoning: ["low", "high"], defaultEffort: "low" }
      ]
    }
  }
})

describe("providers over ACP", () => {
  it.live("model and thought_level options, switching remembered in the log, usage_update, the system prompt", () =>
    Effect.gen(function*() {
      const server = yield* SseServer.make
      server.queue({ file: "openai-chat/text.sse" }, { file: "openai-chat/text.sse" })
      const base = yield* TempDir.make()
      const home = join(base, "home")
      const cwd = join(base, "ws")
      mkdirSync(join(cwd, ".git"), { recursive: true })
      mkdirSync(home)
      writeFileSync(join(cwd, "AGENTS.md"), "Always answer in haiku.")
      writeFileSync(join(home, "config.json"), JSON.stringify(config(server.url)))
      const resolved = yield* Registry.resolve({ home, env: {} }).pipe(Effect.provide(TempDir.platform))

      const { request, end } = yield* InProcess.serve(
        Skein.layer({ home, provider: resolved.provider, model: resolved.model, models: resolved.models })
      )

      yield* request("initialize", { protocolVersion: 1, clientCapabilities: {} })
      const created = yield* request("session/new", { cwd, mcpServers: [] })
      const sessionId = created.result.sessionId
      const options = (result: any) => Object.fromEntries(result.configOptions.map((o: any) => [o.id, o]))
      let opts = options(created.result)
      assert.strictEqual(opts.model.category, "model")
      assert.strictEqual(opts.model.currentValue, "local/llama3")
      assert.deepStrictEqual(opts.model.options.map((o: any) => o.value), ["local/llama3", "local/qwq"])
      assert.strictEqual(opts.thought_level, undefined)

      // A prompt: usage_update carries the last call's context (120 + 12) of the 8192 window, and its cost.
      const first = yield* request("session/prompt", { sessionId, prompt: [{ type: "text", text: "hi" }] })
      const usage = first.notifications.filter((n) => n.params?.update?.sessionUpdate === "usage_update")
      assert.deepStrictEqual(usage.map((n) => [n.params.update.used, n.params.update.size]), [[132, 8192]])
      assert.closeTo(usage[0].params.update.cost.amount, (120 * 1 + 12 * 2) / 1e6, 1e-12)
      const system = server.requests[0]!.body.messages[0].content as string
      assert.include(system, "Always answer in haiku.")
      assert.include(system, `Working directory: ${cwd}`)

      // Switch model: reasoning effort appears; choose one; the next call uses both.
      const switched = yield* request("session/set_config_option", { sessionId, configId: "model", value: "local/qwq" })
      opts = options(switched.result)
      assert.strictEqual(opts.model.currentValue, "local/qwq")
      assert.deepStrictEqual([opts.thought_level.category, opts.thought_level.currentValue], ["thought_level", "low"])
      const effort = yield* request("session/set_config_option", { sessionId, configId: "thought_level", value: "high" })
      assert.strictEqual(options(effort.result).thought_level.currentValue, "high")
      const bad = yield* request("session/set_config_option", { sessionId, configId: "thought_level", value: "extreme" })
      assert.strictEqual(bad.error.code, -32602)
      const unknown = yield* request("session/set_config_option", { sessionId, configId: "model", value: "nope/x" })
      assert.strictEqual(unknown.error.code, -32602)

      yield* request("session/prompt", { sessionId, prompt: [{ type: "text", text: "again" }] })
      const second = server.requests[1]!.body
      assert.deepStrictEqual([second.model, second.reasoning_effort], ["qwq", "high"])
      // The same system prompt on both calls: a stable, cacheable prefix.
      assert.strictEqual(second.messages[0].content, system)

      const log = readLog(home, sessionId).events.filter((e) => e.type === "config_changed").map((e) => e.data)
      assert.deepStrictEqual(log, [{ id: "model", value: "local/qwq" }, { id: "thought_level", value: "high" }])

      yield* end
    }).pipe(Effect.provide(Logger.layer([]))))
})
