/**
 * The memory store: the same log, line for line, as the file store writes, kept in this
 * process's memory instead of in files. For embedders who want no files, and for tests of the
 * runtime that are not about the disk.
 *
 * It keeps the file store's contract, minus what only files need: a log is its header line and
 * one `encodeEvent` line per event, read back by the same reader (with the same checks and
 * migrations); a writer holds the session's lock for its scope (a second `create` or `open`
 * of it fails with `locked`, as in another process; `remove` too); side records live and go
 * with their session; `list` pages newest first with the cwd filter and cursors. Nothing needs
 * recovering (no write is ever half done), and `sync` has nothing to flush. A test may make
 * its writes fail (`faults`), as a full disk or a lost lease would.
 *
 * Paths are names: `pathOf` gives `memory:sessions/<id>.ndjson`, stable for a session and
 * found by `readFile`, but no file. Sessions last as long as their `Sessions`: by default one
 * per layer, dropped with it.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Checks from "./Checks.ts"
import { type Canonical, LOG_VERSION, type LogHeader } from "./Event.ts"
import * as Listing from "./Listing.ts"
import { LogError } from "./LogError.ts"
import type * as Migrations from "./Migrations.ts"
import * as Reader from "./Reader.ts"
import { encodeEvent, type Opened, refuse, type Side, type Store, type Writer } from "./Store.ts"

export interface Options {
  /**
   * Where the logs are kept (default: new, for this layer alone). Layers given the same
   * `Sessions` see the same sessions, as two processes sharing a home do.
   */
  readonly sessions?: Sessions | undefined
  /** The formats logs are read in (default: `Migrations.formats`). */
  readonly formats?: ReadonlyMap<number, Migrations.Upgrade> | undefined
  /** The events logs hold (default: `CanonicalBody`). */
  readonly events?: Checks.EventUnion | undefined
  /** Makes writes fail as a full disk or a lost lease would (tests); Skein itself passes none. */
  readonly faults?: Faults | undefined
}

/**
 * Consulted before each write of a writer: an error returned is that write's, and nothing of
 * it is written (as a file store's append that the disk refused is cut back).
 */
export interface Faults {
  readonly append?: ((events: ReadonlyArray<Canonical>) => LogError | undefined) | undefined
  readonly sync?: (() => LogError | undefined) | undefined
}

interface Log {
  /** The log's bytes as text: what the file store's file would hold. */
  text: string
  /** Last write, ms since the epoch; strictly increasing across the store (see `touch`). */
  updatedAt: number
  /** What `list` shows, kept up to date as the log grows. */
  head: Listing.Head
  readonly side: Map<Side, string>
}

/** The logs of a memory store, by session id, and the sessions open for writing. */
export class Sessions {
  /** @internal */
  readonly logs = new Map<string, Log>()
  /** @internal */
  readonly open = new Set<string>()
  /** @internal */
  lastWrite = 0

  /** A session's log as the file store would hold it (header line, then one line per event). */
  text(sessionId: string): string | undefined {
    return this.logs.get(sessionId)?.text
  }
}

export const DIRECTORY = "memory:sessions"

const encoder = new TextEncoder()

const headOf = (header: LogHeader): Listing.Head => ({
  cwd: header.cwd,
  additionalDirectories: header.additionalDirectories ?? [],
  created: header.created,
  version: header.v,
  title: undefined,
  ...(header.parent !== undefined ? { parent: header.parent.sessionId } : {}),
  ...(header.agent !== undefined ? { agent: header.agent } : {})
})

/** The memory store over `options.sessions` (or new ones). */
export const make = (options?: Options): Effect.Effect<Store> =>
  Effect.sync(() => {
    const sessions = options?.sessions ?? new Sessions()
    const readerOptions: Reader.Options = { formats: options?.formats, events: options?.events }
    const checkData = options?.events === undefined ? Checks.canonical() : Checks.of(options.events)
    const pathOf = (sessionId: string) => `${DIRECTORY}/${sessionId}.ndjson`

    const checkId = (sessionId: string) =>
      Listing.isSessionId(sessionId)
        ? Effect.void
        : Effect.fail(new LogError({ reason: "not_found", message: "Not a valid session id" }))

    /** Stamps a write: the clock's time, nudged past the previous write so the order of writes is the order of times. */
    const touch = (log: Log) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        sessions.lastWrite = Math.max(now, sessions.lastWrite + 0.001)
        log.updatedAt = sessions.lastWrite
      })

    /** The session's write lease for the scope. */
    const lock = (sessionId: string) =>
      Effect.acquireRelease(
        Effect.suspend(() => {
          if (sessions.open.has(sessionId)) {
            return Effect.fail(new LogError({ reason: "locked", message: `Session ${sessionId} is already open in this Skein process` }))
          }
          sessions.open.add(sessionId)
          return Effect.void
        }),
        () => Effect.sync(() => sessions.open.delete(sessionId))
      )

    const parse = (file: string, log: Log) => Reader.parse(file, encoder.encode(log.text), readerOptions)

    const makeWriter = (file: string, log: Log): Writer => ({
      path: file,
      append: (events) =>
        Effect.suspend(() => {
          if (events.length === 0) return Effect.void
          const refused = refuse(file, events, checkData) ?? options?.faults?.append?.(events)
          if (refused !== undefined) return Effect.fail(refused)
          for (const event of events) {
            log.text += encodeEvent(event)
            if (log.head.title === undefined && event.type === "turn_start") {
              log.head = { ...log.head, title: Listing.title(event.data.content) }
            }
          }
          return touch(log)
        }),
      sync: Effect.suspend(() => {
        const refused = options?.faults?.sync?.()
        return refused === undefined ? Effect.void : Effect.fail(refused)
      }),
      saveSide: (side, text) =>
        Effect.sync(() => {
          if (text === undefined) log.side.delete(side)
          else log.side.set(side, text)
        }),
      loadSide: (side) => Effect.sync(() => log.side.get(side))
    })

    const create = Effect.fn("SessionLog.create")(function*(header: LogHeader) {
      const file = pathOf(header.id)
      yield* checkId(header.id)
      yield* lock(header.id)
      if (sessions.logs.has(header.id)) {
        return yield* new LogError({ reason: "io", message: `Cannot create the session log ${file}: it exists` })
      }
      const log: Log = { text: JSON.stringify(header) + "\n", updatedAt: 0, head: headOf(header), side: new Map() }
      yield* touch(log)
      sessions.logs.set(header.id, log)
      return makeWriter(file, log)
    })

    const open = <E = never>(sessionId: string, check?: (contents: Reader.Contents) => Effect.Effect<void, E>) =>
      Effect.gen(function*() {
        yield* checkId(sessionId)
        const file = pathOf(sessionId)
        if (!sessions.logs.has(sessionId)) {
          return yield* new LogError({ reason: "not_found", message: `Session not found: ${sessionId}` })
        }
        yield* lock(sessionId)
        const log = sessions.logs.get(sessionId)!
        const contents = yield* parse(file, log)
        // Whatever refuses the session does so before anything changes.
        if (check !== undefined) yield* check(contents)
        if (contents.version !== LOG_VERSION) {
          let text = JSON.stringify({ ...contents.header, v: LOG_VERSION }) + "\n"
          for (const event of contents.events) text += encodeEvent(event)
          log.text = text
          log.head = { ...log.head, version: LOG_VERSION }
        } else if (contents.torn !== undefined) {
          log.text = Buffer.from(log.text).subarray(0, contents.intactBytes).toString("utf8")
        }
        return { contents, writer: makeWriter(file, log) } satisfies Opened
      }).pipe(Effect.withSpan("SessionLog.open"))

    const read = (sessionId: string) =>
      Effect.andThen(checkId(sessionId), () => {
        const log = sessions.logs.get(sessionId)
        return log === undefined
          ? Effect.fail(new LogError({ reason: "not_found", message: `No session log at ${pathOf(sessionId)}` }))
          : parse(pathOf(sessionId), log)
      })

    const readFile = (file: string) => {
      const id = file.startsWith(`${DIRECTORY}/`) && file.endsWith(".ndjson") ? file.slice(DIRECTORY.length + 1, -".ndjson".length) : ""
      const log = sessions.logs.get(id)
      return log === undefined || pathOf(id) !== file
        ? Effect.fail(new LogError({ reason: "not_found", message: `No session log at ${file}` }))
        : parse(file, log)
    }

    const remove = Effect.fn("SessionLog.remove")(function*(sessionId: string) {
      if (!Listing.isSessionId(sessionId) || !sessions.logs.has(sessionId)) return
      // Under the lock, as in the file store: a session open for writing is not removed.
      yield* Effect.scoped(Effect.andThen(lock(sessionId), Effect.sync(() => sessions.logs.delete(sessionId))))
    })

    const list = (query: Listing.Query) =>
      Effect.suspend(() =>
        Listing.page(
          [...sessions.logs].map(([id, log]) => ({ id, updatedAt: log.updatedAt })),
          query,
          (id) => Effect.sync(() => sessions.logs.get(id)?.head)
        )
      )

    const readSide = (sessionId: string, side: Side) => Effect.andThen(checkId(sessionId), Effect.sync(() => sessions.logs.get(sessionId)?.side.get(side)))
    const held = (sessionId: string) => Effect.sync(() => sessions.open.has(sessionId))

    return { directory: DIRECTORY, pathOf, create, open, read, readFile, readSide, held, list, remove } satisfies Store
  })
