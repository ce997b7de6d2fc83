/**
 * The scripted provider: parsing scripts (with clear messages) and the stream every part kind
 * produces, including interruptible sleeps under the TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import { TestClock } from "effect/testing"
import type { ModelRequest, StreamPart } from "../../src/providers/Provider.ts"
import * as Scripted from "../../src/providers/Scripted.ts"

const request = (turn: number, call: number, prompt = "hello"): ModelRequest => ({
  sessionId: "s-1",
  turn,
  call,
  system: "system",
  messages: [
    { role: "user", content: [{ type: "text", text: "an older prompt" }] },
    { role: "assistant", parts: [{ type: "text", text: "ok" }] },
    { role: "user", content: [{ type: "text", text: prompt }] }
  ],
  tools: []
})

const parse = (value: unknown) => Scripted.parse(JSON.stringify(value))

/** Every part of call `call` of turn `turn`. */
const collect = (script: Scripted.Script, turn = 1, call = 1, prompt?: string) =>
  Stream.runCollect(Scripted.make(script).stream(request(turn, call, prompt)))

const oneCall = (...parts: ReadonlyArray<Scripted.Part>): Scripted.Script => ({ turns: [{ calls: [parts] }] })

const finish = (stop: "end_turn" | "tool_use" | "max_tokens" | "refusal"): StreamPart => ({ _tag: "Finish", stop })

describe("Scripted.parse", () => {
  it.effect("accepts the documented example", () =>
    Effect.gen(function*() {
      const script = yield* parse({
        turns: [{
          expect: "notes",
          calls: [
            [{ text: "Reading it." }, { tool: "read", args: { path: "notes.txt" } }],
            [{ think: "short" }, { text: "Done." }, { usage: { input: 1200, output: 40 } }]
          ]
        }, { calls: [[{ sleep_ms: 5 }, { fail: "boom", retryable: true }], [{ stop: "max_tokens" }]] }]
      })
      assert.strictEqual(script.turns.length, 2)
      assert.strictEqual(script.turns[0]!.expect, "notes")
      assert.deepStrictEqual(script.turns[0]!.calls[0], [{ text: "Reading it." }, { tool: "read", args: { path: "notes.txt" } }])
      assert.deepStrictEqual(script.turns[1]!.calls[1], [{ stop: "max_tokens" }])
    }))

  it.effect("invalid JSON → a ScriptError naming the source", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Scripted.parse("{turns: [", "demo.json"))
      assert.strictEqual(error._tag, "ScriptError")
      assert.strictEqual(error.message, "demo.json is not valid JSON")
    }))

  it.effect("an invalid shape → 'is not a valid script' with where it is wrong", () =>
    Effect.gen(function*() {
      const missing = yield* Effect.flip(Scripted.parse(JSON.stringify({ calls: [] }), "s.json"))
      assert.match(missing.message, /^s\.json is not a valid script: /)
      assert.match(missing.message, /turns/)

      const badPart = yield* Effect.flip(parse({ turns: [{ calls: [[{ thinking: "typo" }]] }] }))
      assert.match(badPart.message, /^script is not a valid script: /)
      assert.include(badPart.message, `["turns"][0]["calls"][0][0]`)

      const badRepeat = yield* Effect.flip(parse({ turns: [{ calls: [[{ text: "x", repeat: 0 }]] }] }))
      assert.match(badRepeat.message, /is not a valid script/)
      assert.include(badRepeat.message, `["repeat"]`)

      const badSleep = yield* Effect.flip(parse({ turns: [{ calls: [[{ sleep_ms: -1 }]] }] }))
      assert.match(badSleep.message, /is not a valid script/)

      const badStop = yield* Effect.flip(parse({ turns: [{ calls: [[{ stop: "tool_use" }]] }] }))
      assert.match(badStop.message, /is not a valid script/)
    }))

  it.effect("a bad expect regex → names the turn, not the regex", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(parse({ turns: [{ calls: [] }, { expect: "(unclosed", calls: [] }] }))
      assert.strictEqual(error.message, "script: turn 2 has an invalid \"expect\" regex")
    }))
})

describe("Scripted stream", () => {
  it.effect("text with repeat → that many deltas, then end_turn", () =>
    Effect.gen(function*() {
      const parts = yield* collect(oneCall({ text: "ab", repeat: 3 }, { text: "c" }))
      assert.deepStrictEqual(parts, [
        { _tag: "TextDelta", text: "ab" },
        { _tag: "TextDelta", text: "ab" },
        { _tag: "TextDelta", text: "ab" },
        { _tag: "TextDelta", text: "c" },
        finish("end_turn")
      ])
    }))

  it.effect("think → one reasoning delta", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* collect(oneCall({ think: "pondering" })), [
        { _tag: "ThinkingDelta", text: "pondering" },
        finish("end_turn")
      ])
    }))

  it.effect("tool → a call with a default id per turn/call/index or the explicit id, args default {}; Finish is tool_use", () =>
    Effect.gen(function*() {
      const script: Scripted.Script = {
        turns: [
          { calls: [[{ text: "t" }]] },
          {
            calls: [
              [{ text: "no tools" }],
              [{ tool: "read", args: { path: "a" } }, { tool: "glob", id: "mine" }, { tool: "read", args: { path: "b" } }]
            ]
          }
        ]
      }
      assert.deepStrictEqual(yield* collect(script, 2, 2), [
        { _tag: "ToolCall", id: "call_2_2_1", name: "read", args: { path: "a" } },
        { _tag: "ToolCall", id: "mine", name: "glob", args: {} },
        { _tag: "ToolCall", id: "call_2_2_3", name: "read", args: { path: "b" } },
        finish("tool_use")
      ])
      assert.deepStrictEqual(yield* collect(script, 2, 1), [{ _tag: "TextDelta", text: "no tools" }, finish("end_turn")])
    }))

  it.effect("usage → a Usage part in place", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* collect(oneCall({ text: "x" }, { usage: { input: 10, output: 2, cached: 4 } })), [
        { _tag: "TextDelta", text: "x" },
        { _tag: "Usage", usage: { input: 10, output: 2, cached: 4 } },
        finish("end_turn")
      ])
    }))

  it.effect("stop → that Finish, and nothing after it", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* collect(oneCall({ text: "x" }, { stop: "max_tokens" }, { text: "never" })), [
        { _tag: "TextDelta", text: "x" },
        finish("max_tokens")
      ])
      assert.deepStrictEqual(yield* collect(oneCall({ stop: "refusal" })), [finish("refusal")])
    }))

  it.effect("fail → ends the stream with a Failure (no Finish, nothing after)", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* collect(oneCall({ text: "x" }, { fail: "rate limited", retryable: true }, { text: "never" })), [
        { _tag: "TextDelta", text: "x" },
        { _tag: "Failure", message: "rate limited", retryable: true }
      ])
      assert.deepStrictEqual(yield* collect(oneCall({ fail: "nope" })), [{ _tag: "Failure", message: "nope", retryable: false }])
    }))

  it.effect("sleep_ms pauses on the clock between parts", () =>
    Effect.gen(function*() {
      const seen: Array<StreamPart> = []
      const fiber = yield* Stream.runForEach(
        Scripted.make(oneCall({ text: "before" }, { sleep_ms: 1000 }, { text: "after" })).stream(request(1, 1)),
        (part) => Effect.sync(() => void seen.push(part))
      ).pipe(Effect.forkChild)
      yield* TestClock.adjust(999)
      assert.deepStrictEqual(seen, [{ _tag: "TextDelta", text: "before" }])
      assert.isUndefined(fiber.pollUnsafe())
      yield* TestClock.adjust(1)
      yield* Fiber.join(fiber)
      assert.deepStrictEqual(seen, [{ _tag: "TextDelta", text: "before" }, { _tag: "TextDelta", text: "after" }, finish("end_turn")])
    }))

  it.effect("a sleep is interruptible", () =>
    Effect.gen(function*() {
      const seen: Array<StreamPart> = []
      const fiber = yield* Stream.runForEach(
        Scripted.make(oneCall({ text: "before" }, { sleep_ms: 60_000 }, { text: "after" })).stream(request(1, 1)),
        (part) => Effect.sync(() => void seen.push(part))
      ).pipe(Effect.forkChild)
      yield* TestClock.adjust(10)
      const exit = yield* Fiber.interrupt(fiber).pipe(Effect.andThen(Fiber.await(fiber)))
      assert.isTrue(Exit.hasInterrupts(exit))
      assert.deepStrictEqual(seen, [{ _tag: "TextDelta", text: "before" }])
    }))

  it.effect("each model call consumes the next element of calls", () =>
    Effect.gen(function*() {
      const script: Scripted.Script = { turns: [{ calls: [[{ text: "one" }], [{ text: "two" }]] }] }
      assert.deepStrictEqual(yield* collect(script, 1, 1), [{ _tag: "TextDelta", text: "one" }, finish("end_turn")])
      assert.deepStrictEqual(yield* collect(script, 1, 2), [{ _tag: "TextDelta", text: "two" }, finish("end_turn")])
    }))

  it.effect("out of turns → a Failure naming the turn and the count", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* collect(oneCall({ text: "x" }), 2, 1), [
        { _tag: "Failure", message: "The script has no turn 2 (it has 1)", retryable: false }
      ])
    }))

  it.effect("out of calls → a Failure naming the call and the count", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* collect(oneCall({ tool: "read" }), 1, 2), [
        { _tag: "Failure", message: "The script's turn 1 has no model call 2 (it has 1)", retryable: false }
      ])
    }))

  it.effect("expect is checked against the last user prompt on the first call", () =>
    Effect.gen(function*() {
      const script: Scripted.Script = { turns: [{ expect: "^summari[sz]e", calls: [[{ text: "ok" }], [{ text: "second" }]] }] }
      assert.deepStrictEqual(yield* collect(script, 1, 1, "summarise notes"), [{ _tag: "TextDelta", text: "ok" }, finish("end_turn")])
      assert.deepStrictEqual(yield* collect(script, 1, 1, "an older prompt"), [
        { _tag: "Failure", message: "Turn 1 of the script expects a prompt matching /^summari[sz]e/", retryable: false }
      ])
      // Later calls of the turn are not re-checked.
      assert.deepStrictEqual(yield* collect(script, 1, 2, "whatever"), [{ _tag: "TextDelta", text: "second" }, finish("end_turn")])
    }))
})
