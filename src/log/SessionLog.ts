/**
 * The session log store: one append-only NDJSON file per session under
 * `$SKEIN_HOME/sessions/<id>.ndjson`. Line 1 is the header; every later line is
 * one canonical event `{seq, ts, turn, type, data}`.
 *
 * - A writer holds the session's lock (`<id>.lock`, see `Lock.ts`) for its
 *   scope, so two processes never write one session; reading needs no lock.
 * - Appends are serialized by the writer; an append that fails half-way is cut
 *   back, so a later append never lands after a partial line.
 * - The file is fsynced on `sync` (every turn end) and when the writer's scope
 *   closes (session close, shutdown); the first sync also syncs the directory.
 * - `open` recovers a log a crash left: a torn last line is cut (and reported
 *   on stderr), an old format is rewritten in the current one.
 */
import * as Context from "effect/Context"
import * as nodeFs from "node:fs"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Path from "effect/Path"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import { type Canonical, LOG_VERSION, type LogHeader } from "./Event.ts"
import * as Listing from "./Listing.ts"
import * as Lock from "./Lock.ts"
import { LogError } from "./LogError.ts"
import type * as Migrations from "./Migrations.ts"
import * as Reader from "./Reader.ts"

export { LogError } from "./LogError.ts"

export interface Writer {
  readonly path: string
  /** Appends events as lines, in order, in one write. */
  readonly append: (events: ReadonlyArray<Canonical>) => Effect.Effect<void, LogError>
  /** Flushes the file to disk. */
  readonly sync: Effect.Effect<void, LogError>
}

/** A log opened for writing: what it held, and the writer that continues it. */
export interface Opened {
  readonly contents: Reader.Contents
  readonly writer: Writer
}

export interface Config {
  /** `$SKEIN_HOME`; sessions live in its `sessions/` folder. */
  readonly home: string
  /** The formats logs are read in (default: `Migrations.formats`); tests pass others. */
  readonly formats?: ReadonlyMap<number, Migrations.Upgrade> | undefined
}

const encoder = new TextEncoder()

/** The JSON line of one canonical event, in the documented field order. */
export const encodeEvent = (event: Canonical): string =>
  JSON.stringify({ seq: event.seq, ts: event.ts, turn: event.turn, type: event.type, data: event.data }) + "\n"

type PlatformFailure = { readonly reason: { readonly _tag: string } }

export class SessionLog extends Context.Service<SessionLog, {
  readonly directory: string
  readonly pathOf: (sessionId: string) => string
  /** Creates a new log with its header and takes its lock; the writer lives as long as the scope. */
  readonly create: (header: LogHeader) => Effect.Effect<Writer, LogError, Scope.Scope>
  /** Takes the lock of an existing log, reads it, cuts a torn tail and continues it. */
  readonly open: (sessionId: string) => Effect.Effect<Opened, LogError, Scope.Scope>
  /** Reads a session's log without taking its lock or changing it. */
  readonly read: (sessionId: string) => Effect.Effect<Reader.Contents, LogError>
  /** Reads a log file anywhere. */
  readonly readFile: (file: string) => Effect.Effect<Reader.Contents, LogError>
  /** One page of the sessions, newest first. */
  readonly list: (query: Listing.Query) => Effect.Effect<Listing.Page, LogError>
  /** Removes a session's log and lock; an unknown id is not an error. Fails if another process has it open. */
  readonly remove: (sessionId: string) => Effect.Effect<void, LogError>
}>()("skein/log/SessionLog") {
  static readonly layer = (config: Config) =>
    Layer.effect(
      SessionLog,
      Effect.gen(function*() {
        const fs = yield* FileSystem.FileSystem
        const path = yield* Path.Path
        const directory = path.join(config.home, "sessions")
        const readerOptions: Reader.Options = { formats: config.formats }
        let ensured = false
        const ensureDirectory = Effect.suspend(() =>
          ensured ? Effect.void : fs.makeDirectory(directory, { recursive: true }).pipe(Effect.tap(() => Effect.sync(() => {
            ensured = true
          })))
        )
        const pathOf = (sessionId: string) => path.join(directory, `${sessionId}.ndjson`)
        const lockOf = (sessionId: string) => path.join(directory, `${sessionId}.lock`)
        const fail = (file: string, what: string) => (error: PlatformFailure) =>
          new LogError({ reason: "io", message: `Cannot ${what} session log ${file}: ${error.reason._tag}` })
        const checkId = (sessionId: string) =>
          Listing.isSessionId(sessionId)
            ? Effect.void
            : Effect.fail(new LogError({ reason: "not_found", message: "Not a valid session id" }))

        /** Syncs the directory once, so a new log's entry survives a power loss. */
        let directorySynced = false
        const syncDirectory = Effect.suspend(() =>
          directorySynced ? Effect.void : Effect.scoped(Effect.flatMap(fs.open(directory, { flag: "r" }), (dir) => dir.sync)).pipe(
            Effect.tap(() => Effect.sync(() => {
              directorySynced = true
            })),
            Effect.ignore
          )
        )

        /** A writer over an open append handle; `size` is the length of the intact file. */
        const makeWriter = (file: string, handle: FileSystem.File, size: number) =>
          Effect.gen(function*() {
            const serial = yield* Semaphore.make(1)
            let length = size
            const sync = Effect.andThen(handle.sync.pipe(Effect.mapError(fail(file, "sync"))), syncDirectory)
            // Flush on close: shutdown, session close and interruption all pass here.
            yield* Effect.addFinalizer(() => Effect.ignore(sync))
            const writer: Writer = {
              path: file,
              // One synchronous write per append (a few µs for a line), no thread-pool round trip.
              append: (events) =>
                Effect.suspend(() => {
                  if (events.length === 0) return Effect.void
                  let text = ""
                  for (const event of events) text += encodeEvent(event)
                  const bytes = Buffer.from(text)
                  const fd = (handle as unknown as { fd: number }).fd
                  try {
                    let off = 0
                    while (off < bytes.length) off += nodeFs.writeSync(fd, bytes, off, bytes.length - off)
                    length += bytes.length
                    return Effect.void
                  } catch (error) {
                    try {
                      nodeFs.ftruncateSync(fd, length)
                    } catch {
                      // reported below
                    }
                    return Effect.fail(new LogError({ reason: "io", message: `Cannot append to session log ${file}: ${(error as NodeJS.ErrnoException).code ?? "error"}` }))
                  }
                }),
              sync: serial.withPermits(1)(sync)
            }
            return writer
          })

        const create = Effect.fn("SessionLog.create")(function*(header: LogHeader) {
          const file = pathOf(header.id)
          yield* checkId(header.id)
          yield* ensureDirectory.pipe(Effect.mapError(fail(file, "create the directory for")))
          yield* Lock.acquire(lockOf(header.id), header.id)
          const handle = yield* fs.open(file, { flag: "ax" }).pipe(Effect.mapError(fail(file, "create")))
          const line = encoder.encode(JSON.stringify(header) + "\n")
          // Synchronous, as every append: a few µs instead of a thread-pool round trip.
          const fd = (handle as unknown as { fd: number }).fd
          yield* Effect.try({
            try: () => {
              let off = 0
              while (off < line.length) off += nodeFs.writeSync(fd, line, off, line.length - off)
            },
            catch: (error) => new LogError({ reason: "io", message: `Cannot write session log ${file}: ${(error as NodeJS.ErrnoException).code ?? "error"}` })
          })
          return yield* makeWriter(file, handle, line.length)
        })

        /** Rewrites a log of an older format in the current one; the old file stays as a backup. */
        const rewrite = (contents: Reader.Contents) =>
          Effect.gen(function*() {
            const file = contents.file
            const temp = `${file}.migrating`
            let text = JSON.stringify({ ...contents.header, v: LOG_VERSION }) + "\n"
            for (const event of contents.events) text += encodeEvent(event)
            const bytes = encoder.encode(text)
            yield* Effect.scoped(Effect.gen(function*() {
              const out = yield* fs.open(temp, { flag: "w" })
              yield* out.writeAll(bytes)
              yield* out.sync
            })).pipe(Effect.mapError(fail(file, "migrate")))
            yield* fs.rename(file, `${file}.v${contents.version}.bak`).pipe(Effect.mapError(fail(file, "back up")))
            yield* fs.rename(temp, file).pipe(Effect.mapError(fail(file, "migrate")))
            yield* Effect.logWarning(`Migrated session log ${file} from format v${contents.version} to v${LOG_VERSION}`)
            return bytes.length
          })

        const open = Effect.fn("SessionLog.open")(function*(sessionId: string) {
          yield* checkId(sessionId)
          const file = pathOf(sessionId)
          if (!(yield* fs.exists(file).pipe(Effect.orElseSucceed(() => false)))) {
            return yield* new LogError({ reason: "not_found", message: `Session not found: ${sessionId}` })
          }
          yield* Lock.acquire(lockOf(sessionId), sessionId)
          const contents = yield* Reader.read(fs, file, readerOptions)
          let size = contents.intactBytes
          if (contents.torn !== undefined) {
            yield* fs.truncate(file, contents.intactBytes).pipe(Effect.mapError(fail(file, "cut the torn tail of")))
            yield* Effect.logWarning(
              `Session log ${file}: cut a torn last line (line ${contents.torn.line}, ${contents.torn.bytes} bytes) left by a crash`
            )
          }
          if (contents.version !== LOG_VERSION) size = yield* rewrite(contents)
          const handle = yield* fs.open(file, { flag: "a" }).pipe(Effect.mapError(fail(file, "open")))
          const writer = yield* makeWriter(file, handle, size)
          return { contents, writer } satisfies Opened
        })

        const read = (sessionId: string) =>
          Effect.andThen(checkId(sessionId), Reader.read(fs, pathOf(sessionId), readerOptions))

        const remove = Effect.fn("SessionLog.remove")(function*(sessionId: string) {
          if (!Listing.isSessionId(sessionId)) return
          const file = pathOf(sessionId)
          yield* Lock.checkFree(fs, lockOf(sessionId), sessionId)
          yield* fs.remove(file, { force: true }).pipe(Effect.mapError(fail(file, "remove")))
          yield* Effect.ignore(fs.remove(lockOf(sessionId), { force: true }))
        })

        return SessionLog.of({
          directory,
          pathOf,
          create,
          open,
          read,
          readFile: (file) => Reader.read(fs, file, readerOptions),
          list: (query) => Listing.list(fs, path, directory, query),
          remove
        })
      })
    )
}
