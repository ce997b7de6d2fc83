/**
 * `skein serve`: `SessionRpcs` over a unix socket, TCP or a WebSocket, answered by the Runtime
 * in context. Messages are NDJSON (`Ndjson`: one pass over each chunk, 16 MiB a message).
 *
 * - unix: the socket file is created mode 0600 (the umask is narrowed while it is made), so
 *   only its user can connect; a stale file left by a dead server is replaced, a live one is
 *   refused.
 * - tcp and ws: a connection shows the token before anything else, and the `Gate` bounds what
 *   a connection that has not shown it may hold: a place among `maxConnections`, `helloMs` to
 *   show it, `helloBytes` of what it sends. Over tcp the token is the first line
 *   (`Authorization: Bearer <token>`, answered `ok` or `refused: <why>`); over ws it is the
 *   upgrade request's `Authorization` header, and an upgrade without it is refused (401)
 *   before it is accepted. The token is compared in constant time; a refusal is logged
 *   without what was sent. Requests on a connection that showed it carry no token.
 */
import * as Http from "node:http"
import * as Net from "node:net"
import * as NodeFs from "node:fs"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import * as NodeSocketServer from "@effect/platform-node/NodeSocketServer"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { RpcServer } from "effect/rpc"
import * as SocketServer from "effect/socket/SocketServer"
import type { Runtime } from "../runtime/Api.ts"
import type { Address } from "./Address.ts"
import * as Gate from "./Gate.ts"
import * as Handlers from "./Handlers.ts"
import * as Ndjson from "./Ndjson.ts"
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

/** Refused at once, before it may send anything: the server has no place for it. */
const fullResponse = (limits: Gate.Limits) => {
  const body = `too many connections (at most ${limits.maxConnections})\n`
  return `HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\n\r\n${body}`
}

const peer = (socket: Net.Socket) => (socket.remoteAddress === undefined ? "" : ` from ${socket.remoteAddress}:${socket.remotePort}`)

/**
 * One TCP connection to the WebSocket endpoint, from its first byte: a place at the gate (or a
 * 503), then until it has shown the token at the upgrade (or it is closed at `helloMs`), then
 * until it closes.
 */
const watch = (socket: Net.Socket, gate: Gate.Gate, tickets: WeakMap<Net.Socket, Gate.Ticket>) =>
  Effect.scoped(Effect.gen(function*() {
    const ticket = yield* gate.enter
    if (ticket === undefined) {
      yield* Effect.logWarning(`skein serve: refused a WebSocket connection${peer(socket)}: too many connections (at most ${gate.limits.maxConnections})`)
      socket.end(fullResponse(gate.limits))
      return
    }
    tickets.set(socket, ticket)
    const closed = Effect.callback<void>((resume) => {
      if (socket.closed) return resume(Effect.void)
      const done = () => resume(Effect.void)
      socket.once("close", done)
      return Effect.sync(() => socket.off("close", done))
    })
    const first = yield* Effect.raceFirst(
      Effect.as(closed, "closed" as const),
      Effect.raceFirst(Effect.as(ticket.awaitShown, "shown" as const), Effect.as(Effect.sleep(gate.limits.helloMs), "late" as const))
    )
    if (first === "late") {
      yield* Effect.logWarning(`skein serve: refused a WebSocket connection${peer(socket)}: no token within ${gate.limits.helloMs / 1000} s`)
      socket.destroy()
    } else if (first === "shown") {
      yield* closed
    }
  }))

/** The WebSocket protocol at `path`, refusing an upgrade without the token (401) before it is accepted. */
const websocket = (path: string, token: string, tickets: WeakMap<Net.Socket, Gate.Ticket>) =>
  Layer.effect(RpcServer.Protocol, Effect.gen(function*() {
    const { httpEffect, protocol } = yield* RpcServer.makeProtocolWithHttpEffectWebsocket
    const router = yield* HttpRouter.HttpRouter
    yield* router.add("GET", path as HttpRouter.PathInput, Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const socket = NodeHttpServerRequest.toIncomingMessage(request).socket as Net.Socket
      const given = request.headers["authorization"]
      const bearer = Gate.bearerOf(given)
      if (bearer === undefined || !Gate.sameSecret(bearer, token)) {
        yield* Effect.logWarning(`skein serve: refused a WebSocket connection${peer(socket)}: ${given === undefined ? "no token" : "a wrong token"}`)
        return HttpServerResponse.text("A valid token is needed (Authorization: Bearer <token>)\n", { status: 401 })
      }
      const ticket = tickets.get(socket)
      if (ticket !== undefined) yield* ticket.shown
      return yield* httpEffect
    }))
    return protocol
  }))

/** The procedures a server answers: the local runtime's (`Handlers.layer`), or a cluster runner's. */
export type Procedures<R> = Layer.Layer<Layer.Success<typeof Handlers.layer>, never, R>

export interface Options {
  /** The limits of connections over tcp and ws (see `Gate`; defaults `Gate.DEFAULT_LIMITS`). */
  readonly limits?: Partial<Gate.Limits> | undefined
  /** The gate itself, to look at its count (tests); made from `limits` when not given. */
  readonly gate?: Gate.Gate | undefined
}

/** Serves `SessionRpcs` at `address` for as long as the layer lives. */
export function layer(address: Address, token: string | undefined, options?: Options): Layer.Layer<never, unknown, Runtime>
export function layer<R>(address: Address, token: string | undefined, options: Options & { readonly procedures: Procedures<R> }): Layer.Layer<never, unknown, R>
export function layer(
  address: Address,
  token: string | undefined,
  options: Options & { readonly procedures?: Procedures<unknown> } = {}
): Layer.Layer<never, unknown, unknown> {
  const rpc = RpcServer.layer(SessionRpcs, { concurrency: "unbounded" }).pipe(Layer.provide(options.procedures ?? Handlers.layer))
  if (address._tag === "unix") {
    // Fresh: a cluster runner's own RPC server is built from the same layer, on its own socket.
    return rpc.pipe(Layer.provide(Layer.fresh(RpcServer.layerProtocolSocketServer)), Layer.provide(unixServer(address.path)), Layer.provide(Ndjson.layer()))
  }
  if (token === undefined) return Layer.effectDiscard(Effect.die(new ServeError(`${address._tag} needs a token`)))
  const gate = options.gate ?? Gate.make(options.limits)
  switch (address._tag) {
    case "tcp": {
      const server = Layer.effect(
        SocketServer.SocketServer,
        // No Nagle delay: a turn's updates are many small writes.
        Effect.map(NodeSocketServer.make({ host: address.host, port: address.port, noDelay: true }), (inner) => Gate.serve(inner, gate, Gate.bearer(token, "a connection")))
      )
      return rpc.pipe(Layer.provide(Layer.fresh(RpcServer.layerProtocolSocketServer)), Layer.provide(server), Layer.provide(Ndjson.layer()))
    }
    case "ws":
      return Layer.unwrap(Effect.gen(function*() {
        const run = yield* FiberSet.makeRuntime<never>()
        const tickets = new WeakMap<Net.Socket, Gate.Ticket>()
        const http = NodeHttpServer.layer(() => {
          // A request head past `helloBytes` is answered 431 by Node, before any of it is kept.
          const server = Http.createServer({ maxHeaderSize: gate.limits.helloBytes })
          server.on("connection", (socket: Net.Socket) => run(watch(socket, gate, tickets)))
          return server
        }, {
          host: address.host,
          port: address.port,
          // A frame holds messages of up to 16 Mi characters (up to 3 bytes each in UTF-8), not more.
          websocket: { maxPayload: 4 * Ndjson.DEFAULT_MAX_LINE }
        })
        return HttpRouter.serve(rpc.pipe(Layer.provide(websocket(address.path, token, tickets))), { disableListenLog: true, disableLogger: true }).pipe(
          Layer.provide(Ndjson.layer()),
          Layer.provide(http)
        )
      }))
  }
}
