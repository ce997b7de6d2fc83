/**
 * `session/update`: the notifications an agent streams to the client while a session lives —
 * message and thought chunks, tool calls and their progress, the plan, commands, mode and
 * config changes, session info and usage.
 *
 * Every variant is an object tagged by `sessionUpdate`. `ToolCall` and `ToolCallUpdate` are also
 * used untagged (a permission request carries a `ToolCallUpdate`), so their tagged variants are
 * `SessionUpdateToolCall` and `SessionUpdateToolCallUpdate`.
 *
 * Spec: `$defs` SessionNotification, SessionUpdate, ContentChunk, ToolCall, ToolCallUpdate,
 * ToolKind, ToolCallStatus, ToolCallContent, Content, Diff, Terminal, ToolCallLocation, Plan,
 * PlanEntry, PlanEntryPriority, PlanEntryStatus, AvailableCommandsUpdate, AvailableCommand,
 * AvailableCommandInput, UnstructuredCommandInput, CurrentModeUpdate, ConfigOptionUpdate,
 * SessionInfoUpdate, UsageUpdate, Cost. (`notice`, `compaction_update` and
 * `compaction_summary_chunk` exist in the schema but Skein does not send them.)
 */
import * as Schema from "effect/Schema"
import {
  clearable,
  Double,
  lenient,
  meta,
  MessageId,
  optional,
  SessionId,
  SessionModeId,
  TerminalId,
  ToolCallId,
  Uint32,
  Uint64
} from "./Common.ts"
import { SessionConfigOption } from "./Config.ts"
import { ContentBlock } from "./Content.ts"

// ---------------------------------------------------------------------------
// Message chunks
// ---------------------------------------------------------------------------

const chunkFields = {
  content: ContentBlock,
  /** Chunks of one message share it; a new id starts a new message. */
  messageId: lenient(MessageId),
  _meta: meta
}

/** A piece of what the user said (sent while `session/load` replays the history). */
export const UserMessageChunk = Schema.Struct({
  sessionUpdate: Schema.Literal("user_message_chunk"),
  ...chunkFields
})
export type UserMessageChunk = typeof UserMessageChunk.Type

/** A delta of the assistant's reply. */
export const AgentMessageChunk = Schema.Struct({
  sessionUpdate: Schema.Literal("agent_message_chunk"),
  ...chunkFields
})
export type AgentMessageChunk = typeof AgentMessageChunk.Type

/** A delta of the model's visible reasoning. */
export const AgentThoughtChunk = Schema.Struct({
  sessionUpdate: Schema.Literal("agent_thought_chunk"),
  ...chunkFields
})
export type AgentThoughtChunk = typeof AgentThoughtChunk.Type

// ---------------------------------------------------------------------------
// Tool calls
// ---------------------------------------------------------------------------

/** Picks the client's icon and treatment of a tool call. */
export const ToolKind = Schema.Literals([
  "read",
  "edit",
  "delete",
  "move",
  "search",
  "execute",
  "think",
  "fetch",
  "switch_mode",
  "other"
])
export type ToolKind = typeof ToolKind.Type

export const ToolCallStatus = Schema.Literals(["pending", "in_progress", "completed", "failed"])
export type ToolCallStatus = typeof ToolCallStatus.Type

/** Regular content produced by a tool. */
export const ToolContent = Schema.Struct({
  type: Schema.Literal("content"),
  content: ContentBlock,
  _meta: meta
})
export type ToolContent = typeof ToolContent.Type

/** A file change; no `oldText` means a new file. */
export const ToolDiff = Schema.Struct({
  type: Schema.Literal("diff"),
  path: Schema.String,
  oldText: lenient(Schema.String),
  newText: Schema.String,
  _meta: meta
})
export type ToolDiff = typeof ToolDiff.Type

/** A live terminal created with `terminal/create`, embedded in the tool call. */
export const ToolTerminal = Schema.Struct({
  type: Schema.Literal("terminal"),
  terminalId: TerminalId,
  _meta: meta
})
export type ToolTerminal = typeof ToolTerminal.Type

/** What a tool call shows, discriminated by `type` (`content`, `diff`, `terminal`). */
export const ToolCallContent = Schema.Union([ToolContent, ToolDiff, ToolTerminal])
export type ToolCallContent = typeof ToolCallContent.Type

/** A file (and line) a tool call touches, for "follow along". */
export const ToolCallLocation = Schema.Struct({
  path: Schema.String,
  line: lenient(Uint32),
  _meta: meta
})
export type ToolCallLocation = typeof ToolCallLocation.Type

/** A tool call as first reported. */
export const ToolCall = Schema.Struct({
  toolCallId: ToolCallId,
  title: Schema.String,
  name: lenient(Schema.String),
  kind: lenient(ToolKind),
  status: lenient(ToolCallStatus),
  content: lenient(Schema.Array(ToolCallContent)),
  locations: lenient(Schema.Array(ToolCallLocation)),
  rawInput: optional(Schema.Unknown),
  rawOutput: optional(Schema.Unknown),
  _meta: meta
})
export type ToolCall = typeof ToolCall.Type

/**
 * A change to a reported tool call: only `toolCallId` is required, only changed fields are
 * sent; `content` and `locations` replace the previous lists.
 */
export const ToolCallUpdate = Schema.Struct({
  toolCallId: ToolCallId,
  kind: lenient(ToolKind),
  status: lenient(ToolCallStatus),
  title: lenient(Schema.String),
  name: lenient(Schema.String),
  content: lenient(Schema.Array(ToolCallContent)),
  locations: lenient(Schema.Array(ToolCallLocation)),
  rawInput: optional(Schema.Unknown),
  rawOutput: optional(Schema.Unknown),
  _meta: meta
})
export type ToolCallUpdate = typeof ToolCallUpdate.Type

export const SessionUpdateToolCall = Schema.Struct({
  sessionUpdate: Schema.Literal("tool_call"),
  ...ToolCall.fields
})
export type SessionUpdateToolCall = typeof SessionUpdateToolCall.Type

export const SessionUpdateToolCallUpdate = Schema.Struct({
  sessionUpdate: Schema.Literal("tool_call_update"),
  ...ToolCallUpdate.fields
})
export type SessionUpdateToolCallUpdate = typeof SessionUpdateToolCallUpdate.Type

// ---------------------------------------------------------------------------
// Plan
// ---------------------------------------------------------------------------

export const PlanEntryPriority = Schema.Literals(["high", "medium", "low"])
export type PlanEntryPriority = typeof PlanEntryPriority.Type

export const PlanEntryStatus = Schema.Literals(["pending", "in_progress", "completed"])
export type PlanEntryStatus = typeof PlanEntryStatus.Type

export const PlanEntry = Schema.Struct({
  content: Schema.String,
  priority: PlanEntryPriority,
  status: PlanEntryStatus,
  _meta: meta
})
export type PlanEntry = typeof PlanEntry.Type

/** The whole plan; each update replaces the previous one. */
export const Plan = Schema.Struct({
  sessionUpdate: Schema.Literal("plan"),
  entries: Schema.Array(PlanEntry),
  _meta: meta
})
export type Plan = typeof Plan.Type

// ---------------------------------------------------------------------------
// Commands, mode, config options, session info, usage
// ---------------------------------------------------------------------------

/** Free-text input after the command name, described by `hint`. */
export const UnstructuredCommandInput = Schema.Struct({
  hint: Schema.String,
  _meta: meta
})
export type UnstructuredCommandInput = typeof UnstructuredCommandInput.Type

export const AvailableCommandInput = UnstructuredCommandInput
export type AvailableCommandInput = typeof AvailableCommandInput.Type

/** A slash command the user can run (`/name`). */
export const AvailableCommand = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  input: lenient(AvailableCommandInput),
  _meta: meta
})
export type AvailableCommand = typeof AvailableCommand.Type

export const AvailableCommandsUpdate = Schema.Struct({
  sessionUpdate: Schema.Literal("available_commands_update"),
  availableCommands: Schema.Array(AvailableCommand),
  _meta: meta
})
export type AvailableCommandsUpdate = typeof AvailableCommandsUpdate.Type

export const CurrentModeUpdate = Schema.Struct({
  sessionUpdate: Schema.Literal("current_mode_update"),
  currentModeId: SessionModeId,
  _meta: meta
})
export type CurrentModeUpdate = typeof CurrentModeUpdate.Type

/** Every config option with its current value. */
export const ConfigOptionUpdate = Schema.Struct({
  sessionUpdate: Schema.Literal("config_option_update"),
  configOptions: Schema.Array(SessionConfigOption),
  _meta: meta
})
export type ConfigOptionUpdate = typeof ConfigOptionUpdate.Type

/** A partial update of the session's metadata: absent = unchanged, `null` = cleared. */
export const SessionInfoUpdate = Schema.Struct({
  sessionUpdate: Schema.Literal("session_info_update"),
  title: clearable(Schema.String),
  /** ISO 8601 timestamp of the last activity. */
  updatedAt: clearable(Schema.String),
  _meta: meta
})
export type SessionInfoUpdate = typeof SessionInfoUpdate.Type

export const Cost = Schema.Struct({
  amount: Double,
  /** Unit of `amount`: an ISO 4217 code ("USD") or another unit ("credits"). */
  currency: Schema.String,
  _meta: meta
})
export type Cost = typeof Cost.Type

/** Context window use (`used` of `size` tokens) and the session's cumulative cost. */
export const UsageUpdate = Schema.Struct({
  sessionUpdate: Schema.Literal("usage_update"),
  used: Uint64,
  size: Uint64,
  cost: lenient(Cost),
  _meta: meta
})
export type UsageUpdate = typeof UsageUpdate.Type

/**
 * UNSTABLE (schema.unstable.json): a context compaction, created by its first update and
 * patched by later ones with the same id. Sent only to a client that advertised
 * `clientCapabilities.session.compaction`.
 */
export const CompactionUpdate = Schema.Struct({
  sessionUpdate: Schema.Literal("compaction_update"),
  compactionId: Schema.String,
  status: Schema.String,
  summary: Schema.optionalKey(Schema.NullOr(Schema.Array(ContentBlock))),
  error: Schema.optionalKey(Schema.NullOr(Schema.String)),
  _meta: meta
})
export type CompactionUpdate = typeof CompactionUpdate.Type

// ---------------------------------------------------------------------------
// The notification
// ---------------------------------------------------------------------------

/** One update, discriminated by `sessionUpdate`. */
export const SessionUpdate = Schema.Union([
  UserMessageChunk,
  AgentMessageChunk,
  AgentThoughtChunk,
  SessionUpdateToolCall,
  SessionUpdateToolCallUpdate,
  Plan,
  AvailableCommandsUpdate,
  CurrentModeUpdate,
  ConfigOptionUpdate,
  SessionInfoUpdate,
  UsageUpdate,
  CompactionUpdate
])
export type SessionUpdate = typeof SessionUpdate.Type

/** The `params` of a `session/update` notification. */
export const SessionNotification = Schema.Struct({
  sessionId: SessionId,
  update: SessionUpdate,
  _meta: meta
})
export type SessionNotification = typeof SessionNotification.Type
