/**
 * Checkpoints of streamed text (`model_partial`): logged as a call streams, at a bounded rate;
 * superseded by the call's `model_response` (replays show the text once, re-runs ignore them);
 * after a crash, the interrupted call's checkpointed text is its answer, for the user and for
 * the model.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Skein, type SkeinConfig } from "../../src/index.ts"
import { LOG_VERSION } from "../../src/log/Event.ts"
import { INTERRUPTED_TURN } from "../../src/log/Recovery.ts"
import * as Replay from "../../src/log/Replay.ts"
import * as AcpReplay from "../../src/translate/Replay.ts"
import type { ModelRequest } from "../../src/providers/Provider.ts"
import { CHECKPOINT_CHARS } from "../../src/runtime/Checkpoint.ts"
import * as Rerun from "../../src/runtime/Rerun.ts"
import { Runtime } from "../../src/runtime/Api.ts"
import { byPrompt, makeDirs, readLog, text } from "../support/Sessions.ts"
import * as TempDir from "../support/TempDir.ts"

const inRuntime = <A, E>(home: string, config: Omit<SkeinConfig, "home">, body: (runtime: Runtime["Service"]) => Effect.Effect<A, E, import("effect/Scope").Scope>) =>
  Effect.gen(function*() {
    return yield* body(yield* Runtime)
  }).pipe(Effect.scoped, Effect.provide(Skein.layer({ home, ...config })), Effect.provide(Logger.layer([])))

const line = (seq: number, turn: number, type: string, data: unknown) => JSON.stringify({ seq, ts: seq, turn, type, data }) + "\n"

/** A log as a crash left it: turn 1 done; turn 2 streamed thinking and text (two checkpoints) and was killed. */
const crashedLog = (id: string, cwd: string) =>
  JSON.stringify({ type: "session", v: LOG_VERSION, id, cwd, created: 1, mode: "default" }) + "\n" +
  line(1, 1, "turn_start", { content: [{ type: "text", text: "one" }] }) +
  line(2, 1, "model_response", { call: 1, parts: [{ type: "text", text: "First answer." }], stop: "end_turn" }) +
  line(3, 1, "turn_end", { stopReason: "end_turn" }) +
  line(4, 2, "turn_start", { content: [{ type: "text", text: "two" }] }) +
  line(5, 2, "model_partial", { call: 1, parts: [{ type: "thinking", text: "Let me " }] }) +
  line(6, 2, "model_partial", { call: 1, parts: [{ type: "thinking", text: "think." }, { type: "text", text: "The answer is" }] }) +
  line(7, 2, "model_partial", { call: 1, parts: [{ type: "text", text: " forty" }] })

describe("model_partial", () => {
  it.live("a fast stream logs a checkpoint per CHECKPOINT_CHARS, not per delta, and its model_response supersedes them", () =>
    Effect.gen(function*() {
      const { home, cwd } = yield* makeDirs
      const deltas = 100_000
      const id = yield* inRuntime(home, { script: { turns: [{ calls: [[{ text: "x", repeat: deltas }]] }] } }, (runtime) =>
        Effect.gen(function*() {
          const session = yield* runtime.newSession({ cwd })
          assert.deepStrictEqual(yield* session.prompt(text("go")), { stopReason: "end_turn" })
          return session.id
        }))
      const events = readLog(home, id).events
      const partials = events.filter((e) => e.type === "model_partial")
      // By size: one per CHECKPOINT_CHARS (a slow machine may add a few by time; never one per delta).
      assert.isAtLeast(partials.length, Math.floor(deltas / CHECKPOINT_CHARS))
      assert.isBelow(partials.length, 40)
      const checkpointed = partials.flatMap((e) => (e.data as { parts: Array<{ text: string }> }).parts.map((p) => p.text)).join("")
      assert.isTrue("x".repeat(deltas).startsWith(checkpointed))
      // What no checkpoint holds is less than one checkpoint's worth.
      assert.isBelow(deltas - checkpointed.length, CHECKPOINT_CHARS)
      assert.deepStrictEqual(events.map((e) => e.type).filter((t) => t !== "model_partial"), ["turn_start", "model_response", "turn_end"])
      // Every checkpoint comes before the call's model_response.
      assert.strictEqual(events.findLastIndex((e) => e.type === "model_partial"), events.findIndex((e) => e.type === "model_response") - 1)

      // A replay shows the text once: as the model_response, not the checkpoints too.
      const record = yield* inRuntime(home, {}, (runtime) => runtime.readSession(id))
      const chunks = AcpReplay.updates(record.events).filter((u) => u.sessionUpdate === "agent_message_chunk")
      assert.deepStrictEqual(chunks, [{ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "x".repeat(deltas) }, messageId: "m1.1" }])
      // (From the first turn on: the header names paths, which may hold an x.)
      const whole = Replay.transcript(record.header, record.events)
      const transcript = whole.slice(whole.indexOf("── turn 1"))
      assert.strictEqual(transcript.length - transcript.replaceAll("x", "").length, deltas)
    }))

  it.live("after a crash, the interrupted call's checkpointed text is its answer: shown once, and what the model sees", () =>
    Effect.gen(function*() {
      const { home, cwd } = yield* makeDirs
      mkdirSync(join(home, "sessions"), { recursive: true })
      writeFileSync(join(home, "sessions", "s1.ndjson"), crashedLog("s1", cwd))

      // What a read-only replay (skein replay, sessions show) shows equals what session/load shows.
      const before = yield* inRuntime(home, {}, (runtime) => runtime.readSession("s1"))
      const readOnly = AcpReplay.updates(Replay.withRecovery(before.events))
      // The transcript of a call still streaming (a live session's log) reads its checkpoints as one text.
      const live = Replay.transcript(before.header, before.events)
      assert.include(live, "> two\n  (thinking) Let me think.\nThe answer is forty\n")

      const requests: Array<ModelRequest> = []
      const loaded = yield* inRuntime(home, { provider: byPrompt({ three: [[{ text: "Go on." }]] }, (r) => requests.push(r)) }, (runtime) =>
        Effect.gen(function*() {
          const { session, events } = yield* runtime.loadSession({ sessionId: "s1", cwd })
          assert.deepStrictEqual(yield* session.prompt(text("three")), { stopReason: "end_turn" })
          return events
        }))
      const updates = AcpReplay.updates(loaded)
      assert.deepStrictEqual(updates, [
        { sessionUpdate: "session_info_update", title: "one" },
        { sessionUpdate: "user_message_chunk", content: { type: "text", text: "one" }, messageId: "u1" },
        { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "First answer." }, messageId: "m1.1" },
        { sessionUpdate: "user_message_chunk", content: { type: "text", text: "two" }, messageId: "u2" },
        { sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "Let me think." }, messageId: "m2.1" },
        { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "The answer is forty" }, messageId: "m2.2" },
        { sessionUpdate: "agent_message_chunk", content: { type: "text", text: INTERRUPTED_TURN }, messageId: "e9" }
      ])
      assert.deepStrictEqual(readOnly, updates)

      // The model's view of turn 2: the prompt, then its interrupted answer.
      const messages = requests[0]!.messages
      assert.deepStrictEqual(messages.slice(2), [
        { role: "user", content: [{ type: "text", text: "two" }] },
        { role: "assistant", parts: [{ type: "thinking", text: "Let me think." }, { type: "text", text: "The answer is forty" }] },
        { role: "user", content: [{ type: "text", text: "three" }] }
      ])
    }))

  it.live("a re-run ignores checkpoints: a log with them re-runs as the same, as the crash left it and once recovered", () =>
    Effect.gen(function*() {
      const { home, cwd } = yield* makeDirs
      mkdirSync(join(home, "sessions"), { recursive: true })
      writeFileSync(join(home, "sessions", "s1.ndjson"), crashedLog("s1", cwd))
      const rerun = (record: { readonly header: Rerun.Options["header"]; readonly events: Rerun.Options["events"] }) =>
        Effect.flatMap(TempDir.make(), (rerunHome) => Rerun.run({ header: record.header, events: record.events, home: rerunHome })).pipe(
          Effect.provide(TempDir.platform),
          Effect.provide(Logger.layer([]))
        )
      const crashed = yield* rerun(yield* inRuntime(home, {}, (runtime) => runtime.readSession("s1")))
      assert.deepStrictEqual(crashed.turns.map((t) => t.differences), [[], []])
      // Loaded once (recovered: the interrupted call's model_response is logged), then re-run.
      yield* inRuntime(home, {}, (runtime) => runtime.loadSession({ sessionId: "s1", cwd }))
      const recovered = yield* rerun(yield* inRuntime(home, {}, (runtime) => runtime.readSession("s1")))
      assert.isFalse(recovered.diverged, JSON.stringify(recovered.turns))
      assert.deepStrictEqual(recovered.turns.map((t) => t.differences), [[], []])
    }))
})
