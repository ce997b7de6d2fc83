/**
 * The streaming engine shared by the HTTP dialects: one POST, a Server-Sent
 * Events body decoded by Effect's SSE parser, a dialect's decoder turning
 * events into parts, an idle watchdog, retries before the first part, and
 * errors as data. The dialect modules only map requests and events.
 *
 * The request lives in a scope of its own inside the stream's: the stream's
 * end, an interrupt and the idle watchdog all abort it by closing that scope
 * (Effect's HttpClient aborts the underlying `fetch` then).
 */
import type * as Arr from "effect/Array"
import type * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Sse from "effect/encoding/Sse"
import * as Headers from "effect/http/Headers"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"
import type * as Pull from "effect/Pull"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { VERSION } from "../version.ts"
import * as Errors from "./Errors.ts"
import * as Models from "./Models.ts"
import type { ModelRequest, Provider, StreamPart } from "./Provider.ts"
import * as Retry from "./Retry.ts"

/** A configured endpoint: everything a dialect needs to call it. */
export interface Target {
  /** The provider's name as the user knows it (`openai-chat`, or a name from config.json). */
  readonly name: string
  readonly dialect: Models.Dialect
  readonly baseUrl: string
  readonly apiKey: string | undefined
  /** Where the key comes from, for messages: `OPENAI_API_KEY`, `providers.x.apiKey in …/config.json`. */
  readonly keySource: string | undefined
  readonly headers: Readonly<Record<string, string>>
  /** Longest silence between two SSE events (and before the response headers). */
  readonly idleTimeoutMs: number
  readonly retry: Retry.Policy
  /** Models declared for this provider, by id. */
  readonly models: ReadonlyMap<string, Models.ModelInfo>
  readonly defaultModel: string | undefined
}

/** What a dialect receives to build one call. */
export interface Call {
  readonly request: ModelRequest
  readonly model: Models.ModelInfo
  readonly target: Target
  readonly who: Errors.Who
}

/** A decoded item: a part for the turn, or an error the provider reported in the stream. */
export type Item = StreamPart | Errors.ProviderError

/** Turns one call's SSE events into parts. Stateful; one per attempt. */
export interface Decoder {
  readonly event: (event: Sse.Event) => ReadonlyArray<Item>
  /** The body ended: the parts that complete the response, or an error when it was cut short. */
  readonly end: () => ReadonlyArray<Item>
}

export interface Dialect {
  readonly name: Models.Dialect
  /** Appended to the base URL. */
  readonly path: string
  /** Authentication and version headers. */
  readonly headers: (target: Target) => Record<string, string>
  readonly body: (call: Call) => unknown
  readonly decoder: (call: Call) => Decoder
  /**
   * Told of an error status before anything streamed: true when the dialect changed what it
   * asks for (its `body` differs from now on), so the request is sent again at once.
   */
  readonly degrade?: ((call: Call, status: number, detail: Errors.Detail) => boolean) | undefined
}

export const whoOf = (target: Target, model: string): Errors.Who => ({
  provider: target.name,
  model,
  baseUrl: Errors.safeUrl(target.baseUrl),
  keySource: target.keySource,
  secrets: [
    ...(target.apiKey !== undefined ? [target.apiKey] : []),
    ...Object.values(target.headers).filter((v) => v.length >= 8)
  ]
})

const joinUrl = (base: string, path: string) => `${base.replace(/\/+$/, "")}${path}`

/** Parses the data of an event as JSON; a protocol error when it is not. */
export const json = (event: Sse.Event, who: Errors.Who): Record<string, unknown> | Errors.ProviderError => {
  try {
    const value = JSON.parse(event.data) as unknown
    if (typeof value === "object" && value !== null && !Array.isArray(value)) return value as Record<string, unknown>
  } catch {
    // falls through
  }
  return Errors.make("protocol", who, { cause: `an event${event.event !== "message" ? ` "${event.event}"` : ""} whose data is not a JSON object` })
}

/** Tool arguments from their streamed JSON text; the raw text when it does not parse, so the tool reports it. */
export const parseArgs = (text: string): unknown => {
  if (text.trim().length === 0) return {}
  try {
    return JSON.parse(text) as unknown
  } catch {
    return text
  }
}

/** Tool arguments as JSON text for a request (a raw string stays as it was). */
export const argsText = (args: unknown): string => (typeof args === "string" ? args : JSON.stringify(args ?? {}))

const retryAfterMs = (response: HttpClientResponse.HttpClientResponse, now: number): number | undefined => {
  const ms = response.headers["retry-after-ms"]
  if (ms !== undefined && Number.isFinite(Number(ms))) return Math.max(0, Number(ms))
  const header = response.headers["retry-after"]
  if (header === undefined) return undefined
  const parsed = Headers.parseRetryAfter(header)
  return parsed._tag === "Success" ? Math.max(0, Duration.toMillis(Headers.retryAfterDelay(parsed.success, now))) : undefined
}

const END = Symbol("end of body")

const isFinal = (item: Item) => item._tag === "Finish" || item._tag === "ProviderError"

/** Ends the stream at the first error item, failing with it. */
const failAtError = <E>(items: Stream.Stream<Item, E>): Stream.Stream<StreamPart, E | Errors.ProviderError> =>
  Stream.suspend(() => {
    let failed: Errors.ProviderError | undefined
    return items.pipe(
      Stream.takeUntil(isFinal),
      Stream.filter((item): item is StreamPart => {
        if (item._tag === "ProviderError") {
          failed = item
          return false
        }
        return true
      }),
      Stream.concat(Stream.suspend(() => (failed !== undefined ? Stream.fail(failed) : Stream.empty)))
    )
  })

/**
 * The idle watchdog: when a pull of `self` has waited `ms` for its next element, `abort` ends
 * the wait (it aborts the HTTP request) and the stream fails with `onIdle()`. One fiber per
 * stream, asleep but when it is due, and a clock read per pull; `Stream.timeoutOrElse` would run
 * `self` in a fiber of its own instead, handing each element over through a queue and the
 * scheduler (two fiber switches and a scheduler turn per element).
 */
const idleWatchdog = <A, E, E2>(
  self: Stream.Stream<A, E>,
  ms: number,
  abort: Effect.Effect<void>,
  onIdle: () => E2
): Stream.Stream<A, E | E2> =>
  Stream.transformPull(self, (pull, scope) =>
    Effect.clockWith((clock) => {
      /** When the pull under way started (`undefined` between pulls: the reader is busy, not the server). */
      let since: number | undefined
      let expired = false
      const watch: Effect.Effect<void> = Effect.suspend(() => {
        const left = since === undefined ? ms : since + ms - clock.currentTimeMillisUnsafe()
        if (left > 0) return Effect.andThen(Effect.sleep(left), watch)
        expired = true
        return abort
      })
      const timed: Pull.Pull<Arr.NonEmptyReadonlyArray<A>, E | E2> = pull.pipe(
        Effect.onExit(() => {
          since = undefined
          return Effect.void
        }),
        // What the aborted request fails with is the watchdog's doing.
        Effect.catchCause((cause): Effect.Effect<never, E | E2 | Cause.Done> => (expired ? Effect.fail(onIdle()) : Effect.failCause(cause)))
      )
      const next: Pull.Pull<Arr.NonEmptyReadonlyArray<A>, E | E2> = Effect.suspend(() => {
        if (expired) return Effect.fail(onIdle())
        since = clock.currentTimeMillisUnsafe()
        return timed
      })
      return Effect.as(Effect.forkIn(watch, scope), next)
    }))

const requestFor = (dialect: Dialect, call: Call) =>
  HttpClientRequest.post(joinUrl(call.target.baseUrl, dialect.path)).pipe(
    HttpClientRequest.setHeaders({
      "user-agent": `skein/${VERSION}`,
      ...call.target.headers,
      ...dialect.headers(call.target),
      accept: "text/event-stream"
    }),
    HttpClientRequest.bodyText(JSON.stringify(dialect.body(call)), "application/json")
  )

/** One attempt: POST, check the status, decode the SSE body. */
export const attempt = (
  client: HttpClient.HttpClient,
  dialect: Dialect,
  call: Call
): Stream.Stream<StreamPart, Errors.ProviderError> => {
  const request = requestFor(dialect, call)
  const { target, who } = call
  const idle = Duration.millis(target.idleTimeoutMs)
  const idleError = () => Errors.make("timeout", who, { cause: `${Math.round(target.idleTimeoutMs / 100) / 10} s` })
  const network = (cause: unknown) => Errors.make("network", who, { cause: Errors.transportCause(cause) })
  return Stream.unwrap(Effect.gen(function*() {
    // The request's own scope, closed with the stream's or by the idle watchdog: either aborts it.
    const requestScope = yield* Scope.fork(yield* Effect.scope)
    const response = yield* HttpClient.withScope(client).execute(request).pipe(
      Scope.provide(requestScope),
      // No spans, and no trace headers sent to a third party.
      Effect.provideService(HttpClient.TracerDisabledWhen, () => true),
      Effect.mapError((error) =>
        error.reason._tag === "InvalidUrlError"
          ? Errors.make("protocol", who, { cause: "its base URL is not a valid URL" })
          : network(error.reason.cause)
      ),
      Effect.timeoutOrElse({ duration: idle, orElse: () => Effect.fail(idleError()) })
    )
    if (response.status >= 400) {
      const body = yield* response.text.pipe(
        Effect.timeoutOption(idle),
        Effect.map((text) => (text._tag === "Some" ? text.value.slice(0, 64_000) : "")),
        Effect.orElseSucceed(() => "")
      )
      if (dialect.degrade?.(call, response.status, Errors.parseDetail(body)) === true) {
        yield* Effect.logWarning(`provider ${target.name}: ${Errors.parseDetail(body).param ?? "a request field"} refused (HTTP ${response.status}); asking again without it`)
        return attempt(client, dialect, call)
      }
      const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
      return yield* Effect.fail(Errors.fromStatus(response.status, body, who, retryAfterMs(response, now)))
    }
    const contentType = response.headers["content-type"] ?? ""
    if (contentType.includes("application/json")) {
      // A server that ignored `stream: true`, or reported an error with a 200.
      const body = yield* response.text.pipe(Effect.orElseSucceed(() => ""))
      const detail = Errors.parseDetail(body)
      return yield* Effect.fail(
        detail.message !== undefined
          ? Errors.fromEvent(detail, who)
          : Errors.make("protocol", who, { cause: "a JSON answer instead of an event stream" })
      )
    }
    const decoder = dialect.decoder(call)
    const items = response.stream.pipe(
      Stream.mapError((error) => Errors.make("network", who, { cause: Errors.transportCause(error.reason.cause), lost: true })),
      Stream.decodeText,
      Stream.pipeThroughChannel(Sse.decode<Errors.ProviderError, unknown>()),
      Stream.mapError((error): Errors.ProviderError =>
        error._tag === "ProviderError"
          ? error
          : error._tag === "Retry"
          ? Errors.make("network", who, { cause: "the server asked to reconnect" })
          : Errors.make("protocol", who, { cause: "an event larger than the limit" })
      ),
      (events) => idleWatchdog(events, target.idleTimeoutMs, Scope.close(requestScope, Exit.void), idleError),
      // The body's normal end (not a failure) lets the decoder finish or report a truncated response.
      Stream.concat(Stream.succeed(END)),
      Stream.mapAccum(() => decoder, (d, event: Sse.Event | typeof END) => [d, event === END ? d.end() : d.event(event)] as const)
    )
    return failAtError(items)
  }))
}

/** A provider of `dialect` at `target`, over `client`. */
export const make = (dialect: Dialect, target: Target, client: HttpClient.HttpClient): Provider => ({
  name: target.name,
  stream: (request) =>
    Stream.suspend(() => {
      const model = Models.modelOf(target, request.model)
      if (model === undefined) {
        return Stream.succeed<StreamPart>({
          _tag: "Failure",
          message: `No model is chosen for provider ${target.name}: pass --model ID (or set SKEIN_MODEL), or declare models for it in $SKEIN_HOME/config.json.`,
          retryable: false
        })
      }
      const who = whoOf(target, model.id)
      const call: Call = { request, model, target, who }
      return Retry.stream(
        target.retry,
        () => attempt(client, dialect, call),
        (n, error, waitMs) =>
          Effect.logWarning(
            `provider ${target.name}: ${error.reason}${error.status !== undefined ? ` (HTTP ${error.status})` : ""}; attempt ${n + 1} of ${target.retry.maxAttempts} in ${waitMs} ms`
          )
      )
    })
})
