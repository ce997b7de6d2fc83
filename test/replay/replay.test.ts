/**
 * Replay and re-run: the replay provider answers model calls from a log; `Rerun.run` drives a
 * logged session again with real tools and reports per turn where results differ; the golden
 * logs under test/fixtures/logs/golden go through `skein replay --rerun` like a user would.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Logger from "effect/Logger"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { spawnSync } from "node:child_process"
import { cpSync, existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Canonical } from "../../src/log/Event.ts"
import * as Reader from "../../src/log/Reader.ts"
import type { ModelRequest, StreamPart } from "../../src/providers/Provider.ts"
import * as ReplayProvider from "../../src/providers/Replay.ts"
import * as Rerun from "../../src/runtime/Rerun.ts"
import { Runtime } from "../../src/runtime/Api.ts"
import { read } from "../../src/tools/read.ts"
import * as Tool from "../../src/tools/Tool.ts"
import * as Toolkit from "../../src/tools/Toolkit.ts"
import { NODE, REPO_ROOT, SKEIN } from "../support/AgentProcess.ts"
import { byPrompt, makeDirs, piecesLayer, readLog, record, submit, text } from "../support/Sessions.ts"
import * as TempDir from "../support/TempDir.ts"

const GOLDEN = join(REPO_ROOT, "test/fixtures/logs/golden")

const readGolden = (name: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    return yield* Reader.read(fs, join(GOLDEN, `${name}.ndjson`))
  }).pipe(Effect.provide(TempDir.platform))

/** A private copy of the golden workspace (tools run for real in it). */
const workspaceCopy = Effect.map(TempDir.make("skein-golden-ws-"), (dir) => {
  cpSync(join(GOLDEN, "workspace"), dir, { recursive: true })
  return dir
})

const request = (turn: number, call: number): ModelRequest => ({ sessionId: "s", turn, call, system: "", messages: [], tools: [] })
const collect = (stream: Stream.Stream<StreamPart>) => Effect.map(Stream.runCollect(stream), (chunk) => [...chunk])

describe("Replay provider", () => {
  it.effect("answers call M of turn N with exactly the logged parts, usage and stop", () =>
    Effect.gen(function*() {
      const { events } = yield* readGolden("match")
      const provider = ReplayProvider.make(events)
      assert.strictEqual(provider.name, "replay")
      assert.deepStrictEqual(yield* collect(provider.stream(request(1, 1))), [
        { _tag: "ThinkingDelta", text: "I should read the notes." },
        { _tag: "TextDelta", text: "Reading the notes." },
        { _tag: "ToolCall", id: "call_1_1_1", name: "read", args: { path: "notes.txt" } },
        { _tag: "Finish", stop: "tool_use" }
      ])
      assert.deepStrictEqual(yield* collect(provider.stream(request(1, 2))), [
        { _tag: "TextDelta", text: "The notes say hello." },
        { _tag: "Usage", usage: { input: 900, output: 30 } },
        { _tag: "Finish", stop: "end_turn" }
      ])
      assert.deepStrictEqual(yield* collect(provider.stream(request(2, 1))), [
        { _tag: "ToolCall", id: "call_2_1_1", name: "read", args: { path: "docs/guide.md" } },
        { _tag: "ToolCall", id: "call_2_1_2", name: "read", args: { path: "missing.txt" } },
        { _tag: "Finish", stop: "tool_use" }
      ])
      const [missingCall] = yield* collect(provider.stream(request(2, 3)))
      assert.deepStrictEqual(missingCall, { _tag: "Failure", message: "The log's turn 2 has no model call 3", retryable: false })
      const [missingTurn] = yield* collect(provider.stream(request(9, 1)))
      assert.deepStrictEqual(missingTurn, { _tag: "Failure", message: "The log has no turn 9 (it has 4)", retryable: false })
    }))

  it.live("a logged failure streams as the same failure; a cancelled call is a cancel point", () =>
    Effect.gen(function*() {
      const stamp = (seq: number, turn: number, body: Omit<Canonical, "sessionId" | "seq" | "ts" | "turn">) =>
        ({ ...body, sessionId: "s", seq, ts: seq, turn }) as Canonical
      const events = [
        stamp(1, 1, { type: "turn_start", data: { content: text("a") } }),
        stamp(2, 1, { type: "model_response", data: { call: 1, parts: [{ type: "text", text: "partial" }], stop: "error", error: "HTTP 500" } }),
        stamp(3, 1, { type: "turn_end", data: { stopReason: "end_turn", error: "The model call failed: HTTP 500" } }),
        stamp(4, 2, { type: "turn_start", data: { content: text("b") } }),
        stamp(5, 2, { type: "model_response", data: { call: 1, parts: [{ type: "thinking", text: "hm", signature: "sig" }], stop: "cancelled" } }),
        stamp(6, 2, { type: "turn_end", data: { stopReason: "cancelled" } })
      ]
      const cancelled: Array<number> = []
      const provider = ReplayProvider.make(events, { onCancelPoint: (turn) => Effect.sync(() => void cancelled.push(turn)) })
      assert.deepStrictEqual(yield* collect(provider.stream(request(1, 1))), [
        { _tag: "TextDelta", text: "partial" },
        { _tag: "Failure", message: "HTTP 500", retryable: false }
      ])
      const parts = yield* collect(Stream.take(provider.stream(request(2, 1)), 1))
      assert.deepStrictEqual(parts, [{ _tag: "ThinkingDelta", text: "hm", signature: "sig" }])
      const waited = yield* Stream.runCollect(provider.stream(request(2, 1))).pipe(Effect.timeoutOption("50 millis"))
      assert.strictEqual(waited._tag, "None", "a cancel point waits to be interrupted")
      assert.deepStrictEqual(cancelled, [2])
    }))
})

describe("Rerun.run", () => {
  it.effect("the golden log re-run in its workspace matches, turn by turn, and writes its own log", () =>
    Effect.gen(function*() {
      const { header, events } = yield* readGolden("match")
      const cwd = yield* workspaceCopy
      const home = yield* TempDir.make()
      const report = yield* Rerun.run({ header, events, cwd, home }).pipe(Effect.provide(TempDir.platform))
      assert.isFalse(report.diverged, JSON.stringify(report, null, 2))
      assert.deepStrictEqual(report.turns.map((t) => [t.turn, t.compared, t.differences.length]), [[1, 1, 0], [2, 2, 0], [3, 5, 0], [4, 0, 0]])
      assert.strictEqual(report.sessionId, "golden-match")
      assert.isTrue(existsSync(report.rerunLog))
      // The same conversation, event for event (paths under the workspace aside, and the wording
      // of the refusal: the log had no one to ask, the re-run's question was answered "no").
      const rerun = readLog(home, report.rerunSessionId)
      const refused = (e: { type: string; data: unknown }) =>
        (e.type === "permission" || e.type === "tool_result") && JSON.stringify(e.data).includes("call_3_2_3")
      // Results now repeat their call's title; the golden log is older than that.
      const untitled = (e: { type: string; data: unknown }) => {
        if (e.type !== "tool_result") return e.data
        const { title: _title, ...data } = e.data as { title?: string }
        return data
      }
      const shape = (es: ReadonlyArray<{ type: string; turn: number | null; data: unknown }>) =>
        es.map((e) => refused(e) ? e.type : JSON.stringify([e.type, e.turn, untitled(e)]).split(cwd).join("/golden/workspace"))
      // The re-run snapshots its workspace before its turns' changes (its own `checkpoint` events,
      // of commits that differ run to run); the golden log is older than checkpoints.
      assert.deepStrictEqual(shape(rerun.events.filter((e) => e.type !== "checkpoint")), shape(events))
      assert.deepStrictEqual(rerun.events.filter((e) => e.type === "checkpoint").map((e) => [e.turn, (e.data as { at: string }).at]), [[3, "before"], [3, "after"]])
      // The edits ran for real; the refused `rm` did not.
      assert.strictEqual(readFileSync(join(cwd, "summary.txt"), "utf8"), "The notes say hello twice.\n")
    }))

  it.effect("the golden log re-run against a changed workspace reports where the results differ", () =>
    Effect.gen(function*() {
      const { header, events } = yield* readGolden("diverge")
      const cwd = yield* workspaceCopy
      const home = yield* TempDir.make()
      const report = yield* Rerun.run({ header, events, cwd, home }).pipe(Effect.provide(TempDir.platform))
      assert.isTrue(report.diverged)
      assert.deepStrictEqual(report.turns[0]!.differences, [{
        kind: "changed",
        toolCallId: "call_1_1_1",
        tool: "Read notes.txt",
        field: "content",
        recorded: "line 1: 1\tOld notes",
        rerun: "line 1: 1\tHello notes"
      }])
      assert.deepStrictEqual(report.turns.slice(1).map((t) => t.differences), [[], [], []])
    }))

  const NoArgs = Schema.Struct({})
  const slow = Tool.define<{}>({
    name: "slow",
    description: "slow (test tool)",
    kind: "other",
    mutating: false,
    parameters: NoArgs,
    title: () => "Run slow",
    locations: () => [],
    execute: () => Effect.as(Effect.sleep("30 seconds"), Tool.ok("slow done"))
  })
  const Mark = Schema.Struct({ name: Schema.String })
  /** A mutating tool (it asks in `default` mode) that leaves a file behind when it runs. */
  const mark = Tool.define<typeof Mark.Type>({
    name: "mark",
    description: "mark (test tool)",
    kind: "other",
    mutating: true,
    parameters: Mark,
    title: (args) => `Mark ${args.name}`,
    locations: () => [],
    execute: (args, ctx) => Effect.sync(() => {
      writeFileSync(join(ctx.cwd, `marked-${args.name}`), "x")
      return Tool.ok(`marked ${args.name}`)
    })
  })
  const toolkit = Toolkit.make([read, slow, mark])

  it.live("cancels and permission answers are re-played at the same points; refused calls never run", () =>
    Effect.gen(function*() {
      const { home, cwd } = yield* makeDirs
      const provider = byPrompt({
        "stream then cancel": [[{ text: "Thinking about it" }, { sleep_ms: 30_000 }]],
        "tool then cancel": [[{ text: "Running." }, { tool: "slow", id: "s1" }]],
        "ask twice": [[{ tool: "mark", id: "m1", args: { name: "one" } }, { tool: "mark", id: "m2", args: { name: "two" } }], [{ text: "ok" }]],
        "read it": [[{ tool: "read", id: "r1", args: { path: "notes.txt" } }], [{ text: "done" }]]
      })
      const answers: Record<string, string> = { m1: "allow_once", m2: "reject_once" }
      const id = yield* Effect.gen(function*() {
        const runtime = yield* Runtime
        const session = yield* runtime.newSession({ cwd })
        const rec = yield* record(session)
        const t1 = yield* submit(session, text("stream then cancel"))
        yield* rec.until((e) => e.type === "text_delta")
        yield* session.cancel
        yield* Deferred.await(t1.outcome)
        const t2 = yield* submit(session, text("tool then cancel"))
        yield* rec.until((e) => e.type === "tool_running")
        yield* session.cancel
        yield* rec.until((e) => e.type === "turn_end" && e.turn === t2.turn)
        // Presented here: its two questions are answered from the table.
        yield* session.turn(text("ask twice")).pipe(
          Stream.runForEach((e) =>
            e.type === "permission_asked"
              ? session.answer(e.data.requestId, { outcome: "selected", optionId: answers[e.data.toolCall.toolCallId]! })
              : Effect.void
          )
        )
        yield* session.prompt(text("read it"))
        return session.id
      }).pipe(Effect.scoped, Effect.provide(piecesLayer({ home, provider, toolkit })))
      const recorded = readLog(home, id)
      assert.deepStrictEqual(recorded.events.filter((e) => e.type === "turn_end").map((e) => (e.data as { stopReason: string }).stopReason), [
        "cancelled",
        "cancelled",
        "end_turn",
        "end_turn"
      ])

      const fresh = yield* TempDir.make()
      cpSync(cwd, fresh, { recursive: true })
      rmSync(join(fresh, "marked-one"), { force: true })
      const contents = yield* Effect.gen(function*() {
        const fs = yield* FileSystem.FileSystem
        return yield* Reader.read(fs, join(home, "sessions", `${id}.ndjson`))
      }).pipe(Effect.provide(TempDir.platform))
      const report = yield* Rerun.run({ header: contents.header, events: contents.events, cwd: fresh, home: yield* TempDir.make(), toolkit }).pipe(
        Effect.provide(TempDir.platform),
        Effect.provide(Logger.layer([])),
        Effect.timeout("10 seconds")
      )
      assert.isFalse(report.diverged, JSON.stringify(report.turns, null, 2))
      assert.isTrue(existsSync(join(fresh, "marked-one")), "the allowed call ran again")
      assert.isFalse(existsSync(join(fresh, "marked-two")), "the refused call did not run")
      assert.deepStrictEqual(report.turns.map((t) => t.compared), [0, 1, 2, 1])
    }))
})

describe("skein replay (CLI)", () => {
  const skein = (args: ReadonlyArray<string>) =>
    spawnSync(NODE, [SKEIN, ...args], { encoding: "utf8", timeout: 20_000, env: { ...process.env, SKEIN_HOME: "/nonexistent-skein-home" } })
  const temp = () => realpathSync(mkdtempSync(join(tmpdir(), "skein-replay-cli-")))

  it("--rerun of the golden log in its workspace exits 0 and says every turn is the same", () => {
    const cwd = temp()
    try {
      cpSync(join(GOLDEN, "workspace"), cwd, { recursive: true })
      // Recorded without the sandbox (its commands were asked for): re-run the same way.
      const result = skein(["replay", join(GOLDEN, "match.ndjson"), "--rerun", "--cwd", cwd, "--sandbox", "off"])
      assert.strictEqual(result.status, 0, result.stderr + result.stdout)
      assert.include(result.stdout, `Re-ran session golden-match in ${cwd}`)
      assert.include(result.stdout, `turn 1  "What do the notes say?"  ✓ same (1 tool result)`)
      assert.include(result.stdout, `turn 3  "Write a summary."  ✓ same (5 tool results)`)
      assert.include(result.stdout, "All 4 turns behave as logged.")
    } finally {
      rmSync(cwd, { recursive: true, force: true })
    }
  })

  it("--rerun of the diverging golden log exits 1 and names the turn, the call and the difference", () => {
    const cwd = temp()
    try {
      cpSync(join(GOLDEN, "workspace"), cwd, { recursive: true })
      const result = skein(["replay", join(GOLDEN, "diverge.ndjson"), "--rerun", "--cwd", cwd, "--sandbox", "off"])
      assert.strictEqual(result.status, 1, result.stderr + result.stdout)
      assert.include(result.stdout, `turn 1  "What do the notes say?"  ✗ differs`)
      assert.include(result.stdout, "Read notes.txt (call_1_1_1): content differs")
      assert.include(result.stdout, "logged  line 1: 1\tOld notes")
      assert.include(result.stdout, "now     line 1: 1\tHello notes")
      assert.include(result.stdout, "1 of 4 turns differ from the log.")
      const json = skein(["replay", join(GOLDEN, "diverge.ndjson"), "--rerun", "--cwd", cwd, "--json", "--sandbox", "off"])
      assert.strictEqual(json.status, 1)
      assert.isTrue(JSON.parse(json.stdout).diverged)
    } finally {
      rmSync(cwd, { recursive: true, force: true })
    }
  })

  it("prints the transcript by default and the session/update lines with --acp; bad usage exits 2", () => {
    const transcript = skein(["replay", join(GOLDEN, "match.ndjson")])
    assert.strictEqual(transcript.status, 0, transcript.stderr)
    assert.include(transcript.stdout, "Session golden-match")
    assert.include(transcript.stdout, "> What do the notes say?")
    assert.include(transcript.stdout, "→ Read notes.txt")
    assert.include(transcript.stdout, "  ✗ Read missing.txt\n    File not found: missing.txt")
    const acp = skein(["replay", join(GOLDEN, "match.ndjson"), "--acp"])
    assert.strictEqual(acp.status, 0, acp.stderr)
    const lines = acp.stdout.trimEnd().split("\n").map((l) => JSON.parse(l))
    assert.isTrue(lines.every((l) => l.jsonrpc === "2.0" && l.method === "session/update" && l.params.sessionId === "golden-match"))
    // The session's title first, as a load shows it; then the first prompt.
    assert.deepStrictEqual(lines[0].params.update, { sessionUpdate: "session_info_update", title: "What do the notes say?" })
    assert.deepStrictEqual(lines[1].params.update, { sessionUpdate: "user_message_chunk", content: { type: "text", text: "What do the notes say?" }, messageId: "u1" })
    assert.strictEqual(skein(["replay"]).status, 2)
    assert.strictEqual(skein(["replay", "x", "--acp", "--rerun"]).status, 2)
    const missing = skein(["replay", "no-such-session"])
    assert.strictEqual(missing.status, 2)
    assert.include(missing.stderr, "skein: No session no-such-session")
  })
})
