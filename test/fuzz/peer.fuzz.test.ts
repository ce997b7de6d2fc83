/**
 * Fuzzing the JSON-RPC peer in process (framing + peer over a memory transport): random,
 * truncated and mutated messages, random unicode and whitespace, cut into random chunks (also
 * in the middle of a UTF-8 character). Whatever comes in: the peer never fails or dies, every
 * line it writes is one JSON-RPC 2.0 message, every request with a readable id is answered
 * exactly once (the oracle in test/fixtures/faults/fuzz.ts), and it still answers afterwards.
 */
import { describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Logger, Schema } from "effect"
import * as fc from "fast-check"
import { expect } from "vitest"
import * as Peer from "../../src/jsonrpc/Peer.ts"
import * as Protocol from "../../src/jsonrpc/Protocol.ts"
import * as MemoryTransport from "../support/MemoryTransport.ts"
import {
  chunked,
  compareAnswers,
  cutsArb,
  expectedAnswers,
  type Flip,
  flipBytes,
  flipsArb,
  type Op,
  opArb,
  render,
  type Vocabulary
} from "../fixtures/faults/fuzz.ts"
import { checkJsonRpcLine, idKey } from "../fixtures/faults/harness.ts"

const Any = Schema.Unknown
const Keyed = Schema.Struct({ key: Schema.Number })

const vocabulary: Vocabulary<void> = {
  requests: [
    () => ({ method: "ping" }),
    (_, salt) => ({ method: "echo", params: { salt, text: "a\u2028b" } }),
    (_, salt) => ({ method: "slow", params: { key: salt % 40 } }),
    () => ({ method: "never" }),
    () => ({ method: "fail" }),
    () => ({ method: "die" }),
    (_, salt) => ({ method: "cancelable", params: { key: salt % 5 } }),
    (_, salt) => ({ method: "keyed", params: salt % 2 === 0 ? { key: salt } : { key: "not a number" } }),
    () => ({ method: "unknown/method" }),
    () => ({ method: "__proto__" })
  ],
  notifications: [
    (_, salt) => ({ method: "note", params: { salt } }),
    () => ({ method: "note", params: "not structured" }),
    () => ({ method: "unknown/notification" }),
    () => ({ method: "$/cancel_request", params: { requestId: { nested: true } } })
  ]
}

const FINAL_ID = "final-4f7c1c2e"

const scenario = (ops: ReadonlyArray<Op<void>>, flips: ReadonlyArray<Flip>, cuts: ReadonlyArray<number>, yields: number) =>
  Effect.gen(function*() {
    const releases = new Map<number, Deferred.Deferred<void>>()
    const releaseOf = (key: number) => {
      let d = releases.get(key)
      if (d === undefined) {
        d = Deferred.makeUnsafe<void>()
        releases.set(key, d)
      }
      return d
    }
    const mt = yield* MemoryTransport.make
    // A small in-flight limit, so refusals happen too.
    const peer = yield* Peer.make(mt.transport, { maxConcurrentRequests: 16, writeQueueCapacity: 8 })
    const server = yield* Effect.forkChild(peer.serve({
      requests: {
        ping: Peer.request(Any, () => Effect.succeed("pong")),
        echo: Peer.request(Any, (params) => Effect.succeed(params)),
        slow: Peer.request(Keyed, (p) => Effect.as(Effect.repeat(Effect.yieldNow, { times: p.key }), "slow")),
        never: Peer.request(Any, () => Effect.never),
        fail: Peer.request(Any, () => Effect.fail(Protocol.resourceNotFound("thing"))),
        die: Peer.request(Any, () => Effect.die(new Error("boom"))),
        keyed: Peer.request(Keyed, (p) => Effect.succeed(p.key)),
        cancelable: Peer.request(Keyed, (p) => Effect.as(Deferred.await(releaseOf(p.key)), { stopReason: "cancelled" }), {
          onCancel: (p) => Deferred.succeed(releaseOf(p.key), undefined)
        })
      },
      notifications: {
        note: Peer.notification(Schema.Struct({ salt: Schema.Number }), () => Effect.void)
      }
    }))

    const text = `${ops.map((op) => render(op, vocabulary, undefined)).join("\n")}\n`
    const bytes = flipBytes(new TextEncoder().encode(text), flips)
    for (const piece of chunked(bytes, cuts)) {
      yield* mt.sendRaw(piece)
      yield* Effect.repeat(Effect.yieldNow, { times: yields })
    }
    // Still answering: a fresh line (ending any garbage before it), then a plain request.
    const final = `\n${JSON.stringify({ jsonrpc: "2.0", id: FINAL_ID, method: "ping" })}\n`
    yield* mt.sendRaw(final)
    yield* mt.end
    const exit = yield* Fiber.await(server)

    const all = new Uint8Array(bytes.length + new TextEncoder().encode(final).length)
    all.set(bytes)
    all.set(new TextEncoder().encode(final), bytes.length)
    const expected = expectedAnswers(all)

    const output = yield* mt.output
    const problems: Array<string> = []
    if (!Exit.isSuccess(exit)) problems.push(`serve ended with ${String(exit.cause)}`)
    if (!output.endsWith("\n")) problems.push("output does not end with a newline")
    const responses = new Map<string, number>()
    let nulls = 0
    let finalAnswer: unknown
    for (const line of output.split("\n").slice(0, -1)) {
      const shape = checkJsonRpcLine(line)
      if (shape.length > 0) {
        problems.push(...shape)
        continue
      }
      const m = JSON.parse(line) as { id?: unknown; method?: unknown; result?: unknown }
      if (m.method !== undefined) {
        problems.push(`the peer sent a request or notification of its own: ${line.slice(0, 100)}`)
        continue
      }
      if (m.id === null) nulls++
      else responses.set(idKey(m.id), (responses.get(idKey(m.id)) ?? 0) + 1)
      if (m.id === FINAL_ID) finalAnswer = m.result
    }
    problems.push(...compareAnswers(expected, responses, nulls))
    if (finalAnswer !== "pong") problems.push(`the final ping got ${JSON.stringify(finalAnswer)}`)
    return problems
  }).pipe(Effect.scoped, Effect.provide(Logger.layer([])))

describe("fuzz: JSON-RPC peer, in process", () => {
  it("never fails, writes only JSON-RPC, answers each request with a readable id exactly once", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(opArb<void>(), { minLength: 1, maxLength: 60 }),
        flipsArb,
        cutsArb,
        fc.integer({ min: 0, max: 5 }),
        async (ops, flips, cuts, yields) => {
          const problems = await Effect.runPromise(scenario(ops, flips, cuts, yields))
          expect(problems).toEqual([])
        }
      ),
      { numRuns: 1000 }
    )
  })

  it("the oracle is not vacuous: the generated inputs hit every kind of answer", () => {
    const samples = fc.sample(fc.array(opArb<void>(), { minLength: 20, maxLength: 60 }), 50)
    let ids = 0
    let nulls = 0
    for (const ops of samples) {
      const e = expectedAnswers(new TextEncoder().encode(`${ops.map((op) => render(op, vocabulary, undefined)).join("\n")}\n`))
      for (const n of e.ids.values()) ids += n
      nulls += e.nulls
    }
    expect(ids).toBeGreaterThan(300)
    expect(nulls).toBeGreaterThan(100)
  })
})
