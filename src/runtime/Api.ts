/**
 * The Runtime's interface: the service every presenter uses (the ACP server, `skein run`, an
 * embedding Effect program, a program in another process through `Skein.remote`), its options
 * and its error, as Schemas where they cross a process. The local implementation, and
 * everything it loads (the log, tools, providers, MCP), is in `Runtime.ts`; a presenter that
 * only names the service (the ACP server answering `initialize`) does not load it.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Lazy from "../Lazy.ts"
import type * as Stream from "effect/Stream"
import { type Canonical, LogHeader, type SessionEvent } from "../log/Event.ts"
import type { Catalog } from "../providers/Models.ts"
import type { Session, SessionInfo } from "../session/Protocol.ts"
import { McpServer } from "../Vocabulary.ts"

export class RuntimeError extends Schema.TaggedError<RuntimeError>()("RuntimeError", {
  reason: Schema.Literals(["not_found", "invalid_cwd", "invalid_mode", "invalid_request", "locked", "log", "unavailable", "limit"]),
  message: Schema.String
}) {}

export const NewSessionOptions = Lazy.schema("NewSessionOptions", () => Schema.Struct({
  /** Absolute working directory of the session. */
  cwd: Schema.String,
  additionalDirectories: Schema.optionalKey(Schema.Array(Schema.String)),
  mode: Schema.optionalKey(Schema.String),
  /** MCP servers (ACP shapes) started in the background for the session; their tools join it once listed. */
  mcpServers: Schema.optionalKey(Schema.Array(McpServer))
}))
export type NewSessionOptions = typeof NewSessionOptions.Type

export const LoadSessionOptions = Lazy.schema("LoadSessionOptions", () => Schema.Struct({
  sessionId: Schema.String,
  /** When given, must be the session's working directory. */
  cwd: Schema.optionalKey(Schema.String),
  /** The session's additional directories from now on (default: those it was created with). */
  additionalDirectories: Schema.optionalKey(Schema.Array(Schema.String)),
  /**
   * MCP servers for the session. None (or an empty list): the ones it used last time, as
   * recorded beside its log. Ignored when the session is already live.
   */
  mcpServers: Schema.optionalKey(Schema.Array(McpServer))
}))
export type LoadSessionOptions = typeof LoadSessionOptions.Type

export const ForkSessionOptions = Lazy.schema("ForkSessionOptions", () => Schema.Struct({
  /** The session to fork (a top-level session: a child is driven by its parent, and is not forked). */
  sessionId: Schema.String,
  /**
   * The turn the fork ends with (0: before the first turn). Default: the last turn, or the one
   * before it while the last one still runs.
   */
  turn: Schema.optionalKey(Schema.Number),
  /** The fork's working directory (absolute; default: the session's). */
  cwd: Schema.optionalKey(Schema.String),
  /** The fork's additional directories (default: the session's). */
  additionalDirectories: Schema.optionalKey(Schema.Array(Schema.String))
}))
export type ForkSessionOptions = typeof ForkSessionOptions.Type

/** A loaded session and the events of its log (what `session/load` replays). */
export interface LoadedSession {
  readonly session: Session
  readonly events: ReadonlyArray<Canonical>
}

/** A session's log as read from disk, without loading it. */
export const SessionRecord = Lazy.schema("SessionRecord", () => Schema.Struct({
  header: LogHeader,
  events: Schema.Array(Schema.Unknown),
  /** Where it is stored (a path, for people). */
  file: Schema.String
}))
export interface SessionRecord {
  readonly header: LogHeader
  readonly events: ReadonlyArray<Canonical>
  readonly file: string
}

/** One logged session, as `listSessions` gives it. */
export const SessionSummary = Lazy.schema("SessionSummary", () => Schema.Struct({
  id: Schema.String,
  cwd: Schema.String,
  additionalDirectories: Schema.Array(Schema.String),
  /** The first prompt's first line, when there was one. */
  title: Schema.UndefinedOr(Schema.String),
  created: Schema.Number,
  /** When its log last changed (ms since the epoch). */
  updatedAt: Schema.Number,
  version: Schema.Number,
  /** A child session's parent. */
  parent: Schema.optionalKey(Schema.String),
  /** The agent a child session runs as (where the store records it). */
  agent: Schema.optionalKey(Schema.String),
  /** The session this one was forked from. */
  forkedFrom: Schema.optionalKey(Schema.String)
}))
export type SessionSummary = typeof SessionSummary.Type

export const SessionPage = Lazy.schema("SessionPage", () => Schema.Struct({
  sessions: Schema.Array(SessionSummary),
  nextCursor: Schema.UndefinedOr(Schema.String)
}))
export type SessionPage = typeof SessionPage.Type

export const ListQuery = Lazy.schema("ListQuery", () => Schema.Struct({
  /** Only sessions whose cwd is this directory. */
  cwd: Schema.optionalKey(Schema.UndefinedOr(Schema.String)),
  cursor: Schema.optionalKey(Schema.UndefinedOr(Schema.String)),
  limit: Schema.optionalKey(Schema.UndefinedOr(Schema.Number)),
  /** Child sessions (subagents) too (default: top-level sessions only). */
  children: Schema.optionalKey(Schema.UndefinedOr(Schema.Boolean))
}))
export type ListQuery = typeof ListQuery.Type

export class Runtime extends Context.Service<Runtime, {
  /**
   * A new session. `as.id` gives its id (a cluster names a session before it lives anywhere);
   * by default a new one.
   */
  readonly newSession: (options: NewSessionOptions, as?: { readonly id: string }) => Effect.Effect<Session, RuntimeError>
  /**
   * Makes a logged session live again (it takes the log's lock): mode, config and remembered
   * permissions as they were. A session already live is returned as it is.
   */
  readonly loadSession: (options: LoadSessionOptions) => Effect.Effect<LoadedSession, RuntimeError>
  /**
   * A new session whose log starts as the session's did, up to the end of a turn: its header
   * says where it came from (`forkedFrom`), and the session's own log is not changed. The
   * fork is written, not opened: `loadSession` makes it live.
   */
  readonly forkSession: (options: ForkSessionOptions) => Effect.Effect<SessionRecord, RuntimeError>
  /** One page of the logged sessions, newest first. */
  readonly listSessions: (query?: ListQuery) => Effect.Effect<SessionPage, RuntimeError>
  /** Reads a session's log without loading it (no lock; works while another process has it open). */
  readonly readSession: (sessionId: string) => Effect.Effect<SessionRecord, RuntimeError>
  /** Closes the session if it is live, then removes its log. An unknown id is not an error. */
  readonly deleteSession: (sessionId: string) => Effect.Effect<void, RuntimeError>
  /**
   * A live session. One the runtime closed to stay within its cap of live sessions comes back
   * (resumed from its log, without replay) when it is asked for.
   */
  readonly getSession: (sessionId: string) => Effect.Effect<Session, RuntimeError>
  /** Stops a live session: cancels its turn, syncs its log, releases its lock, frees its memory. */
  readonly closeSession: (sessionId: string) => Effect.Effect<void>
  /** The live sessions. */
  readonly liveSessions: Effect.Effect<ReadonlyArray<SessionInfo>>
  /** Every event of every session, from the moment the stream is run. */
  readonly events: Stream.Stream<SessionEvent>
  /** The models sessions may switch between, when a provider registry configured them. */
  readonly models: Catalog | undefined
  /** The provider's own context window (tokens), for a model the catalog does not know (the scripted provider's). */
  readonly contextWindow: number | undefined
  /**
   * The slash commands of sessions in `cwd` (built-ins, prompt files, user-invocable skills),
   * for a client's command list (a remote runtime asks its server); absent on one that cannot say.
   */
  readonly commands?: ((cwd: string) => Effect.Effect<ReadonlyArray<CommandInfo>>) | undefined
}>()("skein/runtime/Runtime") {}

/** A slash command as a client lists it. */
export interface CommandInfo {
  readonly name: string
  readonly description: string
  /** What arguments it takes. */
  readonly hint?: string | undefined
}
