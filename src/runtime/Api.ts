/**
 * The Runtime's interface: the service every presenter uses (the ACP server, `skein run`, an
 * embedding Effect program), its options and its error. The implementation, and everything it
 * loads (the log, tools, providers, MCP), is in `Runtime.ts`; a presenter that only names the
 * service (the ACP server answering `initialize`) does not load it.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Stream from "effect/Stream"
import type { McpServer } from "../Vocabulary.ts"
import type { Canonical, LogHeader, SessionEvent } from "../log/Event.ts"
import type * as Listing from "../log/Listing.ts"
import type { Catalog } from "../providers/Models.ts"
import type * as ClientCalls from "../session/ClientCalls.ts"
import type * as Gate from "./Gate.ts"
import type * as Session from "./Session.ts"

export class RuntimeError extends Schema.TaggedError<RuntimeError>()("RuntimeError", {
  reason: Schema.Literals(["not_found", "invalid_cwd", "invalid_mode", "invalid_request", "locked", "log", "unavailable", "limit"]),
  message: Schema.String
}) {}

export interface NewSessionOptions {
  /** Absolute working directory of the session. */
  readonly cwd: string
  readonly additionalDirectories?: ReadonlyArray<string> | undefined
  readonly mode?: string | undefined
  /**
   * Whoever presents the session answers its questions: permission requests
   * (`permission_asked` events) and client calls (`client_call`), with `Session.answer`.
   * Without it (and without `ask`), tool calls that need permission are denied at once.
   */
  readonly presented?: boolean | undefined
  /** Asks the user about tool calls in-process instead (it takes the place of a presenter's answers). */
  readonly ask?: Gate.Asker | undefined
  /** What the presenter's client offers to tools (editor files, terminals: ACP `fs/*`, `terminal/*`). */
  readonly client?: ClientCalls.Capabilities | undefined
  /** MCP servers (ACP shapes) started in the background for the session; their tools join it once listed. */
  readonly mcpServers?: ReadonlyArray<McpServer> | undefined
}

export interface LoadSessionOptions {
  readonly sessionId: string
  /** When given, must be the session's working directory. */
  readonly cwd?: string | undefined
  /** The session's additional directories from now on (default: those it was created with). */
  readonly additionalDirectories?: ReadonlyArray<string> | undefined
  /** As for a new session (ignored when the session is already live here). */
  readonly presented?: boolean | undefined
  readonly ask?: Gate.Asker | undefined
  readonly client?: ClientCalls.Capabilities | undefined
  /**
   * MCP servers for the session. None (or an empty list): the ones it used
   * last time, as recorded beside its log. Ignored when the session is already live here.
   */
  readonly mcpServers?: ReadonlyArray<McpServer> | undefined
}

/** A loaded session and the events of its log (what `session/load` replays). */
export interface LoadedSession {
  readonly session: Session.Session
  readonly events: ReadonlyArray<Canonical>
}

/** A session's log as read from disk, without loading it. */
export interface SessionRecord {
  readonly header: LogHeader
  readonly events: ReadonlyArray<Canonical>
  readonly file: string
}

export type SessionSummary = Listing.Entry
export type SessionPage = Listing.Page
export type ListQuery = Listing.Query

export class Runtime extends Context.Service<Runtime, {
  readonly newSession: (options: NewSessionOptions) => Effect.Effect<Session.Session, RuntimeError>
  /**
   * Makes a logged session live again, in this process only (it takes the
   * log's lock): mode, config and remembered permissions as they were. A
   * session already live here is returned as it is.
   */
  readonly loadSession: (options: LoadSessionOptions) => Effect.Effect<LoadedSession, RuntimeError>
  /** One page of the logged sessions, newest first. */
  readonly listSessions: (query?: ListQuery) => Effect.Effect<SessionPage, RuntimeError>
  /** Reads a session's log without loading it (no lock; works while another process has it open). */
  readonly readSession: (sessionId: string) => Effect.Effect<SessionRecord, RuntimeError>
  /** Closes the session if it is live, then removes its log. An unknown id is not an error. */
  readonly deleteSession: (sessionId: string) => Effect.Effect<void, RuntimeError>
  readonly getSession: (sessionId: string) => Effect.Effect<Session.Session, RuntimeError>
  /** Stops a live session: cancels its turn, syncs its log, releases its lock, frees its memory. */
  readonly closeSession: (sessionId: string) => Effect.Effect<void>
  /** The live sessions. */
  readonly liveSessions: Effect.Effect<ReadonlyArray<Session.SessionInfo>>
  /** Every event of every session, from the moment the stream is run. */
  readonly events: Stream.Stream<SessionEvent>
  /** The models sessions may switch between, when a provider registry configured them. */
  readonly models: Catalog | undefined
}>()("skein/runtime/Runtime") {}
