/**
 * A session whose log store refuses writes (the memory store with a fault switch: a full disk,
 * a failed sync, a lease another Skein took over), at every point of a turn and for the
 * commands around it: every request is answered once, nothing is published that the log does
 * not hold, the in-memory history stays the log's, and the session goes on once the store
 * takes writes again — or, taken over, is closed and says why.
 */
import { assert, describe, it } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Logger from "effect/Logger"
import type * as Scope from "effect/Scope"
import * as Redacted from "effect/Redacted"
import { SqlClient } from "effect/sql/SqlClient"
import * as Stream from "effect/Stream"
import { type Canonical, isEphemeral, type SessionEvent } from "../../src/log/Event.ts"
import * as History from "../../src/log/History.ts"
import { LogError } from "../../src/log/LogError.ts"
import * as MemoryStore from "../../src/log/MemoryStore.ts"
import * as PgStore from "../../src/log/PgStore.ts"
import type { Provider, StreamPart } from "../../src/providers/Provider.ts"
import { Runtime } from "../../src/runtime/Api.ts"
import type { Bus } from "../../src/runtime/Bus.ts"
import * as Toolkit from "../../src/tools/Toolkit.ts"
import * as Postgres from "../support/Postgres.ts"
import { byPrompt, historyOf, makeDirs, piecesLayer, record, text } from "../support/Sessions.ts"

const FULL = "Cannot append to session log memory:sessions/x.ndjson: the disk is full (ENOSPC)"
const TAKEN = "Session x was taken over by another Skein (this one lost its lease): nothing was written"

/** A fault switch for the memory store: from the first write holding an event of type `at` on, every write fails. */
const switchboard = () => {
  let failAt: string | undefined
  let failing = false
  let syncFails = false
  let error = new LogError({ reason: "io", message: FULL })
  const writes = { append: 0, sync: 0 }
  const faults: MemoryStore.Faults & { when?: (events: ReadonlyArray<{ readonly type: string; readonly sessionId: string }>) => boolean } = {
    append: (events) => {
      writes.append++
      if (failAt !== undefined && events.some((e) => e.type === failAt)) failing = true
      return failing || faults.when?.(events) === true ? error : undefined
    },
    sync: () => {
      writes.sync++
      return syncFails ? error : undefined
    }
  }
  return {
    faults,
    writes,
    /** Every write fails from the first one with an event of this type. */
    failFrom: (type: string, as: LogError = error) => {
      error = as
      failAt = type
    },
    /** Every write that `when` picks fails. */
    failWhen: (when: (events: ReadonlyArray<{ readonly type: string; readonly sessionId: string }>) => boolean) => {
      faults.when = when
    },
    failSyncs: () => {
      syncFails = true
    },
    heal: () => {
      faults.when = undefined
      failAt = undefined
      failing = false
      syncFails = false
    }
  }
}

const turns = {
  go: [[{ text: "Reading." }, { tool: "read", args: { path: "notes.txt" }, id: "r1" }], [{ text: "Done." }]],
  delegate: [[{ tool: "spawn_agent", args: { task: "child task", agent: "general" }, id: "s1" }], [{ tool: "wait_agent", args: {}, id: "w1" }], [{ text: "Parent done." }]],
  "child task": [[{ text: "Child answer." }]],
  after: [[{ text: "Back." }]],
  slow: [[{ text: "Waiting." }, { sleep_ms: 30_000 }]]
}

const withStore = <A, E>(body: (env: { readonly runtime: Runtime["Service"]; readonly cwd: string; readonly board: ReturnType<typeof switchboard> }) => Effect.Effect<A, E, Scope.Scope | Bus>) =>
  Effect.gen(function*() {
    const { home, cwd } = yield* makeDirs
    const board = switchboard()
    const layer = piecesLayer({ home, provider: byPrompt(turns), toolkit: Toolkit.builtin(), sessions: new MemoryStore.Sessions(), faults: board.faults })
    return yield* Effect.flatMap(Effect.service(Runtime), (runtime) => body({ runtime, cwd, board })).pipe(Effect.provide(layer))
  }).pipe(Effect.scoped, Effect.provide(Logger.layer([])))

/** Why a session is no longer served, once the runtime has closed it (it closes in the background). */
const closedReason = (runtime: Runtime["Service"], id: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 1_000; i++) {
      const got = yield* Effect.exit(runtime.getSession(id))
      if (Exit.isFailure(got)) return yield* Effect.flip(got)
      yield* Effect.sleep("5 millis")
    }
    return yield* Effect.die(new Error(`session ${id} was not closed`))
  })

/** The events the log holds now, as `seq:type`. */
const logged = (runtime: Runtime["Service"], id: string) => Effect.map(runtime.readSession(id), (record) => record.events)

/** Every canonical event published is one the log holds, each once, in order of `seq`. */
const publishedWereLogged = (published: ReadonlyArray<SessionEvent>, log: ReadonlyArray<Canonical>) => {
  const canonical = published.filter((e) => !isEphemeral(e)).map((e) => `${e.seq}:${e.type}`)
  const inLog = new Set(log.map((e) => `${e.seq}:${e.type}`))
  for (const key of canonical) assert.isTrue(inLog.has(key), `published ${key}, which the log does not hold`)
  assert.deepStrictEqual(canonical, [...new Set(canonical)].sort((a, b) => Number(a.split(":")[0]) - Number(b.split(":")[0])))
}

/** The history the log folds to is the one the session holds. */
const sameHistory = (session: { readonly id: string }, log: ReadonlyArray<Canonical>) => {
  const folded = History.make()
  for (const event of log) History.apply(folded, event)
  const live = historyOf(session)
  assert.deepStrictEqual(live.messages, folded.messages)
  assert.strictEqual(live.turns, folded.turns)
  assert.deepStrictEqual([...live.openToolCalls], [...folded.openToolCalls])
}

describe("a session whose log refuses writes", () => {
  for (const at of ["turn_start", "model_response", "tool_call", "tool_result", "turn_end", "sync"] as const) {
    it.live(`refused from the turn's ${at} on: the prompt gets the refusal once, the session refuses work until the store heals, then goes on`, () =>
      withStore(({ board, cwd, runtime }) =>
        Effect.gen(function*() {
          const session = yield* runtime.newSession({ cwd })
          const seen = yield* record(session)
          if (at === "sync") board.failSyncs()
          else board.failFrom(at)
          const turn = yield* Effect.exit(Stream.runCollect(session.turn(text("go"))))
          // Answered once, with why: the stream fails with the store's refusal.
          assert.isTrue(Exit.isFailure(turn))
          const refused = Exit.isFailure(turn) ? turn.cause.reasons.find((r) => r._tag === "Fail")?.error : undefined
          assert.strictEqual(refused?.reason, "log")
          assert.include(refused?.message, "the disk is full (ENOSPC)")
          assert.include(refused?.message, "its end is not saved yet")
          const before = yield* logged(runtime, session.id)
          const published = [...yield* seen.drain]
          publishedWereLogged(published, before)
          sameHistory(session, before)
          // No turn_end reaches a presenter before it is durable (a failed sync holds it back).
          assert.isFalse(published.some((e) => e.type === "turn_end"))
          assert.deepStrictEqual(published.filter((e) => e.type === "turn_aborted").map((e) => e.turn), [1])
          assert.strictEqual(before.some((e) => e.type === "turn_end"), at === "sync")

          // While the store still refuses, new work is refused at once, and changes nothing.
          const again = yield* Effect.flip(session.prompt(text("after")))
          assert.strictEqual(again.reason, "log")
          assert.match(again.message, /^The prompt was not run: the session's log cannot be written \(.*ENOSPC/)
          const mode = yield* Effect.flip(session.setMode("plan"))
          assert.match(mode.message, /^The mode was not changed: /)
          assert.strictEqual((yield* session.settings).mode, "default")

          // Once it heals, the next prompt writes the turn's end first, then runs.
          board.heal()
          assert.deepStrictEqual(yield* session.prompt(text("after")), { stopReason: "end_turn" })
          const after = yield* logged(runtime, session.id)
          assert.deepStrictEqual(after.map((e) => e.seq), after.map((_, i) => i + 1))
          assert.deepStrictEqual(after.filter((e) => e.type === "turn_start").map((e) => e.turn), [1, 2])
          const ends = after.filter((e) => e.type === "turn_end")
          assert.deepStrictEqual(ends.map((e) => e.turn), [1, 2])
          // The first turn's end says what happened (a sync failure: it had ended normally).
          if (at !== "sync" && at !== "turn_end") assert.include(ends[0]?.type === "turn_end" ? ends[0].data.error : "", "refused one of its events")
          // Every call the first turn opened is closed, and says whether it ran.
          const results = after.filter((e) => e.type === "tool_result" && e.turn === 1).map((e) => (e.type === "tool_result" ? e.data.content : ""))
          if (at === "tool_result") assert.deepStrictEqual(results, ["Unknown: the session's log could not record what this call did"])
          if (at === "tool_call" || at === "model_response") assert.deepStrictEqual(results, ["Not run: the turn failed"])
          publishedWereLogged(yield* seen.drain, after)
          sameHistory(session, after)
          // The mode can change again.
          yield* session.setMode("plan")
          assert.strictEqual((yield* session.settings).mode, "plan")
        })))
  }

  it.live("a cancelled turn whose end is refused answers cancelled; its end is written once the store heals", () =>
    withStore(({ board, cwd, runtime }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        const seen = yield* record(session)
        const events: Array<SessionEvent> = []
        const fiber = yield* Effect.forkChild(Stream.runForEach(session.turn(text("slow")), (e) => Effect.sync(() => void events.push(e))))
        yield* seen.until((e) => e.type === "text_delta")
        board.failFrom("turn_end")
        yield* session.cancel
        // The presenter's stream just ends (a prompt then answers `cancelled`): no failure, no turn_end.
        const exit = yield* Fiber.await(fiber)
        assert.isTrue(Exit.isSuccess(exit))
        assert.isFalse(events.some((e) => e.type === "turn_end" || e.type === "turn_aborted"))
        board.heal()
        assert.deepStrictEqual(yield* session.prompt(text("after")), { stopReason: "end_turn" })
        const log = yield* logged(runtime, session.id)
        assert.deepStrictEqual(log.filter((e) => e.type === "turn_end").map((e) => (e.type === "turn_end" ? [e.turn, e.data.stopReason] : [])), [[1, "cancelled"], [2, "end_turn"]])
      })))

  it.live("a lease another Skein took over: the turn is answered with why, nothing more is written, the session is closed and says so; it loads again once let go", () =>
    withStore(({ board, cwd, runtime }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        board.failFrom("tool_call", new LogError({ reason: "locked", message: TAKEN }))
        const turn = yield* Effect.flip(Stream.runDrain(session.turn(text("go"))))
        assert.strictEqual(turn.reason, "log")
        assert.include(turn.message, "taken over by another Skein")
        assert.include(turn.message, "load it again")
        const tried = board.writes.append
        // Closed here: the next request says why, and nothing more is written.
        const next = yield* closedReason(runtime, session.id)
        assert.strictEqual(next.reason, "locked")
        assert.include(next.message, "taken over by another Skein")
        const stale = yield* Effect.flip(session.prompt(text("after")))
        assert.include(stale.message, "taken over by another Skein")
        assert.strictEqual(board.writes.append, tried)
        // The other Skein let it go: it loads again, its open turn closed as after a crash.
        board.heal()
        const loaded = yield* runtime.loadSession({ sessionId: session.id })
        const ends = loaded.events.filter((e) => e.type === "turn_end")
        assert.deepStrictEqual(ends.map((e) => (e.type === "turn_end" ? [e.turn, e.data.stopReason] : [])), [[1, "cancelled"]])
        assert.deepStrictEqual(yield* loaded.session.prompt(text("after")), { stopReason: "end_turn" })
      })))

  it.live("a child session whose log refuses its turn's end: the parent's wait says it failed and why; the parent's turn goes on", () =>
    withStore(({ board, cwd, runtime }) =>
      Effect.gen(function*() {
        const parent = yield* runtime.newSession({ cwd, mode: "bypassPermissions" })
        board.failWhen((events) => events.some((e) => e.sessionId !== parent.id && e.type === "turn_end"))
        assert.deepStrictEqual(yield* parent.prompt(text("delegate")), { stopReason: "end_turn" })
        const log = yield* logged(runtime, parent.id)
        const result = log.find((e) => e.type === "subagent" && e.data.event === "result")
        assert.strictEqual(result?.type === "subagent" ? result.data.state : undefined, "failed")
        assert.include(result?.type === "subagent" ? result.data.error : "", "the disk is full (ENOSPC)")
        const waited = log.find((e) => e.type === "tool_result" && e.data.id === "w1")
        assert.include(waited?.type === "tool_result" ? waited.data.content : "", "ENOSPC")
      })))

  it.live("commands besides prompts: a refused mode or model change is refused and not made; a refused fork leaves no fork; close and delete work", () =>
    withStore(({ board, cwd, runtime }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        assert.deepStrictEqual(yield* session.prompt(text("after")), { stopReason: "end_turn" })
        board.failFrom("mode_changed")
        const mode = yield* Effect.flip(session.setMode("plan"))
        assert.strictEqual(mode.reason, "log")
        assert.strictEqual((yield* session.settings).mode, "default")
        board.failFrom("turn_start")
        const forked = yield* Effect.flip(runtime.forkSession({ sessionId: session.id }))
        assert.include(forked.message, "ENOSPC")
        assert.deepStrictEqual((yield* runtime.listSessions({})).sessions.map((s) => s.id), [session.id])
        // Nothing is missing from this session's log (the refusals were of requests, not of a turn's end).
        board.heal()
        yield* session.setMode("plan")
        board.failFrom("mode_changed")
        yield* runtime.closeSession(session.id)
        yield* runtime.deleteSession(session.id)
        assert.deepStrictEqual((yield* runtime.listSessions({})).sessions, [])
      })))
})

Postgres.describeWithPostgres("a session in PostgreSQL whose lease another Skein takes over", (server) => {
  it.live("mid-turn: the turn is answered with why, nothing more is written, the session is closed and says so; it loads again once let go", () =>
    Effect.gen(function*() {
      const db = yield* Effect.promise(() => server().createDatabase())
      const { home, cwd } = yield* makeDirs
      // The model answers once the test has let another Skein take the session over.
      const gate = yield* Deferred.make<void>()
      const provider: Provider = {
        name: "gated",
        stream: (request) =>
          request.call === 1
            ? Stream.concat(
              Stream.make<ReadonlyArray<StreamPart>>({ _tag: "TextDelta", text: "Reading." }),
              Stream.concat(
                Stream.drain(Stream.fromEffect(Deferred.await(gate))),
                Stream.make<ReadonlyArray<StreamPart>>({ _tag: "ToolCall", id: "r1", name: "read", args: { path: "notes.txt" } }, { _tag: "Finish", stop: "end_turn" })
              )
            )
            : Stream.make<ReadonlyArray<StreamPart>>({ _tag: "TextDelta", text: "Done." }, { _tag: "Finish", stop: "end_turn" })
      }
      const store = PgStore.layer(db.url)
      const other = PgClient.layer({ url: Redacted.make(db.url) })
      const sql = (query: (sql: SqlClient) => Effect.Effect<unknown, unknown>) =>
        Effect.provide(Effect.flatMap(Effect.service(SqlClient), query), other)
      const events = Effect.map(sql((q) => q`SELECT count(*)::int AS n FROM skein_events`), (rows) => (rows as Array<{ n: number }>)[0]!.n)
      yield* Effect.gen(function*() {
        const runtime = yield* Runtime
        const session = yield* runtime.newSession({ cwd })
        const seen = yield* record(session)
        const turn = yield* Effect.forkChild(Stream.runDrain(session.turn(text("go"))))
        yield* seen.until((e) => e.type === "text_delta")
        // Another Skein takes the session over (as after this one's lease ran out in a partition).
        yield* sql((q) => q`UPDATE skein_leases SET owner = 'another', expires_at = now() + interval '1 minute'`)
        const written = yield* events
        yield* Deferred.succeed(gate, undefined)
        const exit = yield* Fiber.await(turn)
        const refused = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail")?.error : undefined
        assert.strictEqual(refused?.reason, "log")
        assert.include(refused?.message, "taken over by another Skein")
        assert.include(refused?.message, "load it again")
        const closed = yield* closedReason(runtime, session.id)
        assert.include(closed.message, "taken over by another Skein")
        // Nothing more was written: the model's answer, the tool call and the turn's end were all fenced.
        assert.strictEqual(yield* events, written)
        // The other Skein lets go: the session loads again here, its open turn closed as after a crash.
        yield* sql((q) => q`DELETE FROM skein_leases`)
        const loaded = yield* runtime.loadSession({ sessionId: session.id })
        assert.deepStrictEqual(loaded.events.filter((e) => e.type === "turn_end").map((e) => (e.type === "turn_end" ? e.data.stopReason : "")), ["cancelled"])
      }).pipe(Effect.provide(piecesLayer({ home, provider, toolkit: Toolkit.builtin(), store })))
    }).pipe(Effect.scoped, Effect.provide(Logger.layer([]))))
})
