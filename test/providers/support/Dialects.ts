/**
 * The three HTTP dialects as tests drive them: a target at the fixture server,
 * the provider over Skein's HTTP client (node:http), and what each dialect's fixtures
 * are expected to produce where the wire formats differ (ids, signatures).
 */
import * as Effect from "effect/Effect"
import { httpLayer } from "../../../src/providers/Dialects.ts"
import * as HttpClient from "effect/http/HttpClient"
import * as Logger from "effect/Logger"
import * as Stream from "effect/Stream"
import * as AnthropicMessages from "../../../src/providers/AnthropicMessages.ts"
import type * as Http from "../../../src/providers/Http.ts"
import type { Dialect } from "../../../src/providers/Models.ts"
import * as OpenAIChat from "../../../src/providers/OpenAIChat.ts"
import * as OpenAIResponses from "../../../src/providers/OpenAIResponses.ts"
import type { ModelRequest, Provider, StreamPart } from "../../../src/providers/Provider.ts"

/** A key that must never show up anywhere. */
export const SECRET = "sk-test-SECRET-0123456789abcdef"

export interface Spec {
  readonly dialect: Dialect
  readonly model: string
  readonly keySource: string
  /** The path the dialect posts to. */
  readonly path: string
  readonly baseUrl: (server: string) => string
  readonly make: (target: Http.Target, client: HttpClient.HttpClient) => Provider
  readonly toolIds: readonly [string, string]
  /** The signature carried by the reasoning fixture's thinking, if the dialect has one. */
  readonly signature: string | undefined
  /** The header that carries the key, and its value. */
  readonly auth: readonly [string, string]
}

export const specs: ReadonlyArray<Spec> = [
  {
    dialect: "openai-chat",
    model: "llama3",
    keySource: "OPENAI_API_KEY",
    path: "/v1/chat/completions",
    baseUrl: (url) => `${url}/v1`,
    make: OpenAIChat.make,
    toolIds: ["call_1", "call_2"],
    signature: undefined,
    auth: ["authorization", `Bearer ${SECRET}`]
  },
  {
    dialect: "openai-responses",
    model: "gpt-5",
    keySource: "OPENAI_API_KEY",
    path: "/v1/responses",
    baseUrl: (url) => `${url}/v1`,
    make: OpenAIResponses.make,
    toolIds: ["call_1", "call_2"],
    signature: JSON.stringify({ type: "reasoning", id: "rs_1", encrypted_content: "gAAAAB-encrypted-1" }),
    auth: ["authorization", `Bearer ${SECRET}`]
  },
  {
    dialect: "anthropic-messages",
    model: "claude-sonnet-4-5",
    keySource: "ANTHROPIC_API_KEY",
    path: "/v1/messages",
    baseUrl: (url) => url,
    make: AnthropicMessages.make,
    toolIds: ["toolu_1", "toolu_2"],
    signature: "EqQBCkYIARgCIkB-signature-1",
    auth: ["x-api-key", SECRET]
  }
]

export const target = (spec: Spec, server: string, over: Partial<Http.Target> = {}): Http.Target => ({
  name: spec.dialect,
  dialect: spec.dialect,
  baseUrl: spec.baseUrl(server),
  apiKey: SECRET,
  keySource: spec.keySource,
  headers: {},
  idleTimeoutMs: 5_000,
  retry: { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 20, maxRetryAfterMs: 2_000 },
  models: new Map(),
  defaultModel: spec.model,
  ...over
})

export const request = (over: Partial<ModelRequest> = {}): ModelRequest => ({
  sessionId: "s-1",
  turn: 1,
  call: 1,
  system: "You are a test.",
  messages: [{ role: "user", content: [{ type: "text", text: "hello" }] }],
  tools: [{ name: "read", description: "Reads a file", parameters: { type: "object", properties: { path: { type: "string" } } } }],
  ...over
})

/** The provider of `spec` at `server`, over Skein's HTTP client. */
export const provider = (spec: Spec, server: string, over: Partial<Http.Target> = {}) =>
  HttpClient.HttpClient.useSync((client) => spec.make(target(spec, server, over), client))

/** Every part of one call. */
export const collect = (p: Provider, req: ModelRequest = request()): Effect.Effect<Array<StreamPart>> => Stream.runCollect(p.stream(req))

/** Skein's HTTP client, and no log lines in test output. */
export const env = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  effect.pipe(Effect.provide(httpLayer), Effect.provide(Logger.layer([])))

export const text = (t: string): StreamPart => ({ _tag: "TextDelta", text: t })
export const usage: StreamPart = { _tag: "Usage", usage: { input: 120, output: 12, cached: 100 } }
