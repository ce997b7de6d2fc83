/**
 * Runtime configuration: where sessions live, which provider answers, and the
 * limits of a turn. Built by the CLI from flags and environment, or by an
 * embedding program directly.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type { ToolEnv } from "../tools/Tool.ts"
import type { Ceiling } from "../tools/Ceiling.ts"
import type { TurnContext, TurnOutcome } from "./Turn.ts"
import type { Catalog } from "../providers/Models.ts"
import type { SessionSandbox } from "../tools/Sandboxed.ts"
import type { Settings as SandboxSettings } from "../sandbox/Settings.ts"
import type { Provider } from "../providers/Provider.ts"
import type { Toolkit } from "../tools/Toolkit.ts"
import type { McpServer, ModeId } from "../Vocabulary.ts"

interface Settings {
  /** `$SKEIN_HOME`: sessions live in `<home>/sessions`. */
  readonly home: string
  readonly provider: Provider
  /** The model of new sessions (a catalog key, `provider/id`, when `models` is given). */
  readonly model?: string | undefined
  /** The models a session may switch to (its `model` option) and what is known of each. */
  readonly models?: Catalog | undefined
  /** Model calls allowed in one turn before it ends with `max_turn_requests`. */
  readonly maxTurnRequests: number
  /** The mode of new sessions. */
  readonly defaultMode: ModeId
  readonly toolkit: Toolkit
  /** How long a permission request may wait for an answer before it counts as a denial. */
  readonly permissionTimeoutMs: number
  /** Skein's version, recorded in log headers. */
  readonly version: string
  /**
   * Live sessions kept in memory (default {@link DEFAULT_MAX_LIVE_SESSIONS}). Past it, opening
   * one closes the session used least recently among those idle for a while; its log keeps
   * everything, and a presenter can load it again.
   */
  readonly maxLiveSessions?: number | undefined
  /**
   * Runs an external ACP agent's turns (a child session of an agent with `acp` settings):
   * given by hosts that bundle the ACP client (`src/agents/External.ts`); without it, such
   * agents are refused with a message.
   */
  readonly external?: ExternalRunner | undefined
  /** The user's home directory, where user skills are found (`~/.agents/skills`…; default: the OS's). */
  readonly userHome?: string | undefined
  /** The share of the model's context window at which a conversation is compacted before a model call (default 0.8). */
  readonly compactAt?: number | undefined
  /**
   * The sandbox commands run in (`src/sandbox`). Without it, none: commands run as Skein
   * does and are asked for; an MCP server or external agent that asks for the sandbox does not start.
   */
  readonly sandbox?: SandboxSettings | undefined
  /** MCP servers every session uses (the user's configuration); a client's server of the same name wins. */
  readonly mcpServers?: ReadonlyArray<McpServer> | undefined
}

/** Starts an external ACP agent (lazily) in the scope, and gives what runs a turn through it. */
type ExternalRunner = (
  agent: {
    readonly name: string
    readonly command: string
    readonly args: ReadonlyArray<string>
    readonly env: Readonly<Record<string, string>>
    /** Its process runs in the session's sandbox (`"sandbox": true` in its settings). */
    readonly sandbox?: boolean | undefined
  },
  options: {
    readonly cwd: string
    readonly clientInfo: { readonly name: string; readonly version: string }
    readonly permissionTimeoutMs?: number | undefined
    /** The child session's sandbox, for an agent that runs in it. */
    readonly sandbox?: SessionSandbox | undefined
    /** The child session's ceiling as it is now: the agent's questions and reported changes are held to it. */
    readonly ceiling?: (() => Ceiling) | undefined
  }
) => Effect.Effect<{ readonly run: (ctx: TurnContext) => Effect.Effect<TurnOutcome, never, ToolEnv> }, never, Scope.Scope>

export class Config extends Context.Service<Config, Settings>()("skein/runtime/Config") {
  static readonly layer = (settings: Settings) => Layer.succeed(Config, settings)
}

export const DEFAULT_MAX_TURN_REQUESTS = 50
export const DEFAULT_PERMISSION_TIMEOUT_MS = 30 * 60 * 1000
export const DEFAULT_MAX_LIVE_SESSIONS = 256
/** A session used more recently than this is not closed to make room, even if it is idle. */
export const EVICT_AFTER_IDLE_MS = 10_000
