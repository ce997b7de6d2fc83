/**
 * Warming a provider's HTTP path while `skein acp` waits for the first prompt.
 *
 * A fresh process pays for its first model call in compute before any byte
 * goes out: Node's HTTP client (`node:http`), Effect's client over it, the SSE
 * decoder and the dialect are compiled as they first run. `warm` runs one
 * whole attempt of the dialect through Effect's Node client (as
 * `Dialects.httpLayer` builds it for the providers, with an agent of its own
 * here), whose one connection is a stream in memory that this module answers
 * with an empty event stream. No socket is
 * opened and none listens: no provider is contacted, nothing leaves the
 * process (a proxy configured or not), and the request carries no key. A
 * server on the loopback interface would do the same at a cost: listening
 * loads Node's cluster module, and with it child processes and datagrams
 * (about 1.7 MB resident that an idle session would keep). For an `https`
 * provider it also loads TLS and the root certificates that the first TLS
 * connection would.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as HttpClient from "effect/http/HttpClient"
import * as http from "node:http"
import { type Duplex, duplexPair } from "node:stream"
import * as Http from "./Http.ts"
import * as Models from "./Models.ts"

/** What the in-memory server answers: an event stream that ends at once. */
const EVENTS = "data: [DONE]\n\n"
const RESPONSE = `HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: ${EVENTS.length}\r\nconnection: close\r\n\r\n${EVENTS}`

/** The longest a warm-up may take; it is abandoned after that. */
const LIMIT_MS = 5_000

/**
 * Where the warm-up's request is addressed: the provider's host, over `http`, so that what Node
 * does with a host name before connecting (the IPv6 check: a large regular expression) runs as
 * it will for the first call, and is not paid for where the first call will not need it (a
 * provider at an IP address). Never resolved nor connected to: the connection is made in memory.
 */
export const warmUrl = (target: Http.Target): string => {
  try {
    return `http://${new URL(target.baseUrl).host}`
  } catch {
    return "http://127.0.0.1"
  }
}

/** A request the in-memory server was sent: its request line and headers (names in lower case). */
export interface Received {
  readonly method: string
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
}

/** Told of every request a warm-up sends (tests look at what would have gone out). */
export const Observer = Context.Reference<(received: Received) => void>("skein/providers/Warm/Observer", {
  defaultValue: () => () => {}
})

const parseHead = (head: string): Received => {
  const [line = "", ...fields] = head.split("\r\n")
  const [method = "", path = ""] = line.split(" ")
  const headers: Record<string, string> = {}
  for (const field of fields) {
    const colon = field.indexOf(":")
    if (colon > 0) headers[field.slice(0, colon).trim().toLowerCase()] = field.slice(colon + 1).trim()
  }
  return { method, path, headers }
}

/** Answers the request it is sent (once its body is in) with `RESPONSE`, then ends. */
const serve = (socket: Duplex, observe: (received: Received) => void) => {
  let received = Buffer.alloc(0)
  socket.on("error", () => {})
  socket.on("data", (chunk: Buffer) => {
    received = Buffer.concat([received, chunk])
    const end = received.indexOf("\r\n\r\n")
    if (end < 0) return
    const head = parseHead(received.toString("latin1", 0, end))
    if (received.length - end - 4 < Number(head.headers["content-length"] ?? 0)) return
    socket.removeAllListeners("data")
    observe(head)
    socket.end(RESPONSE)
  })
}

/** An agent whose every connection is a stream in memory, answered by `serve`. */
class InMemoryAgent extends http.Agent {
  constructor(private readonly observe: (received: Received) => void) {
    super({ keepAlive: false })
  }
  override createConnection(): Duplex {
    const [client, server] = duplexPair()
    serve(server, this.observe)
    return client
  }
}

/** Effect's Node client, as the providers build it, over an `InMemoryAgent`. */
const inMemoryClient = (observe: (received: Received) => void): Effect.Effect<HttpClient.HttpClient> => {
  const agent = new InMemoryAgent(observe)
  return Effect.provide(
    HttpClient.HttpClient,
    Layer.provide(
      NodeHttpClient.layerNodeHttpNoAgent,
      Layer.succeed(NodeHttpClient.HttpAgent, {
        http: agent,
        get https() {
          return process.getBuiltinModule("node:https").globalAgent
        }
      })
    )
  )
}

/** One attempt of `dialect` at `baseUrl` (no key, no headers of the target), drained. */
const attemptAt = (dialect: Http.Dialect, target: Http.Target, client: HttpClient.HttpClient, baseUrl: string, path: string) => {
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
export const warm = (dialect: Http.Dialect, target: Http.Target): Effect.Effect<void> =>
  Effect.gen(function*() {
    if (target.baseUrl.startsWith("https:")) yield* Effect.sync(() => process.getBuiltinModule("node:tls").createSecureContext())
    const client = yield* inMemoryClient(yield* Observer)
    yield* attemptAt(dialect, target, client, warmUrl(target), dialect.path)
  }).pipe(
    Effect.timeout(LIMIT_MS),
    Effect.ignore
  )
