/**
 * How an attempt's SSE body becomes parts, for every dialect: a body that ends without the
 * dialect's last event is reported as cut short, after the text; an SSE `retry` field ends the
 * call after what came before it; the idle watchdog times each wait for an event, so a slow but
 * steady stream is not cut, while keep-alive comments do not count as events.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type { StreamPart } from "../../src/providers/Provider.ts"
import * as D from "./support/Dialects.ts"
import * as SseServer from "./support/SseServer.ts"

type Failure = Extract<StreamPart, { _tag: "Failure" }>

/** The events of a fixture, each with its blank line. */
const events = (file: string) => SseServer.fixture(file).split(/\n\n/).filter((e) => e.trim().length > 0).map((e) => `${e}\n\n`)

/** The text before the break ("Hel", "lo"), then a Failure saying `reason`. */
const assertHelloThenFailure = (parts: ReadonlyArray<unknown>, reason: string) => {
  assert.deepStrictEqual(parts.slice(0, -1), [D.text("Hel"), D.text("lo")])
  const failure = parts.at(-1) as Failure
  assert.strictEqual(failure._tag, "Failure")
  assert.include(failure.message, reason)
}

describe.each(D.specs)("$dialect", (spec) => {
  const setup = (over: Parameters<typeof D.provider>[2], ...replies: ReadonlyArray<SseServer.Reply>) =>
    Effect.gen(function*() {
      const server = yield* SseServer.make
      server.queue(...replies)
      return { server, provider: yield* D.provider(spec, server.url, over) }
    })

  it.live("a body that ends before the response does: a Failure after the text, no retry", () =>
    D.env(Effect.gen(function*() {
      const { server, provider } = yield* setup({}, { file: `${spec.dialect}/partial.sse` }, { file: `${spec.dialect}/text.sse` })
      const parts = yield* D.collect(provider)
      assertHelloThenFailure(parts, "the stream ended early")
      assert.strictEqual(server.requests.length, 1)
    })))

  it.live("calls one after another go over one connection: the body is read to its end, not cut at the last event", () =>
    D.env(Effect.gen(function*() {
      const { server, provider } = yield* setup({}, ...Array.from({ length: 3 }, () => ({ file: `${spec.dialect}/text.sse` })))
      for (let i = 0; i < 3; i++) assert.strictEqual((yield* D.collect(provider)).at(-1)?._tag, "Finish")
      assert.strictEqual(server.requests.length, 3)
      assert.strictEqual(server.connections(), 1)
    })))

  it.live("a server that holds the response open after its last event: the call ends anyway, and that connection is closed", () =>
    D.env(Effect.gen(function*() {
      const { server, provider } = yield* setup({}, { file: `${spec.dialect}/text.sse`, hang: true })
      assert.strictEqual((yield* D.collect(provider)).at(-1)?._tag, "Finish")
      assert.strictEqual(yield* server.abandoned, spec.path)
    })))

  it.live("an SSE retry field ends the call after the events before it", () =>
    D.env(Effect.gen(function*() {
      const { server, provider } = yield* setup({}, { body: `${events(`${spec.dialect}/partial.sse`).join("")}retry: 1000\n\n`, hang: true })
      const parts = yield* D.collect(provider)
      assertHelloThenFailure(parts, "the server asked to reconnect")
      assert.strictEqual(server.requests.length, 1)
    })))

  it.live("the idle watchdog times each wait for an event: a stream slower in all than the timeout is whole", () =>
    D.env(Effect.gen(function*() {
      // Each event 100 ms after the one before, the whole answer well over the 400 ms timeout.
      const { server, provider } = yield* setup({ idleTimeoutMs: 400 }, { file: `${spec.dialect}/text.sse`, delayMs: 100 })
      const parts = yield* D.collect(provider)
      assert.deepStrictEqual(parts.filter((p) => p._tag === "TextDelta"), [D.text("Hello"), D.text(" world")])
      assert.strictEqual(parts.at(-1)?._tag, "Finish")
      assert.strictEqual(server.requests.length, 1)
    })))

  it.live("keep-alive comments are not events: a stream that sends only comments after its text times out", () =>
    D.env(Effect.gen(function*() {
      const comments = Array.from({ length: 8 }, () => ": keep-alive\n\n").join("")
      const { provider } = yield* setup({ idleTimeoutMs: 300 }, { body: `${events(`${spec.dialect}/partial.sse`).join("")}${comments}`, delayMs: 100, hang: true })
      const parts = yield* D.collect(provider)
      assertHelloThenFailure(parts, "sent nothing for 0.3 s")
    })))
})
