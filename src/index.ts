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
 * without loading it, `runtime.deleteSession(id)` removes one, `runtime.forkSession({ sessionId,
 * turn })` writes a new session from one's log up to a turn (load it to go on).
 * `AcpReplay.updates(events)` / `Replay.transcript(header, events)` show a log,
 * and `Rerun.run({ header, events, home, cwd })` re-executes it and reports
 * where tool results differ.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { layerLocal, layerLocalWithoutPlatform, platform, type SkeinConfig } from "./Local.ts"
import * as InProcess from "./remote/InProcess.ts"
import * as Remote from "./remote/Remote.ts"
import { Bus } from "./runtime/Bus.ts"

export { layerLocal, layerLocalWithoutPlatform, resolveProvider, type SkeinConfig } from "./Local.ts"

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

export { Runtime, RuntimeError } from "./runtime/Api.ts"
export type {
  ForkSessionOptions,
  ListQuery,
  LoadedSession,
  LoadSessionOptions,
  NewSessionOptions,
  SessionPage,
  SessionRecord,
  SessionSummary
} from "./runtime/Api.ts"
export * as Replay from "./log/Replay.ts"
export * as AcpReplay from "./translate/Replay.ts"
export * as Rerun from "./runtime/Rerun.ts"
/** What `Rerun.run` reports: each turn's tool results against the logged ones. */
export type { Difference as RerunDifference, Report as RerunReport, TurnReport as RerunTurnReport } from "./runtime/RerunCompare.ts"
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
export type { Provider, ModelRequest, StreamPart } from "./providers/Provider.ts"
export type { Message, ToolSpec } from "./Vocabulary.ts"
export type { Catalog, CatalogEntry, ModelInfo, Price } from "./providers/Models.ts"
/** The built-in providers, `$SKEIN_HOME/config.json` and `skein doctor`'s setup: `Registry.resolve(options)`. */
export * as Registry from "./providers/Registry.ts"
export type { SessionEvent } from "./log/Event.ts"
export type { UserBlock, StopReason } from "./Vocabulary.ts"
export * as Translate from "./translate/Translate.ts"
export { VERSION } from "./version.ts"
