/**
 * Compaction: when a conversation fills the model's context window, its older part is
 * summarised by the model and the model sees the summary in its place from then on.
 *
 * Nothing is rewritten: the summary call is logged like any other model call (marked with
 * the compaction's id, so a re-run answers it from the log), then a `compaction` event says
 * which events it replaced and from which one the conversation is kept verbatim. Folding that
 * event (`History.apply`) is what changes the model's view; a compaction that fails logs no
 * `compaction` event, so the session is left exactly as it was.
 *
 * What is kept: the most recent messages that fit a share of the window, cut only where a
 * message starts that is not a tool result (a tool call is never separated from its result),
 * preferably where a user message starts. The plan and the skills the model loaded are
 * restated after the summary (`History.summaryMessage`); permission rules are not part of the
 * conversation and are untouched.
 */
import { createHash } from "node:crypto"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { History } from "../log/History.ts"
import type { LogError } from "../log/LogError.ts"
import type { Message, ModelStop } from "../Vocabulary.ts"
import { promptText } from "../Vocabulary.ts"
import type { Emit, TurnContext } from "../session/TurnContract.ts"
import * as Spans from "../telemetry/Spans.ts"

type Trigger = "manual" | "threshold" | "overflow"

/** The version of the summary prompt below; its hash is logged with every compaction. */
const PROMPT_VERSION = 1

/** Tells the model what the summary is for: another model takes the work over from it. */
export const SYSTEM = `You write the hand-over note of a coding session (summary prompt v${PROMPT_VERSION}).

A coding assistant has been working with a user in their repository. The conversation has grown too long for the model's context window, so its older part is about to be replaced by your note. Another model will continue the work from your note and from the most recent messages, which it will still see verbatim. It will not see anything you leave out.

Write the note in Markdown, in this order, and be specific (paths, names, commands, numbers):

1. **Request** — what the user asked for, in their own words where they were precise; later changes to the request.
2. **Decisions** — what was decided and why, including approaches tried and abandoned, and constraints the user set.
3. **Files** — each file read, created or changed, and what was done to it or learned from it.
4. **State** — what works now, what was verified (tests, commands and their results) and what failed.
5. **Left to do** — the remaining steps, open questions and anything promised to the user.

Do not invent anything. Do not address the user. Leave out pleasantries and tool output that no longer matters.`

/** The request that ends the conversation sent for summary. */
export const instruction = (focus: string | undefined): string =>
  focus === undefined || focus.trim().length === 0
    ? "Write the hand-over note for the conversation above now, following your instructions."
    : `Write the hand-over note for the conversation above now, following your instructions. The user asks that it focus on: ${focus.trim()}`

let promptHashValue: string | undefined

/**
 * The sha256 of the prompt's text (its version), logged in each `compaction` event. Taken at the
 * first compaction, not when this module loads: the session's code loads it, and node:crypto
 * has no business at start-up.
 */
export const promptHash = (): string =>
  promptHashValue ??= createHash("sha256").update(SYSTEM).update("\n").update(instruction(undefined)).digest("hex")

/** The threshold: a model call is preceded by a compaction once the last one used this share of the window. */
export const DEFAULT_THRESHOLD = 0.8
/** The share of the window the kept (verbatim) part of the conversation may take. */
const KEEP_SHARE = 0.3
/** Longest tool result sent whole for summary (characters); a longer one is cut in the middle. */
const SUMMARY_TOOL_CHARS = 4_000

/** An estimate of a message's tokens: about four characters each. */
const tokensOf = (message: Message): number => {
  switch (message.role) {
    case "user":
      return Math.ceil(promptText(message.content).length / 4) + 4
    case "assistant":
      return Math.ceil(message.parts.reduce((n, p) => n + (p.type === "tool_call" ? JSON.stringify(p.args ?? null).length + p.name.length : p.text.length), 0) / 4) + 4
    case "tool":
      return Math.ceil(message.content.length / 4) + 4
    default:
      return message satisfies never
  }
}

/** The estimated input tokens of a model call with these messages and system prompt. */
export const estimate = (messages: ReadonlyArray<Message>, system = ""): number =>
  messages.reduce((n, m) => n + tokensOf(m), Math.ceil(system.length / 4))

interface Cut {
  /** The first message kept verbatim (messages before it are summarised). */
  readonly index: number
  readonly fromSeq: number
  readonly toSeq: number
  readonly keepFromSeq: number
}

/**
 * Where to cut the conversation: the earliest message, not a tool result, from which the rest
 * fits in `keepTokens`, preferring the start of a user message. Undefined when nothing can be
 * summarised (the conversation is a single exchange that cannot be split).
 */
const cut = (history: History, keepTokens: number): Cut | undefined => {
  const { messages, seqs } = history
  if (messages.length < 2) return undefined
  let tail = 0
  let fits: number | undefined
  let userFits: number | undefined
  let lastBoundary: number | undefined
  for (let i = messages.length - 1; i >= 1; i--) {
    tail += tokensOf(messages[i]!)
    if (messages[i]!.role === "tool") continue
    lastBoundary ??= i
    if (tail > keepTokens) continue
    fits = i
    if (messages[i]!.role === "user") userFits = i
  }
  // The kept part never takes less than the last exchange, even when that alone is over budget.
  const index = userFits ?? fits ?? lastBoundary
  if (index === undefined) return undefined
  return { index, fromSeq: seqs[0]!, toSeq: seqs[index]! - 1, keepFromSeq: seqs[index]! }
}

/** The share of the window the conversation sent for summary may take (the rest: the prompt and the summary). */
const SUMMARY_INPUT_SHARE = 0.6
/** Without a known window, the most the conversation sent for summary may take (tokens). */
const DEFAULT_SUMMARY_INPUT_TOKENS = 100_000

/**
 * The conversation sent for summary: long tool results are cut (the summary needs their gist),
 * and when even that does not fit the model's window, its oldest messages are left out (the
 * part sent starts where a message that is not a tool result starts), with a note saying so.
 */
const forSummary = (messages: ReadonlyArray<Message>, focus: string | undefined, window: number | undefined): Array<Message> => {
  const cutTools = messages.map((m): Message => {
    if (m.role !== "tool" || m.content.length <= SUMMARY_TOOL_CHARS) return m
    const half = SUMMARY_TOOL_CHARS / 2
    return { ...m, content: `${m.content.slice(0, half)}\n[… ${m.content.length - SUMMARY_TOOL_CHARS} characters left out …]\n${m.content.slice(-half)}` }
  })
  const budget = (window === undefined ? DEFAULT_SUMMARY_INPUT_TOKENS : Math.floor(window * SUMMARY_INPUT_SHARE)) - Math.ceil(SYSTEM.length / 4)
  let start = cutTools.length
  let used = 0
  for (let i = cutTools.length - 1; i >= 0; i--) {
    used += tokensOf(cutTools[i]!)
    if (used > budget) break
    if (cutTools[i]!.role !== "tool") start = i
  }
  // Not even the last exchange fits: send it anyway (the provider says if it is too long).
  if (start === cutTools.length) start = Math.max(0, cutTools.findLastIndex((m) => m.role !== "tool"))
  const sent: Array<Message> = start === 0
    ? cutTools
    : [
      { role: "user", content: [{ type: "text", text: `[The ${start} earliest messages of the conversation are left out here: together they are too long to summarise at once.]` }] },
      ...cutTools.slice(start)
    ]
  return [...sent, { role: "user", content: [{ type: "text", text: instruction(focus) }] }]
}

interface Options {
  readonly trigger: Trigger
  /** The call number the summary call takes in its turn. */
  readonly call: number
  /** The model's context window (tokens), when known: it sizes the kept part. */
  readonly window: number | undefined
  readonly focus?: string | undefined
}

/** What a compaction came to: done, or why not (the session is as it was). */
export type Outcome = { readonly _tag: "Compacted"; readonly id: string } | { readonly _tag: "Failed"; readonly reason: string }

/** The kept part's budget without a known window: enough for a few exchanges. */
const DEFAULT_KEEP_TOKENS = 20_000

/** The summary call: streamed into the turn's state as it comes, then logged (marked `compaction: id`). */
const summaryCall = (ctx: TurnContext, summarised: ReadonlyArray<Message>, options: Options, id: string) =>
  Effect.gen(function*() {
    let text = ""
    let failure: string | undefined
    let stop = "end_turn" as ModelStop
    let usage: { readonly input: number; readonly output: number; readonly cached?: number } | undefined
    yield* ctx.provider.stream({
      sessionId: ctx.sessionId,
      turn: ctx.turn,
      call: options.call,
      system: SYSTEM,
      messages: forSummary(summarised, options.focus, options.window),
      tools: [],
      model: ctx.model,
      reasoningEffort: ctx.reasoningEffort,
      agent: ctx.agent,
      purpose: "compaction"
    }).pipe(Stream.runForEach((part) =>
      Effect.sync(() => {
        switch (part._tag) {
          case "TextDelta":
            text += part.text
            ctx.state.partial = [{ type: "text", text }]
            return
          case "Usage":
            usage = part.usage
            return
          case "Finish":
            stop = part.stop
            return
          case "Failure":
            failure = part.message
            stop = "error"
            return
          // A summary call offers no tools, and its reasoning is not part of the note.
          case "ThinkingDelta":
          case "ToolCall":
            return
          default:
            return part satisfies never
        }
      })
    ))
    if (failure === undefined && text.trim().length === 0) failure = "the model answered with an empty summary"
    if (failure === undefined && stop === "max_tokens") failure = "the summary was cut off by the model's output limit"
    yield* ctx.emit.canonical({
      type: "model_response",
      data: {
        call: options.call,
        parts: text.length > 0 ? [{ type: "text", text }] : [],
        stop: failure !== undefined && stop !== "error" ? "error" : stop,
        ...(usage !== undefined ? { usage } : {}),
        ...(failure !== undefined ? { error: failure } : {}),
        compaction: id
      }
    })
    return { text, failure, usage, stop }
  })

/**
 * Compacts the conversation of `ctx`'s session now: the summary call (streamed, logged with
 * the compaction's id), then the `compaction` event. Never fails; interruptible (the session's
 * supervisor logs an interrupted summary call as cancelled, and no compaction happened).
 * Fails only when the log cannot be written.
 */
export const run: (ctx: TurnContext, options: Options) => Effect.Effect<Outcome, LogError> = Effect.fn("skein.compaction")(
  function*(ctx: TurnContext, options: Options) {
    const history = ctx.history
    const id = `${ctx.turn}.${options.call}`
    const keepTokens = options.window === undefined ? DEFAULT_KEEP_TOKENS : Math.floor(options.window * KEEP_SHARE)
    const where = cut(history, keepTokens)
    if (where === undefined) return { _tag: "Failed", reason: "there is nothing to compact yet" } satisfies Outcome
    const emit: Emit = ctx.emit
    yield* emit.ephemeral({ type: "compacting", data: { id, trigger: options.trigger } })
    // Both estimated the same way, so that they compare (a provider's own count is not known for the "after").
    const before = estimate(history.messages, ctx.system)
    const summarised = history.messages.slice(0, where.index)
    ctx.state.partial = []
    ctx.state.call = options.call
    ctx.state.compaction = id
    // The summary call is a model call like the loop's (its span, its tokens), logged with the compaction's id.
    const { text, failure } = yield* summaryCall(ctx, summarised, options, id).pipe(
      Spans.modelCall({ dialect: ctx.provider.name, model: ctx.model, call: options.call })
    )
    ctx.state.partial = undefined
    ctx.state.compaction = undefined
    if (failure !== undefined) return { _tag: "Failed", reason: `the summary call failed: ${failure}` } satisfies Outcome
    const summary = text.trim()
    const after = estimate([{ role: "user", content: [{ type: "text", text: summary }] }, ...history.messages.slice(where.index)], ctx.system)
    yield* emit.canonical({
      type: "compaction",
      data: {
        id,
        trigger: options.trigger,
        fromSeq: where.fromSeq,
        toSeq: where.toSeq,
        keepFromSeq: where.keepFromSeq,
        promptHash: promptHash(),
        summaryForModel: summary,
        summaryForUser: summary,
        usageBefore: before,
        usageAfter: after,
        ...(options.focus !== undefined && options.focus.trim().length > 0 ? { focus: options.focus.trim() } : {}),
        ...(options.window !== undefined ? { window: options.window } : {})
      }
    })
    return { _tag: "Compacted", id } satisfies Outcome
  },
  (compacting, _ctx, options) => Spans.compaction(compacting, options.trigger)
)
