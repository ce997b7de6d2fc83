/**
 * Runtime configuration: where sessions live, which provider answers, and the
 * limits of a turn. Built by the CLI from flags and environment, or by an
 * embedding program directly.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type { ExternalAgent, Options as ExternalOptions } from "../agents/ExternalConnection.ts"
import type { ToolEnv } from "../tools/Tool.ts"
import type { TurnOutcome } from "../session/Protocol.ts"
import type { Permission, Questions, TurnContext } from "../session/TurnContract.ts"
import type { Catalog } from "../providers/Models.ts"
import type { Settings as SandboxSettings } from "../sandbox/Settings.ts"
import type { Provider } from "../providers/Provider.ts"
import type { Toolkit } from "../tools/Toolkit.ts"
import type { McpServer, ModeId } from "../Vocabulary.ts"
import type { Fire } from "../hooks/Hooks.ts"
import type { Policy as TrustPolicy } from "../trust/Trust.ts"
import type { Limits as CheckpointLimits } from "../checkpoints/Checkpoints.ts"

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
  /** MCP servers every session uses (the user's configuration); a trusted project's, then a client's server of the same name wins. */
  readonly mcpServers?: ReadonlyArray<McpServer> | undefined
  /**
   * Workspace trust (`src/trust`): `ask` (the CLI's default) loads a folder's own hooks, agents,
   * commands and skills once the user trusted it, asking at the first prompt there; `all`
   * trusts every folder. Without it, every folder's definitions load (the program decides).
   */
  readonly trust?: TrustPolicy | undefined
  /**
   * How much a session's checkpoints (`src/checkpoints`) may keep: any of `keepTurns`,
   * `maxBytes`, `maxSnapshotBytes`, `collectEvery` (the rest: `DEFAULT_LIMITS`).
   */
  readonly checkpoints?: Partial<CheckpointLimits> | undefined
  /** Hooks answered from a log instead of run, by session (`skein replay --rerun`). */
  readonly hookReplay?: ((sessionId: string) => Fire) | undefined
}

/** Starts an external ACP agent (lazily) in the scope, and gives what runs a turn through it. */
type ExternalRunner = (
  agent: ExternalAgent,
  options: ExternalOptions
) => Effect.Effect<{ readonly run: (ctx: TurnContext) => Effect.Effect<TurnOutcome, never, ToolEnv | Permission | Questions> }, never, Scope.Scope>

export class Config extends Context.Service<Config, Settings>()("skein/runtime/Config") {
  static readonly layer = (settings: Settings) => Layer.succeed(Config, settings)
}

export const DEFAULT_MAX_TURN_REQUESTS = 50
export const DEFAULT_PERMISSION_TIMEOUT_MS = 30 * 60 * 1000
export const DEFAULT_MAX_LIVE_SESSIONS = 256
/** A session used more recently than this is not closed to make room, even if it is idle. */
export const EVICT_AFTER_IDLE_MS = 10_000
