/**
 * Warming a provider's HTTP path while `skein acp` waits for the first prompt.
 *
 * A fresh process pays for its first model call in compute before any byte
 * goes out: Node loads its HTTP client (undici, with `tls` and `http2`) on the
 * first `fetch`, and compiles the fetch algorithm, the HTTP/1 client, its
 * parser (WebAssembly), Effect's client, the SSE decoder and the dialect as
 * they first run. `warm` runs one whole attempt of the dialect, through the
 * same client, against a server of its own on the loopback interface that
 * answers an empty event stream. No provider is contacted, nothing leaves the
 * host, and the request carries no key. When a proxy is configured (where a
 * loopback request could be routed through it), the attempt goes to a `data:`
 * URL instead, which never touches a socket. For an `https` provider it also
 * loads the root certificates that the first TLS connection would.
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { HttpClient } from "effect/http/HttpClient"
import * as net from "node:net"
import * as tls from "node:tls"
import * as Http from "./Http.ts"
import * as Models from "./Models.ts"

/** What the loopback server answers: an event stream that ends at once. */
const EVENTS = "data: [DONE]\n\n"
const RESPONSE = `HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: ${EVENTS.length}\r\nconnection: close\r\n\r\n${EVENTS}`

/** The longest a warm-up may take; it is abandoned after that. */
const LIMIT_MS = 5_000

const PROXY_VARIABLES = ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"]

const proxied = (env: Readonly<Record<string, string | undefined>>) => PROXY_VARIABLES.some((name) => (env[name] ?? "") !== "")

/** Answers each request it is sent (once its body is in) with `RESPONSE`, then closes. */
const serve = (socket: net.Socket) => {
  let received = Buffer.alloc(0)
  socket.on("error", () => {})
  socket.on("data", (chunk: Buffer) => {
    received = Buffer.concat([received, chunk])
    const end = received.indexOf("\r\n\r\n")
    if (end < 0) return
    const length = /\r\ncontent-length:\s*(\d+)/i.exec(received.toString("latin1", 0, end))
    if (received.length - end - 4 >= Number(length?.[1] ?? 0)) socket.end(RESPONSE)
  })
}

/** A server on 127.0.0.1 (a free port) for the scope's lifetime; its URL. */
const loopback = Effect.map(
  Effect.acquireRelease(
    Effect.callback<{ readonly server: net.Server; readonly sockets: Set<net.Socket> }, Error>((resume) => {
      const sockets = new Set<net.Socket>()
      const server = net.createServer((socket) => {
        sockets.add(socket)
        socket.on("close", () => sockets.delete(socket))
        serve(socket)
      })
      server.once("error", (error) => resume(Effect.fail(error)))
      server.listen({ port: 0, host: "127.0.0.1" }, () => resume(Effect.succeed({ server, sockets })))
    }),
    ({ server, sockets }) =>
      Effect.callback<void>((resume) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resume(Effect.void))
      })
  ),
  ({ server }) => `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`
)

const DATA_URL = `data:text/event-stream,${encodeURIComponent(EVENTS)}`

/** One attempt of `dialect` at `baseUrl` (no key, no headers of the target), drained. */
const attemptAt = (dialect: Http.Dialect, target: Http.Target, client: HttpClient, baseUrl: string, path: string) => {
  const model = Models.modelOf(target, undefined) ?? Models.builtin(target.dialect, "warm")
  const at: Http.Target = { ...target, baseUrl, apiKey: undefined, keySource: undefined, headers: {} }
  const call: Http.Call = {
    request: { sessionId: "warm", turn: 1, call: 1, system: "", messages: [{ role: "user", content: [{ type: "text", text: "" }] }], tools: [] },
    model,
    target: at,
    who: Http.whoOf(at, model.id)
  }
  return Stream.runDrain(Http.attempt(client, { ...dialect, path }, call))
}

/**
 * Runs the first call's code path once without calling the model. Never fails; takes at most
 * a few seconds (it is given up after that).
 */
export const warm = (
  dialect: Http.Dialect,
  target: Http.Target,
  client: HttpClient,
  env: Readonly<Record<string, string | undefined>>
): Effect.Effect<void> =>
  Effect.gen(function*() {
    if (target.baseUrl.startsWith("https:")) yield* Effect.sync(() => tls.createSecureContext())
    // Without a loopback server (a proxy configured, or no 127.0.0.1 to listen on): the data: URL.
    const server = proxied(env) ? undefined : yield* Effect.orElseSucceed(loopback, () => undefined)
    yield* server === undefined
      ? attemptAt(dialect, target, client, DATA_URL, "")
      : attemptAt(dialect, target, client, server, dialect.path)
  }).pipe(
    Effect.scoped,
    Effect.timeout(LIMIT_MS),
    Effect.ignore
  )
