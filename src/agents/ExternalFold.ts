/**
 * What an external agent streams during one prompt, folded into Skein's canonical events, as a
 * pure step: `step(state, input) → [state, outputs]`. The runner (`External.ts`) feeds it the
 * agent's `session/update`s and its requests, and carries out the outputs in order: events to
 * log or publish, and what the session's supervisor must know to finalize a turn cut short.
 *
 * - The agent's output between two of its tool calls is one "model call": message and thought
 *   chunks are published as deltas and kept as the call's streamed parts (`Streaming`).
 * - A tool call, at the first update that names it, logs that call's `model_response` (ending
 *   with the tool call) and a `tool_call`; the next parts start the next call. Its progress is
 *   published; its end (`completed`, `failed`) is a `tool_result`. A late update of a finished
 *   call changes nothing.
 * - Ids: a call of turn T the agent calls X is `ext-T-X` in the log (an agent may name two
 *   calls alike in two turns); a write the agent makes outside its calls is announced as a call
 *   of Skein's `write`, `write-T-N`.
 * - A question of the agent about a call announces the call first if it was never reported;
 *   what the user allowed in it (an edit of the files shown) lets a write of one of those files
 *   through the gate without asking again — never a write after a read, nor a file the call
 *   reported only later.
 * - While the session may change nothing, a call the agent reports going on that may change
 *   something is `Confined`: the runner stops the agent.
 * - `Conclude` (the prompt's answer) fails every call still open, then logs the last model
 *   call. So every tool call is part of a model response, and each one gets one result.
 */
import * as NodePath from "node:path"
import * as Blocks from "../acp/Blocks.ts"
import type * as AcpUpdate from "../acp/Update.ts"
import type { CanonicalBody, EphemeralBody, ToolStatus } from "../log/Event.ts"
import type { AssistantPart, Location, ModelStop, StopReason, ToolDetails, ToolKind } from "../Vocabulary.ts"
import { appendPart } from "../log/History.ts"
import type { AnnouncedCall } from "../session/TurnContract.ts"
import * as Ceiling from "../tools/Ceiling.ts"
import { write } from "../tools/write.ts"

/** Result text of a tool call the agent ended its prompt without finishing. */
export const UNFINISHED_TOOL = "Not finished: the agent ended its turn before this tool call did."

const MAX_RAW_OUTPUT_CHARS = 20_000

type ToolCallContent = AcpUpdate.ToolCallContent

/** What the user allowed in the agent's question about a call: its kind and the files it showed. */
interface Grant {
  readonly kind: ToolKind
  readonly paths: ReadonlySet<string>
}

/** A tool call announced in the log and not finished yet. */
export interface Tracked {
  /** Its id in the log. */
  readonly id: string
  readonly name: string
  readonly title: string
  readonly kind: ToolKind
  readonly locations: ReadonlyArray<Location>
  readonly args: unknown
  /** Its last content (a tool call update replaces the list). */
  readonly content: ReadonlyArray<ToolCallContent>
  readonly running: boolean
  readonly grant: Grant | undefined
}

export interface State {
  /** The agent's name: its calls are logged as `<agent>:<name>`. */
  readonly agent: string
  readonly turn: number
  readonly cwd: string
  /** The current model call's streamed parts. */
  readonly parts: ReadonlyArray<AssistantPart>
  readonly call: number
  /** Open tool calls of the agent, by the agent's id. */
  readonly open: ReadonlyMap<string, Tracked>
  /** The agent's tool calls that have their result. */
  readonly finished: ReadonlySet<string>
  /** Writes the agent made outside its tool calls, announced as calls of Skein's `write`, still open, by log id. */
  readonly own: ReadonlyMap<string, Tracked>
  readonly writes: number
}

export type Input =
  /** A `session/update` of the prompt; `readOnly`: the session may change nothing now. */
  | { readonly _tag: "Update"; readonly update: AcpUpdate.SessionUpdate; readonly readOnly: boolean }
  /** The agent asks about this call (its content is what the call would do, not what it did). */
  | { readonly _tag: "Asked"; readonly toolCall: AcpUpdate.ToolCallUpdate }
  /**
   * The answer to the agent's question about a call (`Subject`), logged; `granted`: what the
   * user allowed, as the question showed it, when it may let the agent's writes through.
   */
  | {
    readonly _tag: "Answered"
    readonly agentId: string
    /** The call's id in the log. */
    readonly id: string
    readonly outcome: Extract<CanonicalBody, { readonly type: "permission" }>["data"]["outcome"]
    readonly granted?: Pick<Tracked, "kind" | "locations"> | undefined
  }
  /** The agent writes a file through Skein (`fs/write_text_file`). */
  | { readonly _tag: "Write"; readonly path: string; readonly content: string }
  /** Skein's own call of a write (`Writing.own`) ended. */
  | { readonly _tag: "Wrote"; readonly id: string; readonly status: ToolStatus; readonly content: string; readonly details?: ToolDetails | undefined }
  /** The prompt was answered (or failed with `error`). */
  | { readonly _tag: "Conclude"; readonly stop: ModelStop; readonly error?: string | undefined }

export type Output =
  /** Log then publish. */
  | { readonly _tag: "Canonical"; readonly body: CanonicalBody }
  /** Publish. */
  | { readonly _tag: "Ephemeral"; readonly body: EphemeralBody }
  /** The model call in progress and its parts streamed so far: a turn cut short logs them. */
  | { readonly _tag: "Streaming"; readonly call: number; readonly parts: Array<AssistantPart> }
  /** The arguments of a tool call, before the response that asks for it is logged. */
  | { readonly _tag: "Requested"; readonly id: string; readonly args: unknown }
  /** The agent reported a change going on while the session may change nothing: stop it. */
  | { readonly _tag: "Confined"; readonly title: string }
  /** The answer to `Asked`: the call as it now stands. */
  | { readonly _tag: "Subject"; readonly call: Tracked }
  /**
   * The answer to `Write`: the call the gate is shown, whether the user allowed this very edit
   * in the agent's question, and Skein's own call's id when the write is not part of the agent's.
   */
  | {
    readonly _tag: "Writing"
    readonly call: AnnouncedCall
    readonly args: { readonly path: string; readonly content: string }
    readonly granted: boolean
    readonly own: string | undefined
  }

export const initial = (agent: string, turn: number, cwd: string): State => ({
  agent,
  turn,
  cwd,
  parts: [],
  call: 1,
  open: new Map(),
  finished: new Set(),
  own: new Map(),
  writes: 0
})

// ---------------------------------------------------------------------------
// From ACP to the log
// ---------------------------------------------------------------------------

/** The text of a tool call's content (diffs and terminals are not text). */
const contentText = (content: ReadonlyArray<ToolCallContent>): string =>
  content.flatMap((item) => (item.type === "content" ? [Blocks.text(item.content)] : [])).join("\n")

/** The diffs of a tool call's content. */
export const diffsOf = (content: ReadonlyArray<ToolCallContent>) =>
  content.flatMap((item) => (item.type === "diff" ? [{ path: item.path, oldText: item.oldText ?? null, newText: item.newText }] : []))

const locationsOf = (locations: ReadonlyArray<AcpUpdate.ToolCallLocation>): ReadonlyArray<Location> =>
  locations.map((l) => (l.line !== undefined ? { path: l.path, line: l.line } : { path: l.path }))

/** What the agent said a tool call produced: its text (else its raw output) and its diffs. */
const resultOf = (content: ReadonlyArray<ToolCallContent>, rawOutput: unknown): { readonly text: string; readonly details?: ToolDetails } => {
  let text = contentText(content)
  if (text.length === 0 && rawOutput !== undefined && rawOutput !== null) {
    const raw = typeof rawOutput === "string" ? rawOutput : JSON.stringify(rawOutput) ?? ""
    text = raw.length > MAX_RAW_OUTPUT_CHARS ? `${raw.slice(0, MAX_RAW_OUTPUT_CHARS)}… [truncated]` : raw
  }
  const diff = diffsOf(content)
  return diff.length > 0 ? { text, details: { diff } } : { text }
}

export const modelStopOf = (reason: StopReason): ModelStop =>
  reason === "max_tokens" || reason === "refusal" || reason === "cancelled" ? reason : "end_turn"

// ---------------------------------------------------------------------------
// The step
// ---------------------------------------------------------------------------

type Step = readonly [State, ReadonlyArray<Output>]

const withEntry = <K, V>(map: ReadonlyMap<K, V>, key: K, value: V): ReadonlyMap<K, V> => new Map(map).set(key, value)

const without = <K, V>(map: ReadonlyMap<K, V>, key: K): ReadonlyMap<K, V> => {
  const next = new Map(map)
  next.delete(key)
  return next
}

/**
 * Ends the current model call with a tool call and announces it: its `model_response`, then
 * its `tool_call`. The next parts start the next call.
 */
const announce = (
  state: State,
  call: Pick<Tracked, "id" | "name" | "title" | "kind" | "locations" | "args">
): readonly [State, ReadonlyArray<Output>, Tracked] => {
  const next = { ...state, parts: [], call: state.call + 1 }
  return [next, [
    { _tag: "Requested", id: call.id, args: call.args },
    {
      _tag: "Canonical",
      body: {
        type: "model_response",
        data: { call: state.call, parts: [...state.parts, { type: "tool_call", id: call.id, name: call.name, args: call.args }], stop: "tool_use" }
      }
    },
    { _tag: "Streaming", call: next.call, parts: [] },
    {
      _tag: "Canonical",
      body: {
        type: "tool_call",
        data: {
          id: call.id,
          name: call.name,
          args: call.args,
          title: call.title,
          kind: call.kind,
          ...(call.locations.length > 0 ? { locations: call.locations } : {})
        }
      }
    }
  ], { ...call, content: [], running: false, grant: undefined }]
}

/** Announces a tool call of the agent, from its first report (or whatever first names it). */
const announceAgentCall = (state: State, update: AcpUpdate.ToolCallUpdate): readonly [State, ReadonlyArray<Output>, Tracked] => {
  const kind = update.kind ?? "other"
  const [next, outputs, tracked] = announce(state, {
    id: `ext-${state.turn}-${update.toolCallId}`,
    name: `${state.agent}:${update.name ?? kind}`,
    title: update.title ?? `${state.agent}: ${kind}`,
    kind,
    locations: locationsOf(update.locations ?? []),
    args: update.rawInput ?? {}
  })
  return [{ ...next, open: withEntry(next.open, update.toolCallId, tracked) }, outputs, tracked]
}

/** What an update changes of a call's description. */
const merge = (tracked: Tracked, update: AcpUpdate.ToolCallUpdate): Tracked => ({
  ...tracked,
  ...(update.title !== undefined ? { title: update.title } : {}),
  ...(update.kind !== undefined ? { kind: update.kind } : {}),
  ...(update.locations !== undefined ? { locations: locationsOf(update.locations) } : {}),
  ...(update.rawInput !== undefined ? { args: update.rawInput } : {}),
  ...(update.content !== undefined ? { content: update.content } : {})
})

/** An update of an announced call of the agent: progress, or its result. */
const progress = (state: State, agentId: string, known: Tracked, update: AcpUpdate.ToolCallUpdate): Step => {
  const tracked = merge(known, update)
  if (update.status === "completed" || update.status === "failed") {
    const result = resultOf(tracked.content, update.rawOutput)
    return [{ ...state, open: without(state.open, agentId), finished: new Set(state.finished).add(agentId) }, [{
      _tag: "Canonical",
      body: {
        type: "tool_result",
        data: {
          id: tracked.id,
          title: tracked.title,
          ok: update.status === "completed",
          status: update.status === "completed" ? "done" : "failed",
          content: result.text,
          ...(result.details !== undefined ? { details: result.details } : {})
        }
      }
    }]]
  }
  const outputs: Array<Output> = []
  const starts = update.status === "in_progress" && !tracked.running
  if (starts) outputs.push({ _tag: "Ephemeral", body: { type: "tool_running", data: { id: tracked.id } } })
  if (update.content !== undefined) {
    const output = contentText(update.content)
    if (output.length > 0) outputs.push({ _tag: "Ephemeral", body: { type: "tool_progress", data: { id: tracked.id, output } } })
  }
  return [{ ...state, open: withEntry(state.open, agentId, starts ? { ...tracked, running: true } : tracked) }, outputs]
}

/** Folds one `session/update` of the prompt. */
const apply = (state: State, update: AcpUpdate.SessionUpdate): Step => {
  switch (update.sessionUpdate) {
    case "agent_message_chunk":
    case "agent_thought_chunk": {
      const text = Blocks.text(update.content)
      if (text.length === 0) return [state, []]
      const kind = update.sessionUpdate === "agent_message_chunk" ? "text" : "thinking"
      const parts = [...state.parts]
      appendPart(parts, kind, text)
      return [{ ...state, parts }, [
        { _tag: "Streaming", call: state.call, parts: [...parts] },
        { _tag: "Ephemeral", body: { type: kind === "text" ? "text_delta" : "thinking_delta", data: { text } } }
      ]]
    }
    case "tool_call":
    case "tool_call_update": {
      const agentId = update.toolCallId
      // A late update of a finished call changes nothing the log can still show.
      if (state.finished.has(agentId)) return [state, []]
      const tracked = state.open.get(agentId)
      if (tracked !== undefined) return progress(state, agentId, tracked, update)
      const [announced, outputs, fresh] = announceAgentCall(state, update)
      const [next, more] = progress(announced, agentId, fresh, update)
      return [next, [...outputs, ...more]]
    }
    case "plan":
      return [state, [{
        _tag: "Canonical",
        body: { type: "plan", data: { entries: update.entries.map((e) => ({ content: e.content, status: e.status, priority: e.priority })) } }
      }]]
    case "usage_update":
      return [state, [{
        _tag: "Ephemeral",
        body: {
          type: "usage",
          data: {
            used: update.used,
            size: update.size,
            ...(update.cost !== undefined && update.cost.currency === "USD" ? { cost: update.cost.amount } : {})
          }
        }
      }]]
    // The user's own words echoed, commands, modes, config options, session info and the
    // agent's compactions are the agent's own business.
    case "user_message_chunk":
    case "available_commands_update":
    case "current_mode_update":
    case "config_option_update":
    case "session_info_update":
    case "compaction_update":
      return [state, []]
    default:
      return update satisfies never
  }
}

/** After an update is folded: a change the agent reports going on while the session may change nothing. */
const confine = (state: State, update: AcpUpdate.SessionUpdate): ReadonlyArray<Output> => {
  if (update.sessionUpdate !== "tool_call" && update.sessionUpdate !== "tool_call_update") return []
  if (update.status === "completed" || update.status === "failed") return []
  const tracked = state.open.get(update.toolCallId)
  if (Ceiling.onlyLooks(update.kind ?? tracked?.kind ?? "other")) return []
  return [{ _tag: "Confined", title: tracked?.title ?? update.title ?? "a tool call" }]
}

/** The call a question is about (announced first if the agent never reported it), described as the question has it. */
const asked = (state: State, toolCall: AcpUpdate.ToolCallUpdate): Step => {
  const agentId = toolCall.toolCallId
  const known = state.open.get(agentId)
  if (known === undefined && state.finished.has(agentId)) return [state, []]
  const [announced, outputs, tracked] = known !== undefined ? [state, [], known] as const : announceAgentCall(state, toolCall)
  // Its content here is what the call would do (a diff to approve), not what it did.
  const { content: _proposed, ...described } = toolCall
  const call = merge(tracked, described)
  return [{ ...announced, open: withEntry(announced.open, agentId, call) }, [...outputs, { _tag: "Subject", call }]]
}

/** A write of the agent: part of its open call that names the file (the latest), else a call of Skein's own `write`. */
const writing = (state: State, path: string, content: string): Step => {
  const target = NodePath.resolve(state.cwd, path)
  const args = { path: target, content }
  const locations = [{ path: target }]
  const owner = [...state.open.values()].reverse().find((t) => t.locations.some((l) => NodePath.resolve(state.cwd, l.path) === target))
  if (owner !== undefined) {
    const granted = owner.grant?.kind === "edit" && owner.grant.paths.has(target)
    return [state, [{ _tag: "Writing", call: { id: owner.id, name: write.name, args, title: owner.title, kind: "edit", locations }, args, granted, own: undefined }]]
  }
  const writes = state.writes + 1
  const id = `write-${state.turn}-${writes}`
  const relative = NodePath.relative(state.cwd, target)
  const shown = relative === "" || relative.startsWith("..") || NodePath.isAbsolute(relative) ? target : relative
  const [next, outputs, tracked] = announce({ ...state, writes }, { id, name: write.name, title: `Write ${shown}`, kind: "edit", locations, args })
  return [{ ...next, own: withEntry(next.own, id, tracked) }, [
    ...outputs,
    { _tag: "Writing", call: { id, name: write.name, args, title: tracked.title, kind: "edit", locations }, args, granted: false, own: id }
  ]]
}

/** The prompt was answered (or failed): every call still open fails, then the last model call is logged. */
const conclude = (state: State, stop: ModelStop, error: string | undefined): Step => {
  const why = error ?? UNFINISHED_TOOL
  const results = [...state.open.values(), ...state.own.values()].map((tracked): Output => ({
    _tag: "Canonical",
    body: { type: "tool_result", data: { id: tracked.id, title: tracked.title, ok: false, status: "unfinished", content: why } }
  }))
  return [{ ...state, open: new Map(), own: new Map() }, [
    ...results,
    { _tag: "Canonical", body: { type: "model_response", data: { call: state.call, parts: [...state.parts], stop, ...(error !== undefined ? { error } : {}) } } }
  ]]
}

export const step = (state: State, input: Input): Step => {
  switch (input._tag) {
    case "Update": {
      const [next, outputs] = apply(state, input.update)
      return input.readOnly ? [next, [...outputs, ...confine(next, input.update)]] : [next, outputs]
    }
    case "Asked":
      return asked(state, input.toolCall)
    case "Answered": {
      const logged: Output = { _tag: "Canonical", body: { type: "permission", data: { toolCallId: input.id, outcome: input.outcome } } }
      const tracked = state.open.get(input.agentId)
      // A call that ended meanwhile has nothing left to write.
      if (tracked === undefined || input.granted === undefined) return [state, [logged]]
      const grant = { kind: input.granted.kind, paths: new Set(input.granted.locations.map((l) => NodePath.resolve(state.cwd, l.path))) }
      return [{ ...state, open: withEntry(state.open, input.agentId, { ...tracked, grant }) }, [logged]]
    }
    case "Write":
      return writing(state, input.path, input.content)
    case "Wrote": {
      const own = state.own.get(input.id)
      if (own === undefined) return [state, []]
      return [{ ...state, own: without(state.own, input.id) }, [{
        _tag: "Canonical",
        body: {
          type: "tool_result",
          data: { id: own.id, title: own.title, ok: input.status === "done", status: input.status, content: input.content, ...(input.details !== undefined ? { details: input.details } : {}) }
        }
      }]]
    }
    case "Conclude":
      return conclude(state, input.stop, input.error)
    default:
      return input satisfies never
  }
}
