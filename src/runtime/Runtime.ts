/**
 * Runtime: the public API every presenter uses (the ACP server, `skein run`,
 * an embedding Effect program). It owns the session registry: each live
 * session is an actor in its own scope, a child of the runtime's scope, so
 * closing the runtime closes every session (turns interrupted, logs synced).
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { LOG_VERSION, type SessionEvent } from "../log/Event.ts"
import * as History from "../log/History.ts"
import { SessionLog } from "../log/SessionLog.ts"
import type { ClientAccess, ToolEnv } from "../tools/Tool.ts"
import { Bus } from "./Bus.ts"
import { Config } from "./Config.ts"
import type * as Gate from "./Gate.ts"
import { isModeId, type ModeId } from "./Modes.ts"
import * as Session from "./Session.ts"

export class RuntimeError extends Schema.TaggedError<RuntimeError>()("RuntimeError", {
  reason: Schema.Literals(["not_found", "invalid_cwd", "invalid_mode", "log"]),
  message: Schema.String
}) {}

export interface NewSessionOptions {
  /** Absolute working directory of the session. */
  readonly cwd: string
  readonly additionalDirectories?: ReadonlyArray<string> | undefined
  readonly mode?: string | undefined
  /** Asks the user about tool calls that need permission; without it they are denied. */
  readonly ask?: Gate.Asker | undefined
  /** The client's file and terminal access (ACP `fs/*`, `terminal/*`) for the new session's id, when offered. */
  readonly client?: ((sessionId: string) => ClientAccess | undefined) | undefined
}

export class Runtime extends Context.Service<Runtime, {
  readonly newSession: (options: NewSessionOptions) => Effect.Effect<Session.Session, RuntimeError>
  readonly getSession: (sessionId: string) => Effect.Effect<Session.Session, RuntimeError>
  /** Stops a live session: cancels its turn, syncs its log, frees its memory. */
  readonly closeSession: (sessionId: string) => Effect.Effect<void>
  /** The live sessions. */
  readonly liveSessions: Effect.Effect<ReadonlyArray<Session.SessionInfo>>
  /** Every event of every session, from the moment the stream is run. */
  readonly events: Stream.Stream<SessionEvent>
}>()("skein/runtime/Runtime") {
  static readonly layer: Layer.Layer<Runtime, never, Config | Bus | SessionLog | FileSystem.FileSystem | Path.Path> = Layer.effect(
    Runtime,
    Effect.gen(function*() {
      const config = yield* Config
      const bus = yield* Bus
      const log = yield* SessionLog
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const services = Context.make(FileSystem.FileSystem, fs).pipe(Context.add(Path.Path, path)) as Context.Context<ToolEnv>
      const parent = yield* Effect.scope
      const live = new Map<string, { readonly session: Session.Session; readonly scope: Scope.Closeable }>()

      const closeAll = Effect.suspend(() =>
        Effect.forEach([...live.values()], (entry) => Scope.close(entry.scope, Exit.void), { concurrency: "unbounded", discard: true })
      )
      yield* Effect.addFinalizer(() => closeAll)

      const checkDirectory = (dir: string, what: string) =>
        Effect.gen(function*() {
          if (!path.isAbsolute(dir)) {
            return yield* new RuntimeError({ reason: "invalid_cwd", message: `${what} must be an absolute path` })
          }
          const info = yield* fs.stat(dir).pipe(Effect.option)
          if (info._tag === "None" || info.value.type !== "Directory") {
            return yield* new RuntimeError({ reason: "invalid_cwd", message: `${what} is not an existing directory` })
          }
        })

      const newSession = Effect.fn("Runtime.newSession")(function*(options: NewSessionOptions) {
        const mode: ModeId = options.mode === undefined ? config.defaultMode : isModeId(options.mode)
          ? options.mode
          : yield* new RuntimeError({ reason: "invalid_mode", message: `Unknown mode "${options.mode}"` })
        yield* checkDirectory(options.cwd, "cwd")
        const additionalDirectories = options.additionalDirectories ?? []
        for (const dir of additionalDirectories) yield* checkDirectory(dir, "An additional directory")
        const id = crypto.randomUUID()
        const created = yield* Clock.currentTimeMillis
        const scope = yield* Scope.fork(parent)
        const session = yield* Effect.gen(function*() {
          const writer = yield* log.create({
            type: "session",
            v: LOG_VERSION,
            id,
            cwd: options.cwd,
            created,
            mode,
            ...(additionalDirectories.length > 0 ? { additionalDirectories } : {}),
            skein: config.version
          }).pipe(Scope.provide(scope))
          return yield* Session.make(
            { id, cwd: options.cwd, additionalDirectories, created },
            History.make(),
            mode,
            {
              bus,
              writer,
              provider: config.provider,
              toolkit: config.toolkit,
              maxTurnRequests: config.maxTurnRequests,
              model: config.model,
              services,
              ask: options.ask,
              client: options.client?.(id),
              permissionTimeoutMs: config.permissionTimeoutMs
            },
            scope
          )
        }).pipe(
          Effect.mapError((error) => new RuntimeError({ reason: "log", message: error.message })),
          Effect.onError(() => Scope.close(scope, Exit.void))
        )
        live.set(id, { session, scope })
        yield* Scope.addFinalizer(scope, Effect.sync(() => live.delete(id)))
        return session
      })

      const getSession = (sessionId: string) =>
        Effect.suspend(() => {
          const entry = live.get(sessionId)
          return entry === undefined
            ? Effect.fail(new RuntimeError({ reason: "not_found", message: `Session not found: ${sessionId}` }))
            : Effect.succeed(entry.session)
        })

      const closeSession = (sessionId: string) =>
        Effect.suspend(() => {
          const entry = live.get(sessionId)
          return entry === undefined ? Effect.void : Scope.close(entry.scope, Exit.void)
        })

      return Runtime.of({
        newSession,
        getSession,
        closeSession,
        liveSessions: Effect.sync(() =>
          [...live.values()].map(({ session }) => ({
            id: session.id,
            cwd: session.cwd,
            additionalDirectories: session.additionalDirectories,
            created: session.created
          }))
        ),
        events: Stream.unwrap(Effect.map(bus.subscribeAll, Stream.fromSubscription))
      })
    })
  )
}
