/**
 * A tiny HTTP server on 127.0.0.1 (random port) that replays recorded SSE
 * fixtures, one queued reply per request, and records what it was sent and
 * which connections the client closed before the reply ended.
 */
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import { readFileSync } from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { join } from "node:path"

export const FIXTURES = join(import.meta.dirname, "..", "..", "fixtures", "sse")

export interface Reply {
  readonly status?: number
  readonly headers?: Record<string, string>
  /** A fixture file under test/fixtures/sse. */
  readonly file?: string
  readonly body?: string
  /** Pause between events (ms). */
  readonly delayMs?: number
  /** After the body, keep the connection open and send nothing. */
  readonly hang?: boolean
  /** After the body, destroy the socket. */
  readonly cut?: boolean
}

export interface Received {
  readonly method: string
  readonly url: string
  readonly headers: http.IncomingHttpHeaders
  readonly body: any
}

export interface SseServer {
  readonly url: string
  readonly requests: Array<Received>
  readonly queue: (...replies: ReadonlyArray<Reply>) => void
  /** Takes the next notice that the client closed a connection before its reply ended. */
  readonly abandoned: Effect.Effect<string>
  /** How many connections clients opened so far. */
  readonly connections: () => number
}

export const fixture = (file: string) => readFileSync(join(FIXTURES, file), "utf8")

/** The events of an SSE text, each with its blank line. */
const events = (text: string) => text.split(/\n\n/).filter((e) => e.trim().length > 0).map((e) => `${e}\n\n`)

export const make = Effect.gen(function*() {
  const replies: Array<Reply> = []
  const requests: Array<Received> = []
  const abandoned = yield* Queue.unbounded<string>()
  const sockets = new Set<import("node:net").Socket>()
  const server = http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8")
      let body: unknown = text
      try {
        body = JSON.parse(text)
      } catch {
        // kept as text
      }
      requests.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body })
      const reply = replies.shift() ?? { status: 500, body: "{\"error\":{\"message\":\"no reply queued\"}}" }
      const status = reply.status ?? 200
      const payload = reply.file !== undefined ? fixture(reply.file) : reply.body ?? ""
      let ended = false
      res.on("close", () => {
        if (!ended) Queue.offerUnsafe(abandoned, req.url ?? "")
      })
      res.writeHead(status, {
        "content-type": status === 200 ? "text/event-stream" : "application/json",
        ...reply.headers
      })
      const parts = status === 200 ? events(payload) : [payload]
      const finish = () => {
        if (reply.cut === true) {
          // Let what was written reach the client first.
          setTimeout(() => res.socket?.destroy(), 50)
        } else if (reply.hang !== true) {
          ended = true
          res.end()
        }
      }
      const write = (i: number) => {
        if (res.destroyed) return
        if (i >= parts.length) return finish()
        res.write(parts[i])
        if (reply.delayMs !== undefined && reply.delayMs > 0) setTimeout(() => write(i + 1), reply.delayMs)
        else write(i + 1)
      }
      write(0)
    })
  })
  let connections = 0
  server.on("connection", (socket) => {
    connections++
    sockets.add(socket)
    socket.on("close", () => sockets.delete(socket))
  })
  yield* Effect.acquireRelease(
    Effect.callback<void>((resume) => {
      server.listen(0, "127.0.0.1", () => resume(Effect.void))
    }),
    () =>
      Effect.callback<void>((resume) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resume(Effect.void))
      })
  )
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    queue: (...more) => {
      replies.push(...more)
    },
    abandoned: Queue.take(abandoned),
    connections: () => connections
  } satisfies SseServer
})
