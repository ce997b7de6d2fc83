/**
 * The Runtime for a program that embeds Skein: a client of `SessionRpcs` whose server is in
 * this process (no serialization, no socket), so a program talks to a local Skein exactly as
 * it would to `skein serve` through `Skein.remote`.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { RpcTest } from "effect/rpc"
import { Runtime, type RuntimeError } from "../runtime/Api.ts"
import * as Client from "./Client.ts"
import * as Handlers from "./Handlers.ts"
import { SessionRpcs } from "./Rpcs.ts"

/** `Runtime` as a client of the `Runtime` it is given (the local one). */
export const layer: Layer.Layer<Runtime, RuntimeError, Runtime> = Layer.effect(
  Runtime,
  Effect.flatMap(RpcTest.makeClient(SessionRpcs), Client.make)
).pipe(
  Layer.provide(Handlers.layer)
)
