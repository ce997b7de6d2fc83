/**
 * Warming a provider while `skein acp` waits for the first prompt (`Provider.warm`): one whole
 * attempt of the dialect, through the provider's own HTTP client, at a server of its own on the
 * loopback interface (a `data:` URL when a proxy is configured). Never at the provider, never
 * with its key or headers; nothing once a call has started; no warm-up where there is no HTTP.
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
import * as TempDir from "../support/TempDir.ts"
import * as D from "./support/Dialects.ts"
import * as SseServer from "./support/SseServer.ts"

interface Sent {
  readonly method: string
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  /** The response's status and content type, once it came. */
  answer?: string
}

/** Skein's HTTP client, recording every request it is given and what came back. */
const recordingClient = Effect.gen(function*() {
  const sent: Array<Sent> = []
  const client = (yield* Effect.provide(HttpClient.HttpClient, httpLayer)).pipe(
    HttpClient.tapRequest((request) => Effect.sync(() => sent.push({ method: request.method, url: request.url, headers: request.headers }))),
    HttpClient.tap((response) =>
      Effect.sync(() => {
        const entry = sent.find((s) => s.url === response.request.url && s.answer === undefined)
        if (entry !== undefined) entry.answer = `${response.status} ${response.headers["content-type"]}`
      })
    )
  )
  return { client, sent }
})

const resolve = (env: Registry.Env, provider: string, client: HttpClient.HttpClient) =>
  Effect.flatMap(TempDir.make(), (home) => Registry.resolve({ home, env, provider, model: "llama3", httpClient: client })).pipe(
    Effect.provide(TempDir.platform)
  )

const quiet = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provide(effect, Logger.layer([]))

describe("Provider.warm", () => {
  it.live("runs one attempt at a loopback server of its own: not at the provider, without its key or headers", () =>
    quiet(Effect.gen(function*() {
      const server = yield* SseServer.make
      const { client, sent } = yield* recordingClient
      const env = { OPENAI_BASE_URL: `${server.url}/v1`, OPENAI_API_KEY: "sk-warm-secret-123", OPENAI_ORG_ID: "org-warm" }
      const resolved = yield* resolve(env, "openai-chat", client)
      assert.isDefined(resolved.provider.warm)
      yield* resolved.provider.warm!

      assert.strictEqual(sent.length, 1)
      const warm = new URL(sent[0]!.url)
      assert.strictEqual(warm.hostname, "127.0.0.1")
      assert.notStrictEqual(`${warm.protocol}//${warm.host}`, server.url)
      assert.strictEqual(warm.pathname, "/chat/completions")
      assert.strictEqual(sent[0]!.method, "POST")
      assert.strictEqual(sent[0]!.answer, "200 text/event-stream")
      assert.strictEqual(sent[0]!.headers.authorization, undefined)
      assert.strictEqual(sent[0]!.headers["openai-organization"], undefined)
      assert.notInclude(JSON.stringify(sent[0]!.headers), "sk-warm-secret-123")
      assert.strictEqual(server.requests.length, 0)

      // The provider works as before, with its key, and warming again does nothing.
      server.queue({ file: "openai-chat/text.sse" })
      const parts = yield* Stream.runCollect(resolved.provider.stream(D.request({ model: resolved.model })))
      assert.deepStrictEqual(parts.slice(0, 2), [D.text("Hello"), D.text(" world")])
      assert.strictEqual(server.requests.length, 1)
      assert.strictEqual(server.requests[0]!.headers.authorization, "Bearer sk-warm-secret-123")
      yield* resolved.provider.warm!
      assert.strictEqual(sent.length, 2)
    })))

  it.live("every dialect warms without failing, at the loopback server", () =>
    quiet(Effect.gen(function*() {
      for (const dialect of ["openai-responses", "anthropic-messages"]) {
        const { client, sent } = yield* recordingClient
        const base = dialect === "anthropic-messages" ? "ANTHROPIC_BASE_URL" : "OPENAI_BASE_URL"
        const resolved = yield* resolve({ [base]: "http://127.0.0.1:9/v1" }, dialect, client)
        yield* resolved.provider.warm!
        assert.strictEqual(sent.length, 1, dialect)
        assert.strictEqual(sent[0]!.answer, "200 text/event-stream", dialect)
        assert.strictEqual(new URL(sent[0]!.url).hostname, "127.0.0.1")
        assert.notStrictEqual(new URL(sent[0]!.url).port, "9")
      }
    })))

  it.live("with a proxy configured, no request is made: a loopback one could be routed through it", () =>
    quiet(Effect.gen(function*() {
      const server = yield* SseServer.make
      const { client, sent } = yield* recordingClient
      const resolved = yield* resolve({ OPENAI_BASE_URL: `${server.url}/v1`, https_proxy: "http://127.0.0.1:9" }, "openai-chat", client)
      yield* resolved.provider.warm!
      assert.deepStrictEqual(sent, [])
      assert.strictEqual(server.requests.length, 0)
    })))

  it.live("once a call has started, warming does nothing", () =>
    quiet(Effect.gen(function*() {
      const server = yield* SseServer.make
      server.queue({ file: "openai-chat/text.sse" })
      const { client, sent } = yield* recordingClient
      const resolved = yield* resolve({ OPENAI_BASE_URL: `${server.url}/v1` }, "openai-chat", client)
      yield* Stream.runCollect(resolved.provider.stream(D.request({ model: resolved.model })))
      yield* resolved.provider.warm!
      assert.deepStrictEqual(sent.map((s) => new URL(s.url).host), [new URL(server.url).host])
    })))

  it("providers without HTTP have no warm-up", () => {
    assert.isUndefined(Unconfigured.make().warm)
    assert.isUndefined(Scripted.make({ turns: [] }).warm)
  })
})
