/**
 * Session actors and the turn loop, driven through the Runtime (no stdio; sessions kept in
 * memory): event order, the log, history folding, the mailbox (queueing, cancel, close), failures and defects.
 *
 * Time is the TestClock's: a scripted pause or a slow tool lasts until the test moves the clock.
 * That a cancel (or a close) is prompt is shown by the turn ending while the clock stands still:
 * its 30 s never pass, so only the cancel can end it (if it did not, the test would time out).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Logger from "effect/Logger"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { VERSION } from "../../src/index.ts"
import { type CanonicalBody, LOG_VERSION, type SessionEvent } from "../../src/log/Event.ts"
import * as History from "../../src/log/History.ts"
import * as MemoryStore from "../../src/log/MemoryStore.ts"
import type { ModelRequest } from "../../src/providers/Provider.ts"
import type * as Scripted from "../../src/providers/Scripted.ts"
import { Runtime } from "../../src/runtime/Api.ts"
import { read } from "../../src/tools/read.ts"
import * as Tool from "../../src/tools/Tool.ts"
import * as Toolkit from "../../src/tools/Toolkit.ts"
import * as Translate from "../../src/translate/Translate.ts"
import { byPrompt, historyOf, logged, makeDirs, piecesLayer, readStored, record, submit, text, typeData, types, withPieces, withSkein } from "../support/Sessions.ts"
import { advance, settle } from "../support/Time.ts"

const readTurn: Scripted.Script["turns"][number] = {
  calls: [
    [{ text: "Reading it." }, { tool: "read", args: { path: "notes.txt" } }],
    [{ think: "short" }, { text: "Done." }, { usage: { input: 1200, output: 40 } }]
  ]
}

/** Whether a prompt's outcome is known. */
const resolved = <A>(ticket: { readonly outcome: Deferred.Deferred<A> }) => Deferred.isDone(ticket.outcome)

const canonicalOf = (events: ReadonlyArray<SessionEvent>) =>
  events.filter((e) => !["text_delta", "thinking_delta", "tool_running", "tool_progress"].includes(e.type))

// Test tools --------------------------------------------------------------------------------

const NoArgs = Schema.Struct({})
const tool = (name: string, overrides: Partial<Tool.Tool<{}>>): Tool.Tool<{}> =>
  Tool.define<{}>({
    name,
    description: `${name} (test tool)`,
    kind: "other",
    mutating: false,
    parameters: NoArgs,
    title: () => `Run ${name}`,
    locations: () => [],
    execute: () => Effect.succeed(Tool.ok(`${name} done`)),
    ...overrides
  })

const boom = tool("boom", { execute: () => Effect.die(new Error("kaboom")) })
const badTitle = tool("bad_title", {
  title: () => {
    throw new Error("title exploded")
  }
})
const slow = tool("slow", { execute: () => Effect.as(Effect.sleep("30 seconds"), Tool.ok("slow done")) })
const testToolkit = Toolkit.make([read, boom, badTitle, slow])

/** Collects log lines instead of printing them. */
const captureLogs = () => {
  const lines: Array<string> = []
  const logger = Logger.make<unknown, void>(({ message }) => {
    lines.push((Array.isArray(message) ? message : [message]).map(String).join(" "))
  })
  return { lines, layer: Logger.layer([logger]) }
}

describe("Session: a turn with a tool", () => {
  it.effect("streams the exact event sequence, logs only canonical events, and folds the history", () =>
    withSkein({ script: { turns: [readTurn] } }, ({ runtime, cwd, readLog }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        const rec = yield* record(session)
        const outcome = yield* session.prompt(text("Summarise notes.txt"))
        assert.deepStrictEqual(outcome, { stopReason: "end_turn" })
        const events = yield* rec.drain

        assert.deepStrictEqual(types(events), [
          "turn_start",
          "text_delta",
          "model_response",
          "tool_call",
          "tool_running",
          "tool_result",
          "thinking_delta",
          "text_delta",
          "model_response",
          "turn_end"
        ])
        for (const e of events) {
          assert.strictEqual(e.sessionId, session.id)
          assert.strictEqual(e.turn, 1)
        }
        // Canonical events are numbered 1, 2, 3…; an ephemeral one carries the last canonical number.
        assert.deepStrictEqual(events.map((e) => e.seq), [1, 1, 2, 3, 3, 4, 4, 4, 5, 6])

        const [start, , response1, call, , result, , , response2, end] = events as ReadonlyArray<SessionEvent & CanonicalBody>
        assert.deepStrictEqual(start!.data, { content: text("Summarise notes.txt") })
        assert.deepStrictEqual(response1!.data, {
          call: 1,
          parts: [{ type: "text", text: "Reading it." }, { type: "tool_call", id: "call_1_1_1", name: "read", args: { path: "notes.txt" } }],
          stop: "tool_use"
        })
        assert.deepStrictEqual(call!.data, {
          id: "call_1_1_1",
          name: "read",
          args: { path: "notes.txt" },
          title: "Read notes.txt",
          kind: "read",
          locations: [{ path: `${cwd}/notes.txt` }]
        })
        assert.deepStrictEqual(result!.data, { id: "call_1_1_1", title: "Read notes.txt", ok: true, content: "1\tHello notes" })
        assert.deepStrictEqual(response2!.data, {
          call: 2,
          parts: [{ type: "thinking", text: "short" }, { type: "text", text: "Done." }],
          stop: "end_turn",
          usage: { input: 1200, output: 40 }
        })
        assert.deepStrictEqual(end!.data, { stopReason: "end_turn" })

        // The log: the header, then exactly the canonical events, in order.
        const log = (yield* readLog(session.id))
        assert.deepStrictEqual(log.header, {
          type: "session",
          v: LOG_VERSION,
          id: session.id,
          cwd,
          created: session.created,
          mode: "default",
          skein: VERSION
        })
        assert.deepStrictEqual(log.events, canonicalOf(events).map(logged))
        const seqs = log.events.map((e) => e.seq)
        assert.deepStrictEqual(seqs, [1, 2, 3, 4, 5, 6])
        assert.isFalse(log.events.some((e) => ["text_delta", "thinking_delta", "tool_running", "tool_progress"].includes(e.type)))

        // Folding the log gives the history the session holds: user, assistant, tool, assistant.
        const folded = History.make()
        for (const e of log.events) History.apply(folded, { type: e.type, data: e.data } as unknown as CanonicalBody)
        assert.deepStrictEqual(folded.messages, [
          { role: "user", content: text("Summarise notes.txt") },
          {
            role: "assistant",
            parts: [{ type: "text", text: "Reading it." }, { type: "tool_call", id: "call_1_1_1", name: "read", args: { path: "notes.txt" } }]
          },
          { role: "tool", id: "call_1_1_1", name: "read", ok: true, content: "1\tHello notes" },
          { role: "assistant", parts: [{ type: "thinking", text: "short" }, { type: "text", text: "Done." }] }
        ])
        assert.deepStrictEqual(historyOf(session).messages, folded.messages)
        assert.strictEqual(folded.turns, 1)
        assert.strictEqual(folded.openToolCalls.size, 0)
      })))

  it.effect("every live update of the turn is valid ACP and no final text is re-sent", () =>
    withSkein({ script: { turns: [readTurn] } }, ({ runtime, cwd }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        const rec = yield* record(session)
        yield* session.prompt(text("go"))
        const updates = (yield* rec.drain).flatMap((e) => Translate.live(e))
        const messageText = updates
          .flatMap((u) => u.sessionUpdate === "agent_message_chunk" && u.content.type === "text" ? [u.content.text] : [])
          .join("")
        assert.strictEqual(messageText, "Reading it.Done.")
        assert.deepStrictEqual(updates.map((u) => u.sessionUpdate), [
          "agent_message_chunk",
          "tool_call",
          "tool_call_update",
          "tool_call_update",
          "agent_thought_chunk",
          "agent_message_chunk"
        ])
      })))

  it.effect("a session's subscription sees only its own events", () =>
    withSkein({ script: { turns: [{ calls: [[{ text: "hi" }]] }] } }, ({ runtime, cwd }) =>
      Effect.gen(function*() {
        const a = yield* runtime.newSession({ cwd })
        const b = yield* runtime.newSession({ cwd })
        const recA = yield* record(a)
        const recB = yield* record(b)
        yield* b.prompt(text("to b"))
        assert.deepStrictEqual(yield* recA.drain, [])
        assert.deepStrictEqual(types(yield* recB.drain), ["turn_start", "text_delta", "model_response", "turn_end"])
        // Each session starts at the script's first turn.
        assert.deepStrictEqual(yield* a.prompt(text("to a")), { stopReason: "end_turn" })
      })))
})

describe("Session: the mailbox", () => {
  it.effect("a prompt sent while a turn runs waits its turn", () =>
    withSkein({
      script: { turns: [{ calls: [[{ text: "first" }, { sleep_ms: 100 }, { text: "!" }]] }, { calls: [[{ text: "second" }]] }] }
    }, ({ runtime, cwd }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        const rec = yield* record(session)
        const t1 = yield* submit(session, text("one"))
        const t2 = yield* submit(session, text("two"))
        assert.strictEqual(t1.turn, 1)
        assert.strictEqual(t2.turn, 2)
        // The first turn is in its pause, the second waits; the pause is the only time either needs.
        yield* rec.until((e) => e.type === "text_delta")
        assert.isTrue(yield* advance(resolved(t1), { stepMs: 50, maxMs: 1_000 }), "the first turn never ended")
        assert.deepStrictEqual(yield* Deferred.await(t2.outcome), { stopReason: "end_turn" })
        assert.deepStrictEqual(yield* Deferred.await(t1.outcome), { stopReason: "end_turn" })
        const events = yield* rec.drain
        const end1 = events.findIndex((e) => e.type === "turn_end" && e.turn === 1)
        const start2 = events.findIndex((e) => e.type === "turn_start" && e.turn === 2)
        assert.isTrue(end1 >= 0 && start2 > end1, `turn 2 started at ${start2}, turn 1 ended at ${end1}`)
        assert.isTrue(events.slice(0, end1 + 1).every((e) => e.turn === 1))
        assert.isTrue(events.slice(start2).every((e) => e.turn === 2))
        assert.isTrue(events[start2]!.seq > events[end1]!.seq)
        // The second turn's model call saw the first exchange.
        assert.deepStrictEqual(historyOf(session).messages.map((m) => m.role), ["user", "assistant", "user", "assistant"])
      })))

  it.effect("cancel interrupts a sleeping turn promptly; the partial text is logged as cancelled", () =>
    withSkein({ script: { turns: [{ calls: [[{ text: "partial " }, { sleep_ms: 30_000 }, { text: "never" }]] }] } }, ({ runtime, cwd, readLog }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        const rec = yield* record(session)
        const ticket = yield* submit(session, text("go"))
        yield* rec.until((e) => e.type === "text_delta")
        yield* session.cancel
        assert.deepStrictEqual(yield* Deferred.await(ticket.outcome), { stopReason: "cancelled" })
        const events = yield* rec.drain
        assert.deepStrictEqual(types(events), ["turn_start", "text_delta", "model_response", "turn_end"])
        assert.deepStrictEqual(events[2]!.data, { call: 1, parts: [{ type: "text", text: "partial " }], stop: "cancelled" })
        assert.deepStrictEqual(events[3]!.data, { stopReason: "cancelled" })
        assert.deepStrictEqual((yield* readLog(session.id)).events, canonicalOf(events).map(logged))
      })))

  it.effect("cancel also cancels the prompts queued behind the running turn; the next prompt runs", () =>
    withSkein({
      script: {
        turns: [
          { calls: [[{ sleep_ms: 30_000 }]] },
          { calls: [[{ text: "2" }]] },
          { calls: [[{ text: "3" }]] },
          { calls: [[{ text: "after" }]] }
        ]
      }
    }, ({ runtime, cwd }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        const rec = yield* record(session)
        const tickets = [yield* submit(session, text("1")), yield* submit(session, text("2")), yield* submit(session, text("3"))]
        yield* rec.until((e) => e.type === "turn_start")
        yield* session.cancel
        const outcomes = yield* Effect.forEach(tickets, (t) => Deferred.await(t.outcome))
        assert.deepStrictEqual(outcomes, [{ stopReason: "cancelled" }, { stopReason: "cancelled" }, { stopReason: "cancelled" }])
        const cancelled = yield* rec.drain
        // Queued turns never reach the model.
        assert.isFalse(cancelled.some((e) => e.type === "text_delta"))
        assert.deepStrictEqual(
          cancelled.filter((e) => e.type === "turn_end").map((e) => [e.turn, e.data]),
          [[1, { stopReason: "cancelled" }], [2, { stopReason: "cancelled" }], [3, { stopReason: "cancelled" }]]
        )
        // A prompt after the cancel is not affected by it.
        assert.deepStrictEqual(yield* session.prompt(text("4")), { stopReason: "end_turn" })
        const last = (yield* rec.drain).filter((e) => e.turn === 4)
        assert.deepStrictEqual(types(last), ["turn_start", "text_delta", "model_response", "turn_end"])
      })))

  it.effect("cancel mid-stream finalizes open tool calls with failed results before turn_end", () =>
    withSkein({
      script: { turns: [{ calls: [[{ text: "Let me look." }, { tool: "read", args: { path: "notes.txt" }, id: "t1" }, { sleep_ms: 30_000 }]] }] }
    }, ({ runtime, cwd, readLog }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        const rec = yield* record(session)
        const ticket = yield* submit(session, text("go"))
        yield* rec.until((e) => e.type === "text_delta")
        yield* session.cancel
        assert.deepStrictEqual(yield* Deferred.await(ticket.outcome), { stopReason: "cancelled" })
        const canonical = canonicalOf(yield* rec.drain)
        assert.deepStrictEqual(typeData(canonical), [
          ["turn_start", { content: text("go") }],
          ["model_response", {
            call: 1,
            parts: [{ type: "text", text: "Let me look." }, { type: "tool_call", id: "t1", name: "read", args: { path: "notes.txt" } }],
            stop: "cancelled"
          }],
          // Never started: announced as it is finalized, so clients see a call for every result.
          ["tool_call", { id: "t1", name: "read", args: { path: "notes.txt" }, title: "read", kind: "other" }],
          ["tool_result", { id: "t1", title: "read", ok: false, content: "Cancelled by the user" }],
          ["turn_end", { stopReason: "cancelled" }]
        ])
        assert.deepStrictEqual((yield* readLog(session.id)).events, canonical.map(logged))
        assert.strictEqual(historyOf(session).openToolCalls.size, 0)
      })))

  // A tool call cut off before it ran is finalized for the model's history and announced first,
  // so a client (which looks calls up by id) is never sent an update for a call it never saw.
  it.effect("after a cancel, every tool_call_update a client is sent refers to an announced tool_call", () =>
    withSkein({
      script: { turns: [{ calls: [[{ text: "x" }, { tool: "read", args: { path: "notes.txt" }, id: "t1" }, { sleep_ms: 30_000 }]] }] }
    }, ({ runtime, cwd }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        const rec = yield* record(session)
        const ticket = yield* submit(session, text("go"))
        yield* rec.until((e) => e.type === "text_delta")
        // The tool call came in the same chunk as the text: let the turn take it in (it then
        // pauses until the clock moves).
        yield* settle(Effect.succeed(false), 100)
        yield* session.cancel
        yield* Deferred.await(ticket.outcome)
        const announced = new Set<string>()
        const updated = new Set<string>()
        for (const update of (yield* rec.drain).flatMap((e) => Translate.live(e))) {
          if (update.sessionUpdate === "tool_call") announced.add(update.toolCallId)
          if (update.sessionUpdate === "tool_call_update") {
            assert.isTrue(announced.has(update.toolCallId), `unannounced ${update.toolCallId}`)
            updated.add(update.toolCallId)
          }
        }
        // The case at hand happened: the cut-off call was finalized.
        assert.deepStrictEqual([...updated], ["t1"])
      })))

  it.effect("cancel while a tool runs interrupts it and fails its call", () =>
    withPieces({ provider: byPrompt({ go: [[{ tool: "slow", id: "s1" }], [{ text: "never" }]] }), toolkit: testToolkit }, ({ runtime, cwd }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        const rec = yield* record(session)
        const ticket = yield* submit(session, text("go"))
        yield* rec.until((e) => e.type === "tool_running")
        yield* session.cancel
        assert.deepStrictEqual(yield* Deferred.await(ticket.outcome), { stopReason: "cancelled" })
        const events = yield* rec.drain
        assert.deepStrictEqual(types(events), ["turn_start", "model_response", "tool_call", "tool_running", "tool_result", "turn_end"])
        assert.deepStrictEqual(events[4]!.data, { id: "s1", title: "Run slow", ok: false, content: "Cancelled by the user" })
      })))

  it.effect("closing a session resolves its running and queued prompts as cancelled and leaves a complete log", () =>
    withSkein({ script: { turns: [{ calls: [[{ text: "a" }, { sleep_ms: 30_000 }]] }, { calls: [[{ text: "b" }]] }] } }, ({ runtime, cwd, readLog }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        const rec = yield* record(session)
        const t1 = yield* submit(session, text("one"))
        const t2 = yield* submit(session, text("two"))
        yield* rec.until((e) => e.type === "text_delta")
        yield* runtime.closeSession(session.id)
        assert.deepStrictEqual(yield* Deferred.await(t1.outcome), { stopReason: "cancelled" })
        assert.deepStrictEqual(yield* Deferred.await(t2.outcome), { stopReason: "cancelled" })

        const log = (yield* readLog(session.id))
        assert.deepStrictEqual(log.events.map((e) => [e.type, e.turn]), [
          ["turn_start", 1],
          ["model_response", 1],
          ["turn_end", 1]
        ])
        assert.deepStrictEqual(log.events[2]!.data, { stopReason: "cancelled" })

        const error = yield* Effect.flip(session.send({ _tag: "Prompt", content: text("three") }))
        assert.strictEqual(error.reason, "closed")
        const missing = yield* Effect.flip(runtime.getSession(session.id))
        assert.strictEqual(missing.reason, "not_found")
        assert.deepStrictEqual(yield* runtime.liveSessions, [])
      })))

  it.effect("shutting the runtime down ends a running turn as cancelled and logs its end", () =>
    Effect.gen(function*() {
      const { home, cwd } = yield* makeDirs
      const sessions = new MemoryStore.Sessions()
      const provider = byPrompt({ go: [[{ text: "a" }, { sleep_ms: 30_000 }]] })
      const { ticket, id } = yield* Effect.gen(function*() {
        const runtime = yield* Runtime
        const session = yield* runtime.newSession({ cwd })
        const rec = yield* record(session)
        const ticket = yield* submit(session, text("go"))
        yield* rec.until((e) => e.type === "text_delta")
        return { ticket, id: session.id }
      }).pipe(Effect.scoped, Effect.provide(piecesLayer({ home, provider, toolkit: testToolkit, sessions })))
      assert.deepStrictEqual(yield* Deferred.await(ticket.outcome), { stopReason: "cancelled" })
      assert.deepStrictEqual(readStored(sessions, id).events.map((e) => e.type), ["turn_start", "model_response", "turn_end"])
    }))
})

describe("Session: failures", () => {
  it.effect("a provider failure ends the turn with end_turn and the error text", () =>
    withSkein({ script: { turns: [{ calls: [[{ text: "Hm" }, { fail: "rate limited" }]] }] } }, ({ runtime, cwd }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        const rec = yield* record(session)
        const outcome = yield* session.prompt(text("go"))
        assert.deepStrictEqual(outcome, { stopReason: "end_turn", error: "The model call failed: rate limited" })
        const events = canonicalOf(yield* rec.drain)
        assert.deepStrictEqual(typeData(events), [
          ["turn_start", { content: text("go") }],
          ["model_response", { call: 1, parts: [{ type: "text", text: "Hm" }], stop: "error", error: "rate limited" }],
          ["turn_end", { stopReason: "end_turn", error: "The model call failed: rate limited" }]
        ])
        // Running out of script is a failed turn too, with a clear message.
        const next = yield* session.prompt(text("again"))
        assert.deepStrictEqual(next, { stopReason: "end_turn", error: "The model call failed: The script has no turn 2 (it has 1)" })
      })))

  it.effect("a failure after a streamed tool call closes that call as not run", () =>
    withSkein({ script: { turns: [{ calls: [[{ tool: "read", args: { path: "notes.txt" }, id: "t9" }, { fail: "overloaded" }]] }] } }, ({ runtime, cwd }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        const rec = yield* record(session)
        assert.deepStrictEqual(yield* session.prompt(text("go")), { stopReason: "end_turn", error: "The model call failed: overloaded" })
        assert.deepStrictEqual(typeData(canonicalOf(yield* rec.drain)), [
          ["turn_start", { content: text("go") }],
          ["model_response", {
            call: 1,
            parts: [{ type: "tool_call", id: "t9", name: "read", args: { path: "notes.txt" } }],
            stop: "error",
            error: "overloaded"
          }],
          ["tool_call", { id: "t9", name: "read", args: { path: "notes.txt" }, title: "read", kind: "other" }],
          ["tool_result", { id: "t9", title: "read", ok: false, content: "Not run: the turn failed" }],
          ["turn_end", { stopReason: "end_turn", error: "The model call failed: overloaded" }]
        ])
        assert.strictEqual(historyOf(session).openToolCalls.size, 0)
      })))

  it.effect("max_turn_requests stops a turn that keeps calling tools", () =>
    withSkein({
      maxTurnRequests: 2,
      script: { turns: [{ calls: [0, 1, 2].map(() => [{ tool: "read", args: { path: "notes.txt" } }]) }] }
    }, ({ runtime, cwd }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        const rec = yield* record(session)
        const outcome = yield* session.prompt(text("loop"))
        const error = "Stopped after 2 model calls in one turn (the maxTurnRequests limit)."
        assert.deepStrictEqual(outcome, { stopReason: "max_turn_requests", error })
        const events = canonicalOf(yield* rec.drain)
        assert.deepStrictEqual(types(events), [
          "turn_start",
          "model_response",
          "tool_call",
          "tool_result",
          "model_response",
          "tool_call",
          "tool_result",
          "turn_end"
        ])
        assert.deepStrictEqual(events.at(-1)!.data, { stopReason: "max_turn_requests", error })
      })))

  it.effect("an unknown tool and bad arguments are tool errors; the turn goes on", () =>
    withSkein({
      script: { turns: [{ calls: [[{ tool: "nope", id: "n1" }, { tool: "read", args: { offset: -1 }, id: "r1" }], [{ text: "ok" }]] }] }
    }, ({ runtime, cwd }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        const rec = yield* record(session)
        assert.deepStrictEqual(yield* session.prompt(text("go")), { stopReason: "end_turn" })
        const results = (yield* rec.drain).filter((e) => e.type === "tool_result")
        const [unknown, invalid] = results.map((e) => e.data as { id: string; ok: boolean; content: string })
        assert.deepStrictEqual([unknown!.id, unknown!.ok, invalid!.id, invalid!.ok], ["n1", false, "r1", false])
        assert.match(unknown!.content, /^Unknown tool "nope"\. Available tools: (.+, )?read(, |$)/)
        assert.match(invalid!.content, /^Invalid arguments for read: /)
        const calls = (yield* rec.drain).filter((e) => e.type === "tool_call")
        assert.deepStrictEqual(calls.map((e) => [(e.data as { title: string }).title, (e.data as { kind: string }).kind]), [["nope", "other"], ["read", "read"]])
      })))

  it.effect("a tool whose execute dies gives a failed result; a defect outside execute fails that turn only", () => {
    const logs = captureLogs()
    const requests: Array<ModelRequest> = []
    const provider = byPrompt({
      boom: [[{ tool: "boom", id: "b1" }], [{ text: "recovered" }]],
      title: [[{ text: "calling" }, { tool: "bad_title", id: "x1" }]],
      other: [[{ text: "working" }, { sleep_ms: 150 }, { text: " done" }]],
      hello: [[{ text: "still alive" }]]
    }, (r) => requests.push(r))
    return withPieces({ provider, toolkit: testToolkit }, ({ runtime, cwd }) =>
      Effect.gen(function*() {
        const a = yield* runtime.newSession({ cwd })
        const b = yield* runtime.newSession({ cwd })
        const recA = yield* record(a)
        const recB = yield* record(b)

        assert.deepStrictEqual(yield* a.prompt(text("boom")), { stopReason: "end_turn" })
        const boomResult = (yield* recA.drain).find((e) => e.type === "tool_result")!
        assert.deepStrictEqual(boomResult.data, { id: "b1", title: "Run boom", ok: false, content: "Tool boom crashed: kaboom" })

        // Session B runs concurrently with A's failing turn: it pauses until the clock moves.
        const other = yield* Effect.forkChild(b.prompt(text("other")))
        yield* recB.until((e) => e.type === "text_delta")
        const failed = yield* a.prompt(text("title"))
        assert.deepStrictEqual(failed, { stopReason: "end_turn", error: "The turn failed inside Skein: title exploded" })
        const turn2 = (yield* recA.drain).filter((e) => e.turn === 2)
        assert.deepStrictEqual(typeData(canonicalOf(turn2)), [
          ["turn_start", { content: text("title") }],
          ["model_response", {
            call: 1,
            parts: [{ type: "text", text: "calling" }, { type: "tool_call", id: "x1", name: "bad_title", args: {} }],
            stop: "tool_use"
          }],
          ["tool_call", { id: "x1", name: "bad_title", args: {}, title: "bad_title", kind: "other" }],
          ["tool_result", { id: "x1", title: "bad_title", ok: false, content: "Not run: the turn failed" }],
          ["turn_end", { stopReason: "end_turn", error: "The turn failed inside Skein: title exploded" }]
        ])
        // B is still in its pause: let it end.
        assert.isTrue(yield* advance(Effect.sync(() => other.pollUnsafe() !== undefined), { stepMs: 50, maxMs: 1_000 }), "B's turn never ended")
        assert.deepStrictEqual(yield* Fiber.join(other), { stopReason: "end_turn" })
        assert.isTrue(logs.lines.some((line) => line.includes("turn 2 failed")), logs.lines.join("\n"))

        // Session A keeps working after its failed turn.
        assert.deepStrictEqual(yield* a.prompt(text("hello")), { stopReason: "end_turn" })
        assert.deepStrictEqual(historyOf(a).messages.at(-1), { role: "assistant", parts: [{ type: "text", text: "still alive" }] })
        assert.deepStrictEqual((yield* runtime.liveSessions).map((s) => s.id).sort(), [a.id, b.id].sort())
      })).pipe(Effect.provide(logs.layer))
  })

  it.effect("a provider whose stream dies fails the turn with the defect's message", () =>
    withPieces({
      provider: { name: "dying", stream: () => Stream.die(new Error("provider exploded")) },
      toolkit: testToolkit
    }, ({ runtime, cwd }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        const outcome = yield* session.prompt(text("go"))
        assert.deepStrictEqual(outcome, { stopReason: "end_turn", error: "The turn failed inside Skein: provider exploded" })
      })).pipe(Effect.provide(Logger.layer([]))))
})

describe("Session: modes and config", () => {
  it.effect("setMode emits mode_changed once per change; an invalid mode fails", () =>
    withSkein({}, ({ runtime, cwd, readLog }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        const rec = yield* record(session)
        assert.strictEqual((yield* session.settings).mode, "default")
        yield* session.setMode("plan")
        assert.strictEqual((yield* session.settings).mode, "plan")
        yield* session.setMode("plan")
        yield* session.setConfig("mode", "acceptEdits")
        const invalid = yield* Effect.flip(session.setMode("yolo"))
        assert.strictEqual(invalid.reason, "invalid_mode")
        assert.strictEqual(invalid.message, "Unknown mode \"yolo\"")
        const unknown = yield* Effect.flip(session.setConfig("model", "gpt"))
        assert.strictEqual(unknown.reason, "invalid_config")
        assert.strictEqual((yield* session.settings).mode, "acceptEdits")

        const events = yield* rec.drain
        assert.deepStrictEqual(events.map((e) => [e.type, e.data, e.turn, e.seq]), [
          ["mode_changed", { mode: "plan" }, null, 1],
          ["mode_changed", { mode: "acceptEdits" }, null, 2]
        ])
        assert.deepStrictEqual((yield* readLog(session.id)).events, events.map(logged))
      })))

  it.effect("newSession validates its mode and directories", () =>
    withSkein({ mode: "plan" }, ({ runtime, cwd }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        assert.strictEqual((yield* session.settings).mode, "plan")
        const bypass = yield* runtime.newSession({ cwd, mode: "bypassPermissions" })
        assert.strictEqual((yield* bypass.settings).mode, "bypassPermissions")
        assert.strictEqual((yield* Effect.flip(runtime.newSession({ cwd, mode: "yolo" }))).reason, "invalid_mode")
        assert.strictEqual((yield* Effect.flip(runtime.newSession({ cwd: "relative/dir" }))).reason, "invalid_cwd")
        assert.strictEqual((yield* Effect.flip(runtime.newSession({ cwd: `${cwd}/notes.txt` }))).reason, "invalid_cwd")
        assert.strictEqual((yield* Effect.flip(runtime.newSession({ cwd, additionalDirectories: ["/does/not/exist"] }))).reason, "invalid_cwd")
        assert.strictEqual((yield* runtime.liveSessions).length, 2)
      })))
})
