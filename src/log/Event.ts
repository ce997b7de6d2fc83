/**
 * The vocabulary of a session's history: the events a session emits.
 *
 * Canonical events are appended to the session log before they are published;
 * ephemeral events (deltas, progress) are only published on the bus. Every
 * canonical event is enough, with the ones before it, to rebuild the history a
 * provider sees and the updates a client was shown.
 */
import * as Schema from "effect/Schema"
import * as Lazy from "../Lazy.ts"
import {
  AssistantPart,
  ClientCall,
  Location,
  ModelStop,
  PermissionAsked,
  StopReason,
  ToolDetails,
  ToolKind,
  Usage,
  UserBlock
} from "../Vocabulary.ts"

// ---------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------

/** The Schema of the event `type` with these `data` fields, built at its first use (`Lazy.schema`). */
const event = <T extends string, F extends Schema.Struct.Fields>(type: T, data: () => F) =>
  Lazy.schema(type, () => Schema.Struct({ type: Schema.Literal(type), data: Schema.Struct(data()) }))

/**
 * A command a prompt ran (`/name arguments`): the content of its `turn_start` is the text the
 * model saw (a prompt file or skill expanded in place of the block that named it), or, for a
 * command the model never sees (`local`: `/compact`, `/undo`), the prompt as the user typed it.
 * `block`: the index of the prompt's block that named it, when not the first.
 */
export const CommandRun = Lazy.schema("CommandRun", () => Schema.Struct({
  name: Schema.String,
  arguments: Schema.String,
  local: Schema.optionalKey(Schema.Boolean),
  block: Schema.optionalKey(Schema.Number)
}))
export type CommandRun = typeof CommandRun.Type

/** A prompt was accepted and its turn started. */
const TurnStart = event("turn_start", () => ({
  content: Schema.Array(UserBlock),
  /** Who presented the turn, when it said (an opaque name: a connection, a program). */
  by: Schema.optionalKey(Schema.String),
  /** The command the prompt ran, when it started with a known `/name`. */
  command: Schema.optionalKey(CommandRun),
  /** The caller's name for this prompt (`TurnOptions.key`): the same key again is this turn, not a new one. */
  key: Schema.optionalKey(Schema.String)
}))
/**
 * One model call finished (or was cut short); holds everything needed to re-drive it.
 * `compaction`: the id of the compaction this call made the summary for (its answer is the
 * summary, never part of the conversation itself).
 */
export const ModelResponse = event("model_response", () => ({
  call: Schema.Number,
  parts: Schema.Array(AssistantPart),
  usage: Schema.optionalKey(Usage),
  stop: ModelStop,
  error: Schema.optionalKey(Schema.String),
  compaction: Schema.optionalKey(Schema.String)
}))
/**
 * Text and thinking a model call has streamed so far, logged as the call goes (at a bounded
 * rate, never per delta), so that a crash loses at most the last moments of what the user
 * saw. `parts` is what came since the call's previous `model_partial`: a part of the same
 * kind as the last one goes on from it (tool calls are not in it). The call's `model_response`,
 * when there is one, holds all of it and supersedes these; one that never came (a crash) is
 * rebuilt from them when the session is loaded again.
 */
const ModelPartial = event("model_partial", () => ({
  call: Schema.Number,
  parts: Schema.Array(Schema.Union([
    Schema.Struct({ type: Schema.Literal("text"), text: Schema.String }),
    Schema.Struct({ type: Schema.Literal("thinking"), text: Schema.String, signature: Schema.optionalKey(Schema.String) })
  ]))
}))
/** The model asked for a tool; logged before it runs. */
export const ToolCall = event("tool_call", () => ({
  id: Schema.String,
  name: Schema.String,
  args: Schema.Unknown,
  title: Schema.String,
  kind: ToolKind,
  locations: Schema.optionalKey(Schema.Array(Location))
}))
/**
 * How a tool call ended (`ok`, what the model is told, is true only for `done`):
 * - `done`: it ran and succeeded; `failed`: it ran and failed, or could not start (bad
 *   arguments, an unknown tool);
 * - `denied`: a permission (a question, a rule, the mode) refused it: it never ran;
 * - `cancelled`: the user cancelled the turn before it ended;
 * - `not_run`: the turn failed before it ran;
 * - `not_logged`: the log refused its result, so what it did is unknown;
 * - `interrupted`: Skein stopped (a crash, a kill) before it ended;
 * - `unfinished`: an external agent ended its turn before this call did.
 */
export const ToolStatus = Lazy.schema("ToolStatus", () => Schema.Literals(["done", "failed", "denied", "cancelled", "not_run", "not_logged", "interrupted", "unfinished"]))
export type ToolStatus = typeof ToolStatus.Type

/** A tool call ended: its result for the model and details for presenters (and the call's title again). */
export const ToolResult = event("tool_result", () => ({
  id: Schema.String,
  title: Schema.optionalKey(Schema.String),
  ok: Schema.Boolean,
  /** How it ended; code decides by this, never by the text. */
  status: ToolStatus,
  content: Schema.String,
  details: Schema.optionalKey(ToolDetails)
}))
/** The turn ended; `error` is the text the user was shown when it failed. */
const TurnEnd = event("turn_end", () => ({
  stopReason: StopReason,
  error: Schema.optionalKey(Schema.String)
}))
const ModeChanged = event("mode_changed", () => ({ mode: Schema.String }))
const ConfigChanged = event("config_changed", () => ({ id: Schema.String, value: Schema.String }))
const Plan = event("plan", () => ({
  entries: Schema.Array(Schema.Struct({
    content: Schema.String,
    status: Schema.Literals(["pending", "in_progress", "completed"]),
    priority: Schema.Literals(["high", "medium", "low"])
  }))
}))

export const PermissionRule = Lazy.schema("PermissionRule", () => Schema.Struct({
  decision: Schema.Literals(["allow", "reject"]),
  kind: Schema.Literals(["path", "command", "tool", "host"]),
  value: Schema.String,
  label: Schema.String
}))
export type PermissionRule = typeof PermissionRule.Type
/** The user's answer to a permission request; an "always" answer carries the rule it made. */
const Permission = event("permission", () => ({
  toolCallId: Schema.String,
  outcome: Schema.Literals(["allow_once", "allow_always", "reject_once", "reject_always", "cancelled", "timeout", "unanswerable"]),
  rule: Schema.optionalKey(PermissionRule)
}))

/**
 * Something the user is told once that is neither the model's text nor a tool
 * result, e.g. that an MCP server failed. Logged in the turn it was shown in;
 * presenters show it as agent text; the model never sees it.
 */
const Notice = event("notice", () => ({ text: Schema.String, source: Schema.optionalKey(Schema.String) }))

/**
 * The MCP servers the session uses from now on (session-level, `turn: null`).
 * Only what identifies them: the settings with their secrets (env and header
 * values, args, full URLs) are in the session's `mcp` side record (the file
 * store: `<id>.mcp.json` beside the log, mode 0600).
 */
const McpServers = event("mcp_servers", () => ({
  servers: Schema.Array(Schema.Struct({
    name: Schema.String,
    transport: Schema.Literals(["stdio", "http", "sse"]),
    command: Schema.optionalKey(Schema.String),
    url: Schema.optionalKey(Schema.String),
    env: Schema.optionalKey(Schema.Array(Schema.String)),
    headers: Schema.optionalKey(Schema.Array(Schema.String))
  }))
}))

/** What became of a child session (a subagent), as its parent saw it. */
export const ChildState = Lazy.schema("ChildState", () => Schema.Literals(["running", "idle", "failed", "timed_out", "cancelled", "closed"]))
export type ChildState = typeof ChildState.Type

/**
 * A child session of this one (a subagent), logged by the parent in the turn that runs it:
 * - `spawned`: it was started (before any of its traffic) by the tool call `toolCallId`, as
 *   `agent`, with `task`, in a `shared` or `isolated` workspace (then on `branch`);
 * - `state`: it started working again (another prompt);
 * - `result`: a prompt of it ended: its `state`, `stopReason`, final `answer` or `error`;
 * - `closed`: it is closed (its worktree's `branch` and `diff` summary, when isolated);
 * - `input`: the results of children the model had not read yet, given to it as its next
 *   input (`text`) when it stopped while they ran. The only kind the model's history sees.
 */
const Subagent = event("subagent", () => ({
  event: Schema.Literals(["spawned", "state", "result", "closed", "input"]),
  /** The child's session id (for `input`: the children it reports, comma-separated). */
  id: Schema.String,
  toolCallId: Schema.optionalKey(Schema.String),
  agent: Schema.optionalKey(Schema.String),
  task: Schema.optionalKey(Schema.String),
  workspace: Schema.optionalKey(Schema.Literals(["shared", "isolated"])),
  state: Schema.optionalKey(ChildState),
  stopReason: Schema.optionalKey(StopReason),
  answer: Schema.optionalKey(Schema.String),
  error: Schema.optionalKey(Schema.String),
  branch: Schema.optionalKey(Schema.String),
  diff: Schema.optionalKey(Schema.String),
  text: Schema.optionalKey(Schema.String)
}))

/**
 * The conversation up to here was compacted: from now on the model sees the system prompt,
 * `summaryForModel`, then the events from `keepFromSeq` on (the summarised ones are
 * `fromSeq`..`toSeq`). The log keeps every event; this only changes what the model is sent.
 * `usageBefore`/`usageAfter`: the input tokens of the model's view before and after (estimated).
 */
const Compaction = event("compaction", () => ({
  id: Schema.String,
  trigger: Schema.Literals(["manual", "threshold", "overflow"]),
  fromSeq: Schema.Number,
  toSeq: Schema.Number,
  keepFromSeq: Schema.Number,
  /** The sha256 of the summary prompt (its version's text) the summary was made with. */
  promptHash: Schema.String,
  summaryForModel: Schema.String,
  summaryForUser: Schema.String,
  usageBefore: Schema.Number,
  usageAfter: Schema.Number,
  /** What the user asked the summary to focus on (`/compact focus`). */
  focus: Schema.optionalKey(Schema.String),
  /** The model's context window (tokens) it was measured against, when known (a re-run uses it again). */
  window: Schema.optionalKey(Schema.Number)
}))

/** The model loaded a skill (its `skill` tool): the body it read, and that body's sha256. */
const SkillActivation = event("skill_activation", () => ({
  name: Schema.String,
  path: Schema.String,
  sha256: Schema.String,
  body: Schema.String
}))

/**
 * Content the user sent while the turn ran (steering), given to the model at this point:
 * after the tool calls then running, before the next model call.
 */
const TurnInput = event("turn_input", () => ({ content: Schema.Array(UserBlock) }))

/**
 * `/undo`: the file changes of turn `turn`'s `write`/`edit` calls were reverted (`restored`:
 * the files written back; `removed`: files the turn had created), or it was refused (`refused`:
 * why; nothing was changed).
 */
const Undo = event("undo", () => ({
  turn: Schema.Number,
  restored: Schema.Array(Schema.String),
  removed: Schema.Array(Schema.String),
  refused: Schema.optionalKey(Schema.String)
}))

/** The events hooks run at (`src/hooks/Settings.ts`). */
export const HookEventName = Lazy.schema("HookEventName", () => Schema.Literals(["PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SessionStart"]))

/**
 * A hook command that ran, and what it decided (`src/hooks/Decision.ts`): `decision` (`none`,
 * `allow`, `ask`, `deny`, `block`), `reason` (what the model read: a denial, why it must go on),
 * `context` (text added to the model's view), `message` (what the user was told), `stop` (the
 * turn stopped: why). `toolCallId`: the call of a tool event. One event per command, logged in
 * the turn it ran in; the hooks of one point are consecutive. `skein replay --rerun` uses these
 * decisions instead of running the commands again.
 */
export const Hook = event("hook", () => ({
  event: HookEventName,
  command: Schema.String,
  decision: Schema.Literals(["none", "allow", "ask", "deny", "block"]),
  toolCallId: Schema.optionalKey(Schema.String),
  reason: Schema.optionalKey(Schema.String),
  context: Schema.optionalKey(Schema.String),
  message: Schema.optionalKey(Schema.String),
  stop: Schema.optionalKey(Schema.String)
}))

/**
 * The workspace as it was at a point of turn `turn`, kept in the session's shadow repository
 * (`$SKEIN_HOME/checkpoints/<sessionId>.git`, never the user's own repository):
 * `at: "before"` the turn's first change (the first call that may change files was allowed;
 * a child's in a shared workspace counts), `"after"` its end. `id`: the commit, which holds
 * root `i` of `roots` as its folder `i`; `skipped`: files left out for their size.
 */
export const Checkpoint = event("checkpoint", () => ({
  turn: Schema.Number,
  at: Schema.Literals(["before", "after"]),
  id: Schema.String,
  roots: Schema.Array(Schema.String),
  skipped: Schema.optionalKey(Schema.Array(Schema.String))
}))

/**
 * `/rewind`: the files and the conversation went back to before turn `toTurn`. The model's
 * view drops what was logged from `fromSeq` (that turn's `turn_start`) on; nothing is deleted
 * from the log. `checkpoint`: the one the files were restored from (none: no turn since
 * changed any); `restored`/`removed`: files written back / deleted (absolute); `skipped`:
 * files left as they were (changed by something else and kept, or too large to be in the
 * checkpoint). `unrestored`: turns from `toTurn` on that changed files with no checkpoint before
 * them (it could not be taken: see their notice), whose changes were left as they are.
 * `refused`: why nothing was done (then nothing changed, files nor conversation).
 */
export const Rewound = event("rewound", () => ({
  toTurn: Schema.Number,
  fromSeq: Schema.Number,
  checkpoint: Schema.optionalKey(Schema.String),
  restored: Schema.Array(Schema.String),
  removed: Schema.Array(Schema.String),
  skipped: Schema.Array(Schema.String),
  unrestored: Schema.optionalKey(Schema.Array(Schema.Number)),
  refused: Schema.optionalKey(Schema.String)
}))

export const CanonicalBody = Lazy.schema("CanonicalBody", () => Schema.Union([
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
  McpServers,
  Subagent,
  Compaction,
  SkillActivation,
  TurnInput,
  Undo,
  Hook,
  Checkpoint,
  Rewound
]))
export type CanonicalBody = typeof CanonicalBody.Type

/**
 * Ephemeral bodies: shown live, never logged (the canonical events hold their sum, and a
 * question's answer is logged as what it decided: a `permission`, a tool result).
 *
 * Questions (`permission_asked`, `client_call`) are for whoever presents the turn: it answers
 * with `Session.answer(requestId, …)`. They travel on the bus in order with everything else,
 * so a presenter shows a question only after the updates that led to it. A question the
 * session stops waiting for (cancel, timeout, its presenter gone) is followed by
 * `question_withdrawn`.
 */
const TextDelta = event("text_delta", () => ({ text: Schema.String }))
const ThinkingDelta = event("thinking_delta", () => ({ text: Schema.String }))
const ToolRunning = event("tool_running", () => ({ id: Schema.String }))
/** The running output of a tool call so far (the whole bounded buffer each time). */
const ToolProgress = event("tool_progress", () => ({ id: Schema.String, output: Schema.String }))
/** The context a model call used (`used` of the window's `size` tokens) and the session's cost so far (USD). */
export const UsageShown = Lazy.schema("UsageShown", () => Schema.Struct({ used: Schema.Number, size: Schema.Number, cost: Schema.optionalKey(Schema.Number) }))
export type UsageShown = typeof UsageShown.Type
/** After a model call: its `UsageShown`. Not logged: a loaded session derives the last one from its log (`runtime/Usage.ts`). */
const UsageUpdate = Lazy.schema("UsageUpdate", () => Schema.Struct({ type: Schema.Literal("usage"), data: UsageShown }))
const PermissionAskedEvent = Lazy.schema("PermissionAskedEvent", () => Schema.Struct({ type: Schema.Literal("permission_asked"), data: PermissionAsked }))
const ClientCallEvent = Lazy.schema("ClientCallEvent", () => Schema.Struct({ type: Schema.Literal("client_call"), data: ClientCall }))
/** A question nobody needs to answer any more: withdrawn, or `answered` (by whoever answered first). */
const QuestionWithdrawn = event("question_withdrawn", () => ({ requestId: Schema.String, answered: Schema.optionalKey(Schema.Boolean) }))
/** A command of this tool call runs in the client's terminal `terminalId`. */
const ToolTerminal = event("tool_terminal", () => ({ id: Schema.String, terminalId: Schema.String }))

/**
 * An event of a child session, published again by its parent (in the parent's turn), so
 * whoever presents the parent presents its children too: their updates, and their questions
 * (answered on the child). `event` is the child's `SessionEvent` as it was published.
 */
const ChildEvent = event("child_event", () => ({ event: Schema.Unknown }))

/** A compaction started (its `compaction` event, or a failed `model_response` with its id, ends it). */
const Compacting = event("compacting", () => ({ id: Schema.String, trigger: Schema.Literals(["manual", "threshold", "overflow"]) }))

/**
 * The turn ended, but the session's log refused its end (a full disk, an I/O error, or another
 * Skein took the session over): no `turn_end` was published. Whoever presents the turn ends it
 * here, as at a `turn_end`: a cancelled turn as cancelled, any other as a failure that says
 * `error`. The turn's end is logged (and its `turn_end` published) once the store takes
 * writes again, before anything else of the session; a session taken over is closed instead.
 */
const TurnAborted = event("turn_aborted", () => ({ stopReason: StopReason, error: Schema.String }))

export const EphemeralBody = Lazy.schema("EphemeralBody", () => Schema.Union([
  TextDelta,
  ThinkingDelta,
  ToolRunning,
  ToolProgress,
  UsageUpdate,
  PermissionAskedEvent,
  ClientCallEvent,
  QuestionWithdrawn,
  ToolTerminal,
  ChildEvent,
  Compacting,
  TurnAborted
]))
export type EphemeralBody = typeof EphemeralBody.Type

export type EventBody = CanonicalBody | EphemeralBody

let ephemeralTypes: ReadonlySet<string> | undefined
export const isEphemeral = (body: EventBody): body is EphemeralBody =>
  (ephemeralTypes ??= new Set(EphemeralBody.members.map((member) => member.fields.type.literal))).has(body.type)

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

/**
 * The log format. 2: `model_partial` events (a Skein that reads only v1 would refuse them).
 * 3: `subagent` events, and child sessions' headers (`parent`, `agent`).
 * 4: `compaction`, `skill_activation`, `turn_input` and `undo` events, `turn_start.command`,
 * `model_response.compaction`, and a forked session's header (`forkedFrom`).
 * 5: `hook`, `checkpoint` and `rewound` events; `tool_result.status` (required; an older log's results
 * get theirs from their texts).
 * A new canonical event type bumps it (with an identity entry in `Migrations.formats`): an older
 * Skein then refuses the log by its header, where it would otherwise call the new lines corrupt.
 */
export const LOG_VERSION = 5

/** Line 1 of a log file. */
export const LogHeader = Lazy.schema("LogHeader", () => Schema.Struct({
  type: Schema.Literal("session"),
  v: Schema.Number,
  id: Schema.String,
  cwd: Schema.String,
  created: Schema.Number,
  mode: Schema.optionalKey(Schema.String),
  additionalDirectories: Schema.optionalKey(Schema.Array(Schema.String)),
  skein: Schema.optionalKey(Schema.String),
  /** A child session's parent: the session, the tool call that started it, and how deep it is (1: a child of a top-level session). */
  parent: Schema.optionalKey(Schema.Struct({ sessionId: Schema.String, toolCallId: Schema.String, depth: Schema.Number })),
  /** The agent a child session runs as (`general`, `explorer`, a custom or external agent). */
  agent: Schema.optionalKey(Schema.String),
  /** A forked session's origin: its events up to the end of `turn` are that session's. */
  forkedFrom: Schema.optionalKey(Schema.Struct({ sessionId: Schema.String, turn: Schema.Number }))
}))
export type LogHeader = typeof LogHeader.Type
