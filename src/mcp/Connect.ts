/**
 * Connecting to one MCP server with Effect's `McpClient`: over Skein's stdio
 * transport (`StdioTransport.ts`) or Effect's Streamable HTTP transport, with
 * the protocol version negotiated the way the MCP lifecycle asks.
 *
 * Negotiation: Effect's client speaks one explicitly selected revision and
 * fails when the server answers `initialize` with another. MCP says a client
 * should go on with the server's answer when it supports it, and many servers
 * in use answer 2025-06-18, 2025-03-26 or 2024-11-05. Skein offers 2025-11-25
 * and accepts those three: the part of the protocol it uses (initialize,
 * tools/list, tools/call, and their content blocks) is the same on the wire in
 * all four, the newer revisions only adding optional fields. The wrapper below
 * records the server's revision and hands the client the one it asked for;
 * over HTTP the `mcp-protocol-version` header then carries the server's.
 */
import * as McpClient from "effect/ai/McpClient"
import type { McpClientError } from "effect/ai/McpClientError"
import * as McpProtocol from "effect/ai/McpProtocol"
import type * as McpSchema from "effect/ai/McpSchema"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import type * as Scope from "effect/Scope"
import type * as Diagnostics from "./Diagnostics.ts"
import * as StdioTransport from "./StdioTransport.ts"

/** The revision Skein asks for. */
export const REQUESTED = "2025-11-25"
/** Older revisions a server may answer with, whose tool calls look the same on the wire. */
export const COMPATIBLE: ReadonlySet<string> = new Set(["2024-11-05", "2025-03-26", "2025-06-18"])

export interface Negotiation {
  /** The revision in use: the requested one until the server answers. */
  version: string
}

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** Accepts a compatible older revision in the server's `initialize` answer (see the module note). */
export const negotiating = (transport: McpClient.Transport, negotiation: Negotiation): McpClient.Transport => ({
  ...transport,
  request: (message, tool) =>
    message.method !== "initialize"
      ? transport.request(message, tool)
      : Effect.map(transport.request(message, tool), (response): McpSchema.JsonRpcResponse => {
        if (response.error !== undefined || !isObject(response.result)) return response
        const version = response.result.protocolVersion
        if (typeof version !== "string") return response
        negotiation.version = version
        return COMPATIBLE.has(version) ? { ...response, result: { ...response.result, protocolVersion: REQUESTED } } : response
      })
})

export interface Connected {
  readonly client: McpClient.McpClient
  /** The server's process (stdio). */
  readonly pid?: number | undefined
  /** Completed when the server can no longer answer (stdio: it exited or broke the protocol). */
  readonly lost: Deferred.Deferred<string>
  readonly negotiation: Negotiation
}

export interface ClientOptions {
  readonly clientInfo: { readonly name: string; readonly version: string }
  /** Bounds `initialize` and each tool discovery. */
  readonly timeoutMs: number
}

const makeClient = (transport: McpClient.Transport, negotiation: Negotiation, options: ClientOptions) =>
  McpClient.make({
    name: options.clientInfo.name,
    title: "Skein",
    version: options.clientInfo.version,
    timeout: Duration.millis(options.timeoutMs)
  }).pipe(Effect.provideService(McpClient.Transport, negotiating(transport, negotiation)))

export interface StdioOptions extends ClientOptions {
  readonly command: string
  readonly args: ReadonlyArray<string>
  readonly cwd: string
  readonly env: Readonly<Record<string, string>>
  readonly diagnostics: Diagnostics.Tail
  readonly onNotification?: ((method: string, params: unknown) => void) | undefined
  readonly onSpawn?: ((pid: number) => void) | undefined
  readonly sandbox?: StdioTransport.Options["sandbox"]
}

/** Starts a stdio server and initializes it; the scope owns its process group. */
export const stdio = (options: StdioOptions): Effect.Effect<Connected, McpClientError, Scope.Scope> =>
  Effect.gen(function*() {
    const negotiation: Negotiation = { version: REQUESTED }
    const connection = yield* StdioTransport.connect({ ...options, protocol: McpProtocol.v2025_11_25 })
    const client = yield* makeClient(connection.transport, negotiation, options)
    return { client, pid: connection.pid, lost: connection.lost, negotiation }
  })

export interface HttpOptions extends ClientOptions {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  /** The HTTP client to use (default: `fetch`). */
  readonly httpClient?: HttpClient.HttpClient | undefined
}

/** Connects to a Streamable HTTP server and initializes it. */
export const http = (options: HttpOptions): Effect.Effect<Connected, McpClientError, Scope.Scope> =>
  Effect.gen(function*() {
    const negotiation: Negotiation = { version: REQUESTED }
    const base: HttpClient.HttpClient = options.httpClient ?? (yield* Effect.provide(HttpClient.HttpClient, FetchHttpClient.layer))
    const httpClient = HttpClient.mapRequest(base, (request) =>
      negotiation.version === REQUESTED ? request : HttpClientRequest.setHeader(request, "mcp-protocol-version", negotiation.version))
    const transport = yield* McpClient.http({ url: options.url, protocol: McpProtocol.v2025_11_25, headers: options.headers }).pipe(
      Effect.provideService(HttpClient.HttpClient, httpClient)
    )
    const client = yield* makeClient(transport, negotiation, options)
    // Over HTTP a lost server shows up as a failed request, not as an event.
    return { client, lost: yield* Deferred.make<string>(), negotiation }
  })
