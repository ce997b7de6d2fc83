/**
 * The turn loop: model call → tool calls → model call … until the model stops
 * calling tools, fails, or the iteration cap is reached.
 *
 * Its edges are parameters (the provider, the tools, the event sink), so tests
 * drive it with a scripted provider instead of mocking a network; the permission
 * gate (`Permission`) and what its tools use (files, terminals, children, skills:
 * `tools/Edges.ts`) are provided to the turn as services. It never
 * fails for model or tool problems: those are outcomes. It is interruptible
 * everywhere; the session's supervisor finalizes whatever it leaves open.
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { type AssistantPart, type ModelStop, promptText, type StopReason, type Usage } from "../Vocabulary.ts"
import { appendPart } from "../log/History.ts"
import type { StreamPart } from "../providers/Provider.ts"
import * as Tool from "../tools/Tool.ts"
import type { TurnOutcome } from "../session/Protocol.ts"
import { type AnnouncedCall, Permission, type Permit, type Prior, type TurnContext } from "../session/TurnContract.ts"
import * as Spans from "../telemetry/Spans.ts"
import * as Checkpoint from "./Checkpoint.ts"
import * as Compaction from "./Compaction.ts"

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
      default:
        return part satisfies never
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

/** How many times in one turn a Stop hook may send the model back to work. */
export const MAX_STOP_CONTINUATIONS = 5

/** What the gate is told of a PreToolUse hook's decision: `allow` spares the question (never a refusal), `ask` asks anyway. */
const priorOf = (decision: string | undefined): Prior | undefined =>
  decision === "allow" ? { granted: true } : decision === "ask" ? { ask: true } : undefined

/**
 * Runs one tool call: announce, execute, report. Returns why the turn must stop when a hook
 * said so (`continue: false`).
 */
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
    // Bad arguments and unknown tools are reported without asking (nor hooks): nothing would run.
    const runnable = tool !== undefined && args !== undefined
    const pre = runnable && ctx.hooks !== undefined ? yield* ctx.hooks.preToolUse(call) : undefined
    if (pre?.decision === "deny" || pre?.stop !== undefined) {
      const why = pre.decision === "deny" ? pre.reason ?? "" : `the turn was stopped: ${pre.stop}`
      yield* ctx.emit.canonical({ type: "tool_result", data: { id: call.id, title: announced.title, ok: false, status: "denied", content: `A PreToolUse hook blocked ${announced.title}, so it was not run: ${why}` } })
      yield* Spans.toolEnded(call.name, known, "denied")
      return pre.stop
    }
    const permit: Permit = runnable ? yield* Permission.use((gate) => gate.permit(announced, tool, args, priorOf(pre?.decision))) : { _tag: "allow" }
    if (permit._tag === "deny") {
      yield* ctx.emit.canonical({ type: "tool_result", data: { id: call.id, title: announced.title, ok: false, status: "denied", content: permit.reason } })
      yield* Spans.toolEnded(call.name, known, "denied")
      return undefined
    }
    yield* ctx.emit.ephemeral({ type: "tool_running", data: { id: call.id } })
    const output = tool === undefined
      ? Tool.error(`Unknown tool "${call.name}". Available tools: ${ctx.toolkit.tools.map((t) => t.name).join(", ")}`)
      : yield* Tool.run(tool, call.args, {
        sessionId: ctx.sessionId,
        toolCallId: call.id,
        cwd: ctx.cwd,
        roots: tool.mutating || ctx.readRoots === undefined || ctx.readRoots.length === 0 ? ctx.roots : [...ctx.roots, ...ctx.readRoots],
        readOnly: permit.readOnly === true
      })
    yield* ctx.emit.canonical({
      type: "tool_result",
      data: {
        id: call.id,
        title: announced.title,
        ok: output.ok,
        status: output.ok ? "done" : "failed",
        content: output.content,
        ...(output.details !== undefined ? { details: output.details } : {})
      }
    })
    yield* Spans.toolEnded(call.name, known, output.ok ? "ok" : "error")
    const post = runnable && ctx.hooks !== undefined ? yield* ctx.hooks.postToolUse(call, output) : undefined
    return post?.stop
  })

/**
 * The hooks before the model's first call: SessionStart (the session's first turn here), then
 * UserPromptSubmit. The outcome when one of them ends the turn (a blocked prompt, `continue: false`).
 */
const opening = (ctx: TurnContext) =>
  Effect.gen(function*() {
    const hooks = ctx.hooks
    if (hooks === undefined) return undefined
    const started = hooks.starting === undefined ? undefined : yield* hooks.sessionStart(hooks.starting)
    if (started?.stop !== undefined) return { stopReason: "end_turn" } satisfies TurnOutcome
    const submitted = yield* hooks.promptSubmit(promptText(ctx.content))
    if (submitted?.decision === "block" || submitted?.stop !== undefined) return { stopReason: "end_turn" } satisfies TurnOutcome
    return undefined
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
    let stops = 0
    const ended = yield* opening(ctx)
    if (ended !== undefined) return ended
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
        if (input === undefined) {
          // A Stop hook may send the model back to work, with its reason as the next input (a few times at most).
          const stop = ctx.hooks === undefined ? undefined : yield* ctx.hooks.stop(stops > 0)
          if (stop?.decision === "block" && stop.stop === undefined && stops < MAX_STOP_CONTINUATIONS) {
            stops++
            continue
          }
          return { stopReason: stopReasonOf(result.stop) } satisfies TurnOutcome
        }
        yield* ctx.emit.canonical({ type: "subagent", data: { event: "input", id: input.ids.join(","), text: input.text } })
        continue
      }
      for (const toolCall of toolCalls) {
        if ((yield* runToolCall(ctx, toolCall)) !== undefined) {
          // A hook stopped the turn: the calls left are reported as not run (the model may call them again later).
          for (const left of toolCalls.slice(toolCalls.indexOf(toolCall) + 1)) {
            yield* ctx.emit.canonical({ type: "tool_call", data: { id: left.id, name: left.name, args: left.args, title: left.name, kind: "other" } })
            yield* ctx.emit.canonical({ type: "tool_result", data: { id: left.id, title: left.name, ok: false, status: "not_run", content: "Not run: a hook stopped the turn." } })
          }
          return { stopReason: "end_turn" } satisfies TurnOutcome
        }
      }
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
