import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Logger, Schema } from "effect"
import * as fc from "fast-check"
import * as Peer from "../../src/jsonrpc/Peer.ts"
import * as Protocol from "../../src/jsonrpc/Protocol.ts"
import { Empty, setup } from "./peerHelpers.ts"

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

  const scenario = (ops: ReadonlyArray<Op>): Effect.Effect<void> =>
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
