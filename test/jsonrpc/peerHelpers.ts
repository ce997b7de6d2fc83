/** Shared helpers for the Peer tests: a served peer over a memory transport and exact expected lines. */
import { assert } from "@effect/vitest"
import { Effect, Fiber, Logger, Schema } from "effect"
import * as Peer from "../../src/jsonrpc/Peer.ts"
import * as Protocol from "../../src/jsonrpc/Protocol.ts"
import * as MemoryTransport from "../support/MemoryTransport.ts"

export const Empty = Schema.Unknown

/** Starts a peer serving `handlers` over a fresh memory transport. */
export const setup = <H extends Peer.Handlers>(
  handlers: (peer: Peer.Peer) => H,
  options?: Peer.Options
) =>
  Effect.gen(function*() {
    const mt = yield* MemoryTransport.make
    const peer = yield* Peer.make(mt.transport, options)
    const server = yield* Effect.forkChild(peer.serve(handlers(peer)))
    return { mt, peer, server }
  })

export const ping = Peer.request(Empty, () => Effect.succeed("pong"))

export const line = (message: unknown) => JSON.stringify(message)
export const errorLine = (id: Protocol.Id | null, code: number, message: string) =>
  line({ jsonrpc: "2.0", id, error: { code, message } })
export const pong = (id: Protocol.Id) => line({ jsonrpc: "2.0", id, result: "pong" })

/** The RpcError a fiber failed with, in its wire form. */
export const failureOf = <A>(fiber: Fiber.Fiber<A, Protocol.RpcError>) =>
  Effect.map(Effect.flip(Fiber.join(fiber)), (error) => {
    assert.instanceOf(error, Protocol.RpcError)
    return Protocol.toErrorObject(error)
  })

/** Collects log messages instead of printing them. */
export const captureLogs = Effect.gen(function*() {
  const logs: Array<string> = []
  const logger = Logger.make<unknown, void>(({ cause, message }) => {
    logs.push(`${String(message)} ${String(cause)}`)
  })
  return { logs, layer: Logger.layer([logger]) }
})
