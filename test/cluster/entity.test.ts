/**
 * The `Session` entity and the runner's front in one process (effect/cluster's `TestRunner`:
 * sharding with in-memory storage), on a local runtime with the memory store: the routing of
 * `SessionRpcs` to entities, a prompt sent again with the same key (one turn, not two), a
 * `NewSession` sent again (the same session), and ids that name no session.
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

  it.live("a turn nobody streams (given to send) keeps its session's entity alive past the idle time, then lets it go", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const slow = { turns: [{ calls: [[{ text: "slow " }, { sleep_ms: 7_000 }, { text: "done." }]] }] }
      const context = yield* Layer.build(cluster(dir, { script: slow, maxIdleMs: 1_000 }))
      const front = yield* Effect.provide(Front.handlers, context)
      const made = yield* front.NewSession({ cwd: dir })
      const sent = yield* front.Send({ sessionId: made.info.id, command: { _tag: "Prompt", content: [{ type: "text", text: "go" }] } })
      assert.strictEqual(sent.turn, 1)
      // The reaper looks every 5 s at most: the entity would have been closed (and the turn cancelled) by now.
      yield* Effect.sleep("9 seconds")
      const runtime = yield* Effect.provide(Effect.service(Runtime), context)
      const record = yield* runtime.readSession(made.info.id)
      const end = record.events.find((e) => e.type === "turn_end")
      assert.strictEqual(end?.type === "turn_end" ? end.data.stopReason : undefined, "end_turn")
    })), 30_000)
})
