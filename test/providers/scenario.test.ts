/**
 * One agent scenario — read a file, read part of it again, answer — through
 * the real turn loop (`Skein.layer`), against each dialect's recorded
 * conversation served on 127.0.0.1. Every dialect must yield the same events,
 * the same history and the same log; and the second and third calls must carry
 * the tool results back in the dialect's own shape.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import { join } from "node:path"
import type { SessionEvent } from "../../src/log/Event.ts"
import type { Dialect } from "../../src/providers/Models.ts"
import * as Registry from "../../src/providers/Registry.ts"
import { record, submit, text, types, withSkein } from "../support/Sessions.ts"
import * as TempDir from "../support/TempDir.ts"
import * as D from "./support/Dialects.ts"
import * as SseServer from "./support/SseServer.ts"

/** The environment that points a built-in provider at the fixture server. */
const envFor = (dialect: Dialect, url: string): Registry.Env =>
  dialect === "anthropic-messages"
    ? { ANTHROPIC_API_KEY: D.SECRET, ANTHROPIC_BASE_URL: url }
    : { OPENAI_API_KEY: D.SECRET, OPENAI_BASE_URL: `${url}/v1` }

interface Outcome {
  readonly dialect: Dialect
  readonly events: ReadonlyArray<SessionEvent>
  readonly stopReason: string
  readonly requests: ReadonlyArray<SseServer.Received>
  readonly log: string
}

const runScenario = (spec: D.Spec) =>
  Effect.gen(function*() {
    const server = yield* SseServer.make
    server.queue(...[1, 2, 3].map((n) => ({ file: `${spec.dialect}/scenario-${n}.sse` })))
    const emptyHome = yield* TempDir.make()
    const resolved = yield* Registry.resolve({
      home: join(emptyHome, "none"),
      env: envFor(spec.dialect, server.url),
      provider: spec.dialect,
      model: spec.model
    }).pipe(Effect.provide(TempDir.platform))
    return yield* withSkein({ provider: resolved.provider, model: resolved.model }, ({ runtime, cwd, readLog }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        const recorder = yield* record(session)
        const outcome = yield* session.prompt(text("What does notes.txt say?"))
        yield* recorder.until((e) => e.type === "turn_end")
        return {
          dialect: spec.dialect,
          events: recorder.seen,
          stopReason: outcome.stopReason,
          requests: server.requests,
          log: (yield* readLog(session.id)).text
        } satisfies Outcome
      }))
  })

describe("the same agent scenario on every dialect", () => {
  it.live("read, read again, answer: identical events, history and outcome", () =>
    Effect.gen(function*() {
      const outcomes: Array<Outcome> = []
      for (const spec of D.specs) outcomes.push(yield* runScenario(spec))

      const [first, ...rest] = outcomes
      const expectedTypes = [
        "turn_start",
        "model_response",
        "tool_call",
        "tool_running",
        "tool_result",
        "model_response",
        "tool_call",
        "tool_running",
        "tool_result",
        "text_delta",
        "model_response",
        "turn_end"
      ]
      // A subscriber that reads after the deltas arrived gets adjacent ones merged (the Bus
      // coalesces them): compare the sequence with runs of deltas counted once.
      const collapsed = (names: ReadonlyArray<string>) => names.filter((name, i) => !(name.endsWith("_delta") && names[i - 1] === name))
      for (const o of outcomes) {
        assert.deepStrictEqual(collapsed(types(o.events)), expectedTypes, o.dialect)
        assert.strictEqual(o.stopReason, "end_turn", o.dialect)
        assert.strictEqual(o.requests.length, 3, o.dialect)
      }
      // The same facts, whatever the dialect (tool ids aside).
      const facts = (o: Outcome) =>
        o.events.flatMap((e) =>
          e.type === "tool_result"
            ? [["tool_result", e.data.ok, e.data.content]]
            : e.type === "tool_call"
            ? [["tool_call", e.data.name, e.data.args]]
            : e.type === "text_delta"
            ? [["text", e.data.text]]
            : e.type === "model_response"
            ? [["model_response", e.data.stop, e.data.usage]]
            : []
        )
      for (const o of rest) assert.deepStrictEqual(facts(o), facts(first!), o.dialect)
      const results = first!.events.filter((e) => e.type === "tool_result")
      assert.include(JSON.stringify(results[0]!.data), "Hello notes")

      for (const o of outcomes) {
        // Every call carries the tool results so far, in the dialect's shape.
        const third = JSON.stringify(o.requests[2]!.body)
        assert.include(third, "Hello notes", o.dialect)
        // No key in the log, and the system prompt is the same on every call (a cacheable prefix).
        assert.notInclude(o.log, D.SECRET)
        const system = o.requests.map((r) =>
          JSON.stringify(o.dialect === "openai-chat" ? r.body.messages[0] : o.dialect === "openai-responses" ? r.body.instructions : r.body.system)
        )
        assert.strictEqual(new Set(system).size, 1, o.dialect)
      }
    }).pipe(Effect.provide(Logger.layer([]))))

  it.live("a provider failure ends the turn as message text, with no key in it or in the log", () =>
    Effect.gen(function*() {
      const server = yield* SseServer.make
      server.queue({ status: 401, body: JSON.stringify({ error: { message: `Incorrect API key provided: ${D.SECRET}` } }) })
      const resolved = yield* Registry.resolve({
        home: "/nonexistent-skein-home",
        env: envFor("openai-chat", server.url),
        provider: "openai-chat",
        model: "llama3"
      }).pipe(Effect.provide(TempDir.platform))
      yield* withSkein({ provider: resolved.provider, model: resolved.model }, ({ runtime, cwd, readLog }) =>
        Effect.gen(function*() {
          const session = yield* runtime.newSession({ cwd })
          const outcome = yield* session.prompt(text("hi"))
          assert.strictEqual(outcome.stopReason, "end_turn")
          assert.include(outcome.error, "Authentication failed for provider openai-chat (HTTP 401): check OPENAI_API_KEY")
          assert.notInclude(outcome.error, D.SECRET)
          assert.notInclude((yield* readLog(session.id)).text, D.SECRET)
        }))
    }).pipe(Effect.provide(Logger.layer([]))))

  it.live("session/cancel mid-stream aborts the HTTP request at once; the turn ends cancelled with what was streamed", () =>
    Effect.gen(function*() {
      const server = yield* SseServer.make
      server.queue({ file: "anthropic-messages/partial.sse", hang: true })
      const resolved = yield* Registry.resolve({
        home: "/nonexistent-skein-home",
        env: envFor("anthropic-messages", server.url),
        provider: "anthropic-messages"
      }).pipe(Effect.provide(TempDir.platform))
      yield* withSkein({ provider: resolved.provider, model: resolved.model }, ({ runtime, cwd, readLog }) =>
        Effect.gen(function*() {
          const session = yield* runtime.newSession({ cwd })
          const recorder = yield* record(session)
          const ticket = yield* submit(session, text("hi"))
          yield* recorder.until((e) => e.type === "text_delta" && e.data.text === "lo")
          yield* session.cancel
          assert.strictEqual(yield* server.abandoned.pipe(Effect.timeout("2 seconds")), "/v1/messages")
          const outcome = yield* Deferred.await(ticket.outcome)
          assert.strictEqual(outcome.stopReason, "cancelled")
          const response = (yield* readLog(session.id)).events.find((e) => e.type === "model_response")!
          assert.deepStrictEqual(response.data, { call: 1, parts: [{ type: "text", text: "Hello" }], stop: "cancelled" })
        }))
    }).pipe(Effect.provide(Logger.layer([]))))
})
