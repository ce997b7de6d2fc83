/**
 * The session log store (NDJSON on disk) and history folding.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import type { Canonical, CanonicalBody } from "../../src/log/Event.ts"
import * as History from "../../src/log/History.ts"
import * as Replay from "../../src/log/Replay.ts"
import { SessionLog } from "../../src/log/SessionLog.ts"
import { encodeEvent } from "../../src/log/Store.ts"
import * as TempDir from "../support/TempDir.ts"

const stamp = (seq: number, body: CanonicalBody, turn: number | null = 1): Canonical =>
  ({ ...body, sessionId: "s-1", seq, ts: 1000 + seq, turn }) as Canonical

const header = { type: "session" as const, v: 1, id: "s-1", cwd: "/w", created: 5, mode: "default" }

const withLog = Effect.gen(function*() {
  const home = yield* TempDir.make()
  const log = yield* Effect.gen(function*() {
    return yield* SessionLog
  }).pipe(Effect.provide(SessionLog.layer({ home })), Effect.provide(TempDir.platform))
  return { home, log }
})

describe("SessionLog", () => {
  it.effect("creates <home>/sessions/<id>.ndjson with the header, then appends events as lines in field order", () =>
    Effect.gen(function*() {
      const { home, log } = yield* withLog
      const file = join(home, "sessions", "s-1.ndjson")
      assert.strictEqual(log.pathOf("s-1"), file)
      yield* Effect.scoped(Effect.gen(function*() {
        const writer = yield* log.create(header)
        assert.strictEqual(writer.path, file)
        yield* writer.append([stamp(1, { type: "turn_start", data: { content: [{ type: "text", text: "a\u2028b\nc" }] } })])
        yield* writer.append([])
        yield* writer.append([
          stamp(2, { type: "model_response", data: { call: 1, parts: [{ type: "text", text: "hi" }], stop: "end_turn" } }),
          stamp(3, { type: "turn_end", data: { stopReason: "end_turn" } })
        ])
        yield* writer.sync
      })).pipe(Effect.provide(TempDir.platform))
      const lines = readFileSync(file, "utf8").split("\n")
      assert.strictEqual(lines.pop(), "")
      assert.strictEqual(lines.length, 4)
      assert.deepStrictEqual(JSON.parse(lines[0]!), header)
      assert.strictEqual(
        lines[1],
        "{\"seq\":1,\"ts\":1001,\"turn\":1,\"type\":\"turn_start\",\"data\":{\"content\":[{\"type\":\"text\",\"text\":\"a\u2028b\\nc\"}]}}"
      )
      assert.deepStrictEqual(lines.slice(2).map((l) => Object.keys(JSON.parse(l))), [
        ["seq", "ts", "turn", "type", "data"],
        ["seq", "ts", "turn", "type", "data"]
      ])
      assert.deepStrictEqual(lines.slice(1).map((l) => (JSON.parse(l) as { seq: number }).seq), [1, 2, 3])
    }))

  it.effect("never overwrites an existing log; the error names the file", () =>
    Effect.gen(function*() {
      const { home, log } = yield* withLog
      yield* Effect.scoped(log.create(header)).pipe(Effect.provide(TempDir.platform))
      writeFileSync(log.pathOf("s-1"), "precious\n", { flag: "a" })
      const error = yield* Effect.flip(Effect.scoped(log.create(header))).pipe(Effect.provide(TempDir.platform))
      assert.strictEqual(error._tag, "LogError")
      assert.include(error.message, join(home, "sessions", "s-1.ndjson"))
      assert.match(readFileSync(log.pathOf("s-1"), "utf8"), /precious\n$/)
    }))

  it("encodeEvent keeps only the logged fields and ends with a newline", () => {
    const line = encodeEvent(stamp(7, { type: "mode_changed", data: { mode: "plan" } }, null))
    assert.strictEqual(line, "{\"seq\":7,\"ts\":1007,\"turn\":null,\"type\":\"mode_changed\",\"data\":{\"mode\":\"plan\"}}\n")
  })
})

describe("History.apply", () => {
  it("folds every canonical event type", () => {
    const h = History.make()
    const events: Array<CanonicalBody> = [
      { type: "mode_changed", data: { mode: "plan" } },
      { type: "config_changed", data: { id: "model", value: "m1" } },
      { type: "turn_start", data: { content: [{ type: "text", text: "q" }] } },
      {
        type: "model_response",
        data: {
          call: 1,
          parts: [{ type: "text", text: "t" }, { type: "tool_call", id: "a", name: "read", args: {} }, { type: "tool_call", id: "b", name: "bash", args: {} }],
          stop: "tool_use"
        }
      },
      { type: "tool_call", data: { id: "a", name: "read", args: {}, title: "Read", kind: "read" } },
      { type: "permission", data: { toolCallId: "b", outcome: "allow_always", rule: { decision: "allow", kind: "command", value: "ls", label: "`ls`" } } },
      { type: "permission", data: { toolCallId: "b", outcome: "reject_once" } },
      { type: "tool_result", data: { id: "a", ok: true, content: "A" } },
      { type: "plan", data: { entries: [{ content: "x", status: "pending", priority: "low" }] } }
    ]
    for (const e of events) History.apply(h, e)
    assert.strictEqual(h.turns, 1)
    assert.strictEqual(h.mode, "plan")
    assert.deepStrictEqual([...h.config], [["model", "m1"]])
    assert.deepStrictEqual(h.rules, [{ decision: "allow", kind: "command", value: "ls", label: "`ls`" }])
    assert.deepStrictEqual([...h.openToolCalls], [["b", "bash"]])
    assert.deepStrictEqual(h.messages, [
      { role: "user", content: [{ type: "text", text: "q" }] },
      {
        role: "assistant",
        parts: [{ type: "text", text: "t" }, { type: "tool_call", id: "a", name: "read", args: {} }, { type: "tool_call", id: "b", name: "bash", args: {} }]
      },
      { role: "tool", id: "a", name: "read", ok: true, content: "A" }
    ])
    History.apply(h, { type: "turn_end", data: { stopReason: "cancelled" } })
    assert.strictEqual(h.openToolCalls.size, 0)
  })

  it("an empty model response adds no message; a result for an unknown call is labelled unknown", () => {
    const h = History.make()
    History.apply(h, { type: "model_response", data: { call: 1, parts: [], stop: "error", error: "x" } })
    assert.deepStrictEqual(h.messages, [])
    History.apply(h, { type: "tool_result", data: { id: "zz", ok: false, content: "?" } })
    assert.deepStrictEqual(h.messages, [{ role: "tool", id: "zz", name: "unknown", ok: false, content: "?" }])
  })
})

describe("Replay.transcript of a long session", () => {
  it("shows a command as typed, a compaction's summary (not its summary call), steering, a skill and an undo", () => {
    const events: Array<Canonical> = [
      stamp(1, { type: "turn_start", data: { content: [{ type: "text", text: "Say hello to Ann." }], command: { name: "hello", arguments: "Ann" } } }),
      stamp(2, { type: "skill_activation", data: { name: "greet", path: "/s/greet/SKILL.md", sha256: "ab", body: "Be kind." } }),
      stamp(3, { type: "turn_input", data: { content: [{ type: "text", text: "and Bob" }] } }),
      stamp(4, { type: "model_response", data: { call: 1, parts: [{ type: "text", text: "Hello Ann and Bob." }], stop: "end_turn" } }),
      stamp(5, { type: "turn_end", data: { stopReason: "end_turn" } }),
      stamp(6, { type: "turn_start", data: { content: [{ type: "text", text: "/compact" }], command: { name: "compact", arguments: "", local: true } } }, 2),
      stamp(7, { type: "model_response", data: { call: 1, parts: [{ type: "text", text: "THE SUMMARY" }], stop: "end_turn", compaction: "2.1" } }, 2),
      stamp(8, {
        type: "compaction",
        data: { id: "2.1", trigger: "manual", fromSeq: 1, toSeq: 3, keepFromSeq: 4, promptHash: "h", summaryForModel: "THE SUMMARY", summaryForUser: "THE SUMMARY", usageBefore: 900, usageAfter: 100 }
      }, 2),
      stamp(9, { type: "turn_end", data: { stopReason: "end_turn" } }, 2),
      stamp(10, { type: "turn_start", data: { content: [{ type: "text", text: "/undo" }], command: { name: "undo", arguments: "", local: true } } }, 3),
      stamp(11, { type: "undo", data: { turn: 1, restored: ["/w/a.txt"], removed: [] } }, 3),
      stamp(12, { type: "turn_end", data: { stopReason: "end_turn" } }, 3)
    ]
    const text = Replay.transcript(header, events)
    assert.include(text, "> /hello Ann\n  Say hello to Ann.")
    assert.include(text, "[skill greet loaded from /s/greet/SKILL.md]")
    assert.include(text, ">> and Bob")
    assert.include(text, "[compacted the conversation (manual; about 900 → 100 tokens):]\n    THE SUMMARY")
    assert.strictEqual(text.split("THE SUMMARY").length - 1, 1)
    assert.include(text, "> /compact\n")
    assert.notInclude(text, "  /compact")
    assert.include(text, "[undo of turn 1: restored /w/a.txt; removed nothing]")
  })
})
