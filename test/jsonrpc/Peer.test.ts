import { assert, describe, it } from "@effect/vitest"
import { Context, Deferred, Effect, Fiber, Ref, Schema } from "effect"
import { TestClock } from "effect/testing"
import * as Peer from "../../src/jsonrpc/Peer.ts"
import * as Protocol from "../../src/jsonrpc/Protocol.ts"
import * as MemoryTransport from "../support/MemoryTransport.ts"
import { Empty, errorLine, line, ping, pong, setup } from "./peerHelpers.ts"

describe("Peer: incoming requests", () => {
  it.effect("runs requests concurrently: a slow handler does not block a fast one", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const { mt } = yield* setup(() => ({
        requests: {
          ping,
          slow: Peer.request(Empty, () => Effect.as(Deferred.await(gate), "slow done"))
        }
      }))
      yield* mt.send({ jsonrpc: "2.0", id: 1, method: "slow" }, { jsonrpc: "2.0", id: 2, method: "ping" })
      assert.strictEqual(yield* mt.nextLine, pong(2))
      yield* Deferred.succeed(gate, undefined)
      assert.strictEqual(yield* mt.nextLine, line({ jsonrpc: "2.0", id: 1, result: "slow done" }))
    }))

  it.effect("passes decoded params and the request id", () =>
    Effect.gen(function*() {
      const { mt } = yield* setup(() => ({
        requests: {
          echo: Peer.request(Schema.Struct({ n: Schema.Number }), (p, ctx) => Effect.succeed({ n: p.n, id: ctx.id }))
        }
      }))
      yield* mt.send({ jsonrpc: "2.0", id: "abc", method: "echo", params: { n: 4 } })
      assert.strictEqual(yield* mt.nextLine, line({ jsonrpc: "2.0", id: "abc", result: { n: 4, id: "abc" } }))
    }))

  it.effect("onResponded runs once the answer is queued, whether the handler succeeds, fails or is cancelled", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const { mt } = yield* setup((peer) => ({
        requests: {
          // Whatever onResponded sends is written after the answer.
          ok: Peer.request(Empty, (_, ctx) =>
            Effect.sync(() => ctx.onResponded(Effect.andThen(Effect.sync(() => void seen.push("ok")), peer.notify("after/ok"))))),
          bad: Peer.request(Empty, (_, ctx) =>
            Effect.andThen(Effect.sync(() => ctx.onResponded(Effect.sync(() => void seen.push("bad")))), Effect.fail(Protocol.internalError()))),
          hang: Peer.request(Empty, (_, ctx) =>
            Effect.andThen(Effect.sync(() => ctx.onResponded(Effect.sync(() => void seen.push("hang")))), Effect.never))
        }
      }))
      yield* mt.send({ jsonrpc: "2.0", id: 1, method: "ok" })
      assert.strictEqual(yield* mt.nextLine, line({ jsonrpc: "2.0", id: 1, result: null }))
      assert.strictEqual(yield* mt.nextLine, line({ jsonrpc: "2.0", method: "after/ok" }))
      yield* mt.send({ jsonrpc: "2.0", id: 2, method: "bad" })
      yield* mt.nextLine
      yield* mt.send({ jsonrpc: "2.0", id: 3, method: "hang" }, { jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: 3 } })
      assert.strictEqual(yield* mt.nextLine, errorLine(3, -32800, "Request cancelled"))
      yield* Effect.yieldNow
      assert.deepStrictEqual(seen, ["ok", "bad", "hang"])
    }))

  it.effect("onResponded starts once the answer is written, not merely queued: work that follows an answer does not delay it", () =>
    Effect.gen(function*() {
      const mt = yield* MemoryTransport.make
      const peer = yield* Peer.make(mt.transport)
      const written: Array<string> = []
      // What the effect sees of the transport when it starts (the writer is another fiber).
      const look = Effect.flatMap(mt.output, (output) => Effect.sync(() => void written.push(output)))
      yield* Effect.forkChild(peer.serve({
        requests: {
          open: Peer.request(Empty, (_, ctx) =>
            Effect.sync(() => {
              ctx.onResponded(look)
              ctx.onResponded(look)
              return "opened"
            })),
          fails: Peer.request(Empty, (_, ctx) => Effect.andThen(Effect.sync(() => ctx.onResponded(look)), Effect.fail(Protocol.internalError())))
        }
      }))
      const answer = line({ jsonrpc: "2.0", id: 1, result: "opened" })
      yield* mt.send({ jsonrpc: "2.0", id: 1, method: "open" })
      assert.strictEqual(yield* mt.nextLine, answer)
      yield* mt.send({ jsonrpc: "2.0", id: 2, method: "fails" })
      yield* mt.nextLine
      yield* Effect.yieldNow
      assert.deepStrictEqual(written.slice(0, 2), [`${answer}\n`, `${answer}\n`])
      assert.match(written[2], /"id":2,"error"/)
    }))

  it.effect("onResponded still runs when the writer is gone (the answer dropped at shutdown)", () =>
    Effect.gen(function*() {
      const ran = yield* Deferred.make<void>()
      const mt = yield* MemoryTransport.make
      // A transport whose first write never completes: the writer stays in it until the deadline.
      const stuck = { ...mt.transport, write: () => Effect.never }
      const peer = yield* Peer.make(stuck)
      yield* Effect.forkChild(peer.serve({
        requests: { open: Peer.request(Empty, (_, ctx) => Effect.sync(() => ctx.onResponded(Deferred.succeed(ran, undefined)))) }
      }))
      yield* mt.send({ jsonrpc: "2.0", id: 1, method: "open" }, { jsonrpc: "2.0", id: 2, method: "open" })
      yield* mt.end
      yield* TestClock.adjust(Peer.SHUTDOWN_GRACE_MS + Peer.SHUTDOWN_FLUSH_MS)
      yield* Deferred.await(ran)
    }))

  it.effect("$/cancel_request interrupts the handler and answers -32800", () =>
    Effect.gen(function*() {
      const interrupted = yield* Deferred.make<void>()
      const { mt } = yield* setup(() => ({
        requests: {
          ping,
          hang: Peer.request(Empty, () => Effect.never.pipe(Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))))
        }
      }))
      yield* mt.send(
        { jsonrpc: "2.0", id: 9, method: "hang" },
        { jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: 9 } }
      )
      assert.strictEqual(yield* mt.nextLine, errorLine(9, -32800, "Request cancelled"))
      yield* Deferred.await(interrupted)
      // unknown ids and malformed cancels are ignored
      yield* mt.send(
        { jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: 9 } },
        { jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: 12345 } },
        { jsonrpc: "2.0", method: "$/cancel_request", params: null },
        { jsonrpc: "2.0", id: 10, method: "ping" }
      )
      assert.strictEqual(yield* mt.nextLine, pong(10))
    }))

  it.effect("with onCancel, $/cancel_request lets the handler answer by itself", () =>
    Effect.gen(function*() {
      const cancelled = yield* Deferred.make<void>()
      const calls = yield* Ref.make<Array<string>>([])
      const Params = Schema.Struct({ sessionId: Schema.String })
      const { mt } = yield* setup(() => ({
        requests: {
          "session/prompt": Peer.request(
            Params,
            () => Effect.as(Deferred.await(cancelled), { stopReason: "cancelled" }),
            {
              onCancel: (p) =>
                Effect.andThen(Ref.update(calls, (c) => [...c, p.sessionId]), Deferred.succeed(cancelled, undefined))
            }
          )
        }
      }))
      yield* mt.send(
        { jsonrpc: "2.0", id: 1, method: "session/prompt", params: { sessionId: "s1" } },
        { jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: 1 } },
        { jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: 1 } }
      )
      assert.strictEqual(yield* mt.nextLine, line({ jsonrpc: "2.0", id: 1, result: { stopReason: "cancelled" } }))
      assert.deepStrictEqual(yield* Ref.get(calls), ["s1"])
    }))

  it.effect("a duplicate in-flight id → -32600 for the duplicate, the first keeps running", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const { mt } = yield* setup(() => ({
        requests: { slow: Peer.request(Empty, () => Effect.as(Deferred.await(gate), "first")), ping }
      }))
      yield* mt.send({ jsonrpc: "2.0", id: 1, method: "slow" }, { jsonrpc: "2.0", id: 1, method: "ping" })
      assert.strictEqual(yield* mt.nextLine, errorLine(1, -32600, "Duplicate request id"))
      yield* Deferred.succeed(gate, undefined)
      assert.strictEqual(yield* mt.nextLine, line({ jsonrpc: "2.0", id: 1, result: "first" }))
      // once answered, the id may be used again
      yield* mt.send({ jsonrpc: "2.0", id: 1, method: "ping" })
      assert.strictEqual(yield* mt.nextLine, pong(1))
    }))

  it.effect("a notification written before a response is written before it", () =>
    Effect.gen(function*() {
      const { mt } = yield* setup((peer) => ({
        requests: {
          prompt: Peer.request(Empty, () =>
            Effect.andThen(
              Effect.forEach([1, 2, 3], (n) => peer.notify("session/update", { n }), { discard: true }),
              Effect.succeed({ stopReason: "end_turn" })
            ))
        }
      }))
      yield* mt.send({ jsonrpc: "2.0", id: 1, method: "prompt" })
      for (const n of [1, 2, 3]) {
        assert.strictEqual(yield* mt.nextLine, line({ jsonrpc: "2.0", method: "session/update", params: { n } }))
      }
      assert.strictEqual(yield* mt.nextLine, line({ jsonrpc: "2.0", id: 1, result: { stopReason: "end_turn" } }))
      const writes = yield* mt.writes
      assert.isTrue(writes.every((w) => w.endsWith("\n")))
    }))

  it.effect("notification handlers run in order, with decoded params", () =>
    Effect.gen(function*() {
      const seen = yield* Ref.make<Array<string>>([])
      const { mt } = yield* setup(() => ({
        requests: { ping },
        notifications: {
          "session/cancel": Peer.notification(Schema.Struct({ sessionId: Schema.String }), (p) =>
            Ref.update(seen, (s) => [...s, p.sessionId]))
        }
      }))
      yield* mt.send(
        { jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "a" } },
        { jsonrpc: "2.0", method: "session/cancel", params: { bad: true } },
        { jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "b" } },
        { jsonrpc: "2.0", id: 1, method: "ping" }
      )
      assert.strictEqual(yield* mt.nextLine, pong(1))
      assert.deepStrictEqual(yield* Ref.get(seen), ["a", "b"])
    }))

  it.effect("end of input interrupts in-flight handlers (-32800), flushes and returns", () =>
    Effect.gen(function*() {
      const { mt, server } = yield* setup(() => ({
        requests: { hang: Peer.request(Empty, () => Effect.never) }
      }))
      yield* mt.send({ jsonrpc: "2.0", id: 1, method: "hang" }, { jsonrpc: "2.0", id: 2, method: "hang" })
      yield* mt.end
      yield* Fiber.join(server)
      const messages = yield* mt.messages
      assert.deepStrictEqual(
        messages.map((m) => JSON.stringify(m)).sort(),
        [errorLine(1, -32800, "Request cancelled"), errorLine(2, -32800, "Request cancelled")]
      )
    }))
})

describe("Peer: handler services", () => {
  class Greeting extends Context.Service<Greeting, { readonly text: string }>()("test/Greeting") {}

  it.effect("serve needs exactly the services its handlers need", () =>
    Effect.gen(function*() {
      const mt = yield* MemoryTransport.make
      const peer = yield* Peer.make(mt.transport)
      const serving = peer.serve({
        requests: { hello: Peer.request(Empty, () => Effect.map(Effect.service(Greeting), (g) => g.text)) }
      })
      // Compile-time: the requirement is Greeting, not `any`.
      const typed: Effect.Effect<void, never, Greeting> = serving
      yield* Effect.forkChild(Effect.provideService(typed, Greeting, { text: "hi" }))
      yield* mt.send({ jsonrpc: "2.0", id: 1, method: "hello" })
      assert.strictEqual(yield* mt.nextLine, line({ jsonrpc: "2.0", id: 1, result: "hi" }))
    }))

  it.effect("closing the peer's scope flushes what was enqueued", () =>
    Effect.gen(function*() {
      const mt = yield* MemoryTransport.make
      yield* Effect.scoped(
        Effect.gen(function*() {
          const peer = yield* Peer.make(mt.transport)
          yield* Effect.forEach([1, 2, 3], (n) => peer.notify("n", { n }), { discard: true })
        })
      )
      assert.deepStrictEqual(yield* mt.messages, [1, 2, 3].map((n) => ({ jsonrpc: "2.0", method: "n", params: { n } })))
    }))

  it.effect("batches queued lines into few writes of whole lines", () =>
    Effect.gen(function*() {
      const { mt } = yield* setup((peer) => ({
        requests: {
          burst: Peer.request(Empty, () =>
            Effect.as(Effect.forEach(Array.from({ length: 200 }, (_, i) => i), (i) => peer.notify("u", { i }), {
              discard: true
            }), "done"))
        }
      }))
      yield* mt.send({ jsonrpc: "2.0", id: 1, method: "burst" })
      for (let i = 0; i < 200; i++) yield* mt.nextLine
      assert.strictEqual(yield* mt.nextLine, line({ jsonrpc: "2.0", id: 1, result: "done" }))
      const writes = yield* mt.writes
      assert.isTrue(writes.every((w) => w.endsWith("\n")))
      assert.isBelow(writes.length, 20)
    }))
})
