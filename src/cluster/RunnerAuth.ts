/**
 * The token on connections between runners. effect/cluster's runner protocol has no check of
 * its own, and a runner accepts requests for any session it holds (a prompt, a change of mode):
 * whoever reaches a runner's port would drive sessions without the serve token. So every
 * connection a runner opens starts with one line, `skein-runner <sha256 of the token>`, and a
 * runner drops a connection whose first line is not that (logging it, without what was sent).
 * The token is the cluster's `SKEIN_SERVE_TOKEN`; runners of one cluster share it.
 *
 * The port is behind a `Gate` like `skein serve`'s: a connection has 5 s and 256 bytes to say
 * the line (it is 78), and at most 128 are open at once. The runner that connects sends the line again on
 * every connection it makes (its RPC client connects again after a drop).
 */
import * as Crypto from "node:crypto"
import type * as Socket from "effect/socket/Socket"
import type * as SocketServer from "effect/socket/SocketServer"
import * as Gate from "../remote/Gate.ts"

/** The limits of a runner's port: the line is short, so is what may come before it. */
export const LIMITS: Partial<Gate.Limits> = { helloBytes: 256 }

const hello = (token: string) => `skein-runner ${Crypto.createHash("sha256").update(token).digest("hex")}`

/** A connection to another runner: each one's first bytes say the token. */
export const client = (socket: Socket.Socket, token: string): Socket.Socket => Gate.client(socket, `${hello(token)}\n`)

/** A runner's server: each connection must first say the token, within the gate's limits. */
export const server = (inner: SocketServer.SocketServer["Service"], token: string, gate: Gate.Gate = Gate.make(LIMITS)): SocketServer.SocketServer["Service"] => {
  const expected = new TextEncoder().encode(hello(token))
  return Gate.serve(inner, gate, {
    name: "a runner connection",
    check: (line) =>
      line.length === expected.length && Crypto.timingSafeEqual(line, expected)
        ? undefined
        : line.length === 0 || !new TextDecoder().decode(line.subarray(0, 13)).startsWith("skein-runner ")
        ? "it did not start with the cluster's token"
        : "a wrong token"
  })
}
