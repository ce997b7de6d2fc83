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
import * as Arr from "effect/Array"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Sse from "effect/encoding/Sse"
import * as Headers from "effect/http/Headers"
import * as HttpClient from "effect/http/HttpClient"
import type * as HttpClientError from "effect/http/HttpClientError"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"
import * as Pull from "effect/Pull"
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

/** How long, and how many bytes, the rest of a body is read after its final part (see `decodeBody`). */
const DRAIN_MS = 250
const DRAIN_BYTES = 64 * 1024

/** What ends an attempt's body early, as the provider error it is. */
interface BodyErrors {
  /** The body could not be read on (the connection failed, or the request was aborted). */
  readonly lost: (error: HttpClientError.HttpClientError) => Errors.ProviderError
  /** The server asked to reconnect (an SSE `retry` field). */
  readonly reconnect: () => Errors.ProviderError
  /** An event over the parser's limit. */
  readonly tooLarge: () => Errors.ProviderError
  /** No event for the idle timeout. */
  readonly idle: () => Errors.ProviderError
}

/**
 * One attempt's body as parts, decoded in one stream step per read: the bytes as text, the text
 * as Server-Sent Events (Effect's SSE parser), each event through the dialect's decoder. The
 * parts end at the first final one: a `Finish`, or a provider error, which fails the stream once
 * the parts before it are out. The body's normal end lets the decoder finish, or report a
 * truncated response. (As a chain of Effect's stream stages — decodeText, Sse.decode, mapAccum,
 * takeUntil, filter — each event cost a dozen stream steps.)
 *
 * The idle watchdog times each wait for an event, from the pull or from the event before: when
 * one has lasted `idleMs`, it runs `abort` (which aborts the request, so the read under way ends)
 * and the stream fails with the idle error. It is one fiber per body, asleep until a wait may be
 * due, and a clock read per event. (`Stream.timeoutOrElse` runs the stream in a fiber of its own
 * instead, handing each event over through a queue: two fiber switches and a scheduler turn.)
 * Between pulls nothing is timed: the reader is busy then, not the server.
 */
const decodeBody = (
  body: Stream.Stream<Uint8Array, HttpClientError.HttpClientError>,
  decoder: Decoder,
  idleMs: number,
  abort: Effect.Effect<void>,
  errors: BodyErrors
): Stream.Stream<StreamPart, Errors.ProviderError> =>
  Stream.transformPull(body, (read, scope) =>
    Effect.clockWith((clock) => {
      const text = new TextDecoder()
      let parts: Array<StreamPart> = []
      let failure: Errors.ProviderError | undefined
      /** A final part (or an error) came, or the body ended: nothing more is decoded. */
      let ended = false
      /** The body was read to its end (or is given up on). */
      let bodyDone = false
      /** When the wait for the next event started; undefined between pulls. */
      let since: number | undefined
      let expired = false

      const add = (items: ReadonlyArray<Item>) => {
        for (const item of items) {
          if (ended) return
          if (item._tag === "ProviderError") {
            failure = item
            ended = true
          } else {
            parts.push(item)
            if (item._tag === "Finish") ended = true
          }
        }
      }
      const parser = Sse.makeParser((event) => {
        if (ended) return
        since = clock.currentTimeMillisUnsafe()
        if (event._tag === "Retry") {
          failure = errors.reconnect()
          ended = true
        } else {
          add(decoder.event(event))
        }
      })
      const feed = (chunk: string) => {
        if (parser.feed(chunk) !== undefined && !ended) {
          // Like Sse.decode: what this read parsed is dropped with the error.
          parts = []
          failure = errors.tooLarge()
          ended = true
        }
      }

      const watch: Effect.Effect<void> = Effect.suspend(() => {
        const left = since === undefined ? idleMs : since + idleMs - clock.currentTimeMillisUnsafe()
        if (left > 0) return Effect.andThen(Effect.sleep(left), watch)
        expired = true
        return abort
      })

      const step: Effect.Effect<void, Errors.ProviderError> = Pull.matchEffect(read, {
        onSuccess: (chunks) => {
          for (const chunk of chunks) feed(text.decode(chunk, { stream: true }))
          return Effect.void
        },
        onFailure: (cause) => {
          // What the aborted request fails with is the watchdog's doing.
          if (expired) return Effect.fail(errors.idle())
          const error = Cause.findErrorOption(cause)
          return error._tag === "Some" ? Effect.fail(errors.lost(error.value)) : Effect.failCause(cause as Cause.Cause<never>)
        },
        onDone: () => {
          feed(text.decode())
          add(decoder.end())
          ended = true
          bodyDone = true
          return Effect.void
        }
      })

      /**
       * After the final part, what is left of the body (a closing event, the end of the chunked
       * body) is read and dropped, for at most DRAIN_MS and DRAIN_BYTES: a response read to its
       * end leaves its connection to the agent's pool for the next call, where one cut short is
       * closed, and the next call pays a new connection (a TLS handshake to a hosted provider).
       */
      const drain = (left: number): Effect.Effect<void> =>
        Pull.matchEffect(read, {
          onSuccess: (chunks) => {
            let rest = left
            for (const chunk of chunks) rest -= chunk.byteLength
            return rest > 0 ? drain(rest) : Effect.void
          },
          onFailure: () => Effect.void,
          onDone: () => {
            bodyDone = true
            return Effect.void
          }
        })
      const pull = Effect.suspend(function next(): Pull.Pull<Arr.NonEmptyReadonlyArray<StreamPart>, Errors.ProviderError> {
        if (Arr.isArrayNonEmpty(parts)) {
          const out = parts
          parts = []
          since = undefined
          return Effect.succeed(out)
        }
        if (failure !== undefined) return Effect.fail(failure)
        if (ended && !bodyDone) {
          bodyDone = true
          return Effect.andThen(Effect.ignore(Effect.timeoutOption(drain(DRAIN_BYTES), DRAIN_MS)), Cause.done())
        }
        if (ended) return Cause.done()
        // A new pull starts its wait; a read that brought no part yet goes on waiting.
        since ??= clock.currentTimeMillisUnsafe()
        return Effect.flatMap(step, next)
      })
      return Effect.as(Effect.forkIn(watch, scope), pull)
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
    return decodeBody(response.stream, dialect.decoder(call), target.idleTimeoutMs, Scope.close(requestScope, Exit.void), {
      lost: (error) => Errors.make("network", who, { cause: Errors.transportCause(error.reason.cause), lost: true }),
      reconnect: () => Errors.make("network", who, { cause: "the server asked to reconnect" }),
      tooLarge: () => Errors.make("protocol", who, { cause: "an event larger than the limit" }),
      idle: idleError
    })
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
