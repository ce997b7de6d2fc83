/**
 * Choosing a provider and model from the environment, `$SKEIN_HOME/config.json`
 * and the flags; routing calls by model; the unconfigured answer; `skein
 * doctor`'s report (no key values in it).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { httpLayer } from "../../src/providers/Dialects.ts"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import * as Stream from "effect/Stream"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Doctor from "../../src/cli/doctor.ts"
import * as Models from "../../src/providers/Models.ts"
import * as Registry from "../../src/providers/Registry.ts"
import * as Unconfigured from "../../src/providers/Unconfigured.ts"
import * as TempDir from "../support/TempDir.ts"
import * as D from "./support/Dialects.ts"
import * as SseServer from "./support/SseServer.ts"

const home = (config?: unknown) =>
  Effect.map(TempDir.make(), (dir) => {
    mkdirSync(dir, { recursive: true })
    if (config !== undefined) writeFileSync(join(dir, "config.json"), typeof config === "string" ? config : JSON.stringify(config))
    return dir
  })

const setup = (options: Omit<Registry.Options, "home"> & { readonly config?: unknown }) =>
  Effect.flatMap(home(options.config), (dir) => Registry.setup({ ...options, home: dir })).pipe(Effect.provide(TempDir.platform))

const resolve = (options: Omit<Registry.Options, "home"> & { readonly config?: unknown }) =>
  Effect.flatMap(home(options.config), (dir) => Registry.resolve({ ...options, home: dir })).pipe(Effect.provide(TempDir.platform))

const answer = (resolved: Registry.Resolved, model?: string) =>
  Stream.runCollect(resolved.provider.stream(D.request({ model: model ?? resolved.model })))

describe("Registry", () => {
  it.live("nothing configured: the provider answers, as text, how to configure one", () =>
    D.env(Effect.gen(function*() {
      const resolved = yield* resolve({ env: {} })
      assert.strictEqual(resolved.setup.choice, undefined)
      const parts = yield* answer(resolved)
      assert.deepStrictEqual(parts, [{ _tag: "TextDelta", text: Unconfigured.MESSAGE }, { _tag: "Finish", stop: "end_turn" }])
      assert.include(Unconfigured.MESSAGE, "ANTHROPIC_API_KEY")
      assert.include(Unconfigured.MESSAGE, "OPENAI_BASE_URL")
    })))

  it.live("--provider openai-chat --model llama3 works against OPENAI_BASE_URL with no config file", () =>
    D.env(Effect.gen(function*() {
      const server = yield* SseServer.make
      server.queue({ file: "openai-chat/text.sse" })
      const resolved = yield* resolve({ env: { OPENAI_BASE_URL: `${server.url}/v1` }, provider: "openai-chat", model: "llama3" })
      assert.strictEqual(resolved.model, "openai-chat/llama3")
      const parts = yield* answer(resolved)
      assert.deepStrictEqual(parts.slice(0, 2), [D.text("Hello"), D.text(" world")])
      assert.strictEqual(server.requests[0]!.url, "/v1/chat/completions")
      assert.strictEqual(server.requests[0]!.body.model, "llama3")
      // No key set: none is sent (a local server needs none).
      assert.strictEqual(server.requests[0]!.headers.authorization, undefined)
    })))

  it.effect("keys alone choose a built-in provider and its default model", () =>
    Effect.gen(function*() {
      const anthropic = yield* setup({ env: { ANTHROPIC_API_KEY: D.SECRET } })
      assert.strictEqual(anthropic.choice?.model, "anthropic-messages/claude-sonnet-4-5")
      assert.strictEqual(anthropic.choice?.why, "ANTHROPIC_API_KEY is set")
      const openai = yield* setup({ env: { OPENAI_API_KEY: D.SECRET } })
      assert.strictEqual(openai.choice?.model, "openai-responses/gpt-5")
      const local = yield* setup({ env: { OPENAI_API_KEY: "x", OPENAI_BASE_URL: "http://127.0.0.1:8000/v1" }, model: "qwen" })
      assert.strictEqual(local.choice?.model, "openai-chat/qwen")
      assert.strictEqual(local.unconfigured, undefined)
    }))

  it.effect("a chosen provider without its key answers which variable to set", () =>
    Effect.gen(function*() {
      const s = yield* setup({ env: {}, provider: "openai-responses" })
      assert.include(s.unconfigured, "Provider openai-responses needs an API key: set OPENAI_API_KEY")
      const noModel = yield* setup({ env: { OPENAI_BASE_URL: "http://127.0.0.1:1234/v1" }, provider: "openai-chat" })
      assert.include(noModel.unconfigured, "has no model chosen: start Skein with --model ID")
    }))

  it.live("an unknown provider or an invalid config file fails resolve, naming it, never echoing a value", () =>
    D.env(Effect.gen(function*() {
      const unknown = yield* Effect.flip(resolve({ env: {}, provider: "nope" }))
      assert.strictEqual(unknown.reason, "unknown_provider")
      assert.include(unknown.message, "Unknown provider \"nope\" (available: openai-responses, openai-chat, anthropic-messages")
      const invalid = yield* Effect.flip(resolve({ env: {}, config: { providers: { x: { dialect: "openai-chat", apiKey: 42, headers: { a: D.SECRET } } } } }))
      assert.strictEqual(invalid.reason, "invalid_config")
      assert.include(invalid.message, "config.json is not a valid Skein config")
      assert.include(invalid.message, "[\"apiKey\"]")
      assert.notInclude(invalid.message, D.SECRET)
      const notJson = yield* Effect.flip(resolve({ env: {}, config: "{ nope" }))
      assert.include(notJson.message, "is not valid JSON")
    })))

  it.live("a config file that is missing is optional; one that cannot be read is an error", () =>
    Effect.gen(function*() {
      const missing = yield* setup({ env: {} })
      assert.deepStrictEqual(missing.config.status, { _tag: "missing" })
      const dir = yield* home()
      mkdirSync(join(dir, "config.json"))
      const unreadable = yield* Registry.setup({ env: {}, home: dir })
      assert.deepStrictEqual(unreadable.config.status, { _tag: "invalid", message: `${join(dir, "config.json")} cannot be read` })
      const failed = yield* Effect.flip(Registry.resolve({ env: {}, home: dir }))
      assert.strictEqual(failed.reason, "invalid_config")
    }).pipe(Effect.provide(TempDir.platform)))

  it.live("config providers: apiKeyEnv, extra headers, models with their facts; no vendor key leaks to a custom base URL", () =>
    D.env(Effect.gen(function*() {
      const server = yield* SseServer.make
      server.queue({ file: "openai-chat/text.sse" }, { file: "openai-chat/text.sse" })
      const config = {
        provider: "router",
        model: "org/model-a",
        providers: {
          router: {
            dialect: "openai-chat",
            baseUrl: `${server.url}/router/v1`,
            apiKeyEnv: "ROUTER_KEY",
            headers: { "X-Title": "Skein" },
            models: [{ id: "org/model-a", contextWindow: 64000, maxOutput: 2000, reasoning: true, price: { input: 1, output: 2 } }]
          },
          local: { dialect: "openai-chat", baseUrl: `${server.url}/local/v1`, models: ["m"] }
        }
      }
      const resolved = yield* resolve({ env: { ROUTER_KEY: "router-secret-123456", OPENAI_API_KEY: D.SECRET }, config })
      assert.strictEqual(resolved.model, "router/org/model-a")
      const info = resolved.models.info(resolved.model)!
      assert.deepStrictEqual([info.contextWindow, info.maxOutput, info.efforts, info.defaultEffort], [64000, 2000, ["low", "medium", "high"], "medium"])
      yield* answer(resolved)
      const sent = server.requests[0]!
      assert.strictEqual(sent.url, "/router/v1/chat/completions")
      assert.strictEqual(sent.headers.authorization, "Bearer router-secret-123456")
      assert.strictEqual(sent.headers["x-title"], "Skein")
      assert.strictEqual(sent.body.model, "org/model-a")
      assert.strictEqual(sent.body.max_tokens, 2000)
      assert.strictEqual(sent.body.reasoning_effort, "medium")
      // Another provider's model: routed there, without the router's key or OpenAI's.
      yield* answer(resolved, "local/m")
      const local = server.requests[1]!
      assert.strictEqual(local.url, "/local/v1/chat/completions")
      assert.strictEqual(local.body.model, "m")
      assert.strictEqual(local.headers.authorization, undefined)
      // The catalog (the `model` option): the chosen model, declared ones, then usable built-ins.
      assert.deepStrictEqual(resolved.models.entries.map((e) => e.key), ["router/org/model-a", "local/m", "openai-responses/gpt-5"])
    })))

  it.live("the session's reasoning effort is sent when the model accepts it", () =>
    D.env(Effect.gen(function*() {
      const server = yield* SseServer.make
      server.queue({ file: "openai-responses/text.sse" })
      const resolved = yield* resolve({ env: { OPENAI_API_KEY: D.SECRET, OPENAI_BASE_URL: `${server.url}/v1` }, provider: "openai-responses" })
      yield* Stream.runCollect(resolved.provider.stream(D.request({ model: resolved.model, reasoningEffort: "high" })))
      assert.deepStrictEqual(server.requests[0]!.body.reasoning, { effort: "high", summary: "auto" })
      assert.strictEqual(server.requests[0]!.headers.authorization, `Bearer ${D.SECRET}`)
    })))

  it.live("an embedding program may give its own HttpClient (a proxy, extra headers…)", () =>
    Effect.gen(function*() {
      const server = yield* SseServer.make
      server.queue({ file: "openai-chat/text.sse" })
      const client = (yield* Effect.provide(HttpClient.HttpClient, httpLayer)).pipe(
        HttpClient.mapRequest(HttpClientRequest.setHeader("x-via", "my-proxy"))
      )
      const resolved = yield* resolve({ env: { OPENAI_BASE_URL: `${server.url}/v1` }, provider: "openai-chat", model: "m", httpClient: client })
      yield* answer(resolved)
      assert.strictEqual(server.requests[0]!.headers["x-via"], "my-proxy")
    }))

  it.effect("SKEIN_IDLE_TIMEOUT_MS sets the idle watchdog", () =>
    Effect.gen(function*() {
      const s = yield* setup({ env: { SKEIN_IDLE_TIMEOUT_MS: "5000" } })
      assert.isTrue(s.providers.every((p) => p.target.idleTimeoutMs === 5000))
    }))
})

describe("Models", () => {
  it("context used is the last call's prompt and answer, not a sum; cost uses the cached price", () => {
    const usage = { input: 1_000_000, output: 100_000, cached: 800_000 }
    assert.strictEqual(Models.contextUsed(usage), 1_100_000)
    assert.closeTo(Models.cost(usage, { input: 3, output: 15, cachedInput: 0.3 })!, 0.6 + 0.24 + 1.5, 1e-9)
    assert.strictEqual(Models.cost(usage, undefined), undefined)
  })

  it("knows the vendors' common models, and assumes little of others", () => {
    assert.strictEqual(Models.builtin("anthropic-messages", "claude-sonnet-4-5").contextWindow, 200_000)
    assert.deepStrictEqual(Models.builtin("openai-responses", "gpt-5-mini").efforts, ["low", "medium", "high"])
    const local = Models.builtin("openai-chat", "llama3")
    assert.deepStrictEqual([local.contextWindow, local.images, local.efforts], [undefined, false, []])
  })
})

describe("skein doctor", () => {
  it.effect("reports what is set, never a key's value", () =>
    Effect.gen(function*() {
      const env = { ANTHROPIC_API_KEY: D.SECRET, OPENAI_BASE_URL: "http://user:pw@127.0.0.1:11434/v1", ROUTER_KEY: "router-secret-123456" }
      const s = yield* setup({
        env,
        config: { providers: { router: { dialect: "openai-chat", baseUrl: "https://example.test/v1", apiKeyEnv: "ROUTER_KEY", headers: { "X-Secret": "header-secret-value" } } } }
      })
      const text = Doctor.report(s, env, { home: "/h" })
      assert.include(text, "ANTHROPIC_API_KEY       set")
      assert.include(text, "OPENAI_BASE_URL         http://127.0.0.1:11434/v1")
      assert.include(text, "ROUTER_KEY              set")
      assert.include(text, "extra headers: X-Secret")
      assert.include(text, "Ready: prompts go to anthropic-messages/claude-sonnet-4-5")
      for (const secret of [D.SECRET, "router-secret-123456", "header-secret-value", "user:pw"]) assert.notInclude(text, secret)
    }))

  it.effect("nothing configured: not ready, with the same advice as the unconfigured answer", () =>
    Effect.gen(function*() {
      const s = yield* setup({ env: {} })
      const text = Doctor.report(s, {}, { home: "/h" })
      assert.include(text, "config.json: not found (optional)")
      assert.include(text, "Not ready:")
      assert.include(text, "ANTHROPIC_API_KEY for Claude")
    }))
})
