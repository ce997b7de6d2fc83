/**
 * The `Session` entity and the runner's front in one process (effect/cluster's `TestRunner`:
 * sharding with in-memory storage), on a local runtime with the memory store: the routing of
 * `SessionRpcs` to entities, a prompt sent again with the same key (one turn, not two), a
 * `NewSession` sent again (the same session), and ids that name no session. Time is the
 * TestClock's: the entity reaper, the scripted pause and the idle time pass when the test moves
 * the clock.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as TestRunner from "effect/cluster/TestRunner"
import * as Front from "../../src/cluster/Front.ts"
import * as SessionEntity from "../../src/cluster/SessionEntity.ts"
import { Skein } from "../../src/index.ts"
import { isEphemeral } from "../../src/log/Event.ts"
import { Runtime } from "../../src/runtime/Api.ts"
import * as TempDir from "../support/TempDir.ts"
import { advance, driven } from "../support/Time.ts"

const script = { turns: [{ calls: [[{ text: "One." }]] }, { calls: [[{ text: "Two." }]] }] }

const cluster = (cwd: string, options?: { readonly script?: unknown; readonly maxIdleMs?: number }) => {
  const runtime = Skein.layerLocal({ home: cwd, store: "memory", script: (options?.script ?? script) as typeof script })
  return SessionEntity.layer({ maxIdleMs: options?.maxIdleMs }).pipe(Layer.provideMerge(TestRunner.layer), Layer.provideMerge(runtime))
}

describe("the Session entity", () => {
  it.live("routes the protocol to the session's entity; a prompt sent again with its key is the same turn; NewSession sent again is the same session", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const context = yield* Layer.build(cluster(dir))
      const front = yield* Effect.provide(Front.handlers, context)
      const clientFor = yield* Effect.provide(SessionEntity.SessionEntity.client, context)

      const made = yield* front.NewSession({ cwd: dir })
      assert.isString(made.runner)
      // The same request again (same entity): the session it made, not an error.
      const again = yield* clientFor(made.info.id).NewSession({ cwd: dir })
      assert.strictEqual(again.info.id, made.info.id)

      const turn = (key: string) =>
        Stream.runCollect(front.Turn({ sessionId: made.info.id, content: [{ type: "text", text: "hi" }], options: { key } }) as Stream.Stream<any, unknown>)
      const first = yield* turn("k1")
      const text = (events: ReadonlyArray<any>) => events.filter((e) => e.type === "text_delta").map((e) => e.data.text).join("")
      assert.strictEqual(text(first), "One.")
      // Sent again with the same key: the logged turn again, nothing run.
      const repeated = yield* turn("k1")
      assert.deepStrictEqual(repeated.map((e) => e.seq), first.filter((e) => !isEphemeral(e)).map((e) => e.seq))
      assert.strictEqual(repeated.at(-1)?.type, "turn_end")
      assert.strictEqual(repeated[0]?.turn, 1)
      // A new key is a new turn.
      assert.strictEqual(text(yield* turn("k2")), "Two.")
      const runtime = yield* Effect.provide(Effect.service(Runtime), context)
      const record = yield* runtime.readSession(made.info.id)
      assert.deepStrictEqual(record.events.filter((e) => e.type === "turn_start").map((e) => (e.type === "turn_start" ? e.data.key : undefined)), ["k1", "k2"])

      // An id that cannot name a session is refused before any entity exists.
      const refused = yield* Effect.flip(front.GetSession({ sessionId: "../x" }) as Effect.Effect<unknown, any>)
      assert.strictEqual(refused.reason, "not_found")
    })))

  it.effect("a turn nobody streams (given to send) keeps its session's entity alive past the idle time, then lets it go", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const slow = { turns: [{ calls: [[{ text: "slow " }, { sleep_ms: 7_000 }, { text: "done." }]] }] }
      const context = yield* Layer.build(cluster(dir, { script: slow, maxIdleMs: 1_000 }))
      const front = yield* Effect.provide(Front.handlers, context)
      // The cluster's own timers (placing the entity's shard) need time to pass too.
      const drive = <A, E>(effect: Effect.Effect<A, E>) => driven(effect, { stepMs: 50, maxMs: 60_000 })
      const made = yield* drive(front.NewSession({ cwd: dir }))
      const sent = yield* drive(front.Send({ sessionId: made.info.id, command: { _tag: "Prompt", content: [{ type: "text", text: "go" }] } }))
      assert.strictEqual(sent.turn, 1)
      const runtime = yield* Effect.provide(Effect.service(Runtime), context)
      const live = Effect.map(runtime.liveSessions, (sessions) => sessions.some((s) => s.id === made.info.id))
      const ended = Effect.map(runtime.readSession(made.info.id), (record) => record.events.find((e) => e.type === "turn_end"))
      // The reaper looks every 5 s (its shortest period), so during the turn's 7 s pause it looks
      // at least once at an entity idle past its 1 s, which it would close (cancelling the turn)
      // but for the turn. Let time pass a second at a time until the turn is over.
      assert.isTrue(yield* advance(Effect.map(ended, (end) => end !== undefined), { stepMs: 1_000, maxMs: 30_000 }), "the turn never ended")
      const end = yield* ended
      assert.strictEqual(end?.type === "turn_end" ? end.data.stopReason : undefined, "end_turn")
      assert.isTrue(yield* live)
      // Then it is let go: at the reaper's next look the idle entity is closed, its session with it.
      assert.isTrue(yield* advance(Effect.map(live, (on) => !on), { stepMs: 1_000, maxMs: 10_000 }), "the entity was never let go")
    })))
})
