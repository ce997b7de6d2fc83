/**
 * The file store, Skein's default: one append-only NDJSON file per session under
 * `$SKEIN_HOME/sessions/<id>.ndjson`. Line 1 is the header; every later line is
 * one canonical event `{seq, ts, turn, type, data}`.
 *
 * - A writer holds the session's lock (`<id>.lock`, see `Lock.ts`) for its
 *   scope, so two processes never write one session; reading needs no lock.
 * - Appends are serialized by the writer; an append that fails half-way is cut
 *   back, so a later append never lands after a partial line.
 * - The file is fsynced on `sync` (every turn end) and when the writer's scope
 *   closes (session close, shutdown); the first sync also syncs the directory.
 *   Every sync runs on the thread pool and `sync` completes only once the disk
 *   has the data: a turn's end is published (and its prompt answered) after it,
 *   while this thread goes on serving the other sessions and the next request
 *   instead of waiting a millisecond or more for the disk (ADR 0049).
 * - `open` recovers a log a crash left: a torn last line is cut (and reported
 *   on stderr), an old format is rewritten in the current one. Its `check`
 *   runs before any of that: a refused open changes nothing.
 * - Side records are files beside the log (`<id>.mcp.json`), replaced whole.
 * - The directory is owner-only and so is every file in it; creating, deleting
 *   and migrating keep the files whole at every instant (see `Files.ts`).
 */
import * as nodeFs from "node:fs"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Path from "effect/Path"
import * as Semaphore from "effect/Semaphore"
import * as Checks from "./Checks.ts"
import { LOG_VERSION, type LogHeader } from "./Event.ts"
import * as Files from "./Files.ts"
import * as Listing from "./Listing.ts"
import * as Lock from "./Lock.ts"
import { ioFailure, LogError } from "./LogError.ts"
import type * as Migrations from "./Migrations.ts"
import * as Reader from "./Reader.ts"
import { encodeEvent, type Opened, refuse, type Side, type Store, type Writer } from "./Store.ts"

export interface Config {
  /** `$SKEIN_HOME`; sessions live in its `sessions/` folder. */
  readonly home: string
  /** The formats logs are read in (default: `Migrations.formats`); tests pass others. */
  readonly formats?: ReadonlyMap<number, Migrations.Upgrade> | undefined
  /** The events logs hold (default: `CanonicalBody`); tests pass a larger union. */
  readonly events?: Checks.EventUnion | undefined
  /** Called at each step of a multi-file operation (tests stop the process there). */
  readonly faults?: Files.Faults | undefined
  /** Flushes a session log's descriptor to the disk, on the thread pool (default: `fs.fsync`); tests slow it down or fail it. */
  readonly fsync?: Fsync | undefined
}

/** `fs.fsync`'s shape: the callback runs once the descriptor's data is on the disk, or with why not. */
export type Fsync = (fd: number, callback: (error: NodeJS.ErrnoException | null) => void) => void

const encoder = new TextEncoder()

type PlatformFailure = { readonly reason: { readonly _tag: string } }

/** The file store over `config.home`. */
export const make = (config: Config): Effect.Effect<Store, never, FileSystem.FileSystem | Path.Path> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const directory = path.join(config.home, "sessions")
    const readerOptions: Reader.Options = { formats: config.formats, events: config.events }
    const checkData = config.events === undefined ? Checks.canonical() : Checks.of(config.events)
    const faults = config.faults
    // An existing directory that others can read is made owner-only now; a missing one is
    // created (owner-only) with the first session.
    if (nodeFs.existsSync(directory)) yield* Effect.ignore(Files.ensurePrivateDirectory(directory))
    let ensured = false
    const ensureDirectory = Effect.suspend(() =>
      ensured ? Effect.void : Files.ensurePrivateDirectory(directory).pipe(Effect.tap(() => Effect.sync(() => {
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

    const fsyncOf: Fsync = config.fsync ?? nodeFs.fsync
    /** Flushes a log's `fd` on the thread pool; fails with the error the system gave. */
    const flush = (fd: number) =>
      Effect.callback<void, NodeJS.ErrnoException>((resume) => {
        fsyncOf(fd, (error) => resume(error === null ? Effect.void : Effect.fail(error)))
      })

    /**
     * Syncs the directory once, so a new log's entry survives a power loss (on the thread pool,
     * as the logs are). A failure is not reported; the next sync tries again.
     */
    let directorySynced = false
    const syncDirectory = Effect.suspend(() => {
      if (directorySynced) return Effect.void
      return Effect.callback<number | undefined>((resume) => {
        nodeFs.open(directory, "r", (error, fd) => resume(Effect.succeed(error === null ? fd : undefined)))
      }).pipe(
        Effect.flatMap((fd) =>
          fd === undefined ? Effect.void : Effect.callback<void, NodeJS.ErrnoException>((resume) => {
            nodeFs.fsync(fd, (error) => resume(error === null ? Effect.void : Effect.fail(error)))
          }).pipe(
            Effect.tap(() => Effect.sync(() => void (directorySynced = true))),
            // Not every file system syncs directories; tried again at the next sync.
            Effect.ignore,
            Effect.ensuring(Effect.sync(() => nodeFs.close(fd, () => {})))
          )
        )
      )
    })

    /** A writer over a descriptor open for appending, closed with the scope; `size` is the length of the intact file. */
    const makeWriter = (file: string, fd: number, size: number) =>
      Effect.gen(function*() {
        yield* Effect.addFinalizer(() => Effect.sync(() => nodeFs.closeSync(fd)))
        const serial = yield* Semaphore.make(1)
        let length = size
        const sync = Effect.andThen(
          Effect.mapError(flush(fd), (error) => ioFailure(`Cannot sync session log ${file}`, error)),
          syncDirectory
        )
        // Flush on close: shutdown, session close and interruption all pass here (after a sync
        // still running, so that the descriptor outlives it).
        yield* Effect.addFinalizer(() => Effect.ignore(serial.withPermits(1)(sync)))
        const writer: Writer = {
          path: file,
          // One synchronous write per append (a few µs for a line), no thread-pool round trip.
          append: (events) =>
            Effect.suspend(() => {
              if (events.length === 0) return Effect.void
              const refused = refuse(file, events, checkData)
              if (refused !== undefined) return Effect.fail(refused)
              let text = ""
              for (const event of events) text += encodeEvent(event)
              const bytes = Buffer.from(text)
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
                return Effect.fail(ioFailure(`Cannot append to session log ${file}`, error))
              }
            }),
          sync: serial.withPermits(1)(sync),
          saveSide: (side: Side, text) => Files.writeSide(Files.sidePath(file, side), text),
          loadSide: (side: Side) => Files.readSide(Files.sidePath(file, side))
        }
        return writer
      })

    const create = Effect.fn("SessionLog.create")(function*(header: LogHeader) {
      const file = pathOf(header.id)
      yield* checkId(header.id)
      yield* ensureDirectory
      yield* Lock.acquire(lockOf(header.id), header.id)
      const line = encoder.encode(JSON.stringify(header) + "\n")
      // The log appears with its header, or not at all.
      const fd = yield* Files.createWhole(file, line, faults)
      return yield* makeWriter(file, fd, line.length)
    })

    /** Rewrites a log of an older format in the current one, in one rename; the old file stays as a backup. */
    const rewrite = (contents: Reader.Contents) =>
      Effect.gen(function*() {
        const file = contents.file
        let text = JSON.stringify({ ...contents.header, v: LOG_VERSION }) + "\n"
        for (const event of contents.events) text += encodeEvent(event)
        const bytes = encoder.encode(text)
        yield* Files.replaceWhole(file, bytes, Files.backupPath(file, contents.version), faults)
        // Routine after an upgrade of Skein, for every session: not for the editor's transcript.
        yield* Effect.logDebug(`Migrated session log ${file} from format v${contents.version} to v${LOG_VERSION}`)
        return bytes.length
      })

    const open = <E = never>(sessionId: string, check?: (contents: Reader.Contents) => Effect.Effect<void, E>) =>
      Effect.gen(function*() {
        yield* checkId(sessionId)
        const file = pathOf(sessionId)
        if (!(yield* fs.exists(file).pipe(Effect.orElseSucceed(() => false)))) {
          return yield* new LogError({ reason: "not_found", message: `Session not found: ${sessionId}` })
        }
        yield* Lock.acquire(lockOf(sessionId), sessionId)
        const contents = yield* Reader.read(fs, file, readerOptions)
        // Whatever refuses the session does so before anything changes on disk.
        if (check !== undefined) yield* check(contents)
        yield* Files.removeLeftovers(file)
        let size = contents.intactBytes
        if (contents.torn !== undefined) {
          yield* fs.truncate(file, contents.intactBytes).pipe(Effect.mapError(fail(file, "cut the torn tail of")))
          yield* Effect.logWarning(
            `Session log ${file}: cut a torn last line (line ${contents.torn.line}, ${contents.torn.bytes} bytes) left by a crash`
          )
        }
        if (contents.version !== LOG_VERSION) size = yield* rewrite(contents)
        const fd = yield* Effect.try({
          try: () => nodeFs.openSync(file, "a"),
          catch: (error) => ioFailure(`Cannot open session log ${file}`, error)
        })
        // A log an older Skein wrote with the umask's mode.
        Files.tightenFile(fd)
        const writer = yield* makeWriter(file, fd, size)
        return { contents, writer } satisfies Opened
      }).pipe(Effect.withSpan("SessionLog.open"))

    const read = (sessionId: string) =>
      Effect.andThen(checkId(sessionId), Reader.read(fs, pathOf(sessionId), readerOptions))

    const remove = Effect.fn("SessionLog.remove")(function*(sessionId: string) {
      if (!Listing.isSessionId(sessionId)) return
      const present = yield* Effect.try({
        // Another process's lock in the making (`<id>.lock.*`) is not the session's; a lock a
        // killed delete left is, and goes too (taken over, if its owner is gone).
        try: () => Files.sessionFiles(directory, sessionId).some((name) => !name.startsWith(`${sessionId}.lock.`)),
        catch: (error) => new LogError({ reason: "io", message: `Cannot list ${directory}: ${(error as NodeJS.ErrnoException).code ?? "error"}` })
      })
      if (!present) return
      // Under the lock: no other process opens the session while its files go; released (removed) last.
      yield* Effect.scoped(Effect.andThen(
        Lock.acquire(lockOf(sessionId), sessionId),
        Files.removeSession(directory, sessionId, faults)
      ))
    })

    return {
      directory,
      pathOf,
      create,
      open,
      read,
      readFile: (file) => Reader.read(fs, file, readerOptions),
      readSide: (sessionId, side) => Effect.andThen(checkId(sessionId), Files.readSide(Files.sidePath(pathOf(sessionId), side))),
      held: (sessionId) =>
        Listing.isSessionId(sessionId) ? Effect.map(Lock.owner(fs, lockOf(sessionId)), Lock.isLive) : Effect.succeed(false),
      list: (query) => Listing.list(fs, path, directory, query),
      remove
    } satisfies Store
  })
