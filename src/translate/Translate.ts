/**
 * Translate: the pure mapping from session events to ACP `session/update`
 * payloads. No IO, no state beyond its arguments.
 *
 * - `live` is what a client sees while a turn runs: deltas as they stream,
 *   tool calls and their results; never the final assistant text again.
 * - `replay` is what `session/load` sends for a logged event: the canonical
 *   events alone, with the full texts the deltas added up to.
 */
import { absurd } from "effect/Function"
import * as Blocks from "../acp/Blocks.ts"
import type * as Config from "../acp/Config.ts"
import type * as Content from "../acp/Content.ts"
import type * as AcpUpdates from "../acp/Update.ts"
import { stringify as json } from "../jsonrpc/Framing.ts"
import type { Canonical, SessionEvent, ToolResult, UsageShown } from "../log/Event.ts"
import type { ToolDetails } from "../Vocabulary.ts"
import * as Listing from "../log/Listing.ts"
import { type Catalog, effortFor } from "../providers/Models.ts"
import { modes, type ModeId } from "../Vocabulary.ts"

/**
 * The ACP shapes this module produces are the Schemas of `src/acp/`, on their wire (encoded)
 * side: what `encoder` writes is the value itself, `JSON.stringify`d. Type-only imports: the
 * Schemas cost nothing here at run time.
 */
type Wire<S extends { readonly Encoded: unknown }> = S["Encoded"]
type AcpUpdate = Wire<typeof AcpUpdates.SessionUpdate>
type AcpToolCallUpdate = Wire<typeof AcpUpdates.SessionUpdateToolCallUpdate>
type AcpToolCallContent = Wire<typeof AcpUpdates.ToolCallContent>
type AcpContentBlock = Wire<typeof Content.ContentBlock>
/** A select with a flat list of values: the only kind of config option Skein offers. */
type AcpConfigOption = Omit<Wire<typeof Config.SessionConfigSelect>, "options"> & {
  readonly options: ReadonlyArray<Wire<typeof Config.SessionConfigSelectOption>>
}

/** A `session/update` payload as written on the wire. */
export type Update = AcpUpdate

const none: ReadonlyArray<AcpUpdate> = []

type ToolResultData = (typeof ToolResult.Type)["data"]

const text = (value: string): AcpContentBlock => ({ type: "text", text: value })

/** The content a client shows for a finished tool call. */
export const toolResultContent = (content: string, details: ToolDetails | undefined): ReadonlyArray<AcpToolCallContent> => {
  const out: Array<AcpToolCallContent> = []
  if (details?.diff !== undefined) {
    // A new file has no `oldText`: the key is left out, as the Schema writes an absent optional.
    for (const d of details.diff) {
      out.push(d.oldText === null
        ? { type: "diff", path: d.path, newText: d.newText }
        : { type: "diff", path: d.path, oldText: d.oldText, newText: d.newText })
    }
  }
  const shown = details?.output ?? content
  if (shown.length > 0) out.push({ type: "content", content: text(shown) })
  return out
}

const rawOutput = (ok: boolean, content: string, details: ToolDetails | undefined) => ({
  ok,
  content,
  ...(details?.exitCode !== undefined ? { exitCode: details.exitCode } : {}),
  ...(details?.truncated !== undefined ? { truncated: details.truncated } : {})
})

/** The final update of a tool call: its status, result and title again (some clients show "Tool" without it). */
const toolResult = (data: ToolResultData): AcpToolCallUpdate => ({
  sessionUpdate: "tool_call_update",
  toolCallId: data.id,
  ...(data.title !== undefined ? { title: data.title } : {}),
  status: data.ok ? "completed" : "failed",
  content: toolResultContent(data.content, data.details),
  rawOutput: rawOutput(data.ok, data.content, data.details)
})

/** What the config options show: the session's choices, and the models on offer. */
export interface ConfigState {
  readonly mode: ModeId
  /** The session's model (a catalog key). */
  readonly model?: string | undefined
  readonly effort?: string | undefined
  readonly models?: Catalog | undefined
}

const capitalized = (s: string) => s.charAt(0).toUpperCase() + s.slice(1)

/** The model selector, and the reasoning effort where the model has one to choose. */
const modelOptions = (state: ConfigState): ReadonlyArray<AcpConfigOption> => {
  const { models, model } = state
  if (models === undefined || model === undefined || !models.entries.some((e) => e.key === model)) return []
  const out: Array<AcpConfigOption> = [{
    id: "model",
    name: "Model",
    category: "model",
    type: "select",
    currentValue: model,
    options: models.entries.map((e) => ({ value: e.key, name: e.info.name ?? e.info.id, description: e.provider }))
  }]
  const info = models.info(model)
  const effort = info === undefined ? undefined : effortFor(info, state.effort) ?? info.efforts[0]
  if (info !== undefined && info.efforts.length > 0 && effort !== undefined) {
    out.push({
      id: "thought_level",
      name: "Reasoning effort",
      category: "thought_level",
      type: "select",
      currentValue: effort,
      options: info.efforts.map((e) => ({ value: e, name: capitalized(e) }))
    })
  }
  return out
}

/** The mode selector and other session settings, as ACP config options. */
export const configOptions = (state: ConfigState): ReadonlyArray<AcpConfigOption> => [
  {
    id: "mode",
    name: "Mode",
    description: "What Skein may do without asking",
    category: "mode",
    type: "select",
    currentValue: state.mode,
    options: modes.map((mode) => ({ value: mode.id, name: mode.name, description: mode.description }))
  },
  ...modelOptions(state)
]

/** The `modes` field of `session/new` and `session/load` responses. */
export const modeState = (mode: ModeId): Wire<typeof Config.SessionModeState> => ({
  currentModeId: mode,
  availableModes: modes.map((m) => ({ id: m.id, name: m.name, description: m.description }))
})

/** What the client can show beyond the stable protocol. */
export interface Options {
  /** It advertised `session.compaction`: compactions are `compaction_update`s (else a `think` tool call). */
  readonly compaction?: boolean | undefined
}

const noOptions: Options = {}

/** The tool call that shows a compaction to a client without `session.compaction`. */
export const compactionCallId = (id: string) => `compaction-${id}`
export const COMPACTED_TITLE = "Compacted the conversation"

type CompactionState = "in_progress" | "completed" | "failed" | "cancelled"

/**
 * A compaction's state as an update: a `compaction_update` (native), or its `think` tool call:
 * created (`create`: its first update, or a replay), else patched.
 */
const compactionUpdate = (
  id: string,
  state: CompactionState,
  options: Options,
  create: boolean,
  detail: { readonly summary?: string | undefined; readonly error?: string | undefined } = {}
): ReadonlyArray<AcpUpdate> => {
  if (options.compaction === true) {
    return [{
      sessionUpdate: "compaction_update",
      compactionId: id,
      status: state,
      ...(detail.summary !== undefined ? { summary: [text(detail.summary)] } : {}),
      ...(detail.error !== undefined ? { error: detail.error } : {})
    }]
  }
  const shown = detail.summary ?? detail.error
  const fields = {
    toolCallId: compactionCallId(id),
    title: state === "completed" ? COMPACTED_TITLE : state === "in_progress" ? "Compacting the conversation" : "Could not compact the conversation",
    status: state === "completed" ? "completed" as const : state === "in_progress" ? "in_progress" as const : "failed" as const,
    ...(shown !== undefined ? { content: [{ type: "content" as const, content: text(shown) }] } : {})
  }
  return [create ? { sessionUpdate: "tool_call", kind: "think", ...fields } : { sessionUpdate: "tool_call_update", ...fields }]
}

/** A compaction's summary call, when it did not make a summary: the compaction failed (or was cancelled). */
const compactionCall = (event: SessionEvent & { readonly type: "model_response" }, options: Options, create: boolean): ReadonlyArray<AcpUpdate> =>
  event.data.compaction === undefined || (event.data.stop !== "error" && event.data.stop !== "cancelled")
    ? none
    : compactionUpdate(event.data.compaction, event.data.stop === "cancelled" ? "cancelled" : "failed", options, create, {
      error: event.data.error ?? "cancelled"
    })

/**
 * The session's title once its first prompt is known (the title `session/list` shows): the
 * update a presenter sends as the session's first turn starts (none for a later turn).
 */
/** The context used and the session's cost so far, as ACP shows them (live, and again when a session is loaded). */
export const usageUpdate = (usage: UsageShown): AcpUpdate => ({
  sessionUpdate: "usage_update",
  used: usage.used,
  size: usage.size,
  ...(usage.cost !== undefined ? { cost: { amount: usage.cost, currency: "USD" } } : {})
})

export const titleUpdate = (event: SessionEvent): ReadonlyArray<AcpUpdate> => {
  if (event.type !== "turn_start" || event.turn !== 1) return none
  const title = Listing.title(event.data.content)
  return title === undefined ? none : [{ sessionUpdate: "session_info_update", title }]
}

/** What the user typed for a command's turn: `/name arguments`. */
const typed = (command: { readonly name: string; readonly arguments: string }) =>
  `/${command.name}${command.arguments.length > 0 ? ` ${command.arguments}` : ""}`

/** Updates for an event while its turn is live. */
export const live = (event: SessionEvent, options: Options = noOptions): ReadonlyArray<AcpUpdate> => {
  switch (event.type) {
    case "compacting":
      return compactionUpdate(event.data.id, "in_progress", options, true)
    case "compaction":
      return compactionUpdate(event.data.id, "completed", options, false, { summary: event.data.summaryForUser })
    case "turn_input":
      // Steering the user sent while the turn ran, shown where the model took it.
      return event.data.content.map((block) => ({ sessionUpdate: "user_message_chunk", content: Blocks.fromUserBlock(block) }))
    case "text_delta":
      return [{ sessionUpdate: "agent_message_chunk", content: text(event.data.text) }]
    case "thinking_delta":
      return [{ sessionUpdate: "agent_thought_chunk", content: text(event.data.text) }]
    case "tool_running":
      return [{ sessionUpdate: "tool_call_update", toolCallId: event.data.id, status: "in_progress" }]
    case "tool_progress":
      return [{ sessionUpdate: "tool_call_update", toolCallId: event.data.id, content: [{ type: "content", content: text(event.data.output) }] }]
    case "tool_terminal":
      return [{ sessionUpdate: "tool_call_update", toolCallId: event.data.id, content: [{ type: "terminal", terminalId: event.data.terminalId }] }]
    case "tool_result":
      // A command that ran in the client's terminal keeps showing that terminal (released
      // terminals stay visible); a replay, whose terminal is gone, shows the output instead.
      return event.data.details?.terminalId === undefined ? common(event) : [{
        ...toolResult(event.data),
        content: [{ type: "terminal", terminalId: event.data.details.terminalId }]
      }]
    case "permission_asked":
    case "client_call":
    case "question_withdrawn":
      // Questions are for the presenter to ask, in its own way (ACP: requests to the client).
      return none
    case "usage":
      return [usageUpdate(event.data)]
    case "model_response":
      return compactionCall(event, options, false)
    case "turn_start":
    case "model_partial":
      return none
    case "tool_call":
    case "turn_end":
    case "mode_changed":
    case "config_changed":
    case "plan":
    case "permission":
    case "notice":
    case "mcp_servers":
    case "subagent":
    case "skill_activation":
    case "undo":
    case "hook":
    case "child_event":
    case "turn_aborted":
    case "checkpoint":
    case "rewound":
      return common(event)
    default:
      return absurd(event)
  }
}

/** Updates that rebuild a logged event for `session/load`. */
export const replay = (event: Canonical, options: Options = noOptions): ReadonlyArray<AcpUpdate> => {
  switch (event.type) {
    case "turn_start": {
      // A command's turn shows what the user typed, not the text it expanded to (a command the
      // model never sees logs the prompt as typed).
      const command = event.data.command
      const at = command === undefined || command.local === true ? -1 : command.block ?? 0
      return event.data.content.map((block, i) => ({
        sessionUpdate: "user_message_chunk",
        content: i === at ? text(typed(command!)) : Blocks.fromUserBlock(block)
      }))
    }
    case "turn_input":
      return event.data.content.map((block) => ({ sessionUpdate: "user_message_chunk", content: Blocks.fromUserBlock(block) }))
    case "compaction":
      // As the client saw it live: started, then done with its summary.
      return [
        ...compactionUpdate(event.data.id, "in_progress", options, true),
        ...compactionUpdate(event.data.id, "completed", options, false, { summary: event.data.summaryForUser })
      ]
    // A checkpoint of text a call streamed: replayed only when its call has no model_response
    // (see `translate/Replay.ts`), so the text is shown once.
    case "model_partial":
    case "model_response": {
      if (event.type === "model_response" && event.data.compaction !== undefined) return compactionCall(event, options, true)
      const out: Array<AcpUpdate> = []
      for (const part of event.data.parts) {
        if (part.type === "thinking" && part.text.length > 0) out.push({ sessionUpdate: "agent_thought_chunk", content: text(part.text) })
        if (part.type === "text" && part.text.length > 0) out.push({ sessionUpdate: "agent_message_chunk", content: text(part.text) })
      }
      return out
    }
    case "tool_call": {
      const [call] = common(event)
      return call === undefined || call.sessionUpdate !== "tool_call" ? none : [{ ...call, status: "in_progress" }]
    }
    default:
      return common(event)
  }
}

/** Events shown the same way live and in replay. */
const common = (event: SessionEvent): ReadonlyArray<AcpUpdate> => {
  switch (event.type) {
    case "tool_call":
      return [{
        sessionUpdate: "tool_call",
        toolCallId: event.data.id,
        title: event.data.title,
        kind: event.data.kind,
        status: "pending",
        // `null` input is no input: the Schema writes none (an absent optional is never `null`).
        ...(event.data.args !== null && event.data.args !== undefined ? { rawInput: event.data.args } : {}),
        ...(event.data.locations !== undefined && event.data.locations.length > 0 ? { locations: event.data.locations } : {})
      }]
    case "tool_result":
      return [toolResult(event.data)]
    case "turn_end":
      return event.data.error === undefined ? none : [{ sessionUpdate: "agent_message_chunk", content: text(event.data.error) }]
    case "plan":
      return [{ sessionUpdate: "plan", entries: event.data.entries }]
    case "notice":
      // Its own paragraph: what the model writes next starts below it.
      return [{ sessionUpdate: "agent_message_chunk", content: text(`${event.data.text}\n\n`) }]
    case "hook": {
      // What a hook told the user (a failure, a blocked prompt, why it stopped the turn); its decisions show where they act.
      const shown = [event.data.message, event.data.stop].filter((line) => line !== undefined)
      return shown.length === 0 ? none : [{ sessionUpdate: "agent_message_chunk", content: text(`${shown.join("\n")}\n\n`) }]
    }
    case "mode_changed":
      return [
        { sessionUpdate: "current_mode_update", currentModeId: event.data.mode },
        { sessionUpdate: "config_option_update", configOptions: configOptions({ mode: event.data.mode as ModeId }) }
      ]
    // Shown by `live` or `replay` where they show at all, never the same way in both.
    case "turn_start":
    case "turn_input":
    case "turn_aborted":
    case "model_partial":
    case "model_response":
    case "text_delta":
    case "thinking_delta":
    case "tool_running":
    case "tool_progress":
    case "tool_terminal":
    case "client_call":
    case "permission":
    case "permission_asked":
    case "question_withdrawn":
    case "config_changed":
    case "mcp_servers":
    case "subagent":
    case "child_event":
    case "compaction":
    case "compacting":
    case "skill_activation":
    case "usage":
    case "undo":
    case "checkpoint":
    case "rewound":
      return none
    default:
      return absurd(event)
  }
}

/** The ACP stop reason of a turn outcome. */
export const stopReason = (outcome: { readonly stopReason: string }) => outcome.stopReason

/**
 * A precompiled encoder of one session's `session/update` lines (the bytes `Framing.encode`
 * writes for the same notification): the envelope is built once; a text chunk costs one
 * `JSON.stringify` of its text.
 */
export const encoder = (sessionId: string) => {
  const head = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":${json(sessionId)},"update":`
  const message = `${head}{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":`
  const thought = `${head}{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":`
  // The message id of the last chunk, encoded (a message's chunks share it).
  let id: string | undefined
  let idJson = ""
  return (update: AcpUpdate): string => {
    if ((update.sessionUpdate === "agent_message_chunk" || update.sessionUpdate === "agent_thought_chunk") && update.content.type === "text" && update._meta === undefined) {
      const start = update.sessionUpdate === "agent_message_chunk" ? message : thought
      if (update.messageId == null) return `${start}${json(update.content.text)}}}}}\n`
      if (update.messageId !== id) {
        id = update.messageId
        idJson = json(id)
      }
      return `${start}${json(update.content.text)}},"messageId":${idJson}}}}\n`
    }
    return `${head}${json(update)}}}\n`
  }
}
