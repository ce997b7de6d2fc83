/**
 * Log format v5: a `tool_result` says how its call ended (`status`). A v4 log
 * (`test/fixtures/logs/v4-results.ndjson`: a result of every kind a v4 Skein wrote) is read
 * with the status its texts name, once, in `Migrations.ts`; opened for writing, each store
 * holds it in v5 from then on (the Postgres store rewrites its rows, as the file store its
 * file); a v5 log reads back as it was written.
 */
import { assert, describe, it } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import { SqlClient } from "effect/sql/SqlClient"
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { UNFINISHED_TOOL } from "../../src/agents/ExternalFold.ts"
import { type Canonical, LOG_VERSION, type ToolStatus } from "../../src/log/Event.ts"
import * as MemoryStore from "../../src/log/MemoryStore.ts"
import * as Migrations from "../../src/log/Migrations.ts"
import * as PgStore from "../../src/log/PgStore.ts"
import * as Reader from "../../src/log/Reader.ts"
import { INTERRUPTED_TOOL } from "../../src/log/Recovery.ts"
import { SessionLog } from "../../src/log/SessionLog.ts"
import type { Store } from "../../src/log/Store.ts"
import { CANCELLED_TOOL, NOT_LOGGED_TOOL, NOT_RUN_TOOL } from "../../src/runtime/TurnEnd.ts"
import * as Postgres from "../support/Postgres.ts"
import * as TempDir from "../support/TempDir.ts"

const FIXTURE = readFileSync(join(import.meta.dirname, "../fixtures/logs/v4-results.ndjson"), "utf8")
const ID = "fixture-v4"

/** What each call of the fixture ended as (t4 ran and printed "Cancelled by the user"; t3 was refused, which v4 did not tell apart). */
const EXPECTED: ReadonlyArray<readonly [string, ToolStatus]> = [
  ["t1", "done"],
  ["t2", "failed"],
  ["t3", "failed"],
  ["t4", "done"],
  ["t5", "cancelled"],
  ["t6", "not_logged"],
  ["t7", "not_run"],
  ["t8", "unfinished"],
  ["t9", "interrupted"]
]

const statuses = (events: ReadonlyArray<Canonical>) =>
  events.flatMap((e) => (e.type === "tool_result" ? [[e.data.id, e.data.status] as const] : []))

/** The fixture's lines as JSON, each tool result with the status it should get: nothing else changes. */
const upgraded = () => {
  const byId = new Map(EXPECTED)
  return FIXTURE.trimEnd().split("\n").slice(1).map((line) => {
    const event = JSON.parse(line)
    return event.type === "tool_result" ? { ...event, data: { ...event.data, status: byId.get(event.data.id) } } : event
  })
}

const withoutSession = (events: ReadonlyArray<Canonical>) => events.map(({ sessionId: _, ...event }) => event)

describe("log format v5: the status of a tool result", () => {
  it("the texts older Skeins wrote for a call that did not end by itself are the statuses they name", () => {
    assert.strictEqual(LOG_VERSION, 5)
    assert.strictEqual(Migrations.statusOf(false, CANCELLED_TOOL), "cancelled")
    assert.strictEqual(Migrations.statusOf(false, NOT_RUN_TOOL), "not_run")
    assert.strictEqual(Migrations.statusOf(false, NOT_LOGGED_TOOL), "not_logged")
    assert.strictEqual(Migrations.statusOf(false, INTERRUPTED_TOOL), "interrupted")
    assert.strictEqual(Migrations.statusOf(false, UNFINISHED_TOOL), "unfinished")
    assert.strictEqual(Migrations.statusOf(true, CANCELLED_TOOL), "done")
    assert.strictEqual(Migrations.statusOf(false, "[exit code 1]"), "failed")
  })

  it.effect("a v4 log reads with each result's status, its other fields as they were", () =>
    Effect.gen(function*() {
      const contents = yield* Reader.parse("v4.ndjson", new TextEncoder().encode(FIXTURE))
      assert.strictEqual(contents.version, 4)
      assert.strictEqual(contents.header.v, LOG_VERSION)
      assert.deepStrictEqual(statuses(contents.events), EXPECTED)
      assert.deepStrictEqual(withoutSession(contents.events), upgraded())
    }))

  it.effect("a v4 line that already has a status, or a malformed result, is left for the reader to judge", () =>
    Effect.gen(function*() {
      const upgrade = Migrations.formats.get(4)!
      const kept = { type: "tool_result", data: { id: "a", ok: false, status: "denied", content: "x" } }
      assert.strictEqual(upgrade.event(kept), kept)
      const malformed = { seq: 1, ts: 1, turn: 1, type: "tool_result", data: { id: "a", content: "x" } }
      assert.strictEqual(upgrade.event(malformed), malformed)
      const header = JSON.stringify({ type: "session", v: 4, id: "m", cwd: "/w", created: 1 })
      const refused = yield* Effect.flip(Reader.parse("m.ndjson", new TextEncoder().encode(`${header}\n${JSON.stringify(malformed)}\n`)))
      assert.strictEqual(refused.reason, "corrupt")
    }))

  it.effect("a v5 log without a status on a result is corrupt (the field is required from v5 on)", () =>
    Effect.gen(function*() {
      const v5 = FIXTURE.replace("\"v\":4", "\"v\":5")
      const refused = yield* Effect.flip(Reader.parse("v5.ndjson", new TextEncoder().encode(v5)))
      assert.strictEqual(refused.reason, "corrupt")
      assert.include(refused.message, "status")
    }))
})

/**
 * Each store: the fixture planted as an older Skein left it, read (migrated in memory), opened
 * for writing (held in v5 from then on: read again, nothing is migrated and all is the same),
 * and written to.
 */
const migrates = <R>(store: Effect.Effect<Store, unknown, R | Scope.Scope>, plant: (store: Store) => Effect.Effect<void, unknown, Scope.Scope>) =>
  Effect.scoped(Effect.gen(function*() {
    const log = yield* store
    yield* plant(log)
    const before = yield* log.read(ID)
    assert.strictEqual(before.version, 4)
    assert.deepStrictEqual(statuses(before.events), EXPECTED)
    yield* Effect.scoped(Effect.gen(function*() {
      const { contents, writer } = yield* log.open(ID)
      assert.deepStrictEqual(withoutSession(contents.events), upgraded())
      const last = contents.events.at(-1)!
      yield* writer.append([{ ...last, seq: last.seq + 1, type: "turn_start", data: { content: [{ type: "text", text: "again" }] } } as Canonical])
    }))
    const after = yield* log.read(ID)
    assert.strictEqual(after.version, LOG_VERSION)
    assert.deepStrictEqual(withoutSession(after.events.slice(0, -1)), upgraded())
    assert.deepStrictEqual(statuses(after.events), EXPECTED)
    const listed = (yield* log.list({})).sessions.find((s) => s.id === ID)
    assert.strictEqual(listed?.version, LOG_VERSION)
  }))

describe("a v4 log in each store", () => {
  it.effect("the file store rewrites it in v5 (the v4 file kept as its backup)", () =>
    Effect.gen(function*() {
      const home = yield* TempDir.make()
      const dir = join(home, "sessions")
      yield* migrates(
        Effect.map(Layer.build(SessionLog.layer({ home })), (context) => Context.get(context, SessionLog)),
        () =>
          Effect.sync(() => {
            mkdirSync(dir, { recursive: true })
            writeFileSync(join(dir, `${ID}.ndjson`), FIXTURE)
          })
      )
      assert.strictEqual(readFileSync(join(dir, `${ID}.ndjson.v4.bak`), "utf8"), FIXTURE)
      const first = JSON.parse(readFileSync(join(dir, `${ID}.ndjson`), "utf8").split("\n")[0]!)
      assert.strictEqual(first.v, LOG_VERSION)
    }).pipe(Effect.provide(TempDir.platform)))

  it.effect("the memory store holds it in v5", () => {
    const sessions = new MemoryStore.Sessions()
    return migrates(
      Effect.map(Layer.build(SessionLog.layerMemory({ sessions })), (context) => Context.get(context, SessionLog)),
      (log) =>
        Effect.gen(function*() {
          yield* Effect.scoped(log.create({ type: "session", v: 4, id: ID, cwd: "/fixture/project", created: 1700000000000 }))
          sessions.logs.get(ID)!.text = FIXTURE
        })
    )
  })
})

Postgres.describeWithPostgres("a v4 log on PostgreSQL", (server) => {
  it.effect("is rewritten in v5, rows and header, in one transaction", () =>
    Effect.gen(function*() {
      const db = yield* Effect.promise(() => server().createDatabase())
      yield* migrates(
        Effect.map(Layer.build(PgStore.layer(db.url)), (context) => Context.get(context, SessionLog)),
        (log) =>
          Effect.gen(function*() {
            const [header, ...lines] = FIXTURE.trimEnd().split("\n")
            const parsed = JSON.parse(header!)
            yield* Effect.scoped(log.create({ ...parsed, v: LOG_VERSION }))
            const sql = yield* SqlClient
            yield* sql`UPDATE skein_sessions SET header = ${header!}, version = 4 WHERE id = ${ID}`
            const rows = lines.map((line) => ({ session_id: ID, seq: JSON.parse(line).seq as number, line }))
            yield* sql`INSERT INTO skein_events ${sql.insert(rows as [typeof rows[0], ...typeof rows])}`
          }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(db.url) })))
      )
    }))
})
