/**
 * The session log store: one append-only NDJSON file per session under
 * `$SKEIN_HOME/sessions/<id>.ndjson`. Line 1 is the header; every later line is
 * one canonical event `{seq, ts, turn, type, data}`.
 *
 * A writer's appends are serialized by its owner (the session actor); the file
 * is fsynced on `sync` (every turn end) and when the writer's scope closes.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type { Canonical, LogHeader } from "./Event.ts"

export class LogError extends Schema.TaggedError<LogError>()("LogError", {
  message: Schema.String
}) {}

export interface Writer {
  readonly path: string
  /** Appends events as lines, in order, in one write. */
  readonly append: (events: ReadonlyArray<Canonical>) => Effect.Effect<void, LogError>
  /** Flushes the file to disk. */
  readonly sync: Effect.Effect<void, LogError>
}

export interface Config {
  /** `$SKEIN_HOME`; sessions live in its `sessions/` folder. */
  readonly home: string
}

const encoder = new TextEncoder()

/** The JSON line of one canonical event, in the documented field order. */
export const encodeEvent = (event: Canonical): string =>
  JSON.stringify({ seq: event.seq, ts: event.ts, turn: event.turn, type: event.type, data: event.data }) + "\n"

export class SessionLog extends Context.Service<SessionLog, {
  readonly directory: string
  readonly pathOf: (sessionId: string) => string
  /** Creates a new log with its header; the writer lives as long as the scope. */
  readonly create: (header: LogHeader) => Effect.Effect<Writer, LogError, Scope.Scope>
}>()("skein/log/SessionLog") {
  static readonly layer = (config: Config) =>
    Layer.effect(
      SessionLog,
      Effect.gen(function*() {
        const fs = yield* FileSystem.FileSystem
        const path = yield* Path.Path
        const directory = path.join(config.home, "sessions")
        let ensured = false
        const ensureDirectory = Effect.suspend(() =>
          ensured ? Effect.void : fs.makeDirectory(directory, { recursive: true }).pipe(Effect.tap(() => Effect.sync(() => {
            ensured = true
          })))
        )
        const pathOf = (sessionId: string) => path.join(directory, `${sessionId}.ndjson`)

        const create = Effect.fn("SessionLog.create")(function*(header: LogHeader) {
          const file = pathOf(header.id)
          const fail = (what: string) => (error: { readonly message: string }) =>
            new LogError({ message: `Cannot ${what} session log ${file}: ${error.message}` })
          yield* ensureDirectory.pipe(Effect.mapError(fail("create the directory for")))
          const handle = yield* fs.open(file, { flag: "ax" }).pipe(Effect.mapError(fail("create")))
          yield* handle.writeAll(encoder.encode(JSON.stringify(header) + "\n")).pipe(Effect.mapError(fail("write")))
          const sync = handle.sync.pipe(Effect.mapError(fail("sync")))
          // Flush on close: shutdown, session close and interruption all pass here.
          yield* Effect.addFinalizer(() => Effect.ignore(sync))
          const writer: Writer = {
            path: file,
            append: (events) => {
              if (events.length === 0) return Effect.void
              let text = ""
              for (const event of events) text += encodeEvent(event)
              return handle.writeAll(encoder.encode(text)).pipe(Effect.mapError(fail("append to")))
            },
            sync
          }
          return writer
        })

        return SessionLog.of({ directory, pathOf, create })
      })
    )
}
