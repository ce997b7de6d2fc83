/**
 * The runtime in this process: its configuration and the layers that build it. `skein acp`
 * and `skein serve` load this module alone (not the embedding API's RPC client and remote
 * transports), so serving starts no later for them.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import type * as Path from "effect/Path"
import type { LogError } from "./log/LogError.ts"
import * as Layer from "effect/Layer"
import { SessionLog } from "./log/SessionLog.ts"
import * as External from "./agents/External.ts"
import type { Limits as CheckpointLimits } from "./checkpoints/Checkpoints.ts"
import type { Catalog } from "./providers/Models.ts"
import type { Provider } from "./providers/Provider.ts"
import * as Scripted from "./providers/Scripted.ts"
import * as SandboxSettings from "./sandbox/Settings.ts"
import * as Unconfigured from "./providers/Unconfigured.ts"
import { Bus } from "./runtime/Bus.ts"
import { Config, DEFAULT_MAX_TURN_REQUESTS, DEFAULT_PERMISSION_TIMEOUT_MS } from "./runtime/Config.ts"
import { layer as RuntimeLayer } from "./runtime/Runtime.ts"
import * as Toolkit from "./tools/Toolkit.ts"
import { VERSION } from "./version.ts"
import { DEFAULT_MODE, type McpServer, type ModeId } from "./Vocabulary.ts"

export interface SkeinConfig {
  /** Where sessions live (`<home>/sessions`), and where `config.json` is read from. */
  readonly home: string
  /**
   * Where sessions are kept: `"files"` (default) as logs under `<home>/sessions`; `"memory"` in
   * this process only, for as long as the layer lives: nothing is written to disk;
   * `{ postgres: url }` in a PostgreSQL database that several Skeins share (each session held
   * by one at a time; `leaseMs`: how long a Skein that stops renewing its hold keeps it, 30 s by
   * default).
   */
  readonly store?: "files" | "memory" | { readonly postgres: string; readonly leaseMs?: number | undefined } | undefined
  /** The provider that answers model calls; wins over `script`. */
  readonly provider?: Provider | undefined
  /** A parsed script for the scripted provider (see `Scripted.parse`). */
  readonly script?: Scripted.Script | undefined
  /**
   * The model of new sessions: a key of `models` (`provider/id`) when given. Read each time a
   * session starts (it may be a getter over a configuration that changes).
   */
  readonly model?: string | undefined
  /** The models sessions may switch between (from `Registry.resolve(…).models`). */
  readonly models?: Catalog | undefined
  readonly maxTurnRequests?: number | undefined
  /** The mode of new sessions (default `default`). */
  readonly mode?: ModeId | undefined
  /** How long a permission request waits before it counts as a denial (default 30 min). */
  readonly permissionTimeoutMs?: number | undefined
  /**
   * Live sessions kept in memory (default 256). Past it, opening one closes the least recently
   * used idle session; the ACP server brings such a session back when its client uses it.
   */
  readonly maxLiveSessions?: number | undefined
  /** The share of the model's context window at which a conversation is compacted (default 0.8). */
  readonly compactAt?: number | undefined
  /** Where user skills are looked for (`<userHome>/.agents/skills`…; default: the OS's home). */
  readonly userHome?: string | undefined
  /**
   * The sandbox commands run in (see README, "Sandbox"): `"auto"` (default), `"required"`,
   * `"off"`, or settings with hosts to allow and places to hide or open.
   */
  readonly sandbox?: SandboxSettings.Mode | SandboxSettings.Settings | undefined
  /** MCP servers every session uses, with those a client sends (`mcp/Config.ts`). */
  readonly mcpServers?: ReadonlyArray<McpServer> | undefined
  /**
   * Workspace trust (see README, "Workspace trust"): `"ask"` loads a folder's own hooks,
   * agents, commands and skills once the user trusted it; `"all"` trusts every folder. Without
   * it, every folder's definitions load.
   */
  readonly trust?: "ask" | "all" | undefined
  /**
   * How much a session's checkpoints keep (see README, "Checkpoints and rewind"): any of
   * `keepTurns` (50), `maxBytes` (1 GiB on disk), `maxSnapshotBytes` (1 GiB of new content in
   * one snapshot), `collectEvery` (20 turns).
   */
  readonly checkpoints?: Partial<CheckpointLimits> | undefined
}

/** The session store a configuration names; the Postgres one is loaded only when asked for. */
const storeLayer = (config: SkeinConfig): Layer.Layer<SessionLog, LogError, FileSystem.FileSystem | Path.Path> => {
  const store = config.store
  if (store === "memory") return SessionLog.layerMemory()
  if (typeof store === "object") return Layer.unwrap(Effect.map(Effect.promise(() => import("./log/PgStore.ts")), (PgStore) => PgStore.layer(store.postgres, { leaseMs: store.leaseMs })))
  return SessionLog.layer({ home: config.home })
}

export const resolveProvider = (config: SkeinConfig): Provider =>
  config.provider ?? (config.script !== undefined ? Scripted.make(config.script) : Unconfigured.make())

/**
 * The runtime itself, in this process, over the given platform services: `Runtime` (the
 * local implementation, whose sessions a test or a presenter in this process may look
 * inside) and the `Bus`.
 */
export const layerLocalWithoutPlatform = (config: SkeinConfig) =>
  RuntimeLayer.pipe(
    Layer.provideMerge(Bus.layer),
    Layer.provide(storeLayer(config)),
    Layer.provide(Config.layer({
      home: config.home,
      provider: resolveProvider(config),
      // Read as each session starts: a configuration read again (sign-in) changes it for new sessions.
      get model() {
        return config.model
      },
      models: config.models,
      maxTurnRequests: config.maxTurnRequests ?? DEFAULT_MAX_TURN_REQUESTS,
      defaultMode: config.mode ?? DEFAULT_MODE,
      permissionTimeoutMs: config.permissionTimeoutMs ?? DEFAULT_PERMISSION_TIMEOUT_MS,
      toolkit: Toolkit.builtin(),
      external: External.make,
      version: VERSION,
      maxLiveSessions: config.maxLiveSessions,
      compactAt: config.compactAt,
      userHome: config.userHome,
      sandbox: SandboxSettings.normalize(config.sandbox),
      mcpServers: config.mcpServers,
      trust: config.trust,
      checkpoints: config.checkpoints
    }))
  )

/** The Node `FileSystem` and `Path` the runtime runs on. */
export const platform = Layer.mergeAll(NodeFileSystem.layer, NodePath.layer)

/** The local runtime on Node (`skein acp` serves it). */
export const layerLocal = (config: SkeinConfig) => layerLocalWithoutPlatform(config).pipe(Layer.provideMerge(platform))
