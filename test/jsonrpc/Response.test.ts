/**
 * Responses as the peer writes and reads them (`Response.ts`): every exit of a handler is one
 * JSON-RPC line for its id, and nothing of a defect or of a value JSON cannot hold reaches it.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Protocol from "../../src/jsonrpc/Protocol.ts"
import * as Response from "../../src/jsonrpc/Response.ts"

const written = (line: string) => JSON.parse(line) as unknown

describe("Response", () => {
  it.effect("a result, an RpcError, a cancel, a defect and an unencodable result are each one line for the id", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(written(yield* Response.encode(1, Exit.succeed({ ok: true }))), { jsonrpc: "2.0", id: 1, result: { ok: true } })
      assert.deepStrictEqual(
        written(yield* Response.encode("a", Exit.fail(Protocol.invalidParams("no")))),
        { jsonrpc: "2.0", id: "a", error: { code: Protocol.ErrorCode.InvalidParams, message: "no" } }
      )
      assert.deepStrictEqual(
        written(yield* Response.encode(2, Exit.failCause(Cause.interrupt()))),
        { jsonrpc: "2.0", id: 2, error: { code: Protocol.ErrorCode.RequestCancelled, message: "Request cancelled" } }
      )
      // A defect's message (it may hold a secret) is not echoed.
      const defect = written(yield* Response.encode(3, Exit.die(new Error("token=s3cret"))))
      assert.deepStrictEqual(defect, { jsonrpc: "2.0", id: 3, error: { code: Protocol.ErrorCode.InternalError, message: "Internal error" } })
      assert.deepStrictEqual(
        written(yield* Response.encode(4, Exit.succeed({ n: 1n }))),
        { jsonrpc: "2.0", id: 4, error: { code: Protocol.ErrorCode.InternalError, message: "Internal error" } }
      )
    }))

  it("only an object with a result or an error and no method is meant as a response", () => {
    assert.isTrue(Response.isResponseShaped({ jsonrpc: "2.0", id: 1, result: null }))
    assert.isTrue(Response.isResponseShaped({ id: 1, error: { code: 1, message: "x" } }))
    assert.isFalse(Response.isResponseShaped({ id: 1, method: "m", result: 1 }))
    assert.isFalse(Response.isResponseShaped([{ result: 1 }]))
    assert.isFalse(Response.isResponseShaped({ id: 1 }))
    assert.isFalse(Response.isResponseShaped(null))
  })
})
