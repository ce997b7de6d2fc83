import { assert, describe, it } from "@effect/vitest"
import { Result, Schema } from "effect"
import * as Protocol from "../../src/jsonrpc/Protocol.ts"

const issueOf = (schema: Schema.Constraint, input: unknown, reportInput = false) => {
  const result = Schema.decodeUnknownResult(schema as Schema.Codec<unknown, unknown>)(input, {
    errors: "all",
    reportInput
  })
  if (Result.isSuccess(result)) throw new Error("expected a decode failure")
  return result.failure.issue
}

describe("Protocol.classify", () => {
  it("recognizes requests, notifications and responses", () => {
    assert.deepStrictEqual(Protocol.classify({ jsonrpc: "2.0", id: 1, method: "a", params: { x: 1 } }), {
      _tag: "Request",
      id: 1,
      method: "a",
      params: { x: 1 }
    })
    assert.deepStrictEqual(Protocol.classify({ jsonrpc: "2.0", id: "x", method: "a" }), {
      _tag: "Request",
      id: "x",
      method: "a",
      params: undefined
    })
    assert.deepStrictEqual(Protocol.classify({ jsonrpc: "2.0", method: "n", params: [1] }), {
      _tag: "Notification",
      method: "n",
      params: [1]
    })
    assert.deepStrictEqual(Protocol.classify({ jsonrpc: "2.0", id: 3, result: null }), {
      _tag: "Response",
      id: 3,
      result: null
    })
    assert.deepStrictEqual(
      Protocol.classify({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } }),
      { _tag: "ErrorResponse", id: null, error: { code: -32700, message: "Parse error" } }
    )
  })

  it("keeps a valid id on invalid messages and drops an invalid one", () => {
    const cases: Array<[unknown, Protocol.Id | null]> = [
      [[], null],
      [[{ jsonrpc: "2.0", id: 1, method: "a" }], null],
      [42, null],
      ["x", null],
      [null, null],
      [{ jsonrpc: "2.0" }, null],
      [{ jsonrpc: "2.0", id: 7, method: 5 }, 7],
      [{ jsonrpc: "1.0", id: "k", method: "a" }, "k"],
      [{ id: 2, method: "a" }, 2],
      [{ jsonrpc: "2.0", id: null, method: "a" }, null],
      [{ jsonrpc: "2.0", id: { a: 1 }, method: "a" }, null],
      [{ jsonrpc: "2.0", id: 4, method: "a", params: "str" }, 4],
      [{ jsonrpc: "2.0", id: 5 }, 5],
      [{ jsonrpc: "2.0", id: 6, result: 1, error: { code: 1, message: "m" } }, 6],
      [{ jsonrpc: "2.0", id: 8, error: { code: "x", message: "m" } }, 8]
    ]
    for (const [json, id] of cases) {
      assert.deepStrictEqual(Protocol.classify(json), { _tag: "Invalid", id }, JSON.stringify(json))
    }
  })
})

describe("Protocol errors", () => {
  it("named constructors carry the JSON-RPC codes", () => {
    assert.deepStrictEqual(Protocol.toErrorObject(Protocol.parseError()), { code: -32700, message: "Parse error" })
    assert.strictEqual(Protocol.invalidRequest().code, -32600)
    assert.deepStrictEqual(Protocol.toErrorObject(Protocol.methodNotFound("x/y")), {
      code: -32601,
      message: "Method not found: x/y"
    })
    assert.strictEqual(Protocol.invalidParams("m").code, -32602)
    assert.deepStrictEqual(Protocol.toErrorObject(Protocol.internalError()), { code: -32603, message: "Internal error" })
    assert.deepStrictEqual(Protocol.toErrorObject(Protocol.requestCancelled()), {
      code: -32800,
      message: "Request cancelled"
    })
    assert.strictEqual(Protocol.resourceNotFound("session").code, -32002)
    assert.strictEqual(Protocol.requestTimeout("m").code, Protocol.ErrorCode.RequestTimeout)
    assert.strictEqual(Protocol.peerClosed().code, Protocol.ErrorCode.PeerClosed)
  })

  it("keeps data through the wire form", () => {
    const error = Protocol.fromErrorObject({ code: 1, message: "m", data: { a: [1] } })
    assert.instanceOf(error, Protocol.RpcError)
    assert.deepStrictEqual(Protocol.toErrorObject(error), { code: 1, message: "m", data: { a: [1] } })
  })

  it("clips long method names", () => {
    assert.isTrue(Protocol.methodNotFound("m".repeat(10_000)).message.length < 200)
  })
})

describe("Protocol.formatIssue", () => {
  const Params = Schema.Struct({ cwd: Schema.String, sessionId: Schema.String })

  it("names paths and expected types", () => {
    assert.strictEqual(
      Protocol.formatIssue(issueOf(Params, { cwd: 1 })),
      `Invalid params: expected string at "cwd"; missing "sessionId"`
    )
    assert.strictEqual(Protocol.formatIssue(issueOf(Params, null)), "Invalid params: expected object")
    const Nested = Schema.Struct({ entries: Schema.Array(Schema.Struct({ content: Schema.String })) })
    assert.strictEqual(
      Protocol.formatIssue(issueOf(Nested, { entries: [{ content: "a" }, {}] })),
      `Invalid params: missing "entries[1].content"`
    )
  })

  it("never contains the value, even when the issue reports it", () => {
    const secret = "sk-live-SECRET-0123456789"
    const Tricky = Schema.Struct({
      port: Schema.Number,
      mode: Schema.Literals(["a", "b"]),
      name: Schema.String.check(Schema.makeFilter((s: string) => s.length < 3 || `bad name ${s}`)),
      token: Schema.String.check(Schema.isMaxLength(3)),
      either: Schema.Union([Schema.Number, Schema.Boolean])
    })
    const input = { port: secret, mode: secret, name: secret, token: secret, either: secret }
    for (const reportInput of [false, true]) {
      const message = Protocol.formatIssue(issueOf(Tricky, input, reportInput))
      assert.notInclude(message, "SECRET")
      assert.include(message, `expected number at "port"`)
      assert.include(message, `at "name"`)
      assert.include(message, `at "token"`)
    }
  })

  it("bounds the number of entries", () => {
    const Many = Schema.Struct(Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`k${i}`, Schema.String])))
    const message = Protocol.formatIssue(issueOf(Many, {}))
    assert.include(message, "and 22 more")
  })
})
