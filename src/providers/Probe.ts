/**
 * Two calls `skein setup` makes to a provider before it is saved: the models it lists
 * (`GET /models`), and one tiny request through the dialect Skein will use (a one-word
 * question, at most 16 tokens of answer, no retries), which shows that the URL, the key and the
 * model work together.
 *
 * Errors are messages for people, built like a turn's (`Errors.ts`): no key, header or echoed
 * secret in them.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import * as Dialects from "./Dialects.ts"
import * as Errors from "./Errors.ts"
import type * as Http from "./Http.ts"
import * as Models from "./Models.ts"
import type { StreamPart } from "./Provider.ts"

/** How long a listing or the check may take. */
const TIMEOUT_MS = 60_000

/** The ids of a `/models` answer (`{data: [{id}]}` from OpenAI, Anthropic and the compatible servers; `{models: [{name}]}` from some). */
const modelIds = (json: unknown): ReadonlyArray<string> => {
  if (typeof json !== "object" || json === null) return []
  const o = json as Record<string, unknown>
  const list = Array.isArray(o.data) ? o.data : Array.isArray(o.models) ? o.models : []
  const ids = list.flatMap((entry) => {
    if (typeof entry !== "object" || entry === null) return []
    const e = entry as Record<string, unknown>
    const id = typeof e.id === "string" ? e.id : typeof e.name === "string" ? e.name : undefined
    return id !== undefined && id.length > 0 && id.length <= 200 ? [id] : []
  })
  return [...new Set(ids)]
}

const who = (target: Http.Target, model: string) => ({
  provider: target.name,
  model,
  baseUrl: Errors.safeUrl(target.baseUrl),
  keySource: target.keySource,
  secrets: [...(target.apiKey !== undefined ? [target.apiKey] : []), ...Object.values(target.headers).filter((v) => v.length >= 8)]
})

/** The models `target` lists, in its order; fails with a message when it does not say. */
export const listModels = (target: Http.Target, client: HttpClient.HttpClient): Effect.Effect<ReadonlyArray<string>, string> => {
  const dialect = Dialects.dialects[target.dialect]
  const path = target.dialect === "anthropic-messages" ? "/v1/models?limit=1000" : "/models"
  const request = HttpClientRequest.get(`${target.baseUrl.replace(/\/+$/, "")}${path}`).pipe(
    HttpClientRequest.setHeaders({ ...dialect.headers(target), ...target.headers, accept: "application/json" })
  )
  const about = who(target, "(listing models)")
  return Effect.gen(function*() {
    const response = yield* client.execute(request)
    const text = yield* response.text
    if (response.status >= 400) return yield* Effect.fail(Errors.fromStatus(response.status, text, about, undefined).message)
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      return yield* Effect.fail(`${Errors.safeUrl(target.baseUrl)}${path.split("?")[0]} did not answer with JSON`)
    }
    return modelIds(json)
  }).pipe(
    Effect.catch((error) => Effect.fail(typeof error === "string" ? error : Errors.make("network", about, { cause: Errors.transportCause(error) }).message)),
    Effect.timeoutOrElse({ duration: Duration.millis(TIMEOUT_MS), orElse: () => Effect.fail(`no answer within ${TIMEOUT_MS / 1000} s`) })
  )
}

/** One tiny request to `model` of `target`; fails with what went wrong. */
export const check = (target: Http.Target, model: string, client: HttpClient.HttpClient): Effect.Effect<void, string> => {
  const info = Models.modelOf(target, model) ?? Models.builtin(target.dialect, model)
  // Short, no reasoning budget to exceed it, one attempt: a failure is shown at once.
  const tiny: Models.ModelInfo = { ...info, maxOutput: 16, efforts: [], defaultEffort: undefined }
  const provider = Dialects.make({ ...target, models: new Map([[model, tiny]]), retry: { ...target.retry, maxAttempts: 1 } }, client)
  const parts = provider.stream({
    sessionId: "setup-check",
    turn: 1,
    call: 1,
    system: "Answer in one word.",
    messages: [{ role: "user", content: [{ type: "text", text: "Say OK." }] }],
    tools: [],
    model
  })
  return Stream.runFold(parts, () => undefined as StreamPart | undefined, (last, part) =>
    last?._tag === "Failure" || last?._tag === "Finish" ? last : part).pipe(
      Effect.timeoutOrElse({
        duration: Duration.millis(TIMEOUT_MS),
        orElse: () => Effect.succeed<StreamPart | undefined>({ _tag: "Failure", message: `no answer within ${TIMEOUT_MS / 1000} s`, retryable: true })
      }),
      Effect.flatMap((end) =>
        end?._tag === "Failure"
          ? Effect.fail(end.message)
          : end?._tag === "Finish"
          ? Effect.void
          : Effect.fail("the answer ended without saying it was complete"))
    )
}
