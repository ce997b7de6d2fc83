/**
 * Skein embedded in a plain Effect program, using only the public exports of `src/index.ts`:
 * `Skein.layer(config)` gives `Runtime`; a session's events stream and its outcome are what
 * the program sees. Sessions are kept in memory here (`store: "memory"`), as an embedder that
 * wants no files keeps them; the store on disk has its own tests (test/log).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Runtime, Scripted, SessionProtocol, Skein, type SessionEvent, Translate, type TurnOutcome } from "../../src/index.ts"

const scriptJson = JSON.stringify({
  turns: [
    {
      expect: "notes",
      calls: [
        [{ text: "Reading " }, { text: "it." }, { tool: "read", args: { path: "notes.txt" } }],
        [{ think: "It is short." }, { text: "It says hello." }, { usage: { input: 100, output: 5 } }]
      ]
    },
    { calls: [[{ text: "Waiting…" }, { sleep_ms: 30_000 }]] }
  ]
})

/** A temp home and project for one program run; removed afterwards. */
const withDirs = async <A>(f: (dirs: { readonly home: string; readonly cwd: string }) => Promise<A>): Promise<A> => {
  const base = realpathSync(mkdtempSync(join(tmpdir(), "skein-embed-")))
  const cwd = join(base, "project")
  mkdirSync(cwd)
  writeFileSync(join(cwd, "notes.txt"), "Hello from the notes\n")
  try {
    return await f({ home: join(base, "home"), cwd })
  } finally {
    rmSync(base, { recursive: true, force: true })
  }
}

const untilTurnEnd = (events: Stream.Stream<SessionEvent>) =>
  events.pipe(Stream.takeUntil((e) => e.type === "turn_end"), Stream.runCollect)

describe("embedding Skein in an Effect program", () => {
  it("runs a scripted session and sees its events and outcome", () =>
    withDirs(async ({ home, cwd }) => {
      const program = Effect.gen(function*() {
        const script = yield* Scripted.parse(scriptJson, "embedded script")
        return yield* Effect.gen(function*() {
          const runtime = yield* Runtime
          const session = yield* runtime.newSession({ cwd })
          // The runtime-wide stream filtered to the session, and the turn's own stream.
          const all = yield* Effect.forkChild(untilTurnEnd(runtime.events.pipe(Stream.filter((e) => e.sessionId === session.id))), {
            startImmediately: true
          })
          const events = yield* Stream.runCollect(session.turn([{ type: "text", text: "Summarise notes.txt" }]))
          const outcome: TurnOutcome = SessionProtocol.outcomeOf(events.at(-1)!)!
          const log = yield* runtime.readSession(session.id)
          return { log, outcome, events, all: yield* Fiber.join(all) }
        }).pipe(Effect.scoped, Effect.provide(Skein.layer({ home, script, store: "memory" })))
      })

      const { log, outcome, events, all } = await Effect.runPromise(program)

      assert.deepStrictEqual(outcome, { stopReason: "end_turn" })
      assert.deepStrictEqual(events.map((e) => e.type), [
        "turn_start",
        "text_delta",
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
      assert.deepStrictEqual(all, events)
      const streamed = events.flatMap((e) => e.type === "text_delta" ? [e.data.text] : []).join("")
      assert.strictEqual(streamed, "Reading it.It says hello.")
      const result = events.find((e) => e.type === "tool_result")
      assert.deepStrictEqual(result?.data, { id: "call_1_1_1", title: "Read notes.txt", ok: true, status: "done", content: "1\tHello from the notes" })
      const last = events.at(-2)
      assert.deepStrictEqual(last?.type === "model_response" ? last.data.usage : undefined, { input: 100, output: 5 })
      // What a presenter would show, via the public Translate.
      assert.deepStrictEqual(events.flatMap((e) => Translate.live(e)).map((u) => u.sessionUpdate), [
        "agent_message_chunk",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
        "tool_call_update",
        "agent_thought_chunk",
        "agent_message_chunk"
      ])
      // Its log holds the canonical events, in memory: nothing was written under the home.
      assert.deepStrictEqual(log.events.map((e) => e.type), events.filter((e) => e.type !== "text_delta" && e.type !== "thinking_delta" && e.type !== "tool_running").map((e) => e.type))
      assert.isFalse(existsSync(join(home, "sessions")))
    }))

  it("cancels a running prompt from the program; the outcome is cancelled", () =>
    withDirs(async ({ home, cwd }) => {
      const program = Effect.gen(function*() {
        const script = yield* Scripted.parse(scriptJson)
        return yield* Effect.gen(function*() {
          const runtime = yield* Runtime
          const session = yield* runtime.newSession({ cwd })
          yield* session.prompt([{ type: "text", text: "read the notes" }])
          // Cancel once the second turn is streaming.
          const events = yield* session.turn([{ type: "text", text: "wait" }]).pipe(
            Stream.tap((e) => (e.type === "text_delta" ? session.cancel : Effect.void)),
            Stream.runCollect
          )
          return { outcome: SessionProtocol.outcomeOf(events.at(-1)!)!, events }
        }).pipe(Effect.scoped, Effect.provide(Skein.layer({ home, script, store: "memory" })))
      })
      const { outcome, events } = await Effect.runPromise(program.pipe(Effect.timeout("10 seconds")))
      assert.deepStrictEqual(outcome, { stopReason: "cancelled" })
      const turn2 = events.filter((e) => e.turn === 2)
      assert.deepStrictEqual(turn2.map((e) => e.type), ["turn_start", "text_delta", "model_response", "turn_end"])
      assert.deepStrictEqual(turn2.at(-1)?.data, { stopReason: "cancelled" })
    }))

  it("store: \"memory\" keeps sessions in this process: list, close, load, read and delete work, and no file is written", () =>
    withDirs(async ({ home, cwd }) => {
      const program = Effect.gen(function*() {
        const script = yield* Scripted.parse(scriptJson)
        const layer = Skein.layer({ home, script, store: "memory" })
        const seen = yield* Effect.gen(function*() {
          const runtime = yield* Runtime
          const session = yield* runtime.newSession({ cwd })
          yield* session.prompt([{ type: "text", text: "Summarise notes.txt" }])
          const listed = (yield* runtime.listSessions({ cwd })).sessions.map((s) => [s.id, s.title])
          const elsewhere = (yield* runtime.listSessions({ cwd: join(cwd, "..") })).sessions
          yield* runtime.closeSession(session.id)
          const loaded = yield* runtime.loadSession({ sessionId: session.id, cwd })
          const record = yield* runtime.readSession(session.id)
          yield* runtime.deleteSession(session.id)
          const gone = yield* Effect.flip(runtime.loadSession({ sessionId: session.id }))
          return { id: session.id, listed, elsewhere, loaded: loaded.events.map((e) => e.type), record, gone, left: (yield* runtime.listSessions()).sessions }
        }).pipe(Effect.scoped, Effect.provide(layer))
        // Sessions last as long as the layer: built again, it starts empty.
        const fresh = yield* Effect.gen(function*() {
          return yield* (yield* Runtime).listSessions()
        }).pipe(Effect.provide(layer))
        return { ...seen, fresh: fresh.sessions }
      })
      const { id, listed, elsewhere, loaded, record, gone, left, fresh } = await Effect.runPromise(program)
      assert.deepStrictEqual(listed, [[id, "Summarise notes.txt"]])
      assert.deepStrictEqual(elsewhere, [])
      assert.deepStrictEqual(loaded, ["turn_start", "model_response", "tool_call", "tool_result", "model_response", "turn_end"])
      assert.deepStrictEqual(record.events.map((e) => e.type), loaded)
      assert.strictEqual(record.file, `memory:sessions/${id}.ndjson`)
      assert.strictEqual(gone.reason, "not_found")
      assert.deepStrictEqual(left, [])
      assert.deepStrictEqual(fresh, [])
      // Not a byte on disk: the home was never even made.
      assert.isFalse(existsSync(home))
    }))

  // GAP (src/runtime/Session.ts `Session`, src/index.ts): DESIGN.md "Embedding" promises, per
  // session, `events` (a Stream). A Session only has `subscribe` (a scoped PubSub subscription);
  // an embedder must reach for `Stream.fromSubscription` or filter `runtime.events`.
  it("a session offers `events` as a Stream (DESIGN: Embedding)", () =>
    withDirs(async ({ home, cwd }) => {
      const events = await Effect.runPromise(
        Effect.gen(function*() {
          const runtime = yield* Runtime
          const session = yield* runtime.newSession({ cwd })
          return (session as unknown as { readonly events?: unknown }).events
        }).pipe(Effect.provide(Skein.layer({ home, store: "memory" })))
      )
      assert.isTrue(Stream.isStream(events))
    }))

  it("the Runtime offers loadSession and listSessions (DESIGN: Embedding)", () =>
    withDirs(async ({ home }) => {
      const runtime = await Effect.runPromise(Effect.provide(Effect.gen(function*() {
        return yield* Runtime
      }), Skein.layer({ home, store: "memory" })))
      const api = runtime as unknown as Record<string, unknown>
      assert.strictEqual(typeof api["loadSession"], "function")
      assert.include(["function", "object"], typeof api["listSessions"])
      assert.isDefined(api["listSessions"])
    }))
})
