/**
 * Responses, as the peer reads and writes them: whether an incoming message is meant as a
 * response to one of its own requests, and what a request handler's exit is written as —
 * its result, its `RpcError`, `-32800` when it was cancelled, and an internal error (logged,
 * never echoed) for a defect or a value JSON cannot represent. Every request id gets one.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Framing from "./Framing.ts"
import * as Protocol from "./Protocol.ts"
import type { Id, RpcError } from "./Protocol.ts"

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null

/** An object with `result` or `error` and no `method`: meant as a response to one of our requests. */
export const isResponseShaped = (u: unknown): boolean =>
  isRecord(u) && !Array.isArray(u) && !Object.hasOwn(u, "method") && (Object.hasOwn(u, "result") || Object.hasOwn(u, "error"))

/** Encodes a response; a result or error data JSON cannot represent becomes an internal error. */
export const encode = (id: Id, exit: Exit.Exit<unknown, RpcError>): Effect.Effect<string> => {
  const encoded = (message: () => Protocol.Message) =>
    Effect.try({ try: () => Framing.encode(message()), catch: (e) => e }).pipe(
      Effect.catchCause((cause) =>
        Effect.logError("response is not JSON-serializable", cause).pipe(
          Effect.as(Framing.encode(Protocol.makeError(id, Protocol.internalError())))
        )
      )
    )
  if (Exit.isSuccess(exit)) return encoded(() => Protocol.makeSuccess(id, exit.value))
  const cause = exit.cause
  const error = Cause.findErrorOption(cause)
  if (error._tag === "Some" && error.value instanceof Protocol.RpcError) {
    const rpcError = error.value
    return encoded(() => Protocol.makeError(id, rpcError))
  }
  if (Cause.hasInterruptsOnly(cause)) return encoded(() => Protocol.makeError(id, Protocol.requestCancelled()))
  return Effect.logError("request handler failed", cause).pipe(
    Effect.as(Framing.encode(Protocol.makeError(id, Protocol.internalError())))
  )
}
