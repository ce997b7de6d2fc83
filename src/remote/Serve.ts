/**
 * `skein serve`: `SessionRpcs` over a unix socket, TCP or a WebSocket, answered by the Runtime
 * in context. Messages are NDJSON (`RpcSerialization.layerNdjson`).
 *
 * - unix: the socket file is created mode 0600 (the umask is narrowed while it is made), so
 *   only its user can connect; a stale file left by a dead server is replaced, a live one is
 *   refused.
 * - tcp and ws: every request must carry the token (`Authorization: Bearer …`), compared in
 *   constant time; a WebSocket without it is refused at the upgrade (401).
 */
import * as Crypto from "node:crypto"
import * as Http from "node:http"
import * as Net from "node:net"
import * as NodeFs from "node:fs"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeSocketServer from "@effect/platform-node/NodeSocketServer"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { RpcSerialization, RpcServer } from "effect/rpc"
import * as SocketServer from "effect/socket/SocketServer"
import type { Runtime } from "../runtime/Api.ts"
import { type Address, format } from "./Address.ts"
import * as Handlers from "./Handlers.ts"
import { SessionRpcs } from "./Rpcs.ts"

export class ServeError extends Error {
  readonly _tag = "ServeError"
}

/** Whether something answers at a unix socket path. */
const answers = (path: string): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = Net.connect({ path })
    socket.once("connect", () => {
      socket.destroy()
      resolve(true)
    })
    socket.once("error", () => resolve(false))
  })

/** A socket server at `path`, made owner-only. */
const unixServer = (path: string) =>
  Layer.effect(SocketServer.SocketServer, Effect.gen(function*() {
    const existing = NodeFs.existsSync(path) ? NodeFs.lstatSync(path) : undefined
    if (existing !== undefined) {
      if (!existing.isSocket()) return yield* Effect.die(new ServeError(`${path} exists and is not a socket`))
      if (yield* Effect.promise(() => answers(path))) return yield* Effect.die(new ServeError(`A server already listens at ${path}`))
      NodeFs.unlinkSync(path)
    }
    // Created 0600: nobody else can connect, not even in the moment before a chmod.
    const umask = process.umask(0o177)
    const server = yield* NodeSocketServer.make({ path }).pipe(Effect.ensuring(Effect.sync(() => process.umask(umask))))
    yield* Effect.addFinalizer(() => Effect.sync(() => NodeFs.rmSync(path, { force: true })))
    return server
  }))

const sameSecret = (given: string, expected: string): boolean =>
  Crypto.timingSafeEqual(Crypto.createHash("sha256").update(given).digest(), Crypto.createHash("sha256").update(expected).digest())

/** The WebSocket protocol at `path`, refusing an upgrade without the token. */
const websocket = (path: string, token: string) =>
  Layer.effect(RpcServer.Protocol, Effect.gen(function*() {
    const { httpEffect, protocol } = yield* RpcServer.makeProtocolWithHttpEffectWebsocket
    const router = yield* HttpRouter.HttpRouter
    yield* router.add("GET", path as HttpRouter.PathInput, Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const given = request.headers["authorization"]
      const bearer = typeof given === "string" && given.startsWith("Bearer ") ? given.slice("Bearer ".length) : undefined
      if (bearer === undefined || !sameSecret(bearer, token)) {
        yield* Effect.logWarning(`skein serve: refused a WebSocket connection: ${given === undefined ? "no token" : "a wrong token"}`)
        return HttpServerResponse.text("A valid token is needed (Authorization: Bearer …)\n", { status: 401 })
      }
      return yield* httpEffect
    }))
    return protocol
  }))

/** The procedures a server answers: the local runtime's (`Handlers.layer`), or a cluster runner's. */
export type Procedures<R> = Layer.Layer<Layer.Success<typeof Handlers.layer>, never, R>

/** Serves `SessionRpcs` at `address` for as long as the layer lives. */
export function layer(address: Address, token: string | undefined): Layer.Layer<never, unknown, Runtime>
export function layer<R>(address: Address, token: string | undefined, procedures: Procedures<R>): Layer.Layer<never, unknown, R>
export function layer(address: Address, token: string | undefined, procedures: Procedures<unknown> = Handlers.layer): Layer.Layer<never, unknown, unknown> {
  const handlers = Layer.mergeAll(procedures, Handlers.layerAuth(address._tag === "unix" ? undefined : token))
  const rpc = RpcServer.layer(SessionRpcs, { concurrency: "unbounded" }).pipe(Layer.provide(handlers))
  switch (address._tag) {
    case "unix":
    case "tcp":
      return rpc.pipe(
        // Fresh: a cluster runner's own RPC server is built from the same layer, on its own socket.
        Layer.provide(Layer.fresh(RpcServer.layerProtocolSocketServer)),
        // No Nagle delay: a turn's updates are many small writes.
        Layer.provide(address._tag === "unix" ? unixServer(address.path) : NodeSocketServer.layer({ host: address.host, port: address.port, noDelay: true })),
        Layer.provide(RpcSerialization.layerNdjson)
      )
    case "ws":
      return HttpRouter.serve(rpc.pipe(Layer.provide(websocket(address.path, token!))), { disableListenLog: true, disableLogger: true }).pipe(
        Layer.provide(RpcSerialization.layerNdjson),
        Layer.provide(NodeHttpServer.layer(() => Http.createServer(), { host: address.host, port: address.port }))
      )
  }
}

export { format }
