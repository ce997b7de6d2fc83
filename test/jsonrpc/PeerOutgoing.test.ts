import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as Peer from "../../src/jsonrpc/Peer.ts"
import * as Protocol from "../../src/jsonrpc/Protocol.ts"
import { Empty, failureOf, line, setup } from "./peerHelpers.ts"

describe("Peer: outgoing requests", () => {
  it.effect("correlates responses by id", () =>
    Effect.gen(function*() {
      const { mt, peer } = yield* setup(() => ({}))
      const a = yield* Effect.forkChild(peer.request("fs/read_text_file", { path: "a" }))
      const b = yield* Effect.forkChild(peer.request("fs/read_text_file", { path: "b" }))
      const first = (yield* mt.next) as { id: number; method: string; params: { path: string } }
      const second = (yield* mt.next) as { id: number; params: { path: string } }
      assert.strictEqual(first.method, "fs/read_text_file")
      assert.notStrictEqual(first.id, second.id)
      yield* mt.send(
        { jsonrpc: "2.0", id: second.id, result: { content: second.params.path } },
        { jsonrpc: "2.0", id: 999, result: "unknown id, ignored" },
        { jsonrpc: "2.0", id: first.id, result: { content: first.params.path } }
      )
      assert.deepStrictEqual(yield* Fiber.join(a), { content: "a" })
      assert.deepStrictEqual(yield* Fiber.join(b), { content: "b" })
    }))

  it.effect("an error response fails with its code, message and data", () =>
    Effect.gen(function*() {
      const { mt, peer } = yield* setup(() => ({}))
      const fiber = yield* Effect.forkChild(peer.request("terminal/create", {}))
      const req = (yield* mt.next) as { id: number }
      yield* mt.send({ jsonrpc: "2.0", id: req.id, error: { code: -32002, message: "nope", data: { why: 1 } } })
      assert.deepStrictEqual(yield* failureOf(fiber), { code: -32002, message: "nope", data: { why: 1 } })
    }))

  it.effect("a timeout fails with requestTimeout and sends $/cancel_request", () =>
    Effect.gen(function*() {
      const { mt, peer } = yield* setup(() => ({}))
      const fiber = yield* Effect.forkChild(peer.request("session/request_permission", {}, { timeout: "5 seconds" }))
      const req = (yield* mt.next) as { id: number }
      yield* TestClock.adjust("5 seconds")
      assert.deepStrictEqual(
        yield* failureOf(fiber),
        Protocol.toErrorObject(Protocol.requestTimeout("session/request_permission"))
      )
      assert.strictEqual(
        yield* mt.nextLine,
        line({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: req.id } })
      )
    }))

  it.effect("the default timeout applies when none is given", () =>
    Effect.gen(function*() {
      const { mt, peer } = yield* setup(() => ({}), { defaultRequestTimeout: "1 second" })
      const fiber = yield* Effect.forkChild(peer.request("x", undefined))
      assert.strictEqual(yield* mt.nextLine, line({ jsonrpc: "2.0", id: 0, method: "x" }))
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(yield* failureOf(fiber), { code: -32001, message: "Request timed out: x" })
    }))

  it.effect("interrupting the caller sends $/cancel_request", () =>
    Effect.gen(function*() {
      const { mt, peer } = yield* setup(() => ({}))
      const fiber = yield* Effect.forkChild(peer.request("session/request_permission", { options: [] }))
      const req = (yield* mt.next) as { id: number }
      yield* Fiber.interrupt(fiber)
      assert.strictEqual(
        yield* mt.nextLine,
        line({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: req.id } })
      )
      // a late response is ignored
      yield* mt.send({ jsonrpc: "2.0", id: req.id, result: {} }, { jsonrpc: "2.0", method: "x" })
    }))

  it.effect("pending requests fail with peerClosed when the input ends", () =>
    Effect.gen(function*() {
      const { mt, peer, server } = yield* setup(() => ({}))
      const fiber = yield* Effect.forkChild(peer.request("fs/read_text_file", {}))
      yield* mt.next
      yield* mt.end
      assert.deepStrictEqual(yield* failureOf(fiber), { code: -32099, message: "Peer closed" })
      yield* Fiber.join(server)
      // no $/cancel_request after close, and new requests fail at once
      assert.strictEqual((yield* mt.messages).length, 1)
      const late = yield* Effect.flip(peer.request("x", {}))
      assert.deepStrictEqual(Protocol.toErrorObject(late), { code: -32099, message: "Peer closed" })
    }))

  it.effect("a handler can call back into the client while serving", () =>
    Effect.gen(function*() {
      const { mt } = yield* setup((peer) => ({
        requests: {
          prompt: Peer.request(Empty, () =>
            Effect.map(peer.request("session/request_permission", { toolCall: "t" }), (answer) => ({ answer })))
        }
      }))
      yield* mt.send({ jsonrpc: "2.0", id: "p1", method: "prompt" })
      const req = (yield* mt.next) as { id: number; method: string }
      assert.strictEqual(req.method, "session/request_permission")
      yield* mt.send({ jsonrpc: "2.0", id: req.id, result: { outcome: "selected" } })
      assert.strictEqual(yield* mt.nextLine, line({ jsonrpc: "2.0", id: "p1", result: { answer: { outcome: "selected" } } }))
    }))
})
