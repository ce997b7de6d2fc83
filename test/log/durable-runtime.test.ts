/**
 * Durable sessions through the Runtime: a session written by one runtime (an earlier process)
 * loads in the next with its history, mode, config and remembered permissions; numbering goes
 * on; a crash's leftovers are recovered; locks keep two writers apart; list, read and delete.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { spawn } from "node:child_process"
import { appendFileSync, copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, utimesSync, writeFileSync } from "node:fs"
import { hostname } from "node:os"
import { join } from "node:path"
import { Skein, type SkeinConfig } from "../../src/index.ts"
import type { CanonicalBody } from "../../src/log/Event.ts"
import type { Bus } from "../../src/runtime/Bus.ts"
import { INTERRUPTED_TOOL, INTERRUPTED_TURN } from "../../src/log/Recovery.ts"
import * as Replay from "../../src/translate/Replay.ts"
import type { ModelRequest } from "../../src/providers/Provider.ts"
import type * as Scripted from "../../src/providers/Scripted.ts"
import { Runtime } from "../../src/runtime/Api.ts"
import { read } from "../../src/tools/read.ts"
import * as Tool from "../../src/tools/Tool.ts"
import * as Toolkit from "../../src/tools/Toolkit.ts"
import { byPrompt, historyOf, makeDirs, piecesLayer, readLog, record, submit, text } from "../support/Sessions.ts"

/** Runs `body` against a fresh runtime over `home` (as a new process would), then closes it. */
const inRuntime = <A, E>(home: string, config: Omit<SkeinConfig, "home">, body: (runtime: Runtime["Service"]) => Effect.Effect<A, E, Scope.Scope | Bus>) =>
  Effect.gen(function*() {
    const runtime = yield* Runtime
    return yield* body(runtime)
  }).pipe(Effect.scoped, Effect.provide(Skein.layerLocal({ home, ...config })))

const readTurn: Scripted.Script["turns"][number] = {
  calls: [[{ text: "Reading." }, { tool: "read", args: { path: "notes.txt" } }], [{ think: "short" }, { text: "Done." }]]
}

const slow = Tool.define<{}>({
  name: "slow",
  description: "slow (test tool)",
  kind: "other",
  mutating: false,
  parameters: Schema.Struct({}),
  title: () => "Run slow",
  locations: () => [],
  execute: () => Effect.as(Effect.sleep("30 seconds"), Tool.ok("slow done"))
})

const quiet = Effect.provide(Logger.layer([]))

describe("Runtime.loadSession", () => {
  it.live("a session from an earlier runtime loads with its history; seq and turn numbers go on", () =>
    Effect.gen(function*() {
      const { home, cwd } = yield* makeDirs
      const script = { turns: [readTurn, { calls: [[{ text: "Second answer." }]] }] }
      const first = yield* inRuntime(home, { script }, (runtime) =>
        Effect.gen(function*() {
          const session = yield* runtime.newSession({ cwd })
          yield* session.prompt(text("Summarise notes.txt"))
          yield* session.setMode("acceptEdits")
          return { id: session.id, messages: historyOf(session).messages.slice() }
        }))
      assert.isFalse(existsSync(join(home, "sessions", `${first.id}.lock`)), "the lock is released at shutdown")

      const requests: Array<ModelRequest> = []
      const seen = yield* inRuntime(home, {
        provider: byPrompt({ "Go on": [[{ text: "Second answer." }]] }, (request) => requests.push(request))
      }, (runtime) =>
        Effect.gen(function*() {
          const loaded = yield* runtime.loadSession({ sessionId: first.id, cwd })
          const session = loaded.session
          assert.deepStrictEqual(historyOf(session).messages, first.messages)
          assert.strictEqual((yield* session.settings).mode, "acceptEdits")
          assert.deepStrictEqual(loaded.events.map((e) => e.seq), [1, 2, 3, 4, 5, 6, 7])
          assert.isTrue(existsSync(join(home, "sessions", `${first.id}.lock`)))
          const rec = yield* record(session)
          assert.deepStrictEqual(yield* session.prompt(text("Go on")), { stopReason: "end_turn" })
          return yield* rec.drain
        }))
      // The provider saw the whole earlier conversation, then the new prompt.
      assert.deepStrictEqual(requests[0]!.messages.slice(0, -1), first.messages)
      assert.strictEqual(requests[0]!.turn, 2)
      const canonical = seen.filter((e) => e.type !== "text_delta")
      assert.deepStrictEqual(canonical.map((e) => [e.type, e.seq, e.turn]), [
        ["turn_start", 8, 2],
        ["model_response", 9, 2],
        ["turn_end", 10, 2]
      ])
      const log = readLog(home, first.id)
      assert.deepStrictEqual(log.events.map((e) => e.seq), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    }))

  it.live("mode, config and remembered permissions are restored from the log (v1 fixture)", () =>
    Effect.gen(function*() {
      const { home, cwd } = yield* makeDirs
      mkdirSync(join(home, "sessions"), { recursive: true })
      const fixture = readFileSync(join(import.meta.dirname, "../fixtures/logs/v1-basic.ndjson"), "utf8")
      writeFileSync(join(home, "sessions", "fixture-v1.ndjson"), fixture.split("/fixture/project").join(cwd))
      yield* inRuntime(home, {}, (runtime) =>
        Effect.gen(function*() {
          const { session, events } = yield* runtime.loadSession({ sessionId: "fixture-v1" })
          assert.strictEqual(session.cwd, cwd)
          assert.strictEqual((yield* session.settings).mode, "acceptEdits")
          assert.deepStrictEqual([...historyOf(session).config], [["model", "model-b"]])
          assert.deepStrictEqual(historyOf(session).rules, [{ decision: "allow", kind: "path", value: cwd, label: "edits in project/" }])
          assert.strictEqual(historyOf(session).turns, 2)
          assert.strictEqual(events.length, 13)
        }))
    }))

  it.live("the history stays in memory: model calls after a load never re-read the log", () =>
    Effect.gen(function*() {
      const { home, cwd } = yield* makeDirs
      const id = yield* inRuntime(home, { script: { turns: [{ calls: [[{ text: "one" }]] }] } }, (runtime) =>
        Effect.map(Effect.tap(runtime.newSession({ cwd }), (s) => s.prompt(text("first"))), (s) => s.id))
      const requests: Array<ModelRequest> = []
      yield* inRuntime(home, { provider: byPrompt({ second: [[{ text: "two" }]] }, (r) => requests.push(r)) }, (runtime) =>
        Effect.gen(function*() {
          const { session } = yield* runtime.loadSession({ sessionId: id })
          // Move the log away: if anything re-read it, the history would be lost.
          const file = join(home, "sessions", `${id}.ndjson`)
          renameSync(file, `${file}.moved`)
          yield* session.prompt(text("second"))
          renameSync(`${file}.moved`, file)
        }))
      assert.deepStrictEqual(requests[0]!.messages.map((m) => m.role), ["user", "assistant", "user"])
      // The appends went to the open file, which is the log again.
      assert.deepStrictEqual(readLog(home, id).events.map((e) => e.type), [
        "turn_start",
        "model_response",
        "turn_end",
        "turn_start",
        "model_response",
        "turn_end"
      ])
    }))

  it.live("a log cut mid-tool (a crash) loads with the open call failed and the turn ended as interrupted", () =>
    Effect.gen(function*() {
      const { home, cwd } = yield* makeDirs
      const crashed = join(home, "..", "crashed-home")
      mkdirSync(join(crashed, "sessions"), { recursive: true })
      // Snapshot the log while a tool runs: exactly what a `kill -9` at that moment leaves on disk.
      const id = yield* Effect.gen(function*() {
        const runtime = yield* Runtime
        const session = yield* runtime.newSession({ cwd })
        const rec = yield* record(session)
        yield* submit(session, text("go"))
        yield* rec.until((e) => e.type === "tool_running")
        copyFileSync(join(home, "sessions", `${session.id}.ndjson`), join(crashed, "sessions", `${session.id}.ndjson`))
        return session.id
      }).pipe(
        Effect.scoped,
        Effect.provide(piecesLayer({ home, provider: byPrompt({ go: [[{ text: "Running." }, { tool: "slow", id: "s1" }]] }), toolkit: Toolkit.make([read, slow]) }))
      )
      assert.deepStrictEqual(readLog(crashed, id).events.map((e) => e.type), ["turn_start", "model_response", "tool_call"])

      yield* inRuntime(crashed, { script: { turns: [{ calls: [] }, { calls: [[{ text: "after" }]] }] } }, (runtime) =>
        Effect.gen(function*() {
          const { session, events } = yield* runtime.loadSession({ sessionId: id })
          assert.deepStrictEqual(events.map((e) => [e.type, e.seq, e.turn]), [
            ["turn_start", 1, 1],
            ["model_response", 2, 1],
            ["tool_call", 3, 1],
            ["tool_result", 4, 1],
            ["turn_end", 5, 1]
          ])
          assert.deepStrictEqual(events[3]!.data, { id: "s1", title: "Run slow", ok: false, content: INTERRUPTED_TOOL })
          assert.deepStrictEqual(events[4]!.data, { stopReason: "cancelled", error: INTERRUPTED_TURN })
          assert.strictEqual(historyOf(session).openToolCalls.size, 0)
          // Replay shows the call as failed and says why the turn stopped.
          const updates = Replay.updates(events)
          assert.deepInclude(updates.find((u) => u.sessionUpdate === "tool_call_update"), { toolCallId: "s1", status: "failed" })
          assert.deepStrictEqual(updates[updates.length - 1], { sessionUpdate: "agent_message_chunk", content: { type: "text", text: INTERRUPTED_TURN }, messageId: "e5" })
          // The session goes on with turn 2; the history pairs every tool call with a result.
          assert.deepStrictEqual(yield* session.prompt(text("again")), { stopReason: "end_turn" })
        }))
      const log = readLog(crashed, id)
      assert.deepStrictEqual(log.events.map((e) => e.type).slice(3), ["tool_result", "turn_end", "turn_start", "model_response", "turn_end"])
      assert.strictEqual(log.events[5]!.turn, 2)
    }))

  it.live("a torn last line is cut before appending, with a warning naming the file", () =>
    Effect.gen(function*() {
      const { home, cwd } = yield* makeDirs
      const id = yield* inRuntime(home, { script: { turns: [{ calls: [[{ text: "one" }]] }] } }, (runtime) =>
        Effect.map(Effect.tap(runtime.newSession({ cwd }), (s) => s.prompt(text("first"))), (s) => s.id))
      const file = join(home, "sessions", `${id}.ndjson`)
      const intact = statSync(file).size
      appendFileSync(file, '{"seq":5,"ts":1,"turn":2,"type":"turn_st')
      const warnings: Array<string> = []
      const logger = Logger.make<unknown, void>(({ message }) => {
        warnings.push((Array.isArray(message) ? message : [message]).map(String).join(" "))
      })
      yield* inRuntime(home, { script: { turns: [{ calls: [] }, { calls: [[{ text: "two" }]] }] } }, (runtime) =>
        Effect.gen(function*() {
          const { session, events } = yield* runtime.loadSession({ sessionId: id })
          assert.strictEqual(events.length, 3)
          assert.strictEqual(statSync(file).size, intact)
          yield* session.prompt(text("second"))
        })).pipe(Effect.provide(Logger.layer([logger])))
      assert.isTrue(warnings.some((w) => w.includes(file) && w.includes("torn last line (line 5")), warnings.join("\n"))
      const log = readLog(home, id)
      assert.deepStrictEqual(log.events.map((e) => e.seq), [1, 2, 3, 4, 5, 6])
    }))

  it.live("a corrupt line in the middle fails the load with the file and line; a newer format says so", () =>
    Effect.gen(function*() {
      const { home, cwd } = yield* makeDirs
      const dir = join(home, "sessions")
      mkdirSync(dir, { recursive: true })
      const head = (id: string, v = 1) => JSON.stringify({ type: "session", v, id, cwd, created: 1 }) + "\n"
      const line = (seq: number, body: CanonicalBody) => JSON.stringify({ seq, ts: seq, turn: 1, ...body }) + "\n"
      writeFileSync(
        join(dir, "bad.ndjson"),
        head("bad") + line(1, { type: "turn_start", data: { content: text("a") } }) + "{oops\n" +
          line(3, { type: "turn_end", data: { stopReason: "end_turn" } })
      )
      writeFileSync(join(dir, "future.ndjson"), head("future", 99))
      yield* inRuntime(home, {}, (runtime) =>
        Effect.gen(function*() {
          const bad = yield* Effect.flip(runtime.loadSession({ sessionId: "bad" }))
          assert.strictEqual(bad.reason, "log")
          assert.include(bad.message, `${join(dir, "bad.ndjson")} is corrupt at line 3`)
          const future = yield* Effect.flip(runtime.loadSession({ sessionId: "future" }))
          assert.include(future.message, "written by a newer Skein (log format v99")
          // A failed load leaves nothing live and no lock behind.
          assert.deepStrictEqual(yield* runtime.liveSessions, [])
          assert.isFalse(existsSync(join(dir, "bad.lock")))
        }))
    }))

  // About the registry, not the file: sessions in memory.
  it.live("loading a session that is live here returns it, with its logged events; a wrong cwd is refused", () =>
    Effect.gen(function*() {
      const { home, cwd } = yield* makeDirs
      yield* inRuntime(home, { script: { turns: [{ calls: [[{ text: "one" }]] }] }, store: "memory" }, (runtime) =>
        Effect.gen(function*() {
          const session = yield* runtime.newSession({ cwd })
          yield* session.prompt(text("first"))
          const loaded = yield* runtime.loadSession({ sessionId: session.id, cwd })
          assert.strictEqual(loaded.session, session)
          assert.deepStrictEqual(loaded.events.map((e) => e.type), ["turn_start", "model_response", "turn_end"])
          const wrong = yield* Effect.flip(runtime.loadSession({ sessionId: session.id, cwd: join(cwd, "..") }))
          assert.strictEqual(wrong.reason, "invalid_cwd")
          const unknown = yield* Effect.flip(runtime.loadSession({ sessionId: "no-such-session" }))
          assert.strictEqual(unknown.reason, "not_found")
          const sneaky = yield* Effect.flip(runtime.loadSession({ sessionId: "../../etc/passwd" }))
          assert.strictEqual(sneaky.reason, "not_found")
        }))
    }))

  it.live("a session another process has open cannot be loaded or deleted, but can be read", () =>
    Effect.gen(function*() {
      const { home, cwd } = yield* makeDirs
      const id = yield* inRuntime(home, { script: { turns: [{ calls: [[{ text: "one" }]] }] } }, (runtime) =>
        Effect.map(Effect.tap(runtime.newSession({ cwd }), (s) => s.prompt(text("first"))), (s) => s.id))
      const other = spawn(process.execPath, ["-e", "setTimeout(() => {}, 30000)"], { stdio: "ignore" })
      yield* Effect.addFinalizer(() => Effect.sync(() => other.kill("SIGKILL")))
      writeFileSync(join(home, "sessions", `${id}.lock`), JSON.stringify({ pid: other.pid, host: hostname(), started: 1 }))
      yield* inRuntime(home, {}, (runtime) =>
        Effect.gen(function*() {
          const error = yield* Effect.flip(runtime.loadSession({ sessionId: id }))
          assert.strictEqual(error.reason, "locked")
          assert.include(error.message, `another Skein process (pid ${other.pid}`)
          const record = yield* runtime.readSession(id)
          assert.strictEqual(record.events.length, 3)
          const refused = yield* Effect.flip(runtime.deleteSession(id))
          assert.strictEqual(refused.reason, "locked")
          assert.isTrue(existsSync(join(home, "sessions", `${id}.ndjson`)))
        }))
    }))
})

describe("Runtime: list, close, delete", () => {
  it.live("lists newest first with titles from the first prompt, pages by cursor and filters by cwd", () =>
    Effect.gen(function*() {
      const { home, cwd } = yield* makeDirs
      const elsewhere = join(cwd, "..", "elsewhere")
      mkdirSync(elsewhere)
      const long = "word ".repeat(40)
      const ids = yield* inRuntime(home, { provider: byPrompt({}) }, (runtime) =>
        Effect.gen(function*() {
          const out: Array<string> = []
          for (let i = 0; i < 5; i++) {
            const session = yield* runtime.newSession({ cwd: i === 3 ? elsewhere : cwd })
            if (i !== 4) yield* session.prompt(text(i === 2 ? long : `Prompt number ${i}\nsecond line`))
            out.push(session.id)
          }
          return out
        })).pipe(quiet)
      // Deterministic activity times: session i was last written at minute i.
      ids.forEach((id, i) => utimesSync(join(home, "sessions", `${id}.ndjson`), 1_000 + i * 60, 1_000 + i * 60))

      yield* inRuntime(home, {}, (runtime) =>
        Effect.gen(function*() {
          const all = yield* runtime.listSessions()
          assert.deepStrictEqual(all.sessions.map((s) => s.id), [...ids].reverse())
          assert.strictEqual(all.nextCursor, undefined)
          const byId = new Map(all.sessions.map((s) => [s.id, s]))
          assert.strictEqual(byId.get(ids[0]!)!.title, "Prompt number 0 second line")
          assert.strictEqual(byId.get(ids[2]!)!.title!.length, 80)
          assert.isTrue(byId.get(ids[2]!)!.title!.endsWith("…"))
          assert.strictEqual(byId.get(ids[4]!)!.title, undefined)
          assert.strictEqual(byId.get(ids[1]!)!.updatedAt, (1_000 + 60) * 1000)
          assert.strictEqual(byId.get(ids[3]!)!.cwd, elsewhere)

          const pages: Array<Array<string>> = []
          let cursor: string | undefined
          do {
            const page = yield* runtime.listSessions({ limit: 2, ...(cursor !== undefined ? { cursor } : {}) })
            pages.push(page.sessions.map((s) => s.id))
            cursor = page.nextCursor
          } while (cursor !== undefined)
          assert.deepStrictEqual(pages, [[ids[4], ids[3]], [ids[2], ids[1]], [ids[0]]])

          const filtered = yield* runtime.listSessions({ cwd })
          assert.deepStrictEqual(filtered.sessions.map((s) => s.id), [ids[4], ids[2], ids[1], ids[0]])
          const other = yield* runtime.listSessions({ cwd: elsewhere })
          assert.deepStrictEqual(other.sessions.map((s) => s.id), [ids[3]])

          const bad = yield* Effect.flip(runtime.listSessions({ cursor: "not a cursor" }))
          assert.strictEqual(bad.reason, "invalid_request")
        }))
    }))

  it.live("new sessions hold their lock while live; close cancels, releases it and frees the session", () =>
    Effect.gen(function*() {
      const { home, cwd } = yield* makeDirs
      yield* inRuntime(home, { script: { turns: [{ calls: [[{ text: "a" }, { sleep_ms: 30_000 }]] }] } }, (runtime) =>
        Effect.gen(function*() {
          const session = yield* runtime.newSession({ cwd })
          const lock = join(home, "sessions", `${session.id}.lock`)
          assert.strictEqual(JSON.parse(readFileSync(lock, "utf8")).pid, process.pid)
          const rec = yield* record(session)
          const ticket = yield* submit(session, text("go"))
          yield* rec.until((e) => e.type === "text_delta")
          yield* runtime.closeSession(session.id)
          assert.deepStrictEqual(yield* Deferred.await(ticket.outcome).pipe(Effect.timeout("1 second")), { stopReason: "cancelled" })
          assert.isFalse(existsSync(lock))
          assert.deepStrictEqual(yield* runtime.liveSessions, [])
          assert.strictEqual((yield* Effect.flip(runtime.getSession(session.id))).reason, "not_found")
          // Closed is not gone: it loads again.
          const again = yield* runtime.loadSession({ sessionId: session.id })
          assert.strictEqual(again.events[again.events.length - 1]!.type, "turn_end")
        }))
    }))

  it.live("delete closes a live session and removes its log; an unknown id succeeds", () =>
    Effect.gen(function*() {
      const { home, cwd } = yield* makeDirs
      yield* inRuntime(home, { script: { turns: [{ calls: [[{ text: "a" }]] }] } }, (runtime) =>
        Effect.gen(function*() {
          const session = yield* runtime.newSession({ cwd })
          yield* session.prompt(text("go"))
          yield* runtime.deleteSession(session.id)
          assert.isFalse(existsSync(join(home, "sessions", `${session.id}.ndjson`)))
          assert.isFalse(existsSync(join(home, "sessions", `${session.id}.lock`)))
          assert.deepStrictEqual(yield* runtime.liveSessions, [])
          assert.deepStrictEqual((yield* runtime.listSessions()).sessions, [])
          yield* runtime.deleteSession(session.id)
          yield* runtime.deleteSession("never-existed")
          yield* runtime.deleteSession("../not/an/id")
          assert.strictEqual((yield* Effect.flip(runtime.loadSession({ sessionId: session.id }))).reason, "not_found")
        }))
    }))
})
