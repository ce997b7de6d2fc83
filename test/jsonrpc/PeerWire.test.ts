import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as Peer from "../../src/jsonrpc/Peer.ts"
import * as Protocol from "../../src/jsonrpc/Protocol.ts"
import { captureLogs, Empty, errorLine, line, ping, pong, setup } from "./peerHelpers.ts"

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
          bigint: Peer.request(Empty, () => Effect.succeed({ n: 1n })),
          badData: Peer.request(Empty, () => Effect.fail(new Protocol.RpcError({ code: 1, message: "m", data: 1n })))
        }
      })).pipe(Effect.provide(layer))
      yield* mt.send(
        { jsonrpc: "2.0", id: 1, method: "missing" },
        { jsonrpc: "2.0", id: 2, method: "boom" },
        { jsonrpc: "2.0", id: 3, method: "bigint" },
        { jsonrpc: "2.0", id: 4, method: "badData" }
      )
      assert.strictEqual(yield* mt.nextLine, errorLine(1, -32002, "Resource not found: session"))
      assert.strictEqual(yield* mt.nextLine, errorLine(2, -32603, "Internal error"))
      assert.strictEqual(yield* mt.nextLine, errorLine(3, -32603, "Internal error"))
      assert.strictEqual(yield* mt.nextLine, errorLine(4, -32603, "Internal error"))
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
