/**
 * Forking a session (`Runtime.forkSession`): the fork's log is the session's up to the end of a
 * turn, its header says so, the session's own log is not changed, and both go on on their own
 * (the fork's model sees only the conversation up to that turn). Refusals: a turn that does not
 * exist or still runs, a child session, an unknown id. A last turn a crash left open is forked
 * closed, as loading closes it. Through the file store, the memory store, and the in-process
 * RPC client (`Skein.layer`).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { Skein } from "../../src/index.ts"
import { type Canonical, type CanonicalBody, LOG_VERSION, type LogHeader } from "../../src/log/Event.ts"
import { promptText } from "../../src/Vocabulary.ts"
import * as MemoryStore from "../../src/log/MemoryStore.ts"
import * as Recovery from "../../src/log/Recovery.ts"
import type { ModelRequest } from "../../src/providers/Provider.ts"
import * as Fork from "../../src/runtime/Fork.ts"
import { Runtime } from "../../src/runtime/Api.ts"
import { read } from "../../src/tools/read.ts"
import * as Toolkit from "../../src/tools/Toolkit.ts"
import { byPrompt, makeDirs, piecesLayer, readLog, record, submit, text } from "../support/Sessions.ts"

const script = {
  one: [[{ text: "Reading." }, { tool: "read", args: { path: "notes.txt" } }], [{ text: "It says hello." }]],
  two: [[{ text: "Two." }]],
  three: [[{ text: "Three." }]],
  four: [[{ text: "Four." }]],
  slow: [[{ text: "Working" }, { sleep_ms: 60_000 }]]
} as const

/** The conversation a model request carries, one line per message. */
const conversation = (request: ModelRequest): Array<string> =>
  request.messages.map((m) =>
    m.role === "user"
      ? `user: ${promptText(m.content)}`
      : m.role === "assistant"
      ? `assistant: ${m.parts.map((p) => (p.type === "text" ? p.text : p.type === "tool_call" ? `[${p.name}]` : "")).join("")}`
      : `tool: ${m.name}`
  )

const lastRequest = (requests: ReadonlyArray<ModelRequest>, sessionId: string) => {
  const mine = requests.filter((r) => r.sessionId === sessionId)
  return mine[mine.length - 1]!
}

/** A runtime from its pieces, recording every model request; sessions in `sessions`, or in files under the home. */
const setup = (sessions?: MemoryStore.Sessions) =>
  Effect.gen(function*() {
    const { home, cwd } = yield* makeDirs
    const requests: Array<ModelRequest> = []
    const layer = piecesLayer({ home, sessions, provider: byPrompt(script as never, (r) => requests.push(r)), toolkit: Toolkit.make([read]) })
    return { home, cwd, requests, layer }
  })

const canonicalLine = (e: { readonly seq: number; readonly ts: number; readonly turn: number | null; readonly type: string; readonly data: unknown }) =>
  ({ seq: e.seq, ts: e.ts, turn: e.turn, type: e.type, data: e.data })

describe("Runtime.forkSession", () => {
  it.live("forks at a turn: the header says where from, the log is the session's up to there, the session's log is untouched, both go on", () =>
    Effect.gen(function*() {
      const { home, cwd, requests, layer } = yield* setup()
      yield* Effect.gen(function*() {
        const runtime = yield* Runtime
        const parent = yield* runtime.newSession({ cwd, mode: "acceptEdits" })
        for (const prompt of ["one", "two", "three"]) assert.strictEqual((yield* parent.prompt(text(prompt))).stopReason, "end_turn")
        const file = join(home, "sessions", `${parent.id}.ndjson`)
        const before = readFileSync(file)

        const forked = yield* runtime.forkSession({ sessionId: parent.id, turn: 2 })
        const id = forked.header.id
        assert.notStrictEqual(id, parent.id)
        assert.deepStrictEqual(readFileSync(file), before, "the session's log is byte for byte as it was")
        assert.deepStrictEqual(forked.header.forkedFrom, { sessionId: parent.id, turn: 2 })
        assert.strictEqual(forked.header.cwd, cwd)
        assert.strictEqual(forked.header.mode, "acceptEdits")
        assert.strictEqual(forked.header.v, LOG_VERSION)
        assert.strictEqual(forked.file, join(home, "sessions", `${id}.ndjson`))

        // The fork's log: the session's events of turns 1 and 2, numbered from 1, with the fork's id.
        const parentLog = readLog(home, parent.id)
        const forkLog = readLog(home, id)
        const expected = parentLog.events.filter((e) => e.turn === null || e.turn <= 2).map((e, i) => ({ ...canonicalLine(e), seq: i + 1 }))
        assert.deepStrictEqual(forkLog.events, expected)
        assert.deepStrictEqual(forkLog.header, { ...forked.header })
        assert.deepStrictEqual(forked.events.map(canonicalLine), expected)
        assert.isTrue(forked.events.every((e) => e.sessionId === id))
        assert.deepStrictEqual(forkLog.events.map((e) => e.type).slice(-1), ["turn_end"])

        // Both go on, each with its own conversation.
        const { session: fork } = yield* runtime.loadSession({ sessionId: id })
        assert.strictEqual((yield* fork.settings).mode, "acceptEdits")
        assert.strictEqual((yield* fork.prompt(text("four"))).stopReason, "end_turn")
        const forkRequest = lastRequest(requests, id)
        assert.strictEqual(forkRequest.turn, 3)
        assert.deepStrictEqual(conversation(forkRequest), [
          "user: one",
          "assistant: Reading.[read]",
          "tool: read",
          "assistant: It says hello.",
          "user: two",
          "assistant: Two.",
          "user: four"
        ])
        assert.strictEqual((yield* parent.prompt(text("four"))).stopReason, "end_turn")
        const parentRequest = lastRequest(requests, parent.id)
        assert.strictEqual(parentRequest.turn, 4)
        assert.deepStrictEqual(conversation(parentRequest).slice(-5), ["user: two", "assistant: Two.", "user: three", "assistant: Three.", "user: four"])

        // The session's log only grew by its own turn; the fork's went on from its copy.
        assert.isTrue(readFileSync(file).subarray(0, before.length).equals(before))
        assert.deepStrictEqual(readLog(home, id).events.slice(0, expected.length), expected)
        assert.deepStrictEqual(readLog(home, id).events.filter((e) => e.type === "turn_start").map((e) => [e.turn, e.seq > expected.length]), [
          [1, false],
          [2, false],
          [3, true]
        ])
      }).pipe(Effect.scoped, Effect.provide(layer))
    }))

  it.live("by default forks at the last turn, with the settings the session has now; turn 0 keeps only what came before the first turn", () =>
    Effect.gen(function*() {
      const sessions = new MemoryStore.Sessions()
      const { cwd, layer } = yield* setup(sessions)
      yield* Effect.gen(function*() {
        const runtime = yield* Runtime
        const parent = yield* runtime.newSession({ cwd })
        yield* parent.prompt(text("one"))
        yield* parent.setMode("plan")
        const all = yield* runtime.readSession(parent.id)

        const last = yield* runtime.forkSession({ sessionId: parent.id })
        assert.deepStrictEqual(last.header.forkedFrom, { sessionId: parent.id, turn: 1 })
        assert.deepStrictEqual(last.events.map((e) => [e.seq, e.type, e.data]), all.events.map((e) => [e.seq, e.type, e.data]))
        const { session } = yield* runtime.loadSession({ sessionId: last.header.id })
        assert.strictEqual((yield* session.settings).mode, "plan")

        const zero = yield* runtime.forkSession({ sessionId: parent.id, turn: 0 })
        assert.deepStrictEqual(zero.header.forkedFrom, { sessionId: parent.id, turn: 0 })
        assert.deepStrictEqual(zero.events, [])
        // Its next turn is its first.
        const { session: fresh } = yield* runtime.loadSession({ sessionId: zero.header.id })
        const started = yield* submit(fresh, text("two"))
        assert.strictEqual(started.turn, 1)
      }).pipe(Effect.scoped, Effect.provide(layer))
    }))

  it.live("refuses a turn that does not exist, a child session, an unknown id and a cwd that is no directory, and writes nothing", () =>
    Effect.gen(function*() {
      const sessions = new MemoryStore.Sessions()
      const { cwd, layer } = yield* setup(sessions)
      yield* Effect.gen(function*() {
        const runtime = yield* Runtime
        const parent = yield* runtime.newSession({ cwd })
        yield* parent.prompt(text("one"))
        yield* parent.prompt(text("two"))
        // A child session's log, as a parent's turn writes it.
        const store = yield* MemoryStore.make({ sessions })
        yield* Effect.scoped(store.create({
          type: "session",
          v: LOG_VERSION,
          id: "child-1",
          cwd,
          created: 1,
          parent: { sessionId: parent.id, toolCallId: "s1", depth: 1 },
          agent: "explorer"
        }))
        const count = sessions.logs.size

        const refused = (options: Parameters<typeof runtime.forkSession>[0]) => Effect.flip(runtime.forkSession(options))
        const three = yield* refused({ sessionId: parent.id, turn: 3 })
        assert.strictEqual(three.reason, "invalid_request")
        assert.strictEqual(three.message, `Session ${parent.id} has no turn 3: its turns are 1 to 2`)
        for (const turn of [-1, 1.5]) assert.strictEqual((yield* refused({ sessionId: parent.id, turn })).reason, "invalid_request")
        const child = yield* refused({ sessionId: "child-1" })
        assert.strictEqual(child.reason, "invalid_request")
        assert.include(child.message, "child-1 is a child session (a subagent of")
        assert.strictEqual((yield* refused({ sessionId: "no-such-session" })).reason, "not_found")
        assert.strictEqual((yield* refused({ sessionId: parent.id, cwd: join(cwd, "missing") })).reason, "invalid_cwd")
        assert.strictEqual((yield* refused({ sessionId: parent.id, cwd: "relative" })).reason, "invalid_cwd")
        assert.strictEqual(sessions.logs.size, count, "no log was written")
      }).pipe(Effect.scoped, Effect.provide(layer))
    }))

  it.live("a turn still running cannot be forked; by default the fork ends with the turn before it", () =>
    Effect.gen(function*() {
      const { cwd, layer } = yield* setup(new MemoryStore.Sessions())
      yield* Effect.gen(function*() {
        const runtime = yield* Runtime
        const parent = yield* runtime.newSession({ cwd })
        yield* parent.prompt(text("one"))
        const rec = yield* record(parent)
        yield* submit(parent, text("slow"))
        yield* rec.until((e) => e.type === "text_delta" && e.turn === 2)

        const refused = yield* Effect.flip(runtime.forkSession({ sessionId: parent.id, turn: 2 }))
        assert.strictEqual(refused.reason, "invalid_request")
        assert.strictEqual(refused.message, `Turn 2 of session ${parent.id} is still running: fork at an earlier turn, or once it has ended`)
        const forked = yield* runtime.forkSession({ sessionId: parent.id })
        assert.deepStrictEqual(forked.header.forkedFrom, { sessionId: parent.id, turn: 1 })
        assert.isTrue(forked.events.every((e) => e.turn !== 2))
        assert.strictEqual(forked.events[forked.events.length - 1]!.type, "turn_end")
        yield* parent.cancel
      }).pipe(Effect.scoped, Effect.provide(layer))
    }))

  it.live("a last turn a crash left open is forked closed, as loading closes it; the MCP servers' record is copied", () =>
    Effect.gen(function*() {
      const sessions = new MemoryStore.Sessions()
      const { cwd, layer } = yield* setup(sessions)
      const store = yield* MemoryStore.make({ sessions })
      const id = "crashed-1"
      const at = (seq: number, turn: number | null, body: CanonicalBody) => ({ ...body, sessionId: id, seq, ts: 1000 + seq, turn }) as Canonical
      const header: LogHeader = { type: "session", v: LOG_VERSION, id, cwd, created: 1, mode: "default" }
      const side = JSON.stringify({ v: 1, servers: [] })
      yield* Effect.scoped(Effect.gen(function*() {
        const writer = yield* store.create(header)
        yield* writer.append([
          at(1, 1, { type: "turn_start", data: { content: [{ type: "text", text: "one" }] } }),
          at(2, 1, { type: "model_response", data: { call: 1, parts: [{ type: "text", text: "Fine." }], stop: "end_turn" } }),
          at(3, 1, { type: "turn_end", data: { stopReason: "end_turn" } }),
          at(4, 2, { type: "turn_start", data: { content: [{ type: "text", text: "two" }] } }),
          at(5, 2, { type: "model_response", data: { call: 1, parts: [{ type: "tool_call", id: "c1", name: "read", args: { path: "notes.txt" } }], stop: "tool_use" } }),
          at(6, 2, { type: "tool_call", data: { id: "c1", name: "read", args: { path: "notes.txt" }, title: "Read notes.txt", kind: "read" } }),
          at(7, 2, { type: "tool_result", data: { id: "c1", ok: true, content: "Hello notes" } }),
          at(8, 2, { type: "model_partial", data: { call: 2, parts: [{ type: "text", text: "Half an ans" }] } })
        ])
        yield* writer.saveSide("mcp", side)
      }))
      const before = sessions.text(id)
      yield* Effect.gen(function*() {
        const runtime = yield* Runtime
        const forked = yield* runtime.forkSession({ sessionId: id })
        assert.deepStrictEqual(forked.header.forkedFrom, { sessionId: id, turn: 2 })
        assert.strictEqual(sessions.text(id), before, "the crashed session's log is not closed by a fork")
        assert.strictEqual(yield* store.readSide(forked.header.id, "mcp"), side)
        const closing = forked.events.slice(8)
        assert.deepStrictEqual(closing.map((e) => [e.seq, e.turn, e.type, e.data]), [
          [9, 2, "model_response", { call: 2, parts: [{ type: "text", text: "Half an ans" }], stop: "cancelled" }],
          [10, 2, "turn_end", { stopReason: "cancelled", error: Recovery.INTERRUPTED_TURN }]
        ])
        // What loading the session appends is the same.
        const loaded = yield* runtime.loadSession({ sessionId: id })
        assert.deepStrictEqual(loaded.events.slice(8).map((e) => [e.seq, e.turn, e.type, e.data]), closing.map((e) => [e.seq, e.turn, e.type, e.data]))
        // At the turn before, nothing needs closing.
        const earlier = yield* runtime.forkSession({ sessionId: id, turn: 1 })
        assert.deepStrictEqual(earlier.events.map((e) => e.type), ["turn_start", "model_response", "turn_end"])
      }).pipe(Effect.scoped, Effect.provide(layer))
    }))

  it.effect("select and renumber: later turns' events are left out wherever they are, and a compaction's seqs follow the events", () =>
    Effect.sync(() => {
      const at = (seq: number, turn: number | null, body: CanonicalBody) => ({ ...body, sessionId: "s", seq, ts: seq, turn }) as Canonical
      const start = (seq: number, turn: number) => at(seq, turn, { type: "turn_start", data: { content: [{ type: "text", text: `t${turn}` }] } })
      const end = (seq: number, turn: number) => at(seq, turn, { type: "turn_end", data: { stopReason: "end_turn" } })
      const events = [
        at(3, null, { type: "mode_changed", data: { mode: "plan" } }),
        start(5, 1),
        end(6, 1),
        start(8, 2),
        at(9, null, { type: "notice", data: { text: "during turn 2" } }),
        at(10, 2, {
          type: "compaction",
          data: { id: "k", trigger: "manual", fromSeq: 4, toSeq: 7, keepFromSeq: 8, promptHash: "h", summaryForModel: "s", summaryForUser: "s", usageBefore: 2, usageAfter: 1 }
        }),
        end(11, 2),
        at(12, null, { type: "config_changed", data: { id: "model", value: "m" } }),
        start(13, 3),
        at(14, 1, { type: "notice", data: { text: "late, of turn 1" } }),
        end(15, 3)
      ]
      const two = Fork.select("s", events, 2, false)
      assert.notInstanceOf(two, Error)
      if (two instanceof Error) return
      assert.deepStrictEqual(two.events.map((e) => e.seq), [3, 5, 6, 8, 9, 10, 11, 12, 14])
      const renumbered = Fork.renumber(two.events, "f")
      assert.deepStrictEqual(renumbered.map((e) => [e.sessionId, e.seq]), [3, 5, 6, 8, 9, 10, 11, 12, 14].map((_, i) => ["f", i + 1]))
      const compaction = renumbered.find((e) => e.type === "compaction")!
      assert.deepStrictEqual(compaction.type === "compaction" ? [compaction.data.fromSeq, compaction.data.toSeq, compaction.data.keepFromSeq] : [], [2, 3, 4])
      const one = Fork.select("s", events, 1, false)
      assert.deepStrictEqual(one instanceof Error ? one.message : one.events.map((e) => e.seq), [3, 5, 6, 14])
      const def = Fork.select("s", events, undefined, false)
      assert.strictEqual(def instanceof Error ? def.message : def.turn, 3)
    }))

  it.live("works through the session protocol's RPC client (Skein.layer), the fork then loads and goes on", () =>
    Effect.gen(function*() {
      const { home, cwd } = yield* makeDirs
      const turns = [{ calls: [[{ text: "First." }]] }, { calls: [[{ text: "Second." }]] }, { calls: [[{ text: "Third." }]] }]
      yield* Effect.gen(function*() {
        const runtime = yield* Runtime
        const parent = yield* runtime.newSession({ cwd })
        yield* parent.prompt(text("one"))
        yield* parent.prompt(text("two"))
        const forked = yield* runtime.forkSession({ sessionId: parent.id, turn: 1 })
        assert.deepStrictEqual(forked.header.forkedFrom, { sessionId: parent.id, turn: 1 })
        assert.deepStrictEqual(forked.events.map((e) => e.type), ["turn_start", "model_response", "turn_end"])
        const { session } = yield* runtime.loadSession({ sessionId: forked.header.id })
        assert.strictEqual((yield* session.prompt(text("again"))).stopReason, "end_turn")
        const read = yield* runtime.readSession(forked.header.id)
        assert.deepStrictEqual(read.events.filter((e) => e.type === "turn_start").map((e) => e.turn), [1, 2])
        const refused = yield* Effect.flip(runtime.forkSession({ sessionId: parent.id, turn: 7 }))
        assert.strictEqual(refused._tag, "RuntimeError")
        assert.strictEqual(refused.reason, "invalid_request")
      }).pipe(Effect.scoped, Effect.provide(Skein.layer({ home, script: { turns }, store: "memory" })))
    }))
})
