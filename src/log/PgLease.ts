/**
 * The write leases of the Postgres store: one row per open session (`skein_leases`) naming its
 * holder, until when it holds it (`expires_at`, renewed every third of `lease_ms`), and the
 * holder's presence.
 *
 * - **Presence.** Each store holds one session-level advisory lock (namespace `PRESENCE`, a
 *   random key) on a connection of its own, for as long as it lives, and writes its key in the
 *   leases it takes. A process that dies (`kill -9`, a crash) loses its connections at once, and
 *   the lock with them: its leases are free then, without waiting for them to run out. A holder
 *   whose presence still shows is alive, and is refused to others at once.
 * - **A holder that stopped renewing** (its machine died with the connection half open, or it
 *   is frozen) is waited for: a lease that missed a renewal (less than half its length left) is
 *   waited on until it runs out, then taken over. A lease with no presence (written by an older
 *   Skein) counts on its expiry alone.
 * - Every way to take a session (create, open, remove) goes through `take`, so every one waits
 *   for a dead holder the same way, and refuses a live one at once.
 *
 * Losing the presence connection while alive (the database restarted) frees this store's leases
 * until it is back (checked every third of a lease): another Skein may take a session over then,
 * and this one's next append is refused (appends are fenced by the owner, `PgStore.ts`).
 */
import * as os from "node:os"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import type { Connection } from "effect/sql/SqlConnection"
import { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { LogError } from "./LogError.ts"

/** The advisory-lock namespace of presences (a fixed, positive int4; the key is random per store). */
export const PRESENCE = 0x536b6e31

interface Leases {
  /** Who this store is, in the rows: this process on this machine. */
  readonly owner: string
  /**
   * Takes the session's lease for the scope: renewed while it lasts, given back when it closes.
   * A dead holder's lease is taken over (at once, or once it ran out); a live holder's is refused
   * at once (`locked`).
   */
  readonly take: (sessionId: string) => Effect.Effect<void, LogError, Scope.Scope>
  /** Whether a live Skein holds the session's lease now. */
  readonly held: (sessionId: string) => Effect.Effect<boolean>
}

/** A store error that names what failed and the database's reason, never the connection's settings. */
export const io = (what: string) => (error: SqlError) =>
  new LogError({ reason: "io", message: `Cannot ${what}: the database said ${error.message.split("\n")[0]?.slice(0, 300) ?? "nothing"}` })

/** A lease's holder is gone (SQL, over a `skein_leases` row): its presence was recorded, and its lock is no more. */
export const goneWith = (sql: SqlClient) =>
  sql`(skein_leases.presence IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = ${PRESENCE}::oid
      AND objid = skein_leases.presence::oid AND objsubid = 2))`

const randomKey = () => 1 + Math.floor(Math.random() * 0x7ffffffe)

/** The leases of a store whose leases last `leaseMs` unless renewed; its presence lives as long as the scope. */
export const make = (leaseMs: number): Effect.Effect<Leases, never, SqlClient | Scope.Scope> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const owner = `${os.hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 10)}`
    const every = Math.max(100, Math.floor(leaseMs / 3))
    const scope = yield* Effect.scope

    // ---- presence ------------------------------------------------------------------

    /** The key of this store's presence lock, while it holds one. */
    let presence: number | undefined
    let held: { readonly conn: Connection; readonly key: number; readonly scope: Scope.Closeable } | undefined

    /** Takes a presence lock on a connection of its own (kept non-idle by `watch`); undefined when it cannot. */
    const establish = Effect.gen(function*() {
      const own = yield* Scope.make()
      const attempt = Effect.gen(function*() {
        const conn = yield* Scope.provide(sql.reserve, own)
        // Given back to the pool as it was: no lock, its idle timeout restored.
        yield* Scope.addFinalizer(own, Effect.ignore(conn.executeRaw(
          "SELECT pg_advisory_unlock_all(), (SELECT set_config(name, reset_val, false) FROM pg_settings WHERE name = 'idle_session_timeout')",
          []
        )))
        // A server-wide idle timeout must not end it: `watch` uses it every third of a lease anyway.
        yield* conn.executeRaw("SELECT set_config(name, '0', false) FROM pg_settings WHERE name = 'idle_session_timeout'", [])
        for (let i = 0; i < 8; i++) {
          const key = randomKey()
          const [[got]] = yield* conn.executeValues(`SELECT pg_try_advisory_lock(${PRESENCE}, ${key})`, []) as Effect.Effect<ReadonlyArray<ReadonlyArray<unknown>>, SqlError>
          if (got === true) return { conn, key }
        }
        return undefined
      })
      const got = yield* Effect.exit(attempt)
      if (Exit.isFailure(got) || got.value === undefined) {
        yield* Scope.close(own, Exit.void)
        return
      }
      held = { ...got.value, scope: own }
      presence = got.value.key
      // Leases taken meanwhile (or under a presence lost since) name this one now.
      yield* Effect.ignore(sql`UPDATE skein_leases SET presence = ${presence} WHERE owner = ${owner}`)
    })

    /** Checks the presence lock every third of a lease; a lost one (its connection ended) is taken again. */
    const watch = Effect.gen(function*() {
      const current = held
      if (current !== undefined) {
        const still = yield* Effect.exit(current.conn.executeValues(
          `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = ${PRESENCE}::oid AND objid = ${current.key}::oid AND objsubid = 2 AND pid = pg_backend_pid()`,
          []
        ))
        if (Exit.isSuccess(still) && still.value.length > 0) return
        held = undefined
        presence = undefined
        yield* Scope.close(current.scope, Exit.void)
      }
      yield* establish
    })

    yield* establish
    yield* Effect.forkIn(Effect.repeat(Effect.delay(watch, every), Schedule.forever), scope)
    yield* Scope.addFinalizer(scope, Effect.suspend(() => {
      const current = held
      held = undefined
      presence = undefined
      return current === undefined ? Effect.void : Scope.close(current.scope, Exit.void)
    }))

    // ---- leases --------------------------------------------------------------------

    const gone = goneWith(sql)

    /** One try: the lease is ours now (free, run out, or its holder gone), or undefined. */
    const claim = (sessionId: string) =>
      Effect.map(
        sql<{ readonly owner: string }>`
          INSERT INTO skein_leases (session_id, owner, expires_at, presence, lease_ms)
          VALUES (${sessionId}, ${owner}, now() + ${leaseMs} * interval '1 millisecond', ${presence ?? null}, ${leaseMs})
          ON CONFLICT (session_id) DO UPDATE
            SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at, presence = EXCLUDED.presence, lease_ms = EXCLUDED.lease_ms
            WHERE skein_leases.expires_at < now() OR ${gone}
          RETURNING owner`,
        (rows) => rows.length > 0
      )

    /** How the current holder stands: how long its lease has left, whether it stopped renewing, whether it is gone. */
    const holder = (sessionId: string) =>
      Effect.map(
        sql<{ readonly left_ms: number; readonly stale: boolean; readonly gone: boolean }>`
          SELECT GREATEST(0, EXTRACT(EPOCH FROM (expires_at - now())) * 1000)::float8 AS left_ms,
                 expires_at - now() < COALESCE(lease_ms, ${leaseMs}) * interval '0.5 millisecond' AS stale,
                 ${gone} AS gone
          FROM skein_leases WHERE session_id = ${sessionId}`,
        (rows) => rows[0]
      )

    const locked = (sessionId: string) =>
      new LogError({ reason: "locked", message: `Session ${sessionId} is open in another Skein (it holds the session's lease)` })

    /**
     * Claims the lease, waiting (at most about one lease) for a holder that stopped renewing to
     * run out. `tries`: claims left that may follow at once (the lease was given back, or its
     * holder died, between a claim and the look at it).
     */
    const acquire = (sessionId: string, waited = 0, tries = 4): Effect.Effect<void, LogError> =>
      Effect.gen(function*() {
        if (yield* claim(sessionId)) return
        const now = yield* holder(sessionId)
        if ((now === undefined || now.gone) && tries > 0) return yield* acquire(sessionId, waited, tries - 1)
        if (now === undefined || !now.stale || waited > 2 * leaseMs) return yield* locked(sessionId)
        const pause = Math.ceil(now.left_ms) + 50
        yield* Effect.sleep(pause)
        return yield* acquire(sessionId, waited + pause, tries)
      }).pipe(Effect.catchTag("SqlError", (error) => Effect.fail(io(`take the lease of session ${sessionId}`)(error))))

    const take = (sessionId: string): Effect.Effect<void, LogError, Scope.Scope> =>
      Effect.acquireRelease(acquire(sessionId), () =>
        sql`DELETE FROM skein_leases WHERE session_id = ${sessionId} AND owner = ${owner}`.pipe(
          Effect.catchCause((cause) => Effect.logWarning(`could not give back the lease of session ${sessionId}`, cause)),
          Effect.asVoid
        )).pipe(
          Effect.tap(() =>
            Effect.forkScoped(
              Effect.suspend(() =>
                sql`UPDATE skein_leases SET expires_at = now() + ${leaseMs} * interval '1 millisecond', presence = ${presence ?? null}
                    WHERE session_id = ${sessionId} AND owner = ${owner}`
              ).pipe(
                Effect.catchCause((cause) => Effect.logWarning(`could not renew the lease of session ${sessionId}`, cause)),
                Effect.repeat(Schedule.spaced(every)),
                Effect.delay(every)
              )
            )
          )
        )

    const isHeld = (sessionId: string) =>
      sql`SELECT 1 FROM skein_leases WHERE session_id = ${sessionId} AND expires_at > now() AND NOT ${gone}`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orElseSucceed(() => false)
      )

    return { owner, take, held: isHeld } satisfies Leases
  })
