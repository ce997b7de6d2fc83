/**
 * The HTTP dialects by name, and Effect's fetch-based client. Loaded on the
 * first model call (see `Registry.provider`), so start-up does not pay for the
 * HTTP stack.
 */
import * as Effect from "effect/Effect"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as HttpClient from "effect/http/HttpClient"
import * as AnthropicMessages from "./AnthropicMessages.ts"
import * as Http from "./Http.ts"
import type { Dialect } from "./Models.ts"
import * as OpenAIChat from "./OpenAIChat.ts"
import * as OpenAIResponses from "./OpenAIResponses.ts"
import type { Provider } from "./Provider.ts"
import * as Warm from "./Warm.ts"

export const dialects: Record<Dialect, Http.Dialect> = {
  "openai-responses": OpenAIResponses.dialect,
  "openai-chat": OpenAIChat.dialect,
  "anthropic-messages": AnthropicMessages.dialect
}

/** Effect's HttpClient over the platform's `fetch` (Node's undici). */
export const fetchClient: Effect.Effect<HttpClient.HttpClient> = Effect.provide(HttpClient.HttpClient, FetchHttpClient.layer)

export const make = (target: Http.Target, client: HttpClient.HttpClient): Provider => Http.make(dialects[target.dialect], target, client)

/** Runs the first call's code path of `target`'s dialect once, without calling it (see `Warm`). */
export const warm = (
  target: Http.Target,
  client: HttpClient.HttpClient,
  env: Readonly<Record<string, string | undefined>>
): Effect.Effect<void> => Warm.warm(dialects[target.dialect], target, client, env)
