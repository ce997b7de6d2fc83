/**
 * One contract, three stores: the file store (`SessionLog.layer`), the memory store
 * (`SessionLog.layerMemory`) and the Postgres store (`PgStore.layer`, on a throwaway server
 * started for this file; skipped only when PostgreSQL is not installed) answer the same calls
 * the same way — create, open with its
 * check, read, readFile, list with paging and the cwd filter, remove, the write lease, side
 * records, stable paths. What only files have (torn tails, modes, kill -9) is tested in the
 * durable-* files.
 */
import { assert, describe, it as vitestIt } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { existsSync } from "node:fs"
import type { Canonical, CanonicalBody, LogHeader } from "../../src/log/Event.ts"
import { LOG_VERSION } from "../../src/log/Event.ts"
import * as MemoryStore from "../../src/log/MemoryStore.ts"
import * as PgLease from "../../src/log/PgLease.ts"
import * as PgStore from "../../src/log/PgStore.ts"
import { PgClient } from "@effect/sql-pg"
import * as Redacted from "effect/Redacted"
import { SqlClient } from "effect/sql/SqlClient"
import type { Store } from "../../src/log/Store.ts"
import * as Postgres from "../support/Postgres.ts"
import { SessionLog } from "../../src/log/SessionLog.ts"
import * as TempDir from "../support/TempDir.ts"

const header = (id: string, cwd = "/w"): LogHeader => ({ type: "session", v: LOG_VERSION, id, cwd, created: 1, mode: "default" })
const stamp = (id: string, seq: number, body: CanonicalBody): Canonical => ({ ...body, sessionId: id, seq, ts: seq, turn: 1 }) as Canonical
const prompt = (id: string, seq: number, text: string) => stamp(id, seq, { type: "turn_start", data: { content: [{ type: "text", text }] } })
const end = (id: string, seq: number) => stamp(id, seq, { type: "turn_end", data: { stopReason: "end_turn" } })

const storeIn = <E, R>(layer: Layer.Layer<SessionLog, E, R>) =>
  Effect.provide(
    Effect.gen(function*() {
      return yield* SessionLog
    }),
    layer
  )

/** A store built into the test's scope (the Postgres store's connections live as long as the test). */
const built = <E, R>(layer: Layer.Layer<SessionLog, E, R>): Effect.Effect<Store, E, R | Scope.Scope> =>
  Effect.map(Layer.build(layer), (context) => Context.get(context, SessionLog))

const contract = (name: string, store: Effect.Effect<Store, unknown, Scope.Scope>) => {
  const it = { effect: <A, E>(title: string, body: () => Effect.Effect<A, E, Scope.Scope>) => vitestIt.effect(title, () => Effect.scoped(body())) }
  describe(`the ${name} store`, () => {

    it.effect("creates a log whose path is stable, reads it back, and reopens it to go on", () =>
      Effect.gen(function*() {
        const log = yield* store
        assert.strictEqual(log.pathOf("s1"), log.pathOf("s1"))
        assert.isTrue(log.pathOf("s1").startsWith(log.directory))
        yield* Effect.scoped(Effect.gen(function*() {
          const writer = yield* log.create(header("s1"))
          assert.strictEqual(writer.path, log.pathOf("s1"))
          yield* writer.append([prompt("s1", 1, "first"), end("s1", 2)])
          yield* writer.sync
          // Reading needs no lease: it works while the writer holds it.
          const read = yield* log.read("s1")
          assert.strictEqual(read.file, log.pathOf("s1"))
          assert.deepStrictEqual(read.header, header("s1"))
          assert.deepStrictEqual(read.events.map((e) => [e.sessionId, e.seq, e.type]), [["s1", 1, "turn_start"], ["s1", 2, "turn_end"]])
        }))
        const opened = yield* Effect.scoped(Effect.gen(function*() {
          const { contents, writer } = yield* log.open("s1")
          yield* writer.append([prompt("s1", 3, "second")])
          return contents
        }))
        assert.deepStrictEqual(opened.events.map((e) => e.seq), [1, 2])
        assert.deepStrictEqual((yield* log.readFile(log.pathOf("s1"))).events.map((e) => e.seq), [1, 2, 3])
        assert.strictEqual((yield* Effect.flip(log.readFile(`${log.directory}/none.ndjson`))).reason, "not_found")
      }).pipe(Effect.provide(TempDir.platform)))

    it.effect("holds one write lease per session: a second create or open, and a remove, fail with locked", () =>
      Effect.gen(function*() {
        const log = yield* store
        yield* Effect.scoped(Effect.gen(function*() {
          yield* log.create(header("s2"))
          assert.strictEqual((yield* Effect.flip(Effect.scoped(log.open("s2")))).reason, "locked")
          assert.strictEqual((yield* Effect.flip(Effect.scoped(log.create(header("s2"))))).reason, "locked")
          assert.strictEqual((yield* Effect.flip(log.remove("s2"))).reason, "locked")
        }))
        // Released with the scope; the log exists, so creating it again fails.
        yield* Effect.scoped(log.open("s2"))
        assert.notInclude(["locked", "not_found", undefined], (yield* Effect.flip(Effect.scoped(log.create(header("s2"))))).reason)
      }).pipe(Effect.provide(TempDir.platform)))

    it.effect("a refused open changes nothing and releases the lease; unknown or invalid ids are not_found", () =>
      Effect.gen(function*() {
        const log = yield* store
        yield* Effect.scoped(Effect.flatMap(log.create(header("s3")), (w) => w.append([prompt("s3", 1, "x")])))
        const refused = yield* Effect.flip(Effect.scoped(log.open("s3", () => Effect.fail("no" as const))))
        assert.strictEqual(refused, "no")
        assert.deepStrictEqual((yield* log.read("s3")).events.map((e) => e.seq), [1])
        yield* Effect.scoped(log.open("s3"))
        for (const id of ["nope", "../etc/passwd", ".hidden"]) {
          assert.strictEqual((yield* Effect.flip(Effect.scoped(log.open(id)))).reason, "not_found")
          assert.strictEqual((yield* Effect.flip(log.read(id))).reason, "not_found")
        }
        assert.strictEqual((yield* Effect.flip(Effect.scoped(log.create(header("../x"))))).reason, "not_found")
      }).pipe(Effect.provide(TempDir.platform)))

    it.effect("lists sessions with their cwd and first prompt, pages by cursor, filters by cwd", () =>
      Effect.gen(function*() {
        const log = yield* store
        const ids = ["a1", "a2", "a3", "a4", "a5"]
        for (const [i, id] of ids.entries()) {
          yield* Effect.scoped(Effect.gen(function*() {
            const writer = yield* log.create(header(id, i === 2 ? "/elsewhere" : "/w"))
            if (i !== 4) yield* writer.append([prompt(id, 1, `Prompt ${i}\nmore`), end(id, 2)])
          }))
        }
        const all = yield* log.list({})
        assert.deepStrictEqual([...all.sessions.map((s) => s.id)].sort(), ids)
        const byId = new Map(all.sessions.map((s) => [s.id, s]))
        assert.strictEqual(byId.get("a1")!.title, "Prompt 0 more")
        assert.strictEqual(byId.get("a5")!.title, undefined)
        assert.deepStrictEqual({ ...byId.get("a3")!, updatedAt: 0 }, {
          id: "a3",
          cwd: "/elsewhere",
          additionalDirectories: [],
          title: "Prompt 2 more",
          created: 1,
          updatedAt: 0,
          version: LOG_VERSION
        })
        const pages: Array<Array<string>> = []
        let cursor: string | undefined
        do {
          const page = yield* log.list({ limit: 2, ...(cursor !== undefined ? { cursor } : {}) })
          pages.push(page.sessions.map((s) => s.id))
          cursor = page.nextCursor
        } while (cursor !== undefined)
        assert.deepStrictEqual(pages.flat(), all.sessions.map((s) => s.id))
        assert.deepStrictEqual(pages.map((p) => p.length), [2, 2, 1])
        assert.deepStrictEqual((yield* log.list({ cwd: "/elsewhere" })).sessions.map((s) => s.id), ["a3"])
        const badCursor = yield* Effect.flip(log.list({ cursor: "not a cursor" }))
        assert.deepStrictEqual([badCursor.reason, badCursor.message], ["cursor", "Invalid cursor"])
      }).pipe(Effect.provide(TempDir.platform)))

    it.effect("keeps side records with their session and removes them with it", () =>
      Effect.gen(function*() {
        const log = yield* store
        yield* Effect.scoped(Effect.gen(function*() {
          const writer = yield* log.create(header("s4"))
          assert.isUndefined(yield* writer.loadSide("mcp"))
          yield* writer.saveSide("mcp", "secret settings")
          assert.strictEqual(yield* writer.loadSide("mcp"), "secret settings")
        }))
        const again = yield* Effect.scoped(Effect.flatMap(log.open("s4"), ({ writer }) => writer.loadSide("mcp")))
        assert.strictEqual(again, "secret settings")
        yield* log.remove("s4")
        yield* log.remove("s4")
        assert.strictEqual((yield* Effect.flip(log.read("s4"))).reason, "not_found")
        assert.deepStrictEqual((yield* log.list({})).sessions, [])
        const fresh = yield* Effect.scoped(Effect.flatMap(log.create(header("s4")), (writer) => writer.loadSide("mcp")))
        assert.isUndefined(fresh)
      }).pipe(Effect.provide(TempDir.platform)))

    it.effect("reads a side record and tells whether a session is held, without taking its lease", () =>
      Effect.gen(function*() {
        const log = yield* store
        assert.isFalse(yield* log.held("s5"))
        assert.isFalse(yield* log.held("../not an id"))
        assert.isUndefined(yield* log.readSide("s5", "mcp"))
        yield* Effect.scoped(Effect.gen(function*() {
          const writer = yield* log.create(header("s5"))
          assert.isTrue(yield* log.held("s5"))
          assert.isUndefined(yield* log.readSide("s5", "mcp"))
          yield* writer.saveSide("mcp", "settings")
          assert.strictEqual(yield* log.readSide("s5", "mcp"), "settings")
        }))
        assert.isFalse(yield* log.held("s5"))
        assert.strictEqual(yield* log.readSide("s5", "mcp"), "settings")
        // Reading took no lease: the session opens.
        yield* Effect.scoped(log.open("s5"))
        assert.strictEqual((yield* Effect.flip(log.readSide("../x", "mcp"))).reason, "not_found")
      }).pipe(Effect.provide(TempDir.platform)))
  })
}

contract("files", Effect.flatMap(TempDir.make(), (home) => built(SessionLog.layer({ home }))).pipe(Effect.provide(TempDir.platform)))
contract("memory", built(SessionLog.layerMemory()))
Postgres.describeWithPostgres("on PostgreSQL", (server) => {
  contract("postgres", Effect.flatMap(Effect.promise(() => server().createDatabase()), (db) => built(PgStore.layer(db.url, { leaseMs: 2_000 }))))

  vitestIt.live("a writer whose session another Skein took over writes nothing more (appends are fenced by the lease)", () =>
    Effect.scoped(Effect.gen(function*() {
      const db = yield* Effect.promise(() => server().createDatabase())
      const store = yield* built(PgStore.layer(db.url))
      const writer = yield* store.create(header("f1"))
      yield* writer.append([prompt("f1", 1, "one")])
      // Another Skein takes the session over (as after this one's lease ran out in a partition).
      yield* Effect.provide(
        Effect.flatMap(Effect.service(SqlClient), (sql) => sql`UPDATE skein_leases SET owner = 'another', expires_at = now() + interval '1 minute'`),
        PgClient.layer({ url: Redacted.make(db.url) })
      )
      const refused = yield* Effect.flip(writer.append([end("f1", 2)]))
      assert.strictEqual(refused.reason, "locked")
      assert.match(refused.message, /taken over/)
      assert.deepStrictEqual((yield* store.read("f1")).events.map((e) => e.seq), [1])
    })))

  /** Runs a statement on the database as an outside party (another Skein, an operator). */
  const outside = <A>(url: string, query: (sql: SqlClient) => Effect.Effect<A, unknown>) =>
    Effect.provide(Effect.flatMap(Effect.service(SqlClient), query), PgClient.layer({ url: Redacted.make(url) }))

  // Under the test clock: a store that waited for a lease (it sleeps on the clock) would never
  // answer, so each answer here comes without waiting.
  vitestIt.effect("a holder whose process died lets go at once: its lease is taken over, its session loads; a live holder is refused at once", () =>
    Effect.scoped(Effect.gen(function*() {
      const db = yield* Effect.promise(() => server().createDatabase())
      const holder = yield* built(PgStore.layer(db.url, { leaseMs: 60_000 }))
      const other = yield* built(PgStore.layer(db.url, { leaseMs: 60_000 }))
      const writer = yield* holder.create(header("d1"))
      yield* writer.append([prompt("d1", 1, "one")])
      yield* holder.create(header("d2"))
      // Alive: refused at once, and seen as held (a fork treats its open turn as running).
      assert.strictEqual((yield* Effect.flip(Effect.scoped(other.open("d1")))).reason, "locked")
      assert.isTrue(yield* other.held("d1"))
      assert.strictEqual((yield* Effect.flip(other.remove("d2"))).reason, "locked")
      // Its process dies: PostgreSQL ends its connections (here: the one that shows it is alive).
      yield* outside(db.url, (sql) => sql`
        SELECT pg_terminate_backend(l.pid, 10000) FROM pg_locks l JOIN skein_leases s ON l.objid = s.presence::oid
        WHERE l.locktype = 'advisory' AND l.classid = ${PgLease.PRESENCE}::oid AND l.objsubid = 2 AND s.session_id = 'd1'`)
      // Every way to take a session takes it now: deleting one,
      yield* other.remove("d2")
      assert.strictEqual((yield* Effect.flip(other.read("d2"))).reason, "not_found")
      // and opening one (its lease has most of a minute left, and is free all the same).
      assert.isFalse(yield* other.held("d1"))
      const opened = yield* other.open("d1")
      assert.deepStrictEqual(opened.contents.events.map((e) => e.seq), [1])
      // The one that lost it writes nothing more.
      assert.strictEqual((yield* Effect.flip(writer.append([end("d1", 2)]))).reason, "locked")
      yield* opened.writer.append([end("d1", 2)])
      assert.deepStrictEqual((yield* other.read("d1")).events.map((e) => e.type), ["turn_start", "turn_end"])
    })))

  vitestIt.effect("a lease an older Skein holds (no presence) counts on its expiry alone: refused while it lasts, taken once it ran out", () =>
    Effect.scoped(Effect.gen(function*() {
      const db = yield* Effect.promise(() => server().createDatabase())
      const store = yield* built(PgStore.layer(db.url, { leaseMs: 60_000 }))
      yield* Effect.scoped(store.create(header("o1")))
      yield* outside(db.url, (sql) => sql`INSERT INTO skein_leases (session_id, owner, expires_at) VALUES ('o1', 'older', now() + interval '1 minute')`)
      assert.strictEqual((yield* Effect.flip(Effect.scoped(store.open("o1")))).reason, "locked")
      yield* outside(db.url, (sql) => sql`UPDATE skein_leases SET expires_at = now() - interval '1 second'`)
      yield* Effect.scoped(store.open("o1"))
    })))

  vitestIt.live("a holder that stopped renewing (alive to the database, but silent) is waited for until its lease runs out, then taken over", () =>
    Effect.scoped(Effect.gen(function*() {
      const db = yield* Effect.promise(() => server().createDatabase())
      const holder = yield* built(PgStore.layer(db.url, { leaseMs: 60_000 }))
      const other = yield* built(PgStore.layer(db.url, { leaseMs: 60_000 }))
      yield* holder.create(header("w1"))
      const ownerOf = Effect.map(outside(db.url, (sql) => sql<{ readonly owner: string }>`SELECT owner FROM skein_leases WHERE session_id = 'w1'`), (rows) => rows[0]?.owner)
      const before = yield* ownerOf
      // It missed its renewals: a few hundred ms left of a minute's lease.
      yield* outside(db.url, (sql) => sql`UPDATE skein_leases SET expires_at = now() + interval '300 milliseconds'`)
      const opened = yield* other.open("w1")
      assert.deepStrictEqual(opened.contents.events, [])
      const after = yield* ownerOf
      assert.isString(before)
      assert.notStrictEqual(after, before)
    })))
})

describe("the memory store", () => {
  vitestIt.effect("lists newest first by last write; layers given the same sessions share them, others do not", () =>
    Effect.gen(function*() {
      const sessions = new MemoryStore.Sessions()
      const one = yield* storeIn(SessionLog.layerMemory({ sessions }))
      for (const id of ["m1", "m2", "m3"]) yield* Effect.scoped(one.create(header(id)))
      // m1 is written last: it comes first, however close together the writes were.
      yield* Effect.scoped(Effect.flatMap(one.open("m1"), ({ writer }) => writer.append([prompt("m1", 1, "late")])))
      const two = yield* storeIn(SessionLog.layerMemory({ sessions }))
      assert.deepStrictEqual((yield* two.list({})).sessions.map((s) => s.id), ["m1", "m3", "m2"])
      assert.deepStrictEqual((yield* two.list({ limit: 1, cursor: (yield* two.list({ limit: 1 })).nextCursor })).sessions.map((s) => s.id), ["m3"])
      // One lease across the layers that share the sessions, as across processes.
      yield* Effect.scoped(Effect.gen(function*() {
        yield* one.open("m2")
        assert.strictEqual((yield* Effect.flip(Effect.scoped(two.open("m2")))).reason, "locked")
      }))
      assert.strictEqual(sessions.text("m1"), `${JSON.stringify(header("m1"))}\n${JSON.stringify({ seq: 1, ts: 1, turn: 1, type: "turn_start", data: { content: [{ type: "text", text: "late" }] } })}\n`)
      const other = yield* storeIn(SessionLog.layerMemory())
      assert.deepStrictEqual((yield* other.list({})).sessions, [])
      // Its paths are names: nothing is there on disk.
      assert.isFalse(existsSync(one.pathOf("m1")))
      assert.isFalse(existsSync(one.directory))
    }))
})
