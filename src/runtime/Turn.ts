/**
 * The turn loop: model call → tool calls → model call … until the model stops
 * calling tools, fails, or the iteration cap is reached.
 *
 * Its edges are parameters (the provider, the tools, the event sink), so tests
 * drive it with a scripted provider instead of mocking a network. It never
 * fails for model or tool problems: those are outcomes. It is interruptible
 * everywhere; the session's supervisor finalizes whatever it leaves open.
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { CanonicalBody, EphemeralBody } from "../log/Event.ts"
import type {
  AssistantPart,
  Location,
  ModelStop,
  PermissionOption,
  PermissionToolCall,
  StopReason,
  ToolKind,
  Usage,
  UserBlock
} from "../Vocabulary.ts"
import { appendPart, type History } from "../log/History.ts"
import type { LogError } from "../log/LogError.ts"
import type { Provider, StreamPart } from "../providers/Provider.ts"
import * as Tool from "../tools/Tool.ts"
import type { Gated, PermissionAnswer, Prior } from "./Gate.ts"
import type { Children } from "./Children.ts"
import type { Toolkit } from "../tools/Toolkit.ts"
import * as Spans from "../telemetry/Spans.ts"
import * as Checkpoint from "./Checkpoint.ts"
import * as Compaction from "./Compaction.ts"

export interface TurnOutcome {
  readonly stopReason: StopReason
  /** The text shown to the user when the turn failed. */
  readonly error?: string | undefined
}

/** What the loop shares with its supervisor, so an interrupted call can be finalized honestly. */
export interface TurnState {
  /** Parts of the model call in progress, streamed but not yet logged. */
  partial: Array<AssistantPart> | undefined
  call: number
  /** The id of the compaction whose summary call is in progress (its `partial` is that summary). */
  compaction?: string | undefined
  /** Arguments of the tool calls of the current call, by id (for finalizing unstarted ones). */
  readonly requested: Map<string, unknown>
}

export interface Emit {
  /** Logs then publishes a canonical event of this turn. */
  readonly canonical: (body: CanonicalBody) => Effect.Effect<void, LogError>
  /** Publishes an ephemeral event of this turn. */
  readonly ephemeral: (body: EphemeralBody) => Effect.Effect<void>
}

export interface TurnContext {
  readonly sessionId: string
  readonly turn: number
  /** The prompt this turn answers (already in `history`). */
  readonly content: ReadonlyArray<UserBlock>
  readonly cwd: string
  readonly roots: ReadonlyArray<string>
  readonly system: string
  readonly model?: string | undefined
  /** The session's reasoning effort (`thought_level`), if it chose one. */
  readonly reasoningEffort?: string | undefined
  readonly provider: Provider
  readonly toolkit: Toolkit
  readonly history: History
  readonly maxTurnRequests: number
  readonly emit: Emit
  readonly state: TurnState
  /** The client's file and terminal access, when it offers them. */
  readonly client?: Tool.ClientAccess | undefined
  /** The permission gate: may this announced call run? A denial's reason goes to the model. */
  readonly permit: (call: AnnouncedCall, tool: Gated, args: unknown, prior?: Prior) => Effect.Effect<Permit, never, Tool.ToolEnv>
  /**
   * Asks whoever presents the turn a permission question as it is (for a turn run elsewhere:
   * an external agent's own questions). `undefined` when nobody can answer; never fails.
   */
  readonly ask: (question: { readonly toolCall: PermissionToolCall; readonly options: ReadonlyArray<PermissionOption> }) => Effect.Effect<PermissionAnswer | undefined>
  /** The agent a child session runs as (the provider is told). */
  readonly agent?: string | undefined
  /** The session's children, when it may start some (the agent tools use them). */
  readonly agents?: Children | undefined
  /** The session's skills, when it has some (the `skill` tool loads one). */
  readonly skills?: Tool.SkillAccess | undefined
  /** Folders tools that only read may read without asking, besides the roots (the skills' folders). */
  readonly readRoots?: ReadonlyArray<string> | undefined
  /** The session's sandbox, which its commands start through. */
  readonly sandbox?: Tool.ToolContext["sandbox"]
  /**
   * Messages for the user that arose outside the model (an MCP server failed),
   * each given out once; the loop logs them as `notice` events before each
   * model call, so they are shown inside a turn.
   */
  readonly notices?: (() => ReadonlyArray<{ readonly text: string; readonly source?: string }>) | undefined
  /** The model's context window (tokens), when known: compaction is measured against it. */
  readonly window?: number | undefined
  /** The share of the window at which the conversation is compacted before a model call (default 0.8). */
  readonly compactAt?: number | undefined
  /**
   * Content the user sent while the turn ran (steering), taken at each safe point: after the
   * tool calls of a model call, before the next call, and once more when the model stopped
   * (`final`: nothing taken then means the turn takes no more). Logged as `turn_input` there.
   */
  readonly steering?: ((final: boolean) => ReadonlyArray<ReadonlyArray<UserBlock>>) | undefined
}

export interface AnnouncedCall {
  readonly id: string
  readonly name: string
  readonly args: unknown
  readonly title: string
  readonly kind: ToolKind
  readonly locations?: ReadonlyArray<Location> | undefined
}

/** `readOnly`: the gate allowed it without asking because it only reads; the tool runs it confined. */
export type Permit =
  | { readonly _tag: "allow"; readonly readOnly?: true | undefined }
  | { readonly _tag: "deny"; readonly reason: string }

const stopReasonOf = (stop: ModelStop): StopReason =>
  stop === "max_tokens" ? "max_tokens" : stop === "refusal" ? "refusal" : "end_turn"

interface CallResult {
  readonly parts: ReadonlyArray<AssistantPart>
  readonly usage: Usage | undefined
  readonly stop: ModelStop
  readonly failure: string | undefined
  /** The failure was a context overflow. */
  readonly overflow: boolean
}

/** Streams one model call, publishing deltas as they arrive and logging checkpoints of its text. */
const modelCall = (ctx: TurnContext, call: number): Effect.Effect<CallResult> => {
  const parts: Array<AssistantPart> = []
  ctx.state.partial = parts
  ctx.state.call = call
  let usage: Usage | undefined
  let stop: ModelStop = "end_turn"
  let failure: string | undefined
  let overflow = false
  const withCheckpoint = (emitted: Effect.Effect<void>, due: Effect.Effect<void> | undefined) =>
    due === undefined ? emitted : Effect.andThen(emitted, due)
  const onPart = (checkpoints: Checkpoint.Checkpoints) => (part: StreamPart): Effect.Effect<void> => {
    switch (part._tag) {
      case "TextDelta":
        if (part.text.length === 0) return Effect.void
        appendPart(parts, "text", part.text)
        return withCheckpoint(ctx.emit.ephemeral({ type: "text_delta", data: { text: part.text } }), checkpoints.streamed("text", part.text))
      case "ThinkingDelta":
        appendPart(parts, "thinking", part.text, part.signature)
        return part.text.length === 0
          ? Effect.void
          : withCheckpoint(ctx.emit.ephemeral({ type: "thinking_delta", data: { text: part.text } }), checkpoints.streamed("thinking", part.text, part.signature))
      case "ToolCall":
        ctx.state.requested.set(part.id, part.args)
        parts.push({ type: "tool_call", id: part.id, name: part.name, args: part.args })
        checkpoints.toolCall()
        return Effect.void
      case "Usage":
        usage = part.usage
        return Effect.void
      case "Finish":
        stop = part.stop
        return Effect.void
      case "Failure":
        failure = part.message
        overflow = part.overflow === true
        stop = "error"
        return Effect.void
    }
  }
  return ctx.provider.stream({
    sessionId: ctx.sessionId,
    turn: ctx.turn,
    call,
    system: ctx.system,
    messages: ctx.history.messages.slice(),
    tools: ctx.toolkit.specs(),
    model: ctx.model,
    reasoningEffort: ctx.reasoningEffort,
    agent: ctx.agent
  }).pipe(
    (stream) => Effect.flatMap(Checkpoint.make(call, ctx.emit.canonical), (checkpoints) => Stream.runForEach(stream, onPart(checkpoints))),
    // Closing the scope stops the checkpoint timer before the model_response is logged.
    Effect.scoped,
    Effect.map(() => ({ parts, usage, stop, failure, overflow }))
  )
}

/** Runs one tool call: announce, execute, report. */
const runToolCall = (ctx: TurnContext, call: { readonly id: string; readonly name: string; readonly args: unknown }) =>
  Effect.suspend(() => {
    const known = ctx.toolkit.get(call.name) !== undefined
    return executeToolCall(ctx, call, known).pipe(Spans.toolCall({ id: call.id, name: call.name, known }))
  })

const executeToolCall = (ctx: TurnContext, call: { readonly id: string; readonly name: string; readonly args: unknown }, known: boolean) =>
  Effect.gen(function*() {
    const tool = ctx.toolkit.get(call.name)
    const decoded = tool === undefined ? undefined : yield* Effect.option(Tool.decodeArgs(tool, call.args))
    const args = decoded !== undefined && decoded._tag === "Some" ? decoded.value : undefined
    const announced: AnnouncedCall = {
      id: call.id,
      name: call.name,
      args: call.args,
      title: tool !== undefined && args !== undefined ? tool.title(args) : call.name,
      kind: tool?.kind ?? "other",
      ...(tool !== undefined && args !== undefined ? { locations: tool.locations(args, ctx.cwd) } : {})
    }
    yield* ctx.emit.canonical({ type: "tool_call", data: announced })
    // Bad arguments and unknown tools are reported without asking: nothing would run.
    const permit: Permit = tool !== undefined && args !== undefined ? yield* ctx.permit(announced, tool, args) : { _tag: "allow" }
    if (permit._tag === "deny") {
      yield* ctx.emit.canonical({ type: "tool_result", data: { id: call.id, title: announced.title, ok: false, content: permit.reason } })
      return yield* Spans.toolEnded(call.name, known, "denied")
    }
    yield* ctx.emit.ephemeral({ type: "tool_running", data: { id: call.id } })
    const output = tool === undefined
      ? Tool.error(`Unknown tool "${call.name}". Available tools: ${ctx.toolkit.tools.map((t) => t.name).join(", ")}`)
      : yield* Tool.run(tool, call.args, {
        sessionId: ctx.sessionId,
        toolCallId: call.id,
        cwd: ctx.cwd,
        roots: tool.mutating || ctx.readRoots === undefined || ctx.readRoots.length === 0 ? ctx.roots : [...ctx.roots, ...ctx.readRoots],
        readOnly: permit.readOnly === true,
        progress: (output) => ctx.emit.ephemeral({ type: "tool_progress", data: { id: call.id, output } }),
        plan: (entries) =>
          ctx.emit.canonical({ type: "plan", data: { entries } }).pipe(
            Effect.catchCause((cause) => Effect.logError("could not log a plan", cause))
          ),
        client: ctx.client,
        agents: ctx.agents,
        skills: ctx.skills,
        sandbox: ctx.sandbox
      })
    yield* ctx.emit.canonical({
      type: "tool_result",
      data: {
        id: call.id,
        title: announced.title,
        ok: output.ok,
        content: output.content,
        ...(output.details !== undefined ? { details: output.details } : {})
      }
    })
    yield* Spans.toolEnded(call.name, known, output.ok ? "ok" : "error")
  })

/** Whether the conversation is compacted before call `call`: the provider says (a replay), or the threshold. */
const compactionDue = (ctx: TurnContext, call: number): boolean => {
  const decided = ctx.provider.compactionDue?.({ sessionId: ctx.sessionId, turn: ctx.turn, call })
  if (decided !== undefined) return decided
  const used = ctx.history.lastUsed
  return ctx.window !== undefined && used !== undefined && used >= (ctx.compactAt ?? Compaction.DEFAULT_THRESHOLD) * ctx.window
}

/** Logs a compaction that failed as a notice: the user is told why, and the session goes on as it was. */
const failedCompaction = (ctx: TurnContext, outcome: Compaction.Outcome) =>
  outcome._tag === "Failed"
    ? ctx.emit.canonical({ type: "notice", data: { text: `Could not compact the conversation: ${outcome.reason}.`, source: "compaction" } })
    : Effect.void

/**
 * Logs the steering content that arrived since the last safe point (after call `call`), where
 * the model first sees it; a replay feeds what the log had there. Whether there was any.
 */
const steer = (ctx: TurnContext, call: number, final: boolean) =>
  Effect.gen(function*() {
    const contents = ctx.provider.injected !== undefined ? ctx.provider.injected({ sessionId: ctx.sessionId, turn: ctx.turn, call }) : ctx.steering?.(final) ?? []
    for (const content of contents) yield* ctx.emit.canonical({ type: "turn_input", data: { content } })
    return contents.length > 0
  })

/** Runs the loop of one turn whose `turn_start` was already logged. */
export const run = (ctx: TurnContext) =>
  Effect.gen(function*() {
    // Model calls are numbered in the turn, compaction calls included.
    let calls = 0
    let overflowed = false
    for (let n = 1; n <= ctx.maxTurnRequests; n++) {
      for (const notice of ctx.notices?.() ?? []) yield* ctx.emit.canonical({ type: "notice", data: notice })
      if (compactionDue(ctx, calls + 1)) {
        yield* failedCompaction(ctx, yield* Compaction.run(ctx, { trigger: "threshold", call: ++calls, window: ctx.window }))
      }
      const call = ++calls
      const result = yield* Effect.gen(function*() {
        const result = yield* modelCall(ctx, call)
        // The response is complete; what follows (its log, the tools or the turn's end) waits one
        // turn of the event loop, so that streams still running elsewhere (other sessions, a
        // parent's other children) are read first: calls that end together then delay
        // everyone's deltas by one call's end each, not by all of theirs.
        yield* Effect.yieldNow
        yield* ctx.emit.canonical({
          type: "model_response",
          data: {
            call,
            parts: result.parts,
            stop: result.stop,
            ...(result.usage !== undefined ? { usage: result.usage } : {}),
            ...(result.failure !== undefined ? { error: result.failure } : {})
          }
        })
        return result
      }).pipe(Spans.modelCall({ dialect: ctx.provider.name, model: ctx.model, call }))
      ctx.state.partial = undefined
      if (result.failure !== undefined) {
        // The context is full: compact, then try the call again, once in a turn.
        if (result.overflow && !overflowed) {
          overflowed = true
          const compacted = yield* Compaction.run(ctx, { trigger: "overflow", call: ++calls, window: ctx.window })
          if (compacted._tag === "Compacted") {
            n--
            continue
          }
          return {
            stopReason: "end_turn",
            error: `The model call failed: ${result.failure} Compacting the conversation did not help: ${compacted.reason}.`
          } satisfies TurnOutcome
        }
        return { stopReason: "end_turn", error: `The model call failed: ${result.failure}` } satisfies TurnOutcome
      }
      const toolCalls = result.parts.filter((part) => part.type === "tool_call")
      if (toolCalls.length === 0) {
        // The user steered while the model answered: it reads that before the turn ends.
        if (yield* steer(ctx, call, true)) continue
        // Children still working, or finished without the model having read them: the turn
        // waits for them and goes on with their results as the model's next input.
        const input = ctx.agents === undefined ? undefined : yield* ctx.agents.settle
        if (input === undefined) return { stopReason: stopReasonOf(result.stop) } satisfies TurnOutcome
        yield* ctx.emit.canonical({ type: "subagent", data: { event: "input", id: input.ids.join(","), text: input.text } })
        continue
      }
      for (const toolCall of toolCalls) yield* runToolCall(ctx, toolCall)
      yield* steer(ctx, call, false)
    }
    return {
      stopReason: "max_turn_requests",
      error: `Stopped after ${ctx.maxTurnRequests} model calls in one turn (the maxTurnRequests limit).`
    } satisfies TurnOutcome
  })

/** `/compact [focus]`: a turn that only compacts the conversation. */
export const compactNow = (ctx: TurnContext, focus: string | undefined) =>
  Effect.map(
    Compaction.run(ctx, { trigger: "manual", call: 1, window: ctx.window, focus }),
    (outcome): TurnOutcome =>
      outcome._tag === "Compacted" ? { stopReason: "end_turn" } : { stopReason: "end_turn", error: `Could not compact the conversation: ${outcome.reason}.` }
  )
