/**
 * The scripted provider: answers model calls from a JSON script, for tests,
 * demos and benchmarks. Turn N of a session consumes `turns[N-1]`; model call
 * M of that turn consumes `calls[M-1]`. A child session (a subagent) running as
 * agent A plays `agents[A].turns` the same way when the script has them, and
 * the top-level `turns` otherwise.
 *
 * `contextWindow` gives its model a context window (tokens), so compaction can be driven.
 * A compaction's call (`purpose: "compaction"`) plays the next element of `compaction`, or
 * a fixed summary when the list is used up or absent; it does not count among its turn's
 * calls, so `calls[M-1]` stays the M-th call of the conversation itself.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { promptText } from "../Vocabulary.ts"
import type { ModelRequest, Provider, StreamPart } from "./Provider.ts"

const Part = Schema.Union([
  Schema.Struct({ text: Schema.String, repeat: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))) }),
  Schema.Struct({ think: Schema.String }),
  Schema.Struct({ tool: Schema.String, args: Schema.optionalKey(Schema.Unknown), id: Schema.optionalKey(Schema.String) }),
  Schema.Struct({
    usage: Schema.Struct({ input: Schema.Number, output: Schema.Number, cached: Schema.optionalKey(Schema.Number) })
  }),
  Schema.Struct({ sleep_ms: Schema.Number.check(Schema.isGreaterThanOrEqualTo(0)) }),
  Schema.Struct({ fail: Schema.String, retryable: Schema.optionalKey(Schema.Boolean), overflow: Schema.optionalKey(Schema.Boolean) }),
  Schema.Struct({ stop: Schema.Literals(["max_tokens", "refusal", "end_turn"]) })
])
export type Part = typeof Part.Type

const Turns = Schema.Array(Schema.Struct({
  expect: Schema.optionalKey(Schema.String),
  /** A regex no message of the turn's first call may match (what the model must no longer see). */
  absent: Schema.optionalKey(Schema.String),
  calls: Schema.Array(Schema.Array(Part))
}))

export const Script = Schema.Struct({
  turns: Turns,
  /** The turns a child session of each agent plays (by agent name). */
  agents: Schema.optionalKey(Schema.Record(Schema.String, Schema.Struct({ turns: Turns }))),
  /** The model's context window, in tokens. */
  contextWindow: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))),
  /** What compaction calls answer, in order (each a list of parts). */
  compaction: Schema.optionalKey(Schema.Array(Schema.Array(Part)))
})
export type Script = typeof Script.Type

export class ScriptError extends Schema.TaggedError<ScriptError>()("ScriptError", {
  message: Schema.String
}) {}

/** Parses a script from its JSON text; the message names what is wrong, not the text. */
export const parse = (text: string, source = "script"): Effect.Effect<Script, ScriptError> =>
  Effect.try({
    try: () => JSON.parse(text) as unknown,
    catch: () => new ScriptError({ message: `${source} is not valid JSON` })
  }).pipe(
    Effect.flatMap((json) => Schema.decodeUnknownEffect(Script)(json)),
    Effect.mapError((error) =>
      error._tag === "ScriptError" ? error : new ScriptError({ message: `${source} is not a valid script: ${error.message}` })
    ),
    Effect.flatMap((script) => validateExpects(script, source))
  )

const validateExpects = (script: Script, source: string) =>
  Effect.forEach(
    [["", script.turns] as const, ...Object.entries(script.agents ?? {}).map(([name, agent]) => [`agent ${name}: `, agent.turns] as const)],
    ([where, turns]) =>
      Effect.forEach(turns, (turn, i) =>
        Effect.forEach([["expect", turn.expect], ["absent", turn.absent]] as const, ([field, pattern]) =>
          pattern === undefined
            ? Effect.void
            : Effect.try({
              try: () => new RegExp(pattern),
              catch: () => new ScriptError({ message: `${source}: ${where}turn ${i + 1} has an invalid "${field}" regex` })
            }), { discard: true }), { discard: true }),
    { discard: true }
  ).pipe(Effect.as(script))

function* expand(parts: ReadonlyArray<Part>, turn: number, call: number): Generator<StreamPart | { readonly sleep: number }> {
  let toolIndex = 0
  let sawTool = false
  for (const part of parts) {
    if ("text" in part) {
      const n = part.repeat ?? 1
      for (let i = 0; i < n; i++) yield { _tag: "TextDelta", text: part.text }
    } else if ("think" in part) {
      yield { _tag: "ThinkingDelta", text: part.think }
    } else if ("tool" in part) {
      sawTool = true
      toolIndex++
      yield { _tag: "ToolCall", id: part.id ?? `call_${turn}_${call}_${toolIndex}`, name: part.tool, args: part.args ?? {} }
    } else if ("usage" in part) {
      yield { _tag: "Usage", usage: part.usage }
    } else if ("sleep_ms" in part) {
      yield { sleep: part.sleep_ms }
    } else if ("fail" in part) {
      yield { _tag: "Failure", message: part.fail, retryable: part.retryable ?? false, ...(part.overflow === true ? { overflow: true } : {}) }
      return
    } else {
      yield { _tag: "Finish", stop: part.stop }
      return
    }
  }
  yield { _tag: "Finish", stop: sawTool ? "tool_use" : "end_turn" }
}

const lastPrompt = (request: ModelRequest): string => {
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const message = request.messages[i]!
    if (message.role === "user") return promptText(message.content)
  }
  return ""
}

/** Every message the model is sent, as text (tool calls as their arguments). */
const conversationText = (request: ModelRequest): string =>
  request.messages.map((message) => {
    switch (message.role) {
      case "user":
        return promptText(message.content)
      case "assistant":
        return message.parts.map((part) => (part.type === "tool_call" ? JSON.stringify(part.args) : "text" in part ? part.text : "")).join("\n")
      case "tool":
        return message.content
    }
  }).join("\n")

/** Runs of parts become chunked streams; sleeps between them are interruptible pauses. */
const segments = (items: Iterable<StreamPart | { readonly sleep: number }>): Stream.Stream<StreamPart> => {
  const streams: Array<Stream.Stream<StreamPart>> = []
  let run: Array<StreamPart> = []
  for (const item of items) {
    if ("sleep" in item) {
      if (run.length > 0) streams.push(Stream.fromArray(run))
      run = []
      streams.push(Stream.drain(Stream.fromEffect(Effect.sleep(item.sleep))))
    } else {
      run.push(item)
    }
  }
  if (run.length > 0) streams.push(Stream.fromArray(run))
  return streams.reduce((acc, s) => Stream.concat(acc, s), Stream.empty as Stream.Stream<StreamPart>)
}

const fail = (message: string): Stream.Stream<StreamPart> => Stream.succeed({ _tag: "Failure", message, retryable: false })

/** What a compaction call answers when the script has no (more) `compaction` entries. */
export const FIXED_SUMMARY = "The user and the assistant worked on the task so far; nothing is left open."

export const make = (script: Script): Provider => {
  // Compaction calls played so far, in all, and in each session's turn (they shift its calls).
  let compactions = 0
  const shifts = new Map<string, number>()
  return {
  name: "scripted",
  ...(script.contextWindow !== undefined ? { contextWindow: script.contextWindow } : {}),
  stream: (request) =>
    Stream.suspend(() => {
      const key = `${request.sessionId}:${request.turn}`
      if (request.purpose === "compaction") {
        shifts.set(key, (shifts.get(key) ?? 0) + 1)
        const parts = script.compaction?.[compactions++]
        return parts === undefined ? Stream.fromArray<StreamPart>([{ _tag: "TextDelta", text: FIXED_SUMMARY }, { _tag: "Finish", stop: "end_turn" }]) : segments(expand(parts, request.turn, request.call))
      }
      const own = request.agent !== undefined ? script.agents?.[request.agent] : undefined
      const turns = own?.turns ?? script.turns
      const turn = turns[request.turn - 1]
      if (turn === undefined) {
        return fail(`The script has no turn ${request.turn}${own !== undefined ? ` for agent ${request.agent}` : ""} (it has ${turns.length})`)
      }
      const index = request.call - (shifts.get(key) ?? 0)
      if (index === 1 && turn.expect !== undefined && !new RegExp(turn.expect).test(lastPrompt(request))) {
        return fail(`Turn ${request.turn} of the script expects a prompt matching /${turn.expect}/`)
      }
      if (index === 1 && turn.absent !== undefined && new RegExp(turn.absent).test(conversationText(request))) {
        return fail(`Turn ${request.turn} of the script expects no message matching /${turn.absent}/`)
      }
      const parts = turn.calls[index - 1]
      if (parts === undefined) {
        return fail(`The script's turn ${request.turn} has no model call ${index} (it has ${turn.calls.length})`)
      }
      return segments(expand(parts, request.turn, index))
    })
  }
}
