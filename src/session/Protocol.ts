/**
 * The session protocol: the only way anything talks to a session — the ACP server, the
 * terminal, an embedding program, a program in another process, a parent session driving a
 * child. Commands go in, events come out; both are Schemas, so the same protocol runs in
 * process (the local actor) and over `effect/rpc` (`src/remote/`).
 *
 * - `turn(content)` submits a prompt and streams that turn's events, ending after its
 *   `turn_end`. Whoever runs the stream presents the turn: the turn's questions
 *   (`permission_asked`, `client_call`) wait for its `answer`; if the stream stops before the
 *   turn ends (the presenter went away), they are denied and the turn goes on. The next turn
 *   starts once this one has ended *and* its presenter has let go of the stream, so a
 *   presenter finishes showing one turn (an ACP server answers its prompt) before the next
 *   one begins.
 * - `send(command)` for the rest: a `Prompt` sent this way is not presented (its questions
 *   are denied at once); `Cancel` cancels the running turn and every queued one.
 * - `subscribe(fromSeq)` replays the logged events after `fromSeq`, then the live ones, with
 *   none twice: a presenter that reconnects misses nothing that was logged.
 */
import * as Schema from "effect/Schema"
import * as Lazy from "../Lazy.ts"
import type * as Stream from "effect/Stream"
import type { Effect } from "effect/Effect"
import { CanonicalBody, EphemeralBody, type SessionEvent, UsageShown } from "../log/Event.ts"
import { Answer, McpServerStatus, ModeId, StopReason, UserBlock } from "../Vocabulary.ts"

// ---------------------------------------------------------------------------
// Commands in
// ---------------------------------------------------------------------------

export const Prompt = Lazy.schema("Prompt", () => Schema.TaggedStruct("Prompt", { content: Schema.Array(UserBlock) }))
export const Cancel = Lazy.schema("Cancel", () => Schema.TaggedStruct("Cancel", {}))
export const SetMode = Lazy.schema("SetMode", () => Schema.TaggedStruct("SetMode", { mode: Schema.String }))
export const SetConfig = Lazy.schema("SetConfig", () => Schema.TaggedStruct("SetConfig", { id: Schema.String, value: Schema.String }))
/**
 * Content for the running turn, given to the model at its next safe point (after the tool calls
 * running, before the next model call) and logged there as `turn_input`; with no turn running,
 * it starts a new turn nobody presents. `send` answers which (`steering`).
 */
export const Steer = Lazy.schema("Steer", () => Schema.TaggedStruct("Steer", { content: Schema.Array(UserBlock) }))
export const AnswerQuestion = Lazy.schema("AnswerQuestion", () => Schema.TaggedStruct("Answer", { requestId: Schema.String, answer: Answer }))
export const Close = Lazy.schema("Close", () => Schema.TaggedStruct("Close", {}))

export const Command = Lazy.schema("Command", () => Schema.Union([Prompt, Cancel, SetMode, SetConfig, Steer, AnswerQuestion, Close]))
export type Command = typeof Command.Type

/** What `send` answers: the number of the turn a `Prompt` (or a `Steer`) was given, and what a `Steer` did. */
export const SendResult = Lazy.schema("SendResult", () => Schema.Struct({
  turn: Schema.optionalKey(Schema.Number),
  steering: Schema.optionalKey(Schema.Literals(["injected", "startedNewTurn"]))
}))
export type SendResult = typeof SendResult.Type

// ---------------------------------------------------------------------------
// What a session is
// ---------------------------------------------------------------------------

/** A child session's place: its parent session, the tool call that started it, its depth (1: a child of a top-level session). */
export const ParentLink = Lazy.schema("ParentLink", () => Schema.Struct({ sessionId: Schema.String, toolCallId: Schema.String, depth: Schema.Number }))
export type ParentLink = typeof ParentLink.Type

export const SessionInfo = Lazy.schema("SessionInfo", () => Schema.Struct({
  id: Schema.String,
  cwd: Schema.String,
  additionalDirectories: Schema.Array(Schema.String),
  created: Schema.Number,
  /** Set for a child session (a subagent): driven by its parent, never prompted or loaded directly. */
  parent: Schema.optionalKey(ParentLink),
  /** The agent a child session runs as. */
  agent: Schema.optionalKey(Schema.String)
}))
export type SessionInfo = typeof SessionInfo.Type

/**
 * The session's choices: its mode, model (catalog key) and reasoning effort; and `usage`, what
 * its last usage update showed (a loaded session's: derived from its log), so a presenter that
 * opens the session can show it again.
 */
export const Settings = Lazy.schema("Settings", () => Schema.Struct({
  mode: ModeId,
  model: Schema.optionalKey(Schema.String),
  effort: Schema.optionalKey(Schema.String),
  usage: Schema.optionalKey(UsageShown)
}))
export type Settings = typeof Settings.Type

export const TurnOutcome = Lazy.schema("TurnOutcome", () => Schema.Struct({
  stopReason: StopReason,
  /** The text the user was shown when the turn failed. */
  error: Schema.optionalKey(Schema.String)
}))
export type TurnOutcome = typeof TurnOutcome.Type

/** What the presenter's client offers to tools (ACP `fs/*`, `terminal/*`). */
export const Capabilities = Lazy.schema("Capabilities", () => Schema.Struct({
  readTextFile: Schema.Boolean,
  writeTextFile: Schema.Boolean,
  terminal: Schema.Boolean
}))
export type Capabilities = typeof Capabilities.Type

export const TurnOptions = Lazy.schema("TurnOptions", () => Schema.Struct({
  /** What the presenter's client offers the turn's tools (default: nothing). */
  client: Schema.optionalKey(Capabilities),
  /** An opaque name of the presenter, logged with the turn (`turn_start.by`), so others can tell it apart. */
  by: Schema.optionalKey(Schema.String),
  /** Nobody will answer: the turn's questions are denied at once (logged as `unanswerable`). */
  unattended: Schema.optionalKey(Schema.Boolean),
  /**
   * The caller's name for this prompt, unique to it (logged as `turn_start.key`). A `turn` with a
   * key the session already started a turn with does not start another: it streams that turn's
   * events (from its log, then live) — so a request sent again after its connection or its
   * runner died never runs a prompt twice.
   */
  key: Schema.optionalKey(Schema.String),
  /**
   * The caller's W3C trace context (`traceparent`): the turn's span continues that trace (an
   * editor's `_meta.traceparent`, a parent session's tool call). Ignored when malformed.
   */
  traceparent: Schema.optionalKey(Schema.String)
}))
export type TurnOptions = typeof TurnOptions.Type

export class SessionError extends Schema.TaggedError<SessionError>()("SessionError", {
  reason: Schema.Literals(["closed", "invalid_mode", "invalid_config", "unknown_request", "unsupported", "log", "unavailable"]),
  message: Schema.String
}) {}

// ---------------------------------------------------------------------------
// Events out
// ---------------------------------------------------------------------------

const stamp = {
  sessionId: Schema.String,
  seq: Schema.Number,
  ts: Schema.Number,
  turn: Schema.NullOr(Schema.Number)
}

/** Every event a session emits, canonical (logged) and ephemeral, as it travels. */
export const Event: Schema.Codec<SessionEvent> = Lazy.schema("Event", () => Schema.Union(
  [...CanonicalBody.members, ...EphemeralBody.members].map((member) => Schema.Struct({ ...member.fields, ...stamp }))
) as unknown as Schema.Codec<SessionEvent>)

// ---------------------------------------------------------------------------
// The handle
// ---------------------------------------------------------------------------

export interface Session extends SessionInfo {
  /** In a cluster (`skein serve --cluster`): the runner that held the session when this handle was made (`host:port`). */
  readonly runner?: string | undefined
  /** Submits `content` as a prompt and streams its turn, presented by the caller (see the module note). */
  readonly turn: (content: ReadonlyArray<UserBlock>, options?: TurnOptions) => Stream.Stream<SessionEvent, SessionError>
  readonly send: (command: Command) => Effect<SendResult, SessionError>
  /** A turn nobody presents (its questions are denied at once), to its outcome. */
  readonly prompt: (content: ReadonlyArray<UserBlock>) => Effect<TurnOutcome, SessionError>
  /** Cancels the running turn and every queued one. */
  readonly cancel: Effect<void>
  readonly setMode: (mode: string) => Effect<void, SessionError>
  readonly setConfig: (id: string, value: string) => Effect<void, SessionError>
  /** Answers an open question; `unknown_request` when none by that id is open. Never waits behind a turn. */
  readonly answer: (requestId: string, answer: Answer) => Effect<void, SessionError>
  readonly settings: Effect<Settings, SessionError>
  /** This session's events from now on (it ends when the session closes). */
  readonly events: Stream.Stream<SessionEvent>
  /** The logged events after `fromSeq`, then the live ones; none twice. */
  readonly subscribe: (fromSeq: number) => Stream.Stream<SessionEvent, SessionError>
  /** The session's MCP servers as they are now. */
  readonly mcpServers: Effect<ReadonlyArray<McpServerStatus>, SessionError>
}

/** The outcome a turn's `turn_end` event reports. */
export const outcomeOf = (event: SessionEvent): TurnOutcome | undefined =>
  event.type === "turn_end"
    ? { stopReason: event.data.stopReason, ...(event.data.error !== undefined ? { error: event.data.error } : {}) }
    : undefined
