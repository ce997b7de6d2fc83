/**
 * The token on connections between runners. effect/cluster's runner protocol has no check of
 * its own, and a runner accepts requests for any session it holds (a prompt, a change of mode):
 * whoever reaches a runner's port would drive sessions without the serve token. So every
 * connection a runner opens starts with one line, `skein-runner <sha256 of the token>`, and a
 * runner drops a connection whose first line is not that (logging it, without what was sent).
 * The token is the cluster's `SKEIN_SERVE_TOKEN`; runners of one cluster share it.
 */
import * as Crypto from "node:crypto"
import * as Effect from "effect/Effect"
import * as Socket from "effect/socket/Socket"
import * as SocketServer from "effect/socket/SocketServer"

const encoder = new TextEncoder()
/** The longest first line read before a connection is dropped. */
const MAX_HELLO = 256

const hello = (token: string) => `skein-runner ${Crypto.createHash("sha256").update(token).digest("hex")}\n`

const refused = (why: string) =>
  new Socket.SocketError({ reason: new Socket.SocketReadError({ cause: new Error(`refused a runner connection: ${why}`) }) })

/** A connection to another runner: its first bytes say the token. */
export const client = (socket: Socket.Socket, token: string): Socket.Socket => {
  const line = encoder.encode(hello(token))
  let sent = false
  return Socket.make({
    reader: socket.reader,
    writer: Effect.map(socket.writer, (writer): Socket.Writer => ({
      write: (chunk) => {
        if (sent || Socket.isCloseEvent(chunk)) return writer.write(chunk)
        sent = true
        return writer.writeAll([line, chunk])
      },
      writeAll: (chunks) => {
        if (sent) return writer.writeAll(chunks)
        sent = true
        return writer.writeAll([line, ...chunks])
      }
    }))
  })
}

/** A connection from another runner: read only once its first line said the token. */
const checked = (socket: Socket.Socket, expected: Uint8Array): Socket.Socket => {
  let passed = false
  return Socket.make({
    writer: socket.writer,
    reader: Effect.gen(function*() {
      const reader = yield* socket.reader
      if (passed) return reader
      let buffered = new Uint8Array(0)
      let end = -1
      while (end < 0) {
        const chunks = yield* reader.pull
        for (const chunk of chunks) {
          const bytes = typeof chunk === "string" ? encoder.encode(chunk) : chunk
          const joined = new Uint8Array(buffered.length + bytes.length)
          joined.set(buffered)
          joined.set(bytes, buffered.length)
          buffered = joined
        }
        end = buffered.indexOf(10)
        if (end < 0 && buffered.length > MAX_HELLO) {
          yield* Effect.logWarning("skein serve: refused a runner connection that did not start with the cluster's token")
          return yield* Effect.fail(refused("no token"))
        }
      }
      const given = buffered.subarray(0, end + 1)
      if (given.length !== expected.length || !Crypto.timingSafeEqual(given, expected)) {
        yield* Effect.logWarning("skein serve: refused a runner connection with a wrong token")
        return yield* Effect.fail(refused("a wrong token"))
      }
      passed = true
      let rest: Uint8Array | undefined = buffered.subarray(end + 1)
      return {
        upgrade: reader.upgrade,
        pull: Effect.suspend(() => {
          if (rest === undefined || rest.length === 0) return reader.pull
          const first = rest
          rest = undefined
          return Effect.succeed([first] as const)
        })
      } satisfies Socket.Reader
    })
  })
}

/** A runner's server: each connection must first say the token. */
export const server = (inner: SocketServer.SocketServer["Service"], token: string): SocketServer.SocketServer["Service"] => {
  const expected = encoder.encode(hello(token))
  return {
    address: inner.address,
    run: (handler) => inner.run((socket) => handler(checked(socket, expected)))
  }
}
