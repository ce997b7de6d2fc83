import { Effect, Schema, Deferred } from "effect"
import * as Peer from "../../src/jsonrpc/Peer.ts"
const Keyed = Schema.Struct({ key: Schema.Number })
const d = Deferred.makeUnsafe<void>()
export const h1 = Peer.request(Keyed, (p) => Effect.as(Effect.yieldNow, p.key))
export const h2 = Peer.request(Keyed, () => Effect.as(Deferred.await(d), 1), { onCancel: () => Deferred.succeed(d, undefined) })
export const h3 = Peer.request(Schema.Unknown, () => Effect.never)
export const h4 = Peer.request(Schema.Unknown, () => Effect.die("boom"))
type X1 = typeof h1
type X2 = typeof h2
type X3 = typeof h3
export const check = (x: X1, y: X2, z: X3): [X1, X2, X3] => [x, y, z]
