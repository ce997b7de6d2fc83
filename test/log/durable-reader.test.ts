/**
 * Reading logs back: the v1 fixture, torn tails, corruption in the middle, chunk boundaries,
 * format versions and the migration hook.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { LOG_VERSION } from "../../src/log/Event.ts"
import * as History from "../../src/log/History.ts"
import * as Migrations from "../../src/log/Migrations.ts"
import * as Reader from "../../src/log/Reader.ts"
import * as Replay from "../../src/translate/Replay.ts"
import { SessionLog } from "../../src/log/SessionLog.ts"
import { validateDef } from "../support/AcpSchema.ts"
import * as TempDir from "../support/TempDir.ts"

const FIXTURE = join(import.meta.dirname, "../fixtures/logs/v1-basic.ndjson")

const read = (file: string, options?: Reader.Options) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    return yield* Reader.read(fs, file, options)
  }).pipe(Effect.provide(TempDir.platform))

const header = (id: string, v = 1) => JSON.stringify({ type: "session", v, id, cwd: "/w", created: 1 }) + "\n"
const event = (seq: number, type: string, data: unknown, turn: number | null = 1) => JSON.stringify({ seq, ts: seq, turn, type, data }) + "\n"
const start = (seq: number, text: string) => event(seq, "turn_start", { content: [{ type: "text", text }] })
const answer = (seq: number, text: string) => event(seq, "model_response", { call: 1, parts: [{ type: "text", text }], stop: "end_turn" })
const end = (seq: number) => event(seq, "turn_end", { stopReason: "end_turn" })

const withFile = (text: string) =>
  Effect.map(TempDir.make(), (dir) => {
    const file = join(dir, "s.ndjson")
    writeFileSync(file, text)
    return file
  })

describe("Reader: the v1 fixture", () => {
  it.effect("reads every event, folds mode, config, permissions and turns, and replays valid ACP", () =>
    Effect.gen(function*() {
      const contents = yield* read(FIXTURE)
      assert.strictEqual(contents.version, 1)
      assert.strictEqual(contents.header.id, "fixture-v1")
      assert.strictEqual(contents.torn, undefined)
      assert.strictEqual(contents.intactBytes, statSync(FIXTURE).size)
      assert.deepStrictEqual(contents.events.map((e) => e.seq), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13])
      assert.isTrue(contents.events.every((e) => e.sessionId === "fixture-v1"))

      const history = History.make()
      for (const e of contents.events) History.apply(history, e)
      assert.strictEqual(history.turns, 2)
      assert.strictEqual(history.mode, "acceptEdits")
      assert.deepStrictEqual([...history.config], [["model", "model-b"]])
      assert.deepStrictEqual(history.rules, [{ decision: "allow", kind: "path", value: "/fixture/project", label: "edits in project/" }])
      assert.deepStrictEqual(history.messages.map((m) => m.role), ["user", "assistant", "tool", "assistant", "user"])

      const updates = Replay.updates(contents.events)
      for (const update of updates) {
        const result = validateDef("SessionNotification", { sessionId: "fixture-v1", update })
        assert.isTrue(result.ok, JSON.stringify(result))
      }
      assert.deepStrictEqual(updates.map((u) => u.sessionUpdate), [
        "current_mode_update",
        "config_option_update",
        "session_info_update",
        "user_message_chunk",
        "user_message_chunk",
        "agent_thought_chunk",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
        "agent_message_chunk",
        "user_message_chunk",
        "agent_message_chunk"
      ])
      // The tool call ends completed with its diff; the failed turn replays its error text.
      assert.deepInclude(updates[8], { status: "completed" })
      assert.deepStrictEqual((updates[8] as unknown as { content: Array<unknown> }).content[0], {
        type: "diff",
        path: "/fixture/project/hello.txt",
        oldText: "Helo\n",
        newText: "Hello\n"
      })
      assert.deepStrictEqual(updates[12], {
        sessionUpdate: "agent_message_chunk",
        content: { type: "text", text: "The model call failed: HTTP 529 overloaded" },
        messageId: "e13"
      })
    }))

  it.effect("any chunking of the bytes gives the same contents (multi-byte text, U+2028 inside strings)", () =>
    Effect.gen(function*() {
      const text = header("s") + start(1, "héllo \u2028 wörld 🎉") + answer(2, "ça va\u2029") + end(3)
      const bytes = new TextEncoder().encode(text)
      const whole = Reader.parser("f").push(bytes)
      assert.isUndefined(whole)
      for (const size of [1, 2, 3, 7, 64]) {
        const p = Reader.parser("f")
        for (let i = 0; i < bytes.length; i += size) p.push(bytes.subarray(i, i + size))
        const result = p.end()
        assert.notInstanceOf(result, Error)
        const contents = result as Reader.Contents
        assert.deepStrictEqual(contents.events.map((e) => e.type), ["turn_start", "model_response", "turn_end"])
        assert.deepStrictEqual(contents.events[0]!.data, { content: [{ type: "text", text: "héllo \u2028 wörld 🎉" }] })
        assert.strictEqual(contents.intactBytes, bytes.length)
      }
    }))
})

describe("Reader: recovery", () => {
  it.effect("a last line without its newline is torn: not returned, reported with the intact length", () =>
    Effect.gen(function*() {
      const intact = header("s") + start(1, "a") + answer(2, "b")
      const tail = '{"seq":3,"ts":3,"turn":1,"type":"turn_e'
      const file = yield* withFile(intact + tail)
      const contents = yield* read(file)
      assert.deepStrictEqual(contents.events.map((e) => e.seq), [1, 2])
      assert.deepStrictEqual(contents.torn, { line: 4, bytes: tail.length })
      assert.strictEqual(contents.intactBytes, Buffer.byteLength(intact))
      // Reading never changes the file.
      assert.strictEqual(statSync(file).size, Buffer.byteLength(intact) + tail.length)
    }))

  it.effect("a complete last line that is not JSON is torn too (a crash can leave garbage)", () =>
    Effect.gen(function*() {
      const intact = header("s") + start(1, "a")
      const file = yield* withFile(intact + "\u0000\u0000\u0000{garbage\n")
      const contents = yield* read(file)
      assert.deepStrictEqual(contents.events.map((e) => e.seq), [1])
      assert.strictEqual(contents.torn?.line, 3)
      assert.strictEqual(contents.intactBytes, Buffer.byteLength(intact))
    }))

  it.effect("a bad line in the middle fails with an error naming the file and the line", () =>
    Effect.gen(function*() {
      const file = yield* withFile(header("s") + start(1, "a") + "{not json\n" + answer(3, "b") + end(4))
      const error = yield* Effect.flip(read(file))
      assert.strictEqual(error.reason, "corrupt")
      assert.include(error.message, file)
      assert.include(error.message, "line 3")
    }))

  it.effect("a torn line followed by more lines is corruption, not a torn tail", () =>
    Effect.gen(function*() {
      const file = yield* withFile(header("s") + "{torn\n" + start(2, "a").slice(0, 10))
      const error = yield* Effect.flip(read(file))
      assert.strictEqual(error.reason, "corrupt")
      assert.include(error.message, "line 2")
    }))

  it.effect("a well-formed JSON line that is not a valid event names its line and what is wrong", () =>
    Effect.gen(function*() {
      for (
        const [bad, what] of [
          [event(2, "turn_start", { content: "nope" }), "a turn_start whose data does not match its schema (content: Expected array)"],
          [event(1, "turn_end", { stopReason: "end_turn" }), "seq 1 does not follow 1"],
          [event(2, "mystery", {}), "unknown event type"],
          ['{"seq":2,"ts":2,"turn":1,"type":"plan"}\n', "no data"]
        ] as const
      ) {
        const file = yield* withFile(header("s") + start(1, "a") + bad + end(9))
        const error = yield* Effect.flip(read(file))
        assert.include(error.message, `${file} is corrupt at line 3: ${what}`)
      }
    }))

  it.effect("a missing, empty or headless log is an error that says so", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const missing = yield* Effect.flip(read(join(dir, "none.ndjson")))
      assert.strictEqual(missing.reason, "not_found")
      const empty = yield* Effect.flip(read(yield* withFile("")))
      assert.include(empty.message, "has no complete header")
      const torn = yield* Effect.flip(read(yield* withFile('{"type":"sess')))
      assert.include(torn.message, "has no complete header")
      const headless = yield* Effect.flip(read(yield* withFile(start(1, "a"))))
      assert.include(headless.message, "line 1: the first line is not a session header")
    }))
})

describe("Versions and migrations", () => {
  it("plan: the current version reads as is, a newer one cannot be read, an unknown old one neither", () => {
    assert.deepStrictEqual(Migrations.plan(LOG_VERSION), { _tag: "Current" })
    const newer = Migrations.plan(LOG_VERSION + 1)
    assert.strictEqual(newer._tag, "Unreadable")
    assert.include((newer as { message: string }).message, `written by a newer Skein (log format v${LOG_VERSION + 1}`)
    assert.strictEqual(Migrations.plan(0)._tag, "Unreadable")
    assert.strictEqual(Migrations.plan("1")._tag, "Unreadable")
    assert.strictEqual(Migrations.formats.get(LOG_VERSION), Migrations.identity)
    // v1 logs keep loading: upgraded as they are read.
    assert.strictEqual(Migrations.plan(1)._tag, "Upgrade")
  })

  it.effect("a log from a newer Skein fails to load with a clear error naming the file", () =>
    Effect.gen(function*() {
      const file = yield* withFile(header("s", LOG_VERSION + 1) + start(1, "a"))
      const error = yield* Effect.flip(read(file))
      assert.strictEqual(error.reason, "version")
      assert.include(error.message, file)
      assert.include(error.message, "newer Skein")
      assert.include(error.message, "Upgrade Skein")
    }))

  // A made-up format v0 whose prompts were `{ "text": … }`: the hook upgrades each line.
  const v0: Migrations.Upgrade = {
    header: (h) => ({ ...h, v: 1 }),
    event: (e) => {
      const data = e.data as Record<string, unknown>
      return e.type === "turn_start" && typeof data.text === "string"
        ? { ...e, data: { content: [{ type: "text", text: data.text }] } }
        : e
    }
  }
  const formats = new Map<number, Migrations.Upgrade>([[0, v0], [1, Migrations.identity]])
  const v0Log = header("old", 0) + event(1, "turn_start", { text: "old prompt" }) + answer(2, "ok") + end(3)

  it.effect("the migration hook upgrades every line of an older format while reading", () =>
    Effect.gen(function*() {
      const file = yield* withFile(v0Log)
      const contents = yield* read(file, { formats })
      assert.strictEqual(contents.version, 0)
      assert.strictEqual(contents.header.v, 1)
      assert.deepStrictEqual(contents.events[0]!.data, { content: [{ type: "text", text: "old prompt" }] })
      // Without the hook, v0 is not readable.
      const error = yield* Effect.flip(read(file))
      assert.strictEqual(error.reason, "version")
    }))

  it.effect("opening an old log for writing rewrites it in the current format and keeps a backup", () =>
    Effect.gen(function*() {
      const home = yield* TempDir.make()
      const log = yield* Effect.gen(function*() {
        return yield* SessionLog
      }).pipe(Effect.provide(SessionLog.layer({ home, formats })), Effect.provide(TempDir.platform))
      const dir = join(home, "sessions")
      mkdirSync(dir, { recursive: true })
      writeFileSync(join(dir, "old.ndjson"), v0Log)
      const opened = yield* Effect.scoped(log.open("old")).pipe(Effect.provide(TempDir.platform))
      assert.strictEqual(opened.contents.version, 0)
      const rewritten = readFileSync(join(dir, "old.ndjson"), "utf8").split("\n").filter((l) => l.length > 0).map((l) => JSON.parse(l))
      assert.strictEqual(rewritten[0].v, LOG_VERSION)
      assert.deepStrictEqual(rewritten[1].data, { content: [{ type: "text", text: "old prompt" }] })
      assert.isTrue(existsSync(join(dir, "old.ndjson.v0.bak")))
      assert.strictEqual(readFileSync(join(dir, "old.ndjson.v0.bak"), "utf8"), v0Log)
      // The current format reads it without the hook now.
      const again = yield* read(join(dir, "old.ndjson"))
      assert.strictEqual(again.version, LOG_VERSION)
      assert.strictEqual(again.events.length, 3)
    }))
})
