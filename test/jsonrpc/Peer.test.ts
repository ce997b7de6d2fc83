import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Logger, Ref, Schema } from "effect"
import { TestClock } from "effect/testing"
import * as fc from "fast-check"
import * as Peer from "../../src/jsonrpc/Peer.ts"
import * as Protocol from "../../src/jsonrpc/Protocol.ts"
import * as MemoryTransport from "../support/MemoryTransport.ts"

const Empty = Schema.Unknown

/** Starts a peer serving `handlers` over a fresh memory transport. */
const setup = <H extends Peer.Handlers>(
  handlers: (peer: Peer.Peer) => H,
  options?: Peer.Options
) =>
  Effect.gen(function*() {
    const mt = yield* MemoryTransport.make
    const peer = yield* Peer.make(mt.transport, options)
    const server = yield* Effect.forkChild(peer.serve(handlers(peer)))
    return { mt, peer, server }
  })

const ping = Peer.request(Empty, () => Effect.succeed("pong"))

const line = (message: unknown) => JSON.stringify(message)
const errorLine = (id: Protocol.Id | null, code: number, message: string) =>
  line({ jsonrpc: "2.0", id, error: { code, message } })
const pong = (id: Protocol.Id) => line({ jsonrpc: "2.0", id, result: "pong" })

/** The RpcError a fiber failed with, in its wire form. */
const failureOf = <A>(fiber: Fiber.Fiber<A, Protocol.RpcError>) =>
  Effect.map(Effect.flip(Fiber.join(fiber)), (error) => {
    assert.instanceOf(error, Protocol.RpcError)
    return Protocol.toErrorObject(error)
  })

/** Collects log messages instead of printing them. */
const captureLogs = Effect.gen(function*() {
  const logs: Array<string> = []
  const logger = Logger.make<unknown, void>(({ cause, message }) => {
    logs.push(`${String(message)} ${String(cause)}`)
  })
  return { logs, layer: Logger.layer([logger]) }
})

describe("Peer: errors on the wire", () => {
  it.effect("malformed JSON → -32700 with id null, then keeps serving", () =>
    Effect.gen(function*() {
      const { mt } = yield* setup(() => ({ requests: { ping } }))
      yield* mt.sendRaw("{not json\n", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n")
      assert.strictEqual(yield* mt.nextLine, errorLine(null, -32700, "Parse error"))
      assert.strictEqual(yield* mt.nextLine, pong(1))
    }))

  it.effect("valid JSON that is not a message → -32600, with its id when valid", () =>
    Effect.gen(function*() {
      const { mt } = yield* setup(() => ({ requests: { ping } }))
      yield* mt.sendRaw("[]\n", "{\"jsonrpc\":\"2.0\"}\n", "42\n", "\"x\"\n", "null\n")
      yield* mt.send({ jsonrpc: "2.0", id: 7, method: 5 }, { jsonrpc: "2.0", id: "s", method: "ping", params: 3 })
      yield* mt.send({ jsonrpc: "2.0", id: 2, method: "ping" })
      for (let i = 0; i < 5; i++) assert.strictEqual(yield* mt.nextLine, errorLine(null, -32600, "Invalid request"))
      assert.strictEqual(yield* mt.nextLine, errorLine(7, -32600, "Invalid request"))
      assert.strictEqual(yield* mt.nextLine, errorLine("s", -32600, "Invalid request"))
      assert.strictEqual(yield* mt.nextLine, pong(2))
    }))

  it.effect("a too long line → -32600 with id null, and the next line is parsed", () =>
    Effect.gen(function*() {
      const { mt } = yield* setup(() => ({ requests: { ping } }), { maxLineBytes: 64 })
      yield* mt.sendRaw(`{"jsonrpc":"2.0","id":1,"method":"ping","params":"${"x".repeat(500)}"}\n`)
      yield* mt.send({ jsonrpc: "2.0", id: 2, method: "ping" })
      assert.strictEqual(yield* mt.nextLine, errorLine(null, -32600, "Message too long"))
      assert.strictEqual(yield* mt.nextLine, pong(2))
    }))

  it.effect("deeply nested JSON does not crash the peer", () =>
    Effect.gen(function*() {
      const { mt } = yield* setup(() => ({ requests: { ping } }))
      yield* mt.sendRaw(`${"[".repeat(100_000)}\n`, `${"[".repeat(100_000)}${"]".repeat(100_000)}\n`)
      yield* mt.send({ jsonrpc: "2.0", id: 1, method: "ping" })
      assert.strictEqual(yield* mt.nextLine, errorLine(null, -32700, "Parse error"))
      const second = (yield* mt.next) as { id: null; error: { code: number } }
      assert.strictEqual(second.id, null)
      assert.include([-32700, -32600], second.error.code)
      assert.strictEqual(yield* mt.nextLine, pong(1))
    }))

  it.effect("unknown method → -32601; unknown notification is ignored", () =>
    Effect.gen(function*() {
      const { mt } = yield* setup(() => ({ requests: { ping } }))
      yield* mt.send(
        { jsonrpc: "2.0", id: 1, method: "nope" },
        { jsonrpc: "2.0", method: "nope/notify", params: {} },
        { jsonrpc: "2.0", id: 2, method: "__proto__" },
        { jsonrpc: "2.0", id: 3, method: "ping" }
      )
      assert.strictEqual(yield* mt.nextLine, errorLine(1, -32601, "Method not found: nope"))
      assert.strictEqual(yield* mt.nextLine, errorLine(2, -32601, "Method not found: __proto__"))
      assert.strictEqual(yield* mt.nextLine, pong(3))
    }))

  it.effect("invalid params → -32602 naming paths, never the secret value", () =>
    Effect.gen(function*() {
      const secret = "sk-ant-SECRET-abcdef"
      const Params = Schema.Struct({ cwd: Schema.String, sessionId: Schema.String, port: Schema.optional(Schema.Number) })
      const { mt } = yield* setup(() => ({
        requests: { "session/new": Peer.request(Params, (p) => Effect.succeed({ cwd: p.cwd })) }
      }))
      yield* mt.send({ jsonrpc: "2.0", id: 1, method: "session/new", params: { cwd: 1, port: secret } })
      const text = yield* mt.nextLine
      assert.strictEqual(
        text,
        errorLine(1, -32602, `Invalid params: expected string at "cwd"; missing "sessionId"; expected number | undefined at "port"`)
      )
      assert.notInclude(yield* mt.output, "SECRET")
    }))

  it.effect("a handler's RpcError is the response; a defect is -32603, logged, never echoed", () =>
    Effect.gen(function*() {
      const { layer, logs } = yield* captureLogs
      const { mt } = yield* setup(() => ({
        requests: {
          missing: Peer.request(Empty, () => Effect.fail(Protocol.resourceNotFound("session"))),
          boom: Peer.request(Empty, () => Effect.die(new Error("kaboom sk-SECRET"))),
          bigint: Peer.request(Empty, () => Effect.succeed({ n: 1n }))
        }
      })).pipe(Effect.provide(layer))
      yield* mt.send(
        { jsonrpc: "2.0", id: 1, method: "missing" },
        { jsonrpc: "2.0", id: 2, method: "boom" },
        { jsonrpc: "2.0", id: 3, method: "bigint" }
      )
      assert.strictEqual(yield* mt.nextLine, errorLine(1, -32002, "Resource not found: session"))
      assert.strictEqual(yield* mt.nextLine, errorLine(2, -32603, "Internal error"))
      assert.strictEqual(yield* mt.nextLine, errorLine(3, -32603, "Internal error"))
      assert.notInclude(yield* mt.output, "SECRET")
      assert.isTrue(logs.some((l) => l.includes("kaboom")))
    }))

  it.effect("a void result is sent as null", () =>
    Effect.gen(function*() {
      const { mt } = yield* setup(() => ({ requests: { v: Peer.request(Empty, () => Effect.void) } }))
      yield* mt.send({ jsonrpc: "2.0", id: 1, method: "v" })
      assert.strictEqual(yield* mt.nextLine, line({ jsonrpc: "2.0", id: 1, result: null }))
    }))
})

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

describe("Peer: exactly one response per request", () => {
  type Kind = "ok" | "slow" | "never" | "fail" | "die" | "cancelable" | "badParams" | "unknown"
  type Op =
    | { readonly op: "request"; readonly id: Protocol.Id; readonly kind: Kind }
    | { readonly op: "cancel"; readonly id: Protocol.Id }
    | { readonly op: "garbage"; readonly text: string }
    | { readonly op: "yield"; readonly n: number }

  const idArb = fc.oneof(fc.integer({ min: 0, max: 4 }), fc.constantFrom("a", "b"))
  const opArb: fc.Arbitrary<Op> = fc.oneof(
    fc.record({
      op: fc.constant("request" as const),
      id: idArb,
      kind: fc.constantFrom<Kind>("ok", "slow", "never", "fail", "die", "cancelable", "badParams", "unknown")
    }),
    fc.record({ op: fc.constant("cancel" as const), id: idArb }),
    fc.record({ op: fc.constant("garbage" as const), text: fc.constantFrom("{bad", "[]", "{\"jsonrpc\":\"2.0\"}") }),
    fc.record({ op: fc.constant("yield" as const), n: fc.integer({ min: 0, max: 30 }) })
  )

  const yields = (n: number) => Effect.repeat(Effect.yieldNow, { times: n })

  const scenario = (ops: ReadonlyArray<Op>) =>
    Effect.gen(function*() {
      const waiting = new Map<number, Deferred.Deferred<void>>()
      const deferredFor = (key: number) => {
        let d = waiting.get(key)
        if (d === undefined) {
          d = Deferred.makeUnsafe<void>()
          waiting.set(key, d)
        }
        return d
      }
      const Keyed = Schema.Struct({ key: Schema.Number })
      const { mt, server } = yield* setup(() => ({
        requests: {
          ok: Peer.request(Empty, () => Effect.succeed("ok")),
          slow: Peer.request(Keyed, (p) => Effect.as(yields(p.key % 50), "slow")),
          never: Peer.request(Empty, () => Effect.never),
          fail: Peer.request(Empty, () => Effect.fail(Protocol.resourceNotFound("x"))),
          die: Peer.request(Empty, () => Effect.die("boom")),
          badParams: Peer.request(Keyed, () => Effect.succeed("unreachable")),
          cancelable: Peer.request(
            Keyed,
            (p) => Effect.as(Deferred.await(deferredFor(p.key)), { stopReason: "cancelled" }),
            { onCancel: (p) => Deferred.succeed(deferredFor(p.key), undefined) }
          )
        }
      })).pipe(Effect.provide(Logger.layer([])))
      const sent = new Map<string, number>()
      let garbage = 0
      let key = 0
      for (const op of ops) {
        switch (op.op) {
          case "request": {
            const k = String(op.id)
            sent.set(`${typeof op.id}:${k}`, (sent.get(`${typeof op.id}:${k}`) ?? 0) + 1)
            const params = op.kind === "badParams" ? { key: "x" } : { key: key++ }
            yield* mt.send({ jsonrpc: "2.0", id: op.id, method: op.kind, params })
            break
          }
          case "cancel":
            yield* mt.send({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: op.id } })
            break
          case "garbage":
            garbage++
            yield* mt.sendRaw(`${op.text}\n`)
            break
          case "yield":
            yield* yields(op.n)
        }
      }
      yield* mt.end
      yield* Fiber.join(server)
      const responses = new Map<string, number>()
      let nullIds = 0
      for (const message of (yield* mt.messages) as ReadonlyArray<{ id: Protocol.Id | null }>) {
        assert.isTrue("result" in message || "error" in message)
        if (message.id === null) nullIds++
        else {
          const k = `${typeof message.id}:${String(message.id)}`
          responses.set(k, (responses.get(k) ?? 0) + 1)
        }
      }
      assert.deepStrictEqual(responses, sent)
      assert.strictEqual(nullIds, garbage)
    }).pipe(Effect.scoped)

  it("under random interleavings (property)", () =>
    fc.assert(
      fc.asyncProperty(fc.array(opArb, { maxLength: 40 }), (ops) => Effect.runPromise(scenario(ops))),
      { numRuns: 150 }
    ))
})
