/**
 * Skein's embedding API.
 *
 * ```ts
 * import { Effect } from "effect"
 * import { Skein, Runtime } from "skein"
 *
 * const program = Effect.gen(function*() {
 *   const runtime = yield* Runtime
 *   const session = yield* runtime.newSession({ cwd: "/path/to/project" })
 *   const outcome = yield* session.prompt([{ type: "text", text: "Summarise notes.txt" }])
 * }).pipe(Effect.provide(Skein.layer({ home: "/tmp/skein", script })))
 * ```
 *
 * Saved sessions: `runtime.listSessions({ cwd })` pages through them,
 * `runtime.loadSession({ sessionId })` makes one live again (with its logged
 * events, for a presenter to replay), `runtime.readSession(id)` reads a log
 * without loading it, `runtime.deleteSession(id)` removes one.
 * `AcpReplay.updates(events)` / `Replay.transcript(header, events)` show a log,
 * and `Rerun.run({ header, events, home, cwd })` re-executes it and reports
 * where tool results differ.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { SessionLog } from "./log/SessionLog.ts"
import type { Catalog } from "./providers/Models.ts"
import type { Provider } from "./providers/Provider.ts"
import * as Scripted from "./providers/Scripted.ts"
import * as Unconfigured from "./providers/Unconfigured.ts"
import { Bus } from "./runtime/Bus.ts"
import { Config, DEFAULT_MAX_TURN_REQUESTS, DEFAULT_PERMISSION_TIMEOUT_MS } from "./runtime/Config.ts"
import { DEFAULT_MODE, type ModeId } from "./Vocabulary.ts"
import * as InProcess from "./remote/InProcess.ts"
import * as Remote from "./remote/Remote.ts"
import { layer as RuntimeLayer } from "./runtime/Runtime.ts"
import * as Toolkit from "./tools/Toolkit.ts"
import { VERSION } from "./version.ts"

export interface SkeinConfig {
  /** Where sessions live (`<home>/sessions`), and where `config.json` is read from. */
  readonly home: string
  /**
   * Where sessions are kept: `"files"` (default) as logs under `<home>/sessions`; `"memory"` in
   * this process only, for as long as the layer lives: nothing is written to disk.
   */
  readonly store?: "files" | "memory" | undefined
  /** The provider that answers model calls; wins over `script`. */
  readonly provider?: Provider | undefined
  /** A parsed script for the scripted provider (see `Scripted.parse`). */
  readonly script?: Scripted.Script | undefined
  /** The model of new sessions: a key of `models` (`provider/id`) when given. */
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
    Layer.provide(config.store === "memory" ? SessionLog.layerMemory() : SessionLog.layer({ home: config.home })),
    Layer.provide(Config.layer({
      home: config.home,
      provider: resolveProvider(config),
      model: config.model,
      models: config.models,
      maxTurnRequests: config.maxTurnRequests ?? DEFAULT_MAX_TURN_REQUESTS,
      defaultMode: config.mode ?? DEFAULT_MODE,
      permissionTimeoutMs: config.permissionTimeoutMs ?? DEFAULT_PERMISSION_TIMEOUT_MS,
      toolkit: Toolkit.builtin(),
      version: VERSION,
      maxLiveSessions: config.maxLiveSessions
    }))
  )

const platform = Layer.mergeAll(NodeFileSystem.layer, NodePath.layer)

/** The local runtime on Node (`skein acp` serves it). */
export const layerLocal = (config: SkeinConfig) => layerLocalWithoutPlatform(config).pipe(Layer.provideMerge(platform))

/**
 * Skein for an embedding program, over the given platform services: `Runtime` as a client of
 * the session protocol's RPC group (`SessionRpcs`) whose server is this process, so the
 * program runs unchanged against a `skein serve` elsewhere through `Skein.remote`. The `Bus`
 * of the local runtime is provided too.
 */
export const layerWithoutPlatform = (config: SkeinConfig) => {
  // One local runtime (layers are shared within a build): the client's server, and its Bus.
  const local = layerLocalWithoutPlatform(config)
  const bus = Layer.effect(Bus, Effect.gen(function*() {
    return yield* Bus
  })).pipe(Layer.provide(local))
  return Layer.merge(InProcess.layer.pipe(Layer.provide(local)), bus)
}

/**
 * Skein on Node: `Runtime` (and the `Bus`) from a configuration, plus the Node
 * `FileSystem` and `Path` it runs on (which `Rerun.run` also uses).
 */
export const layer = (config: SkeinConfig) => layerWithoutPlatform(config).pipe(Layer.provideMerge(platform))

/**
 * The Runtime of a `skein serve` elsewhere (`unix:PATH`, `tcp://HOST:PORT`, `ws://HOST:PORT/PATH`;
 * `token` for tcp and ws): swap it for `Skein.layer(config)` and the program runs unchanged.
 */
export const remote = (options: Remote.Options) => Remote.layer(options)

export const Skein = { layer, layerWithoutPlatform, layerLocal, layerLocalWithoutPlatform, remote }

export { Runtime, RuntimeError } from "./runtime/Runtime.ts"
export type {
  ListQuery,
  LoadedSession,
  LoadSessionOptions,
  NewSessionOptions,
  SessionPage,
  SessionRecord,
  SessionSummary
} from "./runtime/Runtime.ts"
export * as Replay from "./log/Replay.ts"
export * as AcpReplay from "./translate/Replay.ts"
export * as Rerun from "./runtime/Rerun.ts"
export * as ReplayProvider from "./providers/Replay.ts"
export { LogError } from "./log/LogError.ts"
export { LOG_VERSION } from "./log/Event.ts"
export type { Canonical, LogHeader } from "./log/Event.ts"
export * as SessionProtocol from "./session/Protocol.ts"
export { SessionError } from "./session/Protocol.ts"
export type { Command, SendResult, Session, SessionInfo, Settings, TurnOptions, TurnOutcome } from "./session/Protocol.ts"
export type { Answer, McpServer, PermissionAsked, ClientCall } from "./Vocabulary.ts"
export type { ServerStatus as McpServerStatus } from "./mcp/McpSession.ts"
export { Bus } from "./runtime/Bus.ts"
export { AcpServer } from "./server/AcpServer.ts"
export * as Scripted from "./providers/Scripted.ts"
export type { Provider, ModelRequest, StreamPart, Message, ToolSpec } from "./providers/Provider.ts"
export type { Catalog, CatalogEntry, ModelInfo, Price } from "./providers/Models.ts"
/** The built-in providers, `$SKEIN_HOME/config.json` and `skein doctor`'s setup: `Registry.resolve(options)`. */
export * as Registry from "./providers/Registry.ts"
export type { SessionEvent, UserBlock, StopReason } from "./log/Event.ts"
export * as Translate from "./translate/Translate.ts"
export { VERSION } from "./version.ts"
