/**
 * `Skein.remote({ url, token })`: the Runtime of a `skein serve` elsewhere, as a Layer. A
 * program written against `Runtime` runs unchanged against it: swapping `Skein.layer(config)`
 * for `Skein.remote({ url })` is the whole change.
 *
 * The connection opens with the layer (a server that cannot be reached, or refuses the token,
 * fails it). If the connection drops, what is in flight fails (`unavailable`), a stream (a
 * turn, a subscription) ends with that error, and the next request connects again: the turn
 * itself goes on on the server, and `subscribe(lastSeq)` picks it up where this client was.
 */
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { RpcClient, RpcSerialization } from "effect/rpc"
import { Runtime, RuntimeError } from "../runtime/Api.ts"
import * as Address from "./Address.ts"
import * as Client from "./Client.ts"
import { SessionRpcs } from "./Rpcs.ts"

export interface Options {
  /** `unix:PATH`, `tcp://HOST:PORT` or `ws://HOST:PORT/PATH`. */
  readonly url: string
  /** The server's token (tcp and ws; `SKEIN_SERVE_TOKEN` on the server). */
  readonly token?: string | undefined
}

/** The Runtime of the `skein serve` at `url`. */
export const layer = (options: Options): Layer.Layer<Runtime, RuntimeError> => {
  const address = Address.parse(options.url)
  if (address._tag === "invalid") return Layer.effect(Runtime, Effect.fail(new RuntimeError({ reason: "invalid_request", message: address.message })))
  const socket = address._tag === "unix"
    ? NodeSocket.layerNet({ path: address.path })
    : address._tag === "tcp"
    ? NodeSocket.layerNet({ host: address.host, port: address.port, noDelay: true })
    : NodeSocket.layerWebSocket(Address.format(address), {
      ...(options.token !== undefined ? { headers: { authorization: `Bearer ${options.token}` } } : {})
    })
  const protocol = RpcClient.layerProtocolSocket({ retryTransientErrors: false }).pipe(
    Layer.provide(socket),
    Layer.provide(RpcSerialization.layerNdjson)
  )
  return Client.layer(RpcClient.make(SessionRpcs)).pipe(
    Layer.provide(protocol),
    Layer.provide(Client.layerAuth(options.token)),
    Layer.catchCause((cause) =>
      Layer.effect(Runtime, Effect.fail(new RuntimeError({ reason: "unavailable", message: `Cannot reach the Skein server at ${options.url}: ${String(Cause.squash(cause))}` }))))
  ) as Layer.Layer<Runtime, RuntimeError>
}

/** Fails unless the server at `url` answers (a quick check before serving a client). */
export const check = (options: Options) => Effect.asVoid(Effect.scoped(Layer.build(layer(options))))
