/**
 * Error classification, scrubbing and the retry policy, as pure functions.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import { TestClock } from "effect/testing"
import * as Errors from "../../src/providers/Errors.ts"
import type { StreamPart } from "../../src/providers/Provider.ts"
import * as Retry from "../../src/providers/Retry.ts"

const who: Errors.Who = {
  provider: "p",
  model: "m",
  baseUrl: "https://api.example.test/v1",
  keySource: "P_KEY",
  secrets: ["the-actual-secret-value"]
}

describe("Errors", () => {
  it("scrubs keys, bearer tokens and key-shaped strings", () => {
    const text = "key the-actual-secret-value, Bearer abc.def-123, sk-proj-****abcd, sk-ant-api03-XYZxyz123456, api_key=hunter22222, \"x-api-key\": \"zzz\""
    const clean = Errors.scrub(text, who.secrets)
    for (const leaked of ["the-actual-secret-value", "abc.def-123", "sk-proj", "sk-ant", "hunter22222", "zzz"]) assert.notInclude(clean, leaked)
    assert.include(clean, "[redacted]")
  })

  it("a base URL is shown without user info or query", () => {
    assert.strictEqual(Errors.safeUrl("https://user:pw@host.test:8443/v1/?key=secret"), "https://host.test:8443/v1")
    assert.strictEqual(Errors.safeUrl("not a url"), "(an invalid URL)")
  })

  it("classifies statuses and provider codes", () => {
    const table: ReadonlyArray<readonly [number, string, Errors.Reason, boolean]> = [
      [401, "{\"error\":{\"message\":\"bad key\"}}", "auth", false],
      [403, "{}", "auth", false],
      [429, "{\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow\"}}", "rate_limit", true],
      [429, "{\"error\":{\"code\":\"insufficient_quota\",\"message\":\"You exceeded your current quota\"}}", "quota", false],
      [400, "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: 210000 tokens > 200000 maximum\"}}", "context_overflow", false],
      [400, "{\"error\":{\"message\":\"Your credit balance is too low to access the Anthropic API.\"}}", "quota", false],
      [400, "{\"error\":{\"message\":\"Unknown parameter: foo\"}}", "invalid_request", false],
      [404, "{\"error\":\"model 'x' not found\"}", "not_found", false],
      [413, "", "context_overflow", false],
      [500, "<html>", "server", true],
      [529, "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}", "server", true]
    ]
    for (const [status, body, reason, retryable] of table) {
      const error = Errors.fromStatus(status, body, who, undefined)
      assert.deepStrictEqual([error.reason, error.retryable], [reason, retryable], `${status} ${body}`)
      assert.include(error.message, `HTTP ${status}`)
    }
    assert.include(Errors.fromStatus(401, "", who, undefined).message, "check P_KEY")
  })

  it("stream error events are classified by their code", () => {
    assert.strictEqual(Errors.fromEvent({ code: "overloaded_error", message: "Overloaded" }, who).reason, "server")
    assert.strictEqual(Errors.fromEvent({ code: "rate_limit_exceeded", message: "x" }, who).reason, "rate_limit")
    assert.strictEqual(Errors.fromEvent({ code: "context_length_exceeded", message: "x" }, who).reason, "context_overflow")
    assert.strictEqual(Errors.fromEvent({ code: undefined, message: "something odd" }, who).reason, "server")
  })
})

describe("Retry", () => {
  const policy: Retry.Policy = { maxAttempts: 4, baseDelayMs: 1_000, maxDelayMs: 3_000, maxRetryAfterMs: 10_000 }
  const rateLimited = (retryAfterMs?: number) =>
    Errors.make("rate_limit", who, { status: 429, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) })

  it.effect("backoff is exponential with jitter, capped; retry-after wins", () =>
    Effect.gen(function*() {
      for (let i = 0; i < 20; i++) {
        const first = yield* Retry.delayMs(policy, 1, rateLimited())
        const second = yield* Retry.delayMs(policy, 2, rateLimited())
        const fifth = yield* Retry.delayMs(policy, 5, rateLimited())
        assert.isTrue(first >= 500 && first <= 1_000, String(first))
        assert.isTrue(second >= 1_000 && second <= 2_000, String(second))
        assert.isTrue(fifth >= 1_500 && fifth <= 3_000, String(fifth))
      }
      assert.strictEqual(yield* Retry.delayMs(policy, 1, rateLimited(7_000)), 7_000)
    }))

  it.effect("waits (on the Clock) between attempts, and stops at maxAttempts", () =>
    Effect.gen(function*() {
      let attempts = 0
      const fiber = yield* Retry.stream(policy, () => {
        attempts++
        return Stream.fail(rateLimited(2_000))
      }).pipe(Stream.runCollect, Effect.forkChild)
      yield* TestClock.adjust(1_999)
      assert.strictEqual(attempts, 1)
      yield* TestClock.adjust(1)
      assert.strictEqual(attempts, 2)
      yield* TestClock.adjust(10_000)
      const parts: Array<StreamPart> = yield* Fiber.join(fiber)
      assert.strictEqual(attempts, 4)
      assert.strictEqual(parts.length, 1)
      assert.include((parts[0] as Extract<StreamPart, { _tag: "Failure" }>).message, "Gave up after 4 attempts")
    }))

  it.effect("never retries once a part went out", () =>
    Effect.gen(function*() {
      let attempts = 0
      const parts = yield* Retry.stream(policy, () => {
        attempts++
        return Stream.concat(Stream.succeed<StreamPart>({ _tag: "TextDelta", text: "Hi" }), Stream.fail(rateLimited(0)))
      }).pipe(Stream.runCollect)
      assert.strictEqual(attempts, 1)
      assert.deepStrictEqual(parts.map((p) => p._tag), ["TextDelta", "Failure"])
    }))

  it.effect("a defect becomes a Failure part: the stream never fails", () =>
    Effect.gen(function*() {
      const parts = yield* Retry.stream(policy, () => Stream.die(new Error("bug"))).pipe(Stream.runCollect)
      assert.deepStrictEqual(parts.map((p) => p._tag), ["Failure"])
    }))
})
