/**
 * Warming a provider while `skein acp` waits for the first prompt (`Provider.warm`): one whole
 * attempt of the dialect, through Effect's Node client as the providers build it, over a
 * connection in memory (no socket, nothing listening). Never at the provider, never with its key
 * or headers, a proxy configured or not; nothing once a call has started; no warm-up where there
 * is no HTTP.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { httpLayer } from "../../src/providers/Dialects.ts"
import * as HttpClient from "effect/http/HttpClient"
import * as Logger from "effect/Logger"
import * as Stream from "effect/Stream"
import * as Registry from "../../src/providers/Registry.ts"
import * as Scripted from "../../src/providers/Scripted.ts"
import * as Unconfigured from "../../src/providers/Unconfigured.ts"
import * as Warm from "../../src/providers/Warm.ts"
import * as TempDir from "../support/TempDir.ts"
import * as D from "./support/Dialects.ts"
import * as SseServer from "./support/SseServer.ts"

/** Skein's HTTP client, recording the URL of every request it is given. */
const recordingClient = Effect.gen(function*() {
  const sent: Array<string> = []
  const client = (yield* Effect.provide(HttpClient.HttpClient, httpLayer)).pipe(
    HttpClient.tapRequest((request) => Effect.sync(() => sent.push(request.url)))
  )
  return { client, sent }
})

const resolve = (env: Registry.Env, provider: string, client: HttpClient.HttpClient) =>
  Effect.flatMap(TempDir.make(), (home) => Registry.resolve({ home, env, provider, model: "llama3", httpClient: client })).pipe(
    Effect.provide(TempDir.platform)
  )

const quiet = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provide(effect, Logger.layer([]))

/** `warm`, with what its in-memory server was sent. */
const warmed = (warm: Effect.Effect<void>) =>
  Effect.suspend(() => {
    const received: Array<Warm.Received> = []
    return Effect.as(Effect.provideService(warm, Warm.Observer, (r) => received.push(r)), received)
  })

describe("Provider.warm", () => {
  it.live("runs one attempt in memory: not at the provider, without its key or headers, through no socket", () =>
    quiet(Effect.gen(function*() {
      const server = yield* SseServer.make
      const { client, sent } = yield* recordingClient
      const env = { OPENAI_BASE_URL: `${server.url}/v1`, OPENAI_API_KEY: "sk-warm-secret-123", OPENAI_ORG_ID: "org-warm" }
      const resolved = yield* resolve(env, "openai-chat", client)
      assert.isDefined(resolved.provider.warm)
      const received = yield* warmed(resolved.provider.warm!)

      assert.strictEqual(received.length, 1)
      assert.strictEqual(received[0]!.method, "POST")
      assert.strictEqual(received[0]!.path, "/chat/completions")
      // Addressed to the provider's host, and still never reaching it: the connection is in memory.
      assert.strictEqual(received[0]!.headers.host, new URL(server.url).host)
      assert.strictEqual(received[0]!.headers.authorization, undefined)
      assert.strictEqual(received[0]!.headers["openai-organization"], undefined)
      assert.notInclude(JSON.stringify(received[0]!.headers), "sk-warm-secret-123")
      assert.deepStrictEqual(sent, [])
      assert.strictEqual(server.requests.length, 0)

      // The provider works as before, with its key, and warming again does nothing.
      server.queue({ file: "openai-chat/text.sse" })
      const parts = yield* Stream.runCollect(resolved.provider.stream(D.request({ model: resolved.model })))
      assert.deepStrictEqual(parts.slice(0, 2), [D.text("Hello"), D.text(" world")])
      assert.strictEqual(server.requests.length, 1)
      assert.strictEqual(server.requests[0]!.headers.authorization, "Bearer sk-warm-secret-123")
      assert.deepStrictEqual(yield* warmed(resolved.provider.warm!), [])
    })))

  it.live("every dialect warms without failing, in memory", () =>
    quiet(Effect.gen(function*() {
      for (const [dialect, path] of [["openai-responses", "/responses"], ["anthropic-messages", "/v1/messages"]] as const) {
        const { client, sent } = yield* recordingClient
        const base = dialect === "anthropic-messages" ? "ANTHROPIC_BASE_URL" : "OPENAI_BASE_URL"
        const resolved = yield* resolve({ [base]: "http://127.0.0.1:9/v1" }, dialect, client)
        const received = yield* warmed(resolved.provider.warm!)
        assert.deepStrictEqual(received.map((r) => [r.method, r.path]), [["POST", path]], dialect)
        assert.deepStrictEqual(sent, [], dialect)
      }
    })))

  it.live("with a proxy configured, the warm-up still sends nothing out of the process", () =>
    quiet(Effect.gen(function*() {
      const server = yield* SseServer.make
      const proxy = yield* SseServer.make
      const { client } = yield* recordingClient
      const env = { OPENAI_BASE_URL: `${server.url}/v1`, https_proxy: proxy.url, HTTP_PROXY: proxy.url, NODE_USE_ENV_PROXY: "1" }
      const resolved = yield* resolve(env, "openai-chat", client)
      const received = yield* warmed(resolved.provider.warm!)
      assert.strictEqual(received.length, 1)
      assert.strictEqual(server.requests.length, 0)
      assert.strictEqual(proxy.requests.length, 0)
    })))

  it.live("once a call has started, warming does nothing", () =>
    quiet(Effect.gen(function*() {
      const server = yield* SseServer.make
      server.queue({ file: "openai-chat/text.sse" })
      const { client, sent } = yield* recordingClient
      const resolved = yield* resolve({ OPENAI_BASE_URL: `${server.url}/v1` }, "openai-chat", client)
      yield* Stream.runCollect(resolved.provider.stream(D.request({ model: resolved.model })))
      assert.deepStrictEqual(yield* warmed(resolved.provider.warm!), [])
      assert.deepStrictEqual(sent.map((url) => new URL(url).host), [new URL(server.url).host])
    })))

  it("providers without HTTP have no warm-up", () => {
    assert.isUndefined(Unconfigured.make().warm)
    assert.isUndefined(Scripted.make({ turns: [] }).warm)
  })

  it.live("warming again and again leaves no listener behind on the process or Node's shared agents", () =>
    quiet(Effect.gen(function*() {
      const http = process.getBuiltinModule("node:http")
      const https = process.getBuiltinModule("node:https")
      const emitters = { process, http: http.globalAgent, https: https.globalAgent }
      const counts = () =>
        Object.fromEntries(Object.entries(emitters).map(([name, e]) => [name, e.eventNames().reduce((n, event) => n + e.listenerCount(event), 0)]))
      const warmOnce = Effect.flatMap(TempDir.make(), (home) =>
        Effect.flatMap(
          Registry.resolve({ home, env: { OPENAI_BASE_URL: "https://127.0.0.1:9/v1" }, provider: "openai-chat", model: "llama3", httpClient: HttpClient.make(() => Effect.die("no call")) }),
          (resolved) => resolved.provider.warm!
        )).pipe(Effect.provide(TempDir.platform), Effect.provideService(Warm.Observer, () => void warmed++))
      let warmed = 0
      yield* warmOnce
      const before = counts()
      for (let i = 0; i < 20; i++) yield* warmOnce
      assert.deepStrictEqual(counts(), before)
      // Each one ran its attempt (in memory).
      assert.strictEqual(warmed, 21)
    })))
})
