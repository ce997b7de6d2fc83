/**
 * Faults at the JSON-RPC peer, in process (the spawned versions are in flood.test.ts and
 * shutdown.test.ts): too many requests at once, a writer that never completes, a malformed
 * answer to one of our requests, and interruption (what SIGTERM does) while a request that
 * answers its own cancellation runs.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber, Logger, Queue, Schema, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as Peer from "../../src/jsonrpc/Peer.ts"
import * as Protocol from "../../src/jsonrpc/Protocol.ts"
import * as MemoryTransport from "../support/MemoryTransport.ts"

const Empty = Schema.Unknown
const line = (message: unknown) => JSON.stringify(message)
const errorLine = (id: Protocol.Id | null, code: number, message: string) => line({ jsonrpc: "2.0", id, error: { code, message } })
const quiet = Logger.layer([])

describe("faults: peer", () => {
  it.effect("beyond maxConcurrentRequests a request is refused at once with -32800; a freed slot is taken again", () =>
    Effect.gen(function*() {
      const mt = yield* MemoryTransport.make
      const peer = yield* Peer.make(mt.transport, { maxConcurrentRequests: 3 })
      yield* Effect.forkChild(peer.serve({
        requests: {
          never: Peer.request(Empty, () => Effect.never),
          ping: Peer.request(Empty, () => Effect.succeed("pong"))
        }
      }))
      yield* mt.send(
        { jsonrpc: "2.0", id: 1, method: "never" },
        { jsonrpc: "2.0", id: 2, method: "never" },
        { jsonrpc: "2.0", id: 3, method: "never" },
        { jsonrpc: "2.0", id: 4, method: "never" },
        { jsonrpc: "2.0", id: 5, method: "ping" }
      )
      assert.strictEqual(yield* mt.nextLine, errorLine(4, -32800, "Too many requests in flight"))
      assert.strictEqual(yield* mt.nextLine, errorLine(5, -32800, "Too many requests in flight"))
      // Unknown methods and bad lines cost nothing to run: they are still answered as such.
      yield* mt.send({ jsonrpc: "2.0", id: 6, method: "nope" })
      assert.strictEqual(yield* mt.nextLine, errorLine(6, -32601, "Method not found: nope"))
      yield* mt.send({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: 2 } })
      assert.strictEqual(yield* mt.nextLine, errorLine(2, -32800, "Request cancelled"))
      yield* mt.send({ jsonrpc: "2.0", id: 7, method: "ping" })
      assert.strictEqual(yield* mt.nextLine, line({ jsonrpc: "2.0", id: 7, result: "pong" }))
    }).pipe(Effect.scoped, Effect.provide(quiet)))

  it.effect("a writer that never completes cannot hold shutdown forever: input EOF ends within grace + flush", () =>
    Effect.gen(function*() {
      const input = yield* Queue.unbounded<Uint8Array, Cause.Done>()
      const writes: Array<string> = []
      // The client stopped reading: the first write never completes.
      const transport: Peer.Transport = {
        input: Stream.fromQueue(input),
        write: (chunk) => Effect.andThen(Effect.sync(() => writes.push(chunk)), Effect.never)
      }
      const run = yield* Effect.forkChild(Effect.scoped(Effect.gen(function*() {
        const peer = yield* Peer.make(transport, { writeQueueCapacity: 2 })
        yield* peer.serve({ requests: { ping: Peer.request(Empty, () => Effect.succeed("pong")) } })
      })).pipe(Effect.provide(quiet)))
      const encoder = new TextEncoder()
      for (let i = 0; i < 20; i++) yield* Queue.offer(input, encoder.encode(`${line({ jsonrpc: "2.0", id: i, method: "ping" })}\n`))
      yield* Queue.end(input)
      yield* TestClock.adjust(Peer.SHUTDOWN_GRACE_MS + Peer.SHUTDOWN_FLUSH_MS - 1)
      assert.isUndefined(run.pollUnsafe())
      yield* TestClock.adjust(1)
      const exit = yield* Fiber.await(run)
      assert.isTrue(Exit.isSuccess(exit))
      assert.strictEqual(writes.length, 1)
    }))

  it.effect("the same when the peer is interrupted (SIGTERM) with requests blocked behind the writer", () =>
    Effect.gen(function*() {
      const input = yield* Queue.unbounded<Uint8Array, Cause.Done>()
      const transport: Peer.Transport = { input: Stream.fromQueue(input), write: () => Effect.never }
      const run = yield* Effect.forkChild(Effect.scoped(Effect.gen(function*() {
        const peer = yield* Peer.make(transport, { writeQueueCapacity: 2 })
        yield* peer.serve({ requests: { ping: Peer.request(Empty, () => Effect.succeed("pong")) } })
      })).pipe(Effect.provide(quiet)))
      const encoder = new TextEncoder()
      for (let i = 0; i < 20; i++) yield* Queue.offer(input, encoder.encode(`${line({ jsonrpc: "2.0", id: i, method: "ping" })}\n`))
      yield* Effect.yieldNow
      const interrupter = yield* Effect.forkChild(Fiber.interrupt(run))
      yield* TestClock.adjust(Peer.SHUTDOWN_GRACE_MS + Peer.SHUTDOWN_FLUSH_MS)
      yield* Fiber.join(interrupter)
      assert.isDefined(run.pollUnsafe())
    }))

  it.effect("a malformed answer to one of our requests fails that request at once; the client is told with id null", () =>
    Effect.gen(function*() {
      const mt = yield* MemoryTransport.make
      const peer = yield* Peer.make(mt.transport)
      yield* Effect.forkChild(peer.serve({ requests: { ping: Peer.request(Empty, () => Effect.succeed("pong")) } }))
      const asking = yield* Effect.forkChild(peer.request("session/request_permission", {}))
      const asked = (yield* mt.next) as { id: number }
      // The error object's code is not a number: not a valid response.
      yield* mt.send({ jsonrpc: "2.0", id: asked.id, error: { code: "x", message: "m" } })
      const failure = yield* Effect.flip(Fiber.join(asking))
      assert.deepStrictEqual(Protocol.toErrorObject(failure), { code: -32603, message: "Invalid response" })
      assert.strictEqual(yield* mt.nextLine, errorLine(null, -32600, "Invalid request"))
      // Its id is ours, not the client's: a client request with the same id gets only its own answer.
      yield* mt.send(
        { jsonrpc: "2.0", id: 5, method: "ping" },
        { jsonrpc: "2.0", id: 5, result: 1, error: { code: 1, message: "both" } }
      )
      assert.strictEqual(yield* mt.nextLine, line({ jsonrpc: "2.0", id: 5, result: "pong" }))
      assert.strictEqual(yield* mt.nextLine, errorLine(null, -32600, "Invalid request"))
    }).pipe(Effect.scoped, Effect.provide(quiet)))

  it.effect("interrupted (SIGTERM) like input EOF: a request that answers its own cancellation answers, not -32800", () =>
    Effect.gen(function*() {
      const mt = yield* MemoryTransport.make
      const release = yield* Deferred.make<void>()
      const served = yield* Effect.forkChild(Effect.scoped(Effect.gen(function*() {
        const peer = yield* Peer.make(mt.transport)
        yield* peer.serve({
          requests: {
            "session/prompt": Peer.request(Empty, () => Effect.as(Deferred.await(release), { stopReason: "cancelled" }), {
              onCancel: () => Deferred.succeed(release, undefined)
            }),
            never: Peer.request(Empty, () => Effect.never)
          }
        })
      })).pipe(Effect.provide(quiet)))
      yield* mt.send({ jsonrpc: "2.0", id: 1, method: "session/prompt" }, { jsonrpc: "2.0", id: 2, method: "never" })
      yield* Effect.yieldNow
      yield* Fiber.interrupt(served)
      const answers = new Set([yield* mt.nextLine, yield* mt.nextLine])
      assert.deepStrictEqual(answers, new Set([
        line({ jsonrpc: "2.0", id: 1, result: { stopReason: "cancelled" } }),
        errorLine(2, -32800, "Request cancelled")
      ]))
    }))
})
