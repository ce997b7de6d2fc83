/**
 * The Postgres store: the session logs in a PostgreSQL database, for Skeins on several
 * machines that share their sessions. The same contract as the file store: a log is its header
 * and one `encodeEvent` line per event (kept as rows keyed by session id and seq, in a
 * transaction per append, before the events are published), read back by the same reader
 * (with the same checks and migrations of the log format); a writer holds the session's write
 * lease for its scope; side records live and go with their session; `list` pages newest first
 * with the cwd filter and cursors.
 *
 * - **Leases**, not file locks (`PgLease.ts`): a row per open session names its owner, when
 *   the lease ends (renewed while it is held; `leaseMs`, default 30 s) and the owner's presence
 *   (an advisory lock of its own connection): a holder that died lets go at once, one that
 *   stopped renewing once its lease has run out. Appends are fenced by it: a writer whose lease
 *   was taken over writes nothing more.
 * - **The schema** is created and upgraded by Effect's SQL migrator (table
 *   `skein_migrations`), each statement once, whichever Skein gets there first.
 * - `sync` has nothing to do: a committed append is durable.
 * - Paths are names: `pathOf` gives `postgres:sessions/<id>`, which `readFile` reads.
 */
import { PgClient } from "@effect/sql-pg"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as Migrator from "effect/sql/Migrator"
import { SqlClient } from "effect/sql/SqlClient"
import * as Checks from "./Checks.ts"
import { type Canonical, LOG_VERSION, type LogHeader } from "./Event.ts"
import * as Listing from "./Listing.ts"
import { LogError } from "./LogError.ts"
import * as PgLease from "./PgLease.ts"
import { io } from "./PgLease.ts"
import type * as Migrations from "./Migrations.ts"
import * as Reader from "./Reader.ts"
import { SessionLog } from "./SessionLog.ts"
import { encodeEvent, type Opened, refuse, type Side, type Store, type Writer } from "./Store.ts"

export interface Options {
  /** How long a write lease lasts unless its owner renews it (default 30 s); renewed every third of it. */
  readonly leaseMs?: number | undefined
  /** The formats logs are read in (default: `Migrations.formats`). */
  readonly formats?: ReadonlyMap<number, Migrations.Upgrade> | undefined
  /** The events logs hold (default: `CanonicalBody`). */
  readonly events?: Checks.EventUnion | undefined
}

export const DEFAULT_LEASE_MS = 30_000
export const DIRECTORY = "postgres:sessions"
/** Rows per statement when a log is rewritten (three parameters a row, within Postgres's 65,535). */
const REWRITE_BATCH = 1_000

/** The schema, as migrations: each runs once, in order, in a transaction. */
export const migrations = Migrator.fromRecord({
  "1_sessions": Effect.gen(function*() {
    const sql = yield* SqlClient
    yield* sql`CREATE TABLE skein_sessions (
      id text PRIMARY KEY,
      header text NOT NULL,
      cwd text NOT NULL,
      additional_directories jsonb NOT NULL DEFAULT '[]',
      created double precision NOT NULL,
      version integer NOT NULL,
      title text,
      parent text,
      updated_at double precision NOT NULL
    )`
    yield* sql`CREATE INDEX skein_sessions_updated ON skein_sessions (updated_at DESC, id DESC)`
    yield* sql`CREATE TABLE skein_events (
      session_id text NOT NULL REFERENCES skein_sessions (id) ON DELETE CASCADE,
      seq bigint NOT NULL,
      line text NOT NULL,
      PRIMARY KEY (session_id, seq)
    )`
    yield* sql`CREATE TABLE skein_sides (
      session_id text NOT NULL REFERENCES skein_sessions (id) ON DELETE CASCADE,
      side text NOT NULL,
      body text NOT NULL,
      PRIMARY KEY (session_id, side)
    )`
    yield* sql`CREATE TABLE skein_leases (
      session_id text PRIMARY KEY,
      owner text NOT NULL,
      expires_at timestamptz NOT NULL
    )`
  }),
  // Who holds a lease and whether it is alive (`PgLease.ts`): its presence lock, its lease's length.
  "2_lease_presence": Effect.gen(function*() {
    const sql = yield* SqlClient
    yield* sql`ALTER TABLE skein_leases ADD COLUMN presence integer, ADD COLUMN lease_ms integer`
  })
})

/** Creates or upgrades the schema (safe to run from several Skeins at once). */
export const migrate = Migrator.make({})({ loader: migrations, table: "skein_migrations" })

interface SessionRow {
  readonly id: string
  readonly header: string
  readonly cwd: string
  readonly additional_directories: unknown
  readonly created: number
  readonly version: number
  readonly title: string | null
  readonly parent: string | null
  readonly updated_at: number
}

const encoder = new TextEncoder()

const headOf = (row: SessionRow): Listing.Head => ({
  cwd: row.cwd,
  additionalDirectories: Array.isArray(row.additional_directories) ? row.additional_directories.filter((d): d is string => typeof d === "string") : [],
  created: Number(row.created),
  version: row.version,
  title: row.title ?? undefined,
  ...(row.parent !== null ? { parent: row.parent } : {})
})

/** The Postgres store over the `SqlClient` in context (its schema must be migrated first: `migrate`). */
export const make = (options?: Options): Effect.Effect<Store, never, SqlClient | Scope.Scope> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const leaseMs = options?.leaseMs ?? DEFAULT_LEASE_MS
    const readerOptions: Reader.Options = { formats: options?.formats, events: options?.events }
    const checkData = options?.events === undefined ? Checks.canonical() : Checks.of(options.events)
    let lastWrite = 0
    const pathOf = (sessionId: string) => `${DIRECTORY}/${sessionId}`

    const checkId = (sessionId: string) =>
      Listing.isSessionId(sessionId)
        ? Effect.void
        : Effect.fail(new LogError({ reason: "not_found", message: "Not a valid session id" }))

    /** A write's time: the clock's, nudged past this store's previous write (the order of writes is the order of times). */
    const stamp = Effect.map(Clock.currentTimeMillis, (now) => (lastWrite = Math.max(now, lastWrite + 0.001)))

    const leases = yield* PgLease.make(leaseMs)
    const owner = leases.owner
    const lease = leases.take

    /** A session's log as its text: the header line, then one line per event. */
    const textOf = (sessionId: string): Effect.Effect<string | undefined, LogError> =>
      Effect.gen(function*() {
        const rows = yield* sql<{ readonly header: string }>`SELECT header FROM skein_sessions WHERE id = ${sessionId}`.pipe(
          Effect.mapError(io(`read session ${sessionId}`))
        )
        if (rows.length === 0) return undefined
        const lines = yield* sql<{ readonly line: string }>`SELECT line FROM skein_events WHERE session_id = ${sessionId} ORDER BY seq`.pipe(
          Effect.mapError(io(`read session ${sessionId}`))
        )
        let text = rows[0]!.header + "\n"
        for (const row of lines) text += row.line + "\n"
        return text
      })

    const parse = (file: string, text: string) => Reader.parse(file, encoder.encode(text), readerOptions)

    const readLog = (sessionId: string, file: string) =>
      Effect.flatMap(textOf(sessionId), (text) =>
        text === undefined ? Effect.fail(new LogError({ reason: "not_found", message: `No session log at ${file}` })) : parse(file, text))

    const makeWriter = (sessionId: string, file: string): Writer => ({
      path: file,
      append: (events: ReadonlyArray<Canonical>) =>
        Effect.suspend(() => {
          if (events.length === 0) return Effect.void
          const refused = refuse(file, events, checkData)
          if (refused !== undefined) return Effect.fail(refused)
          const rows = events.map((event) => ({ session_id: sessionId, seq: event.seq, line: encodeEvent(event).slice(0, -1) }))
          const start = events.find((event) => event.type === "turn_start")
          const title = start?.type === "turn_start" ? Listing.title(start.data.content) ?? null : null
          return Effect.gen(function*() {
            const at = yield* stamp
            return yield* sql.withTransaction(Effect.gen(function*() {
              // Fenced by the lease: a writer that lost it (its renewals stopped, and another
              // Skein took the session over) writes nothing. The row is locked until commit, so
              // no takeover happens mid-append.
              const held = yield* sql`SELECT 1 FROM skein_leases WHERE session_id = ${sessionId} AND owner = ${owner} FOR SHARE`
              if (held.length === 0) return false
              yield* sql`INSERT INTO skein_events ${sql.insert(rows as [typeof rows[0], ...typeof rows])}`
              yield* sql`UPDATE skein_sessions SET updated_at = ${at}, title = COALESCE(title, ${title}) WHERE id = ${sessionId}`
              return true
            }))
          }).pipe(
            Effect.mapError(io(`append to session log ${file}`)),
            Effect.flatMap((written) =>
              written ? Effect.void : Effect.fail(
                new LogError({ reason: "locked", message: `Session ${sessionId} was taken over by another Skein (this one lost its lease): nothing was written` })
              )
            )
          )
        }),
      sync: Effect.void,
      saveSide: (side: Side, text) =>
        (text === undefined
          ? sql`DELETE FROM skein_sides WHERE session_id = ${sessionId} AND side = ${side}`
          : sql`INSERT INTO skein_sides (session_id, side, body) VALUES (${sessionId}, ${side}, ${text})
                ON CONFLICT (session_id, side) DO UPDATE SET body = EXCLUDED.body`).pipe(
          Effect.asVoid,
          Effect.mapError(io(`save the ${side} record of session ${sessionId}`))
        ),
      loadSide: (side: Side) => readSide(sessionId, side)
    })

    const readSide = (sessionId: string, side: Side): Effect.Effect<string | undefined, LogError> =>
      Effect.andThen(
        checkId(sessionId),
        sql<{ readonly body: string }>`SELECT body FROM skein_sides WHERE session_id = ${sessionId} AND side = ${side}`.pipe(
          Effect.map((rows) => rows[0]?.body),
          Effect.mapError(io(`read the ${side} record of session ${sessionId}`))
        )
      )

    const create = Effect.fn("SessionLog.create")(function*(header: LogHeader) {
      const file = pathOf(header.id)
      yield* checkId(header.id)
      yield* lease(header.id)
      const at = yield* stamp
      const inserted = yield* sql`
        INSERT INTO skein_sessions (id, header, cwd, additional_directories, created, version, title, parent, updated_at)
        VALUES (${header.id}, ${JSON.stringify(header)}, ${header.cwd}, ${JSON.stringify(header.additionalDirectories ?? [])}::jsonb,
                ${header.created}, ${header.v}, NULL, ${header.parent?.sessionId ?? null}, ${at})
        ON CONFLICT (id) DO NOTHING
        RETURNING id`.pipe(Effect.mapError(io(`create the session log ${file}`)))
      if (inserted.length === 0) return yield* new LogError({ reason: "io", message: `Cannot create the session log ${file}: it exists` })
      return makeWriter(header.id, file)
    })

    /**
     * Rewrites a log of an older format in the current one, in one transaction: the header and
     * every event line as the reader upgraded it (as the file store rewrites its file).
     */
    const rewrite = (sessionId: string, file: string, contents: Reader.Contents) =>
      sql.withTransaction(Effect.gen(function*() {
        const header = JSON.stringify({ ...contents.header, v: LOG_VERSION })
        yield* sql`UPDATE skein_sessions SET header = ${header}, version = ${LOG_VERSION} WHERE id = ${sessionId}`
        yield* sql`DELETE FROM skein_events WHERE session_id = ${sessionId}`
        for (let at = 0; at < contents.events.length; at += REWRITE_BATCH) {
          const rows = contents.events.slice(at, at + REWRITE_BATCH).map((event) => ({
            session_id: sessionId,
            seq: event.seq,
            line: encodeEvent(event).slice(0, -1)
          }))
          yield* sql`INSERT INTO skein_events ${sql.insert(rows as [typeof rows[0], ...typeof rows])}`
        }
      })).pipe(Effect.mapError(io(`upgrade session log ${file}`)))

    const open = <E = never>(sessionId: string, check?: (contents: Reader.Contents) => Effect.Effect<void, E>) =>
      Effect.gen(function*() {
        yield* checkId(sessionId)
        const file = pathOf(sessionId)
        const exists = yield* sql`SELECT 1 FROM skein_sessions WHERE id = ${sessionId}`.pipe(Effect.mapError(io(`read session ${sessionId}`)))
        if (exists.length === 0) return yield* new LogError({ reason: "not_found", message: `Session not found: ${sessionId}` })
        yield* lease(sessionId)
        const contents = yield* readLog(sessionId, file)
        // Whatever refuses the session does so before anything changes.
        if (check !== undefined) yield* check(contents)
        if (contents.version !== LOG_VERSION) yield* rewrite(sessionId, file, contents)
        return { contents, writer: makeWriter(sessionId, file) } satisfies Opened
      }).pipe(Effect.withSpan("SessionLog.open"))

    const read = (sessionId: string) => Effect.andThen(checkId(sessionId), readLog(sessionId, pathOf(sessionId)))

    const readFile = (file: string) => {
      const id = file.startsWith(`${DIRECTORY}/`) ? file.slice(DIRECTORY.length + 1) : ""
      return Listing.isSessionId(id) ? readLog(id, file) : Effect.fail(new LogError({ reason: "not_found", message: `No session log at ${file}` }))
    }

    const remove = Effect.fn("SessionLog.remove")(function*(sessionId: string) {
      if (!Listing.isSessionId(sessionId)) return
      const exists = yield* sql`SELECT 1 FROM skein_sessions WHERE id = ${sessionId}`.pipe(Effect.mapError(io(`read session ${sessionId}`)))
      if (exists.length === 0) return
      // Under the lease, as the file store removes under the lock: a session open for writing is not removed.
      yield* Effect.scoped(Effect.andThen(
        lease(sessionId),
        sql`DELETE FROM skein_sessions WHERE id = ${sessionId}`.pipe(Effect.mapError(io(`remove session ${sessionId}`)))
      ))
    })

    const list = (query: Listing.Query) =>
      Effect.gen(function*() {
        const rows = yield* sql<SessionRow>`
          SELECT id, header, cwd, additional_directories, created, version, title, parent, updated_at FROM skein_sessions`.pipe(
          Effect.mapError(io("list the sessions"))
        )
        const heads = new Map(rows.map((row) => [row.id, headOf(row)] as const))
        return yield* Listing.page(
          rows.map((row) => ({ id: row.id, updatedAt: Number(row.updated_at) })),
          query,
          (id) => Effect.succeed(heads.get(id))
        )
      })

    return { directory: DIRECTORY, pathOf, create, open, read, readFile, readSide, held: leases.held, list, remove } satisfies Store
  })

/**
 * `SessionLog` on the Postgres database at `url` (`postgres://user@host:port/db`): connects,
 * creates or upgrades the schema, and keeps the connections for the layer's life.
 */
export const layer = (url: string, options?: Options): Layer.Layer<SessionLog, LogError> =>
  Layer.effect(
    SessionLog,
    Effect.andThen(
      Effect.mapError(migrate, (error) => new LogError({ reason: "io", message: `Cannot prepare the session database: ${error.message.split("\n")[0]}` })),
      make(options)
    )
  ).pipe(
    Layer.provide(PgClient.layer({ url: Redacted.make(url), applicationName: "skein" })),
    Layer.catchCause((cause): Layer.Layer<SessionLog, LogError> => {
      const error = Cause.squash(cause)
      if (error instanceof LogError) return Layer.effect(SessionLog, Effect.fail(error))
      const said = error instanceof Error ? error.message.split("\n")[0] : String(error)
      return Layer.effect(SessionLog, Effect.fail(new LogError({ reason: "io", message: `Cannot reach the session database: ${said}` })))
    })
  )

/** What `skein doctor --store` reports of a database: whether it answers, its schema, its sessions. */
export interface Status {
  readonly ok: boolean
  readonly lines: ReadonlyArray<string>
}

/** The sessions' side of a database's state (its server, the schema, the sessions), over the `SqlClient` in context. */
const storeLines = Effect.gen(function*() {
  const sql = yield* SqlClient
  const version = yield* sql<{ readonly v: string | null }>`SELECT current_setting('server_version') AS v`
  const tables = yield* sql<{ readonly name: string }>`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema()`
  const names = new Set(tables.map((t) => t.name))
  const lines = [`PostgreSQL ${version[0]?.v ?? "?"}: reachable`]
  if (!names.has("skein_migrations")) {
    lines.push("schema: not created yet (the first Skein that uses this database creates it)")
    return { names, lines }
  }
  const applied = yield* sql<{ readonly id: number; readonly name: string }>`SELECT migration_id AS id, name FROM skein_migrations ORDER BY migration_id`
  const latest = applied.at(-1)
  lines.push(`schema: version ${latest?.id ?? 0}${latest !== undefined ? ` (${latest.name})` : ""}, ${applied.length} migration(s) applied`)
  if (names.has("skein_sessions")) {
    // A lease whose holder's presence is gone (it died) is not held, once the schema records presences.
    const live = applied.some((m) => m.id >= 2)
      ? sql`AND NOT ${PgLease.goneWith(sql)}`
      : sql``
    const counts = yield* sql<{ readonly sessions: string; readonly events: string; readonly held: string }>`
      SELECT (SELECT count(*) FROM skein_sessions) AS sessions,
             (SELECT count(*) FROM skein_events) AS events,
             (SELECT count(*) FROM skein_leases WHERE expires_at > now() ${live}) AS held`
    const c = counts[0]
    lines.push(`sessions: ${c?.sessions ?? 0} (${c?.events ?? 0} events); held by a Skein now: ${c?.held ?? 0}`)
  }
  return { names, lines }
})

/** Runs a report on the database at `url`; one that cannot be reached is reported as such. */
const report = (url: string, lines: Effect.Effect<ReadonlyArray<string>, unknown, SqlClient>): Effect.Effect<Status> =>
  Effect.map(lines, (ls): Status => ({ ok: true, lines: ls })).pipe(
    Effect.provide(PgClient.layer({ url: Redacted.make(url), applicationName: "skein-doctor", connectTimeout: "5 seconds" })),
    Effect.catchCause((cause) => {
      const error = Cause.squash(cause)
      const said = error instanceof Error ? error.message.split("\n")[0] : String(error)
      return Effect.succeed({ ok: false, lines: [`not reachable: ${said}`] })
    })
  )

/** Connects to the database at `url` and reports its state, without changing anything. Never fails. */
export const status = (url: string): Effect.Effect<Status> => report(url, Effect.map(storeLines, (s) => s.lines))

/**
 * What `skein doctor --cluster` reports of a cluster's database: whether it answers, the
 * sessions' schema, the runners (from effect/cluster's `cluster_runners`) and the shards each
 * holds (the advisory locks of its connections, which runners name `skein-runner HOST:PORT`).
 * Never fails; `ok` is false when the database does not answer.
 */
export const clusterStatus = (url: string, shards = 300): Effect.Effect<Status> =>
  report(url, Effect.gen(function*() {
    const sql = yield* SqlClient
    const { lines, names } = yield* storeLines
    if (!names.has("cluster_runners")) return [...lines, "runners: none yet (no runner has joined this cluster)"]
    const runners = yield* sql<{ readonly address: string; readonly healthy: boolean; readonly age: number }>`
      SELECT address, healthy, EXTRACT(EPOCH FROM (now() - last_heartbeat)) AS age FROM cluster_runners ORDER BY address`
    const held = yield* sql<{ readonly name: string; readonly shards: string }>`
      SELECT a.application_name AS name, count(*) AS shards
      FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND a.application_name LIKE 'skein-runner %'
      GROUP BY a.application_name`
    const byRunner = new Map(held.map((h) => [h.name.slice("skein-runner ".length), Number(h.shards)]))
    const assigned = [...byRunner.values()].reduce((a, b) => a + b, 0)
    return [
      ...lines,
      `runners: ${runners.length}`,
      ...runners.map((r) =>
        `  ${r.address}: ${r.healthy ? "healthy" : "unhealthy"}, ${byRunner.get(r.address) ?? 0} shards, last heartbeat ${Number(r.age).toFixed(1)} s ago`
      ),
      `shards: ${assigned} of ${shards} held (unassigned: ${Math.max(0, shards - assigned)})`
    ]
  }))
