/**
 * Resilience, for every dialect: retries (429 with retry-after, 5xx) only
 * before anything was streamed, none after; the idle watchdog; cancel aborts
 * the HTTP request; classified errors that say what to do and never hold the
 * key.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Clock from "effect/Clock"
import * as Fiber from "effect/Fiber"
import { httpLayer } from "../../src/providers/Dialects.ts"
import * as Logger from "effect/Logger"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/testing/TestClock"
import type { StreamPart } from "../../src/providers/Provider.ts"
import * as D from "./support/Dialects.ts"
import * as SseServer from "./support/SseServer.ts"

type Failure = Extract<StreamPart, { _tag: "Failure" }>

const lastFailure = (parts: ReadonlyArray<StreamPart>): Failure => {
  const last = parts.at(-1)
  assert.strictEqual(last?._tag, "Failure", `expected a Failure last, got ${JSON.stringify(parts)}`)
  return last as Failure
}

/** A few milliseconds of the machine's time (the test's clock stands still meanwhile). */
const nativePause = Effect.callback<void>((resume) => {
  const timer = setTimeout(() => resume(Effect.void), 5)
  return Effect.sync(() => clearTimeout(timer))
})

const errorBody = (message: string, code = "error") => JSON.stringify({ error: { message, type: code, code } })

describe.each(D.specs)("$dialect", (spec) => {
  const setup = (over: Parameters<typeof D.provider>[2] = {}, ...replies: ReadonlyArray<SseServer.Reply>) =>
    Effect.gen(function*() {
      const server = yield* SseServer.make
      server.queue(...replies)
      return { server, provider: yield* D.provider(spec, server.url, over) }
    })

  it.live("429 (retry-after) then success: retried, and the answer is whole", () =>
    D.env(Effect.gen(function*() {
      const { server, provider } = yield* setup(
        {},
        { status: 429, headers: { "retry-after": "0" }, body: errorBody("Rate limit reached", "rate_limit_exceeded") },
        { file: `${spec.dialect}/text.sse` }
      )
      const parts = yield* D.collect(provider)
      assert.deepStrictEqual(parts, [D.text("Hello"), D.text(" world"), D.usage, { _tag: "Finish", stop: "end_turn" }])
      assert.strictEqual(server.requests.length, 2)
    })))

  /**
   * The call with the test's clock set to the machine's (an HTTP date is compared with it):
   * how long the clock had moved between the first request and the second. The clock moves
   * 50 ms at a time, with a pause on native time between steps for the server's answers.
   */
  const retried = (provider: Effect.Success<ReturnType<typeof setup>>["provider"], server: SseServer.SseServer) =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.now())
      const call = yield* Effect.forkChild(D.collect(provider), { startImmediately: true })
      // The first request may have been answered (and the wait begun) during the step before
      // it was seen: the time of the first is that step's start.
      let previous = yield* Clock.currentTimeMillis
      let first: number | undefined
      let second: number | undefined
      for (let step = 0; step < 2_000 && second === undefined; step++) {
        yield* nativePause
        const now = yield* Clock.currentTimeMillis
        if (first === undefined && server.requests.length >= 1) first = previous
        if (second === undefined && server.requests.length >= 2) second = now
        previous = now
        yield* TestClock.adjust(50)
      }
      const parts = yield* Fiber.join(call)
      return { parts, waited: second! - first! }
    })

  it.effect("retry-after is honoured (in seconds)", () =>
    D.env(Effect.gen(function*() {
      const { server, provider } = yield* setup(
        {},
        { status: 429, headers: { "retry-after": "1" }, body: errorBody("slow down") },
        { file: `${spec.dialect}/text.sse` }
      )
      const { parts, waited } = yield* retried(provider, server)
      assert.isAtLeast(waited, 1_000)
      assert.strictEqual(parts.at(-1)?._tag, "Finish")
      assert.strictEqual(server.requests.length, 2)
    })))

  it.effect("retry-after is honoured (as an HTTP date)", () =>
    D.env(Effect.gen(function*() {
      const { server, provider } = yield* setup(
        {},
        // Whole seconds: 2 s ahead is at least 1 s of waiting.
        { status: 503, headers: { "retry-after": new Date(Date.now() + 2_000).toUTCString() }, body: errorBody("later") },
        { file: `${spec.dialect}/text.sse` }
      )
      const { parts, waited } = yield* retried(provider, server)
      assert.isAtLeast(waited, 1_000)
      assert.strictEqual(parts.at(-1)?._tag, "Finish")
      assert.strictEqual(server.requests.length, 2)
    })))

  it.live("a retry-after beyond the cap is not waited for: the message says how long to wait", () =>
    D.env(Effect.gen(function*() {
      const { server, provider } = yield* setup({}, { status: 429, headers: { "retry-after": "3600" }, body: errorBody("slow down") })
      const failure = lastFailure(yield* D.collect(provider))
      assert.include(failure.message, "rate limiting")
      assert.include(failure.message, "3600 s")
      assert.strictEqual(server.requests.length, 1)
    })))

  it.live("500 then 503 then success: retried with backoff", () =>
    D.env(Effect.gen(function*() {
      const { server, provider } = yield* setup(
        {},
        { status: 500, body: errorBody("boom", "server_error") },
        { status: 503, body: "<html>unavailable</html>" },
        { file: `${spec.dialect}/text.sse` }
      )
      const parts = yield* D.collect(provider)
      assert.strictEqual(parts.at(-1)?._tag, "Finish")
      assert.strictEqual(server.requests.length, 3)
    })))

  it.live("retries give up after maxAttempts, saying so", () =>
    D.env(Effect.gen(function*() {
      const { server, provider } = yield* setup(
        {},
        ...Array.from({ length: 3 }, () => ({ status: 529, body: errorBody("Overloaded", "overloaded_error") }))
      )
      const failure = lastFailure(yield* D.collect(provider))
      assert.include(failure.message, "server error")
      assert.include(failure.message, "Gave up after 3 attempts")
      assert.strictEqual(server.requests.length, 3)
    })))

  it.live("the connection cut after partial output: a Failure after the text, no retry, no text repeated", () =>
    D.env(Effect.gen(function*() {
      const { server, provider } = yield* setup({}, { file: `${spec.dialect}/partial.sse`, cut: true }, { file: `${spec.dialect}/text.sse` })
      const parts = yield* D.collect(provider)
      assert.deepStrictEqual(parts.slice(0, -1), [D.text("Hel"), D.text("lo")])
      assert.include(lastFailure(parts).message, `The connection to provider ${spec.dialect} broke before the answer was complete`)
      assert.strictEqual(server.requests.length, 1)
    })))

  it.live("a connection refused is a network error naming the base URL, retried", () =>
    D.env(Effect.gen(function*() {
      const server = yield* SseServer.make
      const closed = yield* D.provider(spec, "http://127.0.0.1:9", { retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 2, maxRetryAfterMs: 10 } })
      const failure = lastFailure(yield* D.collect(closed))
      assert.include(failure.message, "Could not reach provider")
      assert.include(failure.message, "127.0.0.1:9")
      assert.include(failure.message, "Gave up after 2 attempts")
      assert.strictEqual(server.requests.length, 0)
    })))

  it.live("idle watchdog: a stream that stalls after output fails the call, without a retry", () =>
    D.env(Effect.gen(function*() {
      const { server, provider } = yield* setup({ idleTimeoutMs: 300 }, { file: `${spec.dialect}/partial.sse`, hang: true })
      const parts = yield* D.collect(provider)
      assert.deepStrictEqual(parts.slice(0, -1), [D.text("Hel"), D.text("lo")])
      const failure = lastFailure(parts)
      assert.include(failure.message, "sent nothing for 0.3 s")
      assert.strictEqual(server.requests.length, 1)
    })))

  it.live("idle watchdog: a stream that stalls before any output is retried", () =>
    D.env(Effect.gen(function*() {
      const { server, provider } = yield* setup(
        { idleTimeoutMs: 300 },
        { body: ": keep-alive comment, not an event\n\n", hang: true },
        { file: `${spec.dialect}/text.sse` }
      )
      const parts = yield* D.collect(provider)
      assert.strictEqual(parts.at(-1)?._tag, "Finish")
      assert.strictEqual(server.requests.length, 2)
    })))

  it.live("cancel mid-stream: interrupting the stream closes the HTTP connection at once", () =>
    D.env(Effect.gen(function*() {
      const { server, provider } = yield* setup({}, { file: `${spec.dialect}/partial.sse`, hang: true })
      const first = yield* Deferred.make<void>()
      const fiber = yield* provider.stream(D.request()).pipe(
        Stream.tap(() => Deferred.succeed(first, undefined)),
        Stream.runCollect,
        Effect.forkChild
      )
      yield* Deferred.await(first)
      yield* Fiber.interrupt(fiber)
      const url = yield* server.abandoned.pipe(Effect.timeout("2 seconds"))
      assert.strictEqual(url, spec.path)
    })))

  it.live("auth failure: says which key to check, never shows it (even when the provider echoes it)", () =>
    D.env(Effect.gen(function*() {
      const { server, provider } = yield* setup({}, {
        status: 401,
        body: errorBody(`Incorrect API key provided: ${D.SECRET}. Authorization: Bearer ${D.SECRET}`, "invalid_api_key")
      })
      const failure = lastFailure(yield* D.collect(provider))
      assert.include(failure.message, `Authentication failed for provider ${spec.dialect} (HTTP 401): check ${spec.keySource}`)
      assert.notInclude(failure.message, D.SECRET)
      assert.notInclude(failure.message, "sk-test")
      assert.isFalse(failure.retryable)
      assert.strictEqual(server.requests.length, 1)
    })))

  it.live("context overflow is classified and says what to do", () =>
    D.env(Effect.gen(function*() {
      const { provider } = yield* setup({}, {
        status: 400,
        body: errorBody("This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.", "context_length_exceeded")
      })
      const failure = lastFailure(yield* D.collect(provider))
      assert.include(failure.message, "too long for model")
      assert.include(failure.message, "Start a new session")
    })))

  it.live("an unknown model (404) points at --model and the base URL", () =>
    D.env(Effect.gen(function*() {
      const { provider } = yield* setup({}, { status: 404, body: errorBody("model 'nope' not found", "not_found_error") })
      const failure = lastFailure(yield* D.collect(provider))
      assert.include(failure.message, "check the model id (--model) and the base URL")
    })))

  it.live("retries are logged (to stderr in the CLI) without the key or the provider's body", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const collect = Logger.make((options) => {
        lines.push(JSON.stringify(options.message))
      })
      yield* Effect.gen(function*() {
        const { server, provider } = yield* setup(
          {},
          { status: 429, headers: { "retry-after": "0" }, body: errorBody(`Rate limit for key ${D.SECRET}`) },
          { file: `${spec.dialect}/text.sse` }
        )
        yield* D.collect(provider)
        assert.strictEqual(server.requests.length, 2)
      }).pipe(Effect.provide(httpLayer), Effect.provide(Logger.layer([collect])))
      assert.strictEqual(lines.length, 1)
      assert.include(lines[0], `provider ${spec.dialect}: rate_limit (HTTP 429); attempt 2 of 3`)
      assert.notInclude(lines.join("\n"), D.SECRET)
    }))
})
