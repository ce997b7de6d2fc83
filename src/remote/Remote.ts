/**
 * `Skein.remote({ url, token })`: the Runtime of a `skein serve` elsewhere, as a Layer. A
 * program written against `Runtime` runs unchanged against it: swapping `Skein.layer(config)`
 * for `Skein.remote({ url })` is the whole change.
 *
 * The connection opens with the layer (a server that cannot be reached, or refuses the token,
 * fails it, in words that say what to do). Over tcp the token is the connection's first line
 * (`Gate.bearerLine`), and the layer waits for the server's `ok`; over ws it is the upgrade's
 * `Authorization` header. If the connection drops, what is in flight fails (`unavailable`), a
 * stream (a turn, a subscription) ends with that error, and the next request connects again:
 * the turn itself goes on on the server, and `subscribe(lastSeq)` picks it up where this
 * client was.
 */
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import * as NodeWS from "@effect/platform-node/NodeWS"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { RpcClient } from "effect/rpc"
import * as Socket from "effect/socket/Socket"
import { Runtime, RuntimeError } from "../runtime/Api.ts"
import * as Address from "./Address.ts"
import * as Client from "./Client.ts"
import * as Gate from "./Gate.ts"
import * as Ndjson from "./Ndjson.ts"
import * as Problems from "./Problems.ts"
import { SessionRpcs } from "./Rpcs.ts"

export interface Options {
  /** `unix:PATH`, `tcp://HOST:PORT` or `ws://HOST:PORT/PATH`. */
  readonly url: string
  /** The server's token (tcp and ws; `SKEIN_SERVE_TOKEN` on the server). */
  readonly token?: string | undefined
}

/** How long a connection may take to open before it counts as unanswered. */
const OPEN_TIMEOUT = "10 seconds"

const invalid = (message: string): Layer.Layer<Runtime, RuntimeError> =>
  Layer.effect(Runtime, Effect.fail(new RuntimeError({ reason: "invalid_request", message })))

/** The socket to the server at `address`: its token sent first, where it needs one. */
const socketTo = (address: Address.Address, token: string): Layer.Layer<Socket.Socket, Socket.SocketError> => {
  switch (address._tag) {
    case "unix":
      return NodeSocket.layerNet({ path: address.path, openTimeout: OPEN_TIMEOUT })
    case "tcp":
      return Layer.effect(
        Socket.Socket,
        Effect.map(
          NodeSocket.makeNet({ host: address.host, port: address.port, noDelay: true, openTimeout: OPEN_TIMEOUT }),
          (socket) => Gate.client(socket, Gate.bearerLine(token), { answer: Gate.bearerAnswer })
        )
      )
    case "ws":
      // `ws` rather than Node's own WebSocket: a refused upgrade says its status (401: the token).
      return Layer.effect(Socket.Socket, Socket.makeWebSocket(Address.format(address), { openTimeout: OPEN_TIMEOUT, headers: { authorization: `Bearer ${token}` } })).pipe(
        Layer.provide(NodeWS.layerWebSocketConstructor)
      )
  }
}

/** The Runtime of the `skein serve` at `url`. */
export const layer = (options: Options): Layer.Layer<Runtime, RuntimeError> => {
  const address = Address.parse(options.url)
  if (address._tag === "invalid") return invalid(address.message)
  if (address._tag !== "unix" && options.token === undefined) {
    return invalid(`${options.url} needs the server's token: give it as \`token\` (the server's SKEIN_SERVE_TOKEN)`)
  }
  const protocol = RpcClient.layerProtocolSocket({ retryTransientErrors: false }).pipe(
    Layer.provide(socketTo(address, options.token ?? "")),
    Layer.provide(Ndjson.layer())
  )
  return Client.layer(RpcClient.make(SessionRpcs), options.url).pipe(
    Layer.provide(protocol),
    Layer.catchCause((cause) => {
      const error = Cause.squash(cause)
      return Layer.effect(
        Runtime,
        Effect.fail(error instanceof RuntimeError ? error : new RuntimeError({ reason: "unavailable", message: Problems.explain(error, options.url) }))
      )
    })
  ) as Layer.Layer<Runtime, RuntimeError>
}

/** Fails unless the server at `url` answers (a quick check before serving a client). */
export const check = (options: Options) => Effect.asVoid(Effect.scoped(Layer.build(layer(options))))
