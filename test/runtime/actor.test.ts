/**
 * The Session actor built directly with `Session.make`, over an in-memory log writer: the order
 * of truth (stamp → append → publish), syncs at turn ends, and races between the mailbox and
 * closing. Time is the TestClock's: a scripted pause or a slow append lasts until the test moves
 * the clock, so a race is placed exactly where the test means it.
 */
import { assert, describe, it } from "@effect/vitest"
import type * as Context from "effect/Context"

import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import type * as FileSystem from "effect/FileSystem"
import * as Logger from "effect/Logger"
import type * as Path from "effect/Path"
import * as Stream from "effect/Stream"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/testing/TestClock"
import type { Canonical } from "../../src/log/Event.ts"
import * as History from "../../src/log/History.ts"
import type { Writer } from "../../src/log/Store.ts"
import { LogError } from "../../src/log/LogError.ts"
import * as Scripted from "../../src/providers/Scripted.ts"
import { Bus } from "../../src/runtime/Bus.ts"
import * as Session from "../../src/runtime/Session.ts"
import type * as SessionDeps from "../../src/runtime/SessionDeps.ts"
import * as Toolkit from "../../src/tools/Toolkit.ts"
import { makeDirs, text, types } from "../support/Sessions.ts"

import * as TempDir from "../support/TempDir.ts"
import { advance, settle } from "../support/Time.ts"

/** A prompt nobody presents, its outcome awaited later (`Fiber.join`). */
const submit = (session: SessionDeps.Session, content: ReturnType<typeof text>) =>
  Effect.map(Effect.forkChild(session.prompt(content), { startImmediately: true }), (outcome) => ({ outcome }))

/** Whether a fiber has ended. */
const ended = (fiber: Fiber.Fiber<unknown, unknown>) => Effect.sync(() => fiber.pollUnsafe() !== undefined)

interface MemoryWriter extends Writer {
  readonly lines: Array<Canonical>
  syncs: number
  /** When set, `append` fails with this message. */
  failWith: string | undefined
  /** When set, `append` stores the events, then sleeps this long before returning (a slow disk). */
  slowMs: number
}

const memoryWriter = (): MemoryWriter => {
  const writer: MemoryWriter = {
    path: "memory",
    lines: [],
    syncs: 0,
    failWith: undefined,
    slowMs: 0,
    append: (events) =>
      Effect.suspend(() => {
        if (writer.failWith !== undefined) return Effect.fail(new LogError({ message: writer.failWith }))
        writer.lines.push(...events)
        return writer.slowMs > 0 ? Effect.sleep(writer.slowMs) : Effect.void
      }),
    sync: Effect.sync(() => {
      writer.syncs++
    }),
    saveSide: () => Effect.void,
    loadSide: () => Effect.succeed(undefined)
  }
  return writer
}

/** A session actor in its own scope, with the given script and writer. */
const start = (script: Scripted.Script, writer: MemoryWriter) =>
  Effect.gen(function*() {
    const { cwd } = yield* makeDirs
    const bus = yield* Bus
    const services = (yield* Effect.context<FileSystem.FileSystem | Path.Path>()) as Context.Context<FileSystem.FileSystem | Path.Path>
    const scope = yield* Scope.make()
    yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
    const history = History.make()
    history.mode = "default"
    const session = yield* Session.make(
      { id: "s-actor", cwd, additionalDirectories: [], created: 0 },
      history,
      {
        bus,
        writer,
        readLog: Effect.sync(() => writer.lines),
        close: () => Scope.close(scope, Exit.void),
        provider: Scripted.make(script),
        toolkit: Toolkit.builtin(),
        maxTurnRequests: 10,
        services,
        permissionTimeoutMs: 60_000
      },
      scope
    )
    const sub = (yield* bus.subscribe(session.id))!
    /** What was published since the last look. */
    const published = Effect.map(sub.poll, (events) => [...events])
    /** Waits (for the session, not for time) until an event of `type` is published. */
    const until = (type: string) =>
      Effect.gen(function*() {
        for (;;) {
          const events = yield* sub.takeAll
          if (events.length === 0) return yield* Effect.die(new Error(`the session closed before ${type}`))
          if (types(events).includes(type)) return
        }
      })
    return { session, scope, published, until }
  }).pipe(Effect.provide(Bus.layer), Effect.provide(TempDir.platform))

const quietly = Effect.provide(Logger.layer([]))

describe("Session actor", () => {
  it.effect("syncs the log at every turn end", () =>
    Effect.gen(function*() {
      const writer = memoryWriter()
      const { session } = yield* start({ turns: [{ calls: [[{ text: "a" }]] }, { calls: [[{ text: "b" }]] }] }, writer)
      yield* session.prompt(text("1"))
      assert.strictEqual(writer.syncs, 1)
      yield* session.prompt(text("2"))
      assert.strictEqual(writer.syncs, 2)
      assert.deepStrictEqual(writer.lines.map((e) => [e.seq, e.type]), [
        [1, "turn_start"],
        [2, "model_response"],
        [3, "turn_end"],
        [4, "turn_start"],
        [5, "model_response"],
        [6, "turn_end"]
      ])
    }))

  it.effect("an event that cannot be appended is never published; the prompt is answered with the log's refusal", () =>
    Effect.gen(function*() {
      const writer = memoryWriter()
      const { session, published } = yield* start({ turns: [{ calls: [[{ text: "a" }]] }] }, writer)
      writer.failWith = "disk full"
      const refused = yield* Effect.flip(session.prompt(text("1")))
      assert.strictEqual(refused.reason, "log")
      assert.include(refused.message, "disk full")
      // Only the ephemeral end for its presenter: nothing logged is published.
      assert.deepStrictEqual(types(yield* published), ["turn_aborted"])
      assert.deepStrictEqual(writer.lines, [])
    }).pipe(quietly))

  it.effect("closing the session mid-turn logs turn_end as cancelled, then syncs", () =>
    Effect.gen(function*() {
      const writer = memoryWriter()
      const { session, scope, until } = yield* start({ turns: [{ calls: [[{ text: "a" }, { sleep_ms: 30_000 }]] }] }, writer)
      const ticket = yield* submit(session, text("1"))
      const queued = yield* submit(session, text("2"))
      yield* until("text_delta") // the turn is in its pause, which lasts until the clock moves
      assert.strictEqual(writer.syncs, 0)
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(yield* Fiber.join(ticket.outcome), { stopReason: "cancelled" })
      assert.deepStrictEqual(yield* Fiber.join(queued.outcome), { stopReason: "cancelled" })
      assert.deepStrictEqual(writer.lines.map((e) => [e.seq, e.type, e.turn]), [[1, "turn_start", 1], [2, "model_response", 1], [3, "turn_end", 1]])
      assert.strictEqual(writer.syncs, 1)
    }))

  it.effect("a closed session refuses new prompts and subscriptions", () =>
    Effect.gen(function*() {
      const writer = memoryWriter()
      const { session, scope } = yield* start({ turns: [] }, writer)
      yield* Scope.close(scope, Exit.void)
      assert.strictEqual((yield* Effect.flip(session.send({ _tag: "Prompt", content: text("x") }))).reason, "closed")
      assert.strictEqual((yield* Effect.flip(Stream.runDrain(session.subscribe(0)))).reason, "closed")
      assert.strictEqual((yield* Effect.flip(session.setMode("plan"))).reason, "closed")
    }))

  // A message offered while the scope closes (or not yet taken when the mailbox stops) is
  // answered all the same: the prompt resolves as cancelled, or fails as closed, and never hangs.
  it.effect("a prompt racing the session's close resolves instead of hanging", () =>
    Effect.gen(function*() {
      const writer = memoryWriter()
      const { session, scope } = yield* start({ turns: [{ calls: [[{ text: "a" }]] }] }, writer)
      const prompt = yield* Effect.forkChild(Effect.exit(session.prompt(text("x"))), { startImmediately: true })
      yield* Scope.close(scope, Exit.void)
      // Closing needs no time: with the clock still, the prompt ends as soon as it is let run.
      assert.isTrue(yield* settle(ended(prompt)), "the prompt never resolved")
      const exit = yield* Fiber.join(prompt)
      // Either way is fine, as long as it ends: cancelled, or failed as closed.
      const answer = Exit.isSuccess(exit) ? exit.value.stopReason : exit.cause.reasons.map((r) => (r._tag === "Fail" ? r.error.reason : r._tag)).join()
      assert.include(["cancelled", "closed"], answer)
    }))

  // Stamp → append → publish is one step a cancel cannot cut: a cancel that lands while a line is
  // being written waits for the write, so the session never logs the same call again under its seq.
  it.effect("a cancel during a slow append never duplicates a seq", () =>
    Effect.gen(function*() {
      const writer = memoryWriter()
      const { session } = yield* start({ turns: [{ calls: [[{ text: "a" }]] }] }, writer)
      writer.slowMs = 200
      const ticket = yield* submit(session, text("1"))
      // turn_start's append takes 200 ms; then the model_response line is written, its append
      // sleeping: cancel 20 ms into that sleep.
      const written = Effect.sync(() => writer.lines.some((e) => e.type === "model_response"))
      assert.isTrue(yield* advance(written, { stepMs: 10, maxMs: 1_000 }), "no model_response was written")
      yield* TestClock.adjust(20)
      yield* session.cancel
      assert.isTrue(yield* advance(ended(ticket.outcome), { stepMs: 50, maxMs: 5_000 }), "the prompt never resolved")
      const seqs = writer.lines.map((e) => e.seq)
      assert.deepStrictEqual(seqs, [...new Set(seqs)].sort((a, b) => a - b), `log: ${JSON.stringify(writer.lines.map((e) => [e.seq, e.type]))}`)
      assert.strictEqual(writer.lines.filter((e) => e.type === "model_response").length, 1)
    }))

  it.effect("events carry the session id and the turn; session-level events have turn null", () =>
    Effect.gen(function*() {
      const writer = memoryWriter()
      const { session, published } = yield* start({ turns: [{ calls: [[{ text: "a" }]] }] }, writer)
      yield* session.setMode("plan")
      yield* session.prompt(text("1"))
      const events = yield* published
      assert.deepStrictEqual(types(events), ["mode_changed", "turn_start", "text_delta", "model_response", "turn_end"])
      assert.deepStrictEqual(events.map((e) => e.turn), [null, 1, 1, 1, 1])
      assert.isTrue(events.every((e) => e.sessionId === "s-actor"))
      assert.deepStrictEqual(writer.lines.map((e) => e.seq), [1, 2, 3, 4])
    }))
})


