/**
 * The vocabulary of a session's history: the events a session emits.
 *
 * Canonical events are appended to the session log before they are published;
 * ephemeral events (deltas, progress) are only published on the bus. Every
 * canonical event is enough, with the ones before it, to rebuild the history a
 * provider sees and the updates a client was shown.
 */
import * as Schema from "effect/Schema"
import type * as Questions from "../session/Questions.ts"

// ---------------------------------------------------------------------------
// Content the user sends and the model produces
// ---------------------------------------------------------------------------

/** A block of user input, as received from a presenter (a subset of ACP content). */
export const UserBlock = Schema.Union([
  Schema.Struct({ type: Schema.Literal("text"), text: Schema.String }),
  Schema.Struct({
    type: Schema.Literal("resource_link"),
    uri: Schema.String,
    name: Schema.String,
    mimeType: Schema.optionalKey(Schema.String),
    title: Schema.optionalKey(Schema.String),
    description: Schema.optionalKey(Schema.String),
    size: Schema.optionalKey(Schema.Number)
  }),
  Schema.Struct({ type: Schema.Literal("image"), data: Schema.String, mimeType: Schema.String, uri: Schema.optionalKey(Schema.String) }),
  Schema.Struct({
    type: Schema.Literal("resource"),
    uri: Schema.String,
    mimeType: Schema.optionalKey(Schema.String),
    text: Schema.optionalKey(Schema.String),
    blob: Schema.optionalKey(Schema.String)
  })
])
export type UserBlock = typeof UserBlock.Type

/** One part of a model response, in the order the model produced it. */
export const AssistantPart = Schema.Union([
  Schema.Struct({ type: Schema.Literal("text"), text: Schema.String }),
  Schema.Struct({ type: Schema.Literal("thinking"), text: Schema.String, signature: Schema.optionalKey(Schema.String) }),
  Schema.Struct({ type: Schema.Literal("tool_call"), id: Schema.String, name: Schema.String, args: Schema.Unknown })
])
export type AssistantPart = typeof AssistantPart.Type

export const Usage = Schema.Struct({
  input: Schema.Number,
  output: Schema.Number,
  cached: Schema.optionalKey(Schema.Number)
})
export type Usage = typeof Usage.Type

/** Why a model call ended. `tool_use` means the turn goes on with tool results. */
export const ModelStop = Schema.Literals(["end_turn", "tool_use", "max_tokens", "refusal", "error", "cancelled"])
export type ModelStop = typeof ModelStop.Type

/** Why a turn ended, as ACP names it. */
export const StopReason = Schema.Literals(["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"])
export type StopReason = typeof StopReason.Type

export const ToolKind = Schema.Literals(["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"])
export type ToolKind = typeof ToolKind.Type

export const Location = Schema.Struct({ path: Schema.String, line: Schema.optionalKey(Schema.Number) })
export type Location = typeof Location.Type

/** What presenters show of a tool result beyond its text: a diff, a command's output. */
export const ToolDetails = Schema.Struct({
  diff: Schema.optionalKey(Schema.Array(Schema.Struct({ path: Schema.String, oldText: Schema.NullOr(Schema.String), newText: Schema.String }))),
  exitCode: Schema.optionalKey(Schema.NullOr(Schema.Number)),
  output: Schema.optionalKey(Schema.String),
  truncated: Schema.optionalKey(Schema.Boolean),
  /** The client terminal the command ran in (live presenters keep showing it; a replay shows `output`). */
  terminalId: Schema.optionalKey(Schema.String)
})
export type ToolDetails = typeof ToolDetails.Type

// ---------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------

const event = <T extends string, F extends Schema.Struct.Fields>(type: T, data: F) =>
  Schema.Struct({ type: Schema.Literal(type), data: Schema.Struct(data) })

/** A prompt was accepted and its turn started. */
export const TurnStart = event("turn_start", { content: Schema.Array(UserBlock) })
/** One model call finished (or was cut short); holds everything needed to re-drive it. */
export const ModelResponse = event("model_response", {
  call: Schema.Number,
  parts: Schema.Array(AssistantPart),
  usage: Schema.optionalKey(Usage),
  stop: ModelStop,
  error: Schema.optionalKey(Schema.String)
})
/**
 * Text and thinking a model call has streamed so far, logged as the call goes (at a bounded
 * rate, never per delta), so that a crash loses at most the last moments of what the user
 * saw. `parts` is what came since the call's previous `model_partial`: a part of the same
 * kind as the last one goes on from it (tool calls are not in it). The call's `model_response`,
 * when there is one, holds all of it and supersedes these; one that never came (a crash) is
 * rebuilt from them when the session is loaded again.
 */
export const ModelPartial = event("model_partial", {
  call: Schema.Number,
  parts: Schema.Array(Schema.Union([
    Schema.Struct({ type: Schema.Literal("text"), text: Schema.String }),
    Schema.Struct({ type: Schema.Literal("thinking"), text: Schema.String, signature: Schema.optionalKey(Schema.String) })
  ]))
})
/** The model asked for a tool; logged before it runs. */
export const ToolCall = event("tool_call", {
  id: Schema.String,
  name: Schema.String,
  args: Schema.Unknown,
  title: Schema.String,
  kind: ToolKind,
  locations: Schema.optionalKey(Schema.Array(Location))
})
/** A tool call ended: its result for the model and details for presenters (and the call's title again). */
export const ToolResult = event("tool_result", {
  id: Schema.String,
  title: Schema.optionalKey(Schema.String),
  ok: Schema.Boolean,
  content: Schema.String,
  details: Schema.optionalKey(ToolDetails)
})
/** The turn ended; `error` is the text the user was shown when it failed. */
export const TurnEnd = event("turn_end", {
  stopReason: StopReason,
  error: Schema.optionalKey(Schema.String)
})
export const ModeChanged = event("mode_changed", { mode: Schema.String })
export const ConfigChanged = event("config_changed", { id: Schema.String, value: Schema.String })
export const Plan = event("plan", {
  entries: Schema.Array(Schema.Struct({
    content: Schema.String,
    status: Schema.Literals(["pending", "in_progress", "completed"]),
    priority: Schema.Literals(["high", "medium", "low"])
  }))
})

export const PermissionRule = Schema.Struct({
  decision: Schema.Literals(["allow", "reject"]),
  kind: Schema.Literals(["path", "command", "tool"]),
  value: Schema.String,
  label: Schema.String
})
export type PermissionRule = typeof PermissionRule.Type
/** The user's answer to a permission request; an "always" answer carries the rule it made. */
export const Permission = event("permission", {
  toolCallId: Schema.String,
  outcome: Schema.Literals(["allow_once", "allow_always", "reject_once", "reject_always", "cancelled", "timeout", "unanswerable"]),
  rule: Schema.optionalKey(PermissionRule)
})

/**
 * Something the user is told once that is neither the model's text nor a tool
 * result, e.g. that an MCP server failed. Logged in the turn it was shown in;
 * presenters show it as agent text; the model never sees it.
 */
export const Notice = event("notice", { text: Schema.String, source: Schema.optionalKey(Schema.String) })

/**
 * The MCP servers the session uses from now on (session-level, `turn: null`).
 * Only what identifies them: the settings with their secrets (env and header
 * values, args, full URLs) are in `<id>.mcp.json` beside the log (mode 0600).
 */
export const McpServers = event("mcp_servers", {
  servers: Schema.Array(Schema.Struct({
    name: Schema.String,
    transport: Schema.Literals(["stdio", "http", "sse"]),
    command: Schema.optionalKey(Schema.String),
    url: Schema.optionalKey(Schema.String),
    env: Schema.optionalKey(Schema.Array(Schema.String)),
    headers: Schema.optionalKey(Schema.Array(Schema.String))
  }))
})

export const CanonicalBody = Schema.Union([
  TurnStart,
  ModelPartial,
  ModelResponse,
  ToolCall,
  ToolResult,
  TurnEnd,
  ModeChanged,
  ConfigChanged,
  Plan,
  Permission,
  Notice,
  McpServers
])
export type CanonicalBody = typeof CanonicalBody.Type

/**
 * Ephemeral bodies: shown live, never logged (the canonical events hold their sum, and a
 * question's answer is logged as what it decided: a `permission`, a tool result).
 *
 * Questions (`permission_asked`, `client_call`) are for whoever presents the turn: it answers
 * with `Session.answer(requestId, …)`. They travel on the bus in order with everything else,
 * so a presenter shows a question only after the updates that led to it. A question the
 * session stops waiting for (cancel, timeout) is followed by `question_withdrawn`.
 */
export type EphemeralBody =
  | { readonly type: "text_delta"; readonly data: { readonly text: string } }
  | { readonly type: "thinking_delta"; readonly data: { readonly text: string } }
  | { readonly type: "tool_running"; readonly data: { readonly id: string } }
  | { readonly type: "tool_progress"; readonly data: { readonly id: string; readonly output: string } }
  /** After a model call: the context it used (`used` of the window's `size` tokens) and the session's cost so far (USD). */
  | { readonly type: "usage"; readonly data: { readonly used: number; readonly size: number; readonly cost?: number } }
  | { readonly type: "permission_asked"; readonly data: Questions.PermissionAsked }
  | { readonly type: "client_call"; readonly data: Questions.ClientCall }
  | { readonly type: "question_withdrawn"; readonly data: { readonly requestId: string } }
  /** A command of this tool call runs in the client's terminal `terminalId`. */
  | { readonly type: "tool_terminal"; readonly data: { readonly id: string; readonly terminalId: string } }

export type EventBody = CanonicalBody | EphemeralBody
export type EventType = EventBody["type"]

const ephemeralTypes: ReadonlySet<string> = new Set([
  "text_delta",
  "thinking_delta",
  "tool_running",
  "tool_progress",
  "usage",
  "permission_asked",
  "client_call",
  "question_withdrawn",
  "tool_terminal"
])
export const isEphemeral = (body: EventBody): body is EphemeralBody => ephemeralTypes.has(body.type)

/** An event as it travels on the bus: stamped with its session, sequence, time and turn. */
export type SessionEvent<B extends EventBody = EventBody> = B & {
  readonly sessionId: string
  /** Canonical: its own number. Ephemeral: the number of the last canonical event. */
  readonly seq: number
  /** Milliseconds since the epoch. */
  readonly ts: number
  /** The turn it belongs to, or null for session-level events between turns. */
  readonly turn: number | null
}

export type Canonical = SessionEvent<CanonicalBody>
export type Ephemeral = SessionEvent<EphemeralBody>

/** One line of the log after the header. */
export const LogLine = Schema.Struct({
  seq: Schema.Number,
  ts: Schema.Number,
  turn: Schema.NullOr(Schema.Number),
  type: Schema.String,
  data: Schema.Unknown
})

/** The log format. 2: `model_partial` events (a Skein that reads only v1 would refuse them). */
export const LOG_VERSION = 2

/** Line 1 of a log file. */
export const LogHeader = Schema.Struct({
  type: Schema.Literal("session"),
  v: Schema.Number,
  id: Schema.String,
  cwd: Schema.String,
  created: Schema.Number,
  mode: Schema.optionalKey(Schema.String),
  additionalDirectories: Schema.optionalKey(Schema.Array(Schema.String)),
  skein: Schema.optionalKey(Schema.String)
})
export type LogHeader = typeof LogHeader.Type

/** The text of a user prompt, as the model and a transcript see it. */
export const promptText = (content: ReadonlyArray<UserBlock>): string =>
  content
    .map((block) => {
      switch (block.type) {
        case "text":
          return block.text
        case "resource_link":
          return `[${block.name}](${block.uri})`
        case "resource":
          return block.text !== undefined ? `<resource uri="${block.uri}">\n${block.text}\n</resource>` : `[resource ${block.uri}]`
        case "image":
          return "[image]"
      }
    })
    .join("\n")
