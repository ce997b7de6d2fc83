/**
 * The HTTP dialects by name, and the client their calls go through. Loaded on
 * the first model call (see `Registry.provider`), so start-up does not pay for
 * the HTTP stack.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as Effect from "effect/Effect"
import * as HttpClient from "effect/http/HttpClient"
import * as Layer from "effect/Layer"
import * as http from "node:http"
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

/**
 * Effect's HttpClient over `node:http` and `node:https`, with Node's global agents: connections
 * kept alive between calls, and `NODE_USE_ENV_PROXY=1` honoured as Node does. Not `fetch`: Node
 * loads undici for it, about 17 MB resident and 30 ms of CPU in a fresh process, where `http`
 * costs about 3 MB. `https` (TLS and crypto, about 5 MB more) is loaded by the first call to an
 * https URL (the build makes the client's own requires lazy too: scripts/build.mjs).
 */
export const httpLayer: Layer.Layer<HttpClient.HttpClient> = Layer.provide(
  NodeHttpClient.layerNodeHttpNoAgent,
  Layer.succeed(NodeHttpClient.HttpAgent, {
    http: http.globalAgent,
    get https() {
      return process.getBuiltinModule("node:https").globalAgent
    }
  })
)

export const httpClient: Effect.Effect<HttpClient.HttpClient> = Effect.provide(HttpClient.HttpClient, httpLayer)

export const make = (target: Http.Target, client: HttpClient.HttpClient): Provider => Http.make(dialects[target.dialect], target, client)

/** Runs the first call's code path of `target`'s dialect once, without calling it (see `Warm`). */
export const warm = (target: Http.Target): Effect.Effect<void> => Warm.warm(dialects[target.dialect], target)
