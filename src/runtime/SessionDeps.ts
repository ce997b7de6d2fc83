/**
 * What a session live in this process is (the protocol, and what the runtime that hosts it
 * reads), and what it is started with (`Session.make`).
 */
import type * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { CanonicalBody, Canonical } from "../log/Event.ts"
import type * as History from "../log/History.ts"
import type { Writer } from "../log/Store.ts"
import type * as Models from "../providers/Models.ts"
import type * as Prompt from "../providers/Prompt.ts"
import type { Provider } from "../providers/Provider.ts"
import type { Session as ProtocolSession, SessionError, TurnOutcome } from "../session/Protocol.ts"
import type * as TurnContract from "../session/TurnContract.ts"
import type * as Ceiling from "../tools/Ceiling.ts"
import type { SessionSandbox } from "../tools/Sandboxed.ts"
import type { ToolEnv } from "../tools/Tool.ts"
import type { Toolkit } from "../tools/Toolkit.ts"
import type * as Workspace from "../trust/Workspace.ts"
import type { McpServerStatus } from "../Vocabulary.ts"
import type * as Bus from "./Bus.ts"
import type * as Children from "./Children.ts"
import type { Extensions } from "./SessionCommands.ts"
import type * as SessionMcp from "./SessionMcp.ts"
import type * as Checkpoints from "../checkpoints/Checkpoints.ts"

/** A session live in this process: the protocol, and what the runtime that hosts it reads. */
export interface Session extends ProtocolSession {
  /** The history as the model sees it (read-only). */
  readonly history: History.History
  /**
   * When the session last finished its work (ms since the epoch: the end of its last turn, or
   * when it started), or `undefined` while a turn is running or queued.
   */
  readonly idleSince: () => number | undefined
}

/** A session's trust question and hooks (`Workspace.forSession`). */
type SessionTrust = ReturnType<Workspace.Workspace["forSession"]>

export interface Deps {
  readonly bus: Bus.Bus["Service"]
  readonly writer: Writer
  /** The session's logged events, read back (for `subscribe`). */
  readonly readLog: Effect.Effect<ReadonlyArray<Canonical>, SessionError>
  /**
   * Closes this session (its scope belongs to the runtime). With a reason (another Skein took
   * it over), requests for it are answered with that reason until it is opened again.
   */
  readonly close: (reason?: string) => Effect.Effect<void>
  readonly provider: Provider
  readonly toolkit: Toolkit
  readonly maxTurnRequests: number
  readonly model?: string | undefined
  /** The models the session may switch to; without it, `model` is fixed. */
  readonly models?: Models.Catalog | undefined
  readonly services: Context.Context<ToolEnv>
  readonly permissionTimeoutMs: number
  /** Messages for the user that arose outside the model (an MCP server failed); shown in the next turn. */
  readonly notices?: (() => ReadonlyArray<{ readonly text: string; readonly source?: string }>) | undefined
  /** Session-level events logged once when the session starts (`mcp_servers` when they changed). */
  readonly startEvents?: ReadonlyArray<CanonicalBody> | undefined
  /** The status of the session's MCP servers. */
  readonly mcpStatus?: (() => ReadonlyArray<McpServerStatus>) | undefined
  /** What the session needs to start children (subagents); without it, it starts none. */
  readonly children?: Children.Factory | undefined
  /** The agent the session runs as (a child session): the provider is told. */
  readonly agent?: string | undefined
  /** Instructions added to the system prompt (a custom agent's). */
  readonly instructions?: string | undefined
  /** Nothing that changes anything runs, whatever the mode (an explorer). */
  readonly readOnly?: boolean | undefined
  /** The parent's ceiling as it is now (a child session): the session never goes beyond it, nor do its children. */
  readonly above?: (() => Ceiling.Ceiling) | undefined
  /**
   * The session's skills and slash commands, read again in the background when a turn ends
   * (a file written during a turn counts from the next prompt); without it, it has neither.
   */
  readonly extensions?: Effect.Effect<Extensions> | undefined
  /** The share of the context window at which the conversation is compacted (default 0.8). */
  readonly compactAt?: number | undefined
  /** The user's home directory (default: the OS's); a skill folder that holds it is not readable without asking. */
  readonly userHome?: string | undefined
  /** What the system prompt says of the project, when the host has read it already (a child: its parent's); read once otherwise. */
  readonly project?: Effect.Effect<Prompt.Project> | undefined
  /** The session's sandbox: its commands run in it, and are asked for accordingly. */
  readonly sandbox?: SessionSandbox | undefined
  /** Before each presented turn: the folder's trust question, settled once per session (`trust/Workspace.ts`); true when the answer made more load. */
  readonly trustQuestion?: Effect.Effect<boolean, never, TurnContract.Questions> | undefined
  /** Before each turn, after the trust question: the folder's MCP servers once it is trusted (`SessionMcp.late`). */
  readonly projectMcp?: Effect.Effect<SessionMcp.Started | undefined> | undefined
  /** The hooks of a turn (`src/hooks`), read once per session; without it, none run. */
  readonly hooks?: SessionTrust["hooks"] | undefined
  /** Where the session keeps checkpoints of its workspace (`$SKEIN_HOME`); without it, it keeps none. */
  readonly checkpointsHome?: string | undefined
  /** How much its checkpoints may keep (default `Checkpoints.DEFAULT_LIMITS`). */
  readonly checkpointLimits?: Partial<Checkpoints.Limits> | undefined
  /** A child in its parent's workspace: the parent's checkpoint, taken before the child's first change. */
  readonly checkpoint?: Effect.Effect<unknown> | undefined
  /** Runs a turn's work in place of the model/tool loop (an external ACP agent). */
  readonly runTurn?: ((ctx: TurnContract.TurnContext) => Effect.Effect<TurnOutcome, never, ToolEnv | TurnContract.Permission | TurnContract.Questions>) | undefined
}
