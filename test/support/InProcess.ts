/**
 * The ACP server in this process, over an in-memory transport, with a client that sends one
 * request at a time and collects what comes before its answer. Every message the server
 * writes is checked against the official ACP schema.
 *
 *   const client = yield* InProcess.serve(Skein.layer({ home, script }))
 *   const { result, error, notifications } = yield* client.request("session/new", { cwd, mcpServers: [] })
 *   yield* client.end   // stdin EOF; waits for the server to finish
 */
import { assert } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import type * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type { Runtime } from "../../src/runtime/Api.ts"
import { serve as serveAcp } from "../../src/server/AcpServer.ts"
import type { Options } from "../../src/server/Connection.ts"
import { makeOutboundChecker } from "./AcpSchema.ts"
import * as MemoryTransport from "./MemoryTransport.ts"

export interface Answer {
  readonly result: any
  readonly error: any
  /** Everything the server wrote before the answer (updates, requests to the client). */
  readonly notifications: Array<any>
}

export interface Client {
  readonly mt: MemoryTransport.MemoryTransport
  readonly request: (method: string, params: unknown) => Effect.Effect<Answer>
  /** Ends the input and waits for the server to return. */
  readonly end: Effect.Effect<void>
}

export const serve = <E>(layer: Layer.Layer<Runtime, E>, options?: Partial<Options>): Effect.Effect<Client, never, Scope.Scope> =>
  Effect.gen(function*() {
    const mt = yield* MemoryTransport.make
    const checker = makeOutboundChecker()
    const fiber = yield* serveAcp(mt.transport, { version: "test", ...options }).pipe(Effect.provide(layer), Effect.forkScoped)
    let id = 0
    const request = (method: string, params: unknown) =>
      Effect.gen(function*() {
        const message = { jsonrpc: "2.0", id: ++id, method, params }
        checker.sawRequest(message)
        yield* mt.send(message)
        const notifications: Array<any> = []
        for (;;) {
          const out = (yield* mt.next) as any
          assert.deepStrictEqual(checker.check(out), [], JSON.stringify(out))
          if (out.id === id) return { result: out.result, error: out.error, notifications }
          notifications.push(out)
        }
      })
    return { mt, request, end: Effect.andThen(mt.end, Effect.asVoid(Fiber.await(fiber))) }
  })
