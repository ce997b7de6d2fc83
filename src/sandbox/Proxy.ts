/**
 * The egress proxy: the only way out of a sandbox, for the hosts `sandbox.network.allow`
 * names (`Hosts.ts`). An HTTP proxy on a unix socket of Skein's (a forwarder inside each
 * session's network namespace connects commands to it: see `Namespace.ts`).
 *
 * - `CONNECT host:port` (HTTPS, and anything tunnelled) to an admitted host is tunnelled;
 *   a plain `GET http://host/…` is forwarded. Skein resolves the name itself and connects to
 *   the address it checked (a name cannot be re-pointed between the check and the connection).
 * - Anything else is answered `403` with a body that says the sandbox blocked it and why
 *   (curl shows it for plain HTTP; for CONNECT it says "response 403", which `Blocked.ts`
 *   recognizes too).
 * - The proxy never adds credentials, and drops `Proxy-Authorization`.
 *
 * Node's HTTP module is loaded when the first session needs the proxy, never at start-up.
 */
import type * as NodeHttp from "node:http"
import type * as NodeDns from "node:dns"
import type * as NodeNet from "node:net"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Hosts from "./Hosts.ts"

interface Proxy {
  readonly socket: string
}

/** The answer to a refused request: a short text that names the sandbox. */
const refusal = (host: string, why: string): string =>
  `Skein's sandbox blocked ${host}: ${why}. Hosts are opened with "sandbox": {"network": {"allow": [...]}} in Skein's config.json.\n`

const FORBIDDEN_HEADERS = new Set(["proxy-authorization", "proxy-connection", "connection", "keep-alive", "upgrade"])

type Decision = { readonly address: string; readonly family: number } | { readonly refused: string }

/** Whether `host` may be reached, and at which address: told to `done`. */
const decide = (dns: typeof NodeDns, allow: ReadonlyArray<string>, host: string, done: (decision: Decision) => void): void => {
  const entry = Hosts.admittedBy(allow, host)
  if (entry === undefined) return done({ refused: "it is not in sandbox.network.allow" })
  dns.lookup(Hosts.normalize(host), { all: false, verbatim: true }, (error, address, family) => {
    if (error !== null) return done({ refused: `its name did not resolve (${error.code ?? "error"})` })
    done(
      Hosts.addressAllowed(entry, host, address)
        ? { address, family }
        : { refused: `it resolves to ${address}, an address of this machine or its link, which only an entry naming that address opens` }
    )
  })
}

const deny = (res: NodeHttp.ServerResponse, host: string, why: string) => {
  const body = refusal(host, why)
  res.writeHead(403, { "content-type": "text/plain; charset=utf-8", "content-length": Buffer.byteLength(body), connection: "close" })
  res.end(body)
}

interface Running {
  readonly server: NodeHttp.Server
  readonly sockets: Set<NodeNet.Socket>
}

// Loaded on first use (not `import()`: the bundle runs from a code cache, without dynamic imports).
const modules = Effect.sync(() =>
  [
    process.getBuiltinModule("node:http") as typeof NodeHttp,
    process.getBuiltinModule("node:net") as typeof NodeNet,
    process.getBuiltinModule("node:dns") as typeof NodeDns
  ] as const
)

/** Starts the proxy on `socket` (a path in a directory only this user can enter); stops it when the scope closes. */
export const start = (socket: string, allow: ReadonlyArray<string>): Effect.Effect<Proxy, string, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.flatMap(modules, ([http, net, dns]) =>
      Effect.callback<Running, string>((resume) => {
        const sockets = new Set<NodeNet.Socket>()
        const server = http.createServer((req, res) => {
          let target: URL
          try {
            target = new URL(req.url ?? "")
          } catch {
            return deny(res, "this request", "a proxy request must name its destination (http://host/…)")
          }
          if (target.protocol !== "http:") return deny(res, target.host, `only http:// is forwarded as such (${target.protocol} goes through CONNECT)`)
          const host = Hosts.normalize(target.hostname)
          decide(dns, allow, host, (decision) => {
            if ("refused" in decision) return deny(res, host, decision.refused)
            const headers: Record<string, string | ReadonlyArray<string>> = {}
            for (const [name, value] of Object.entries(req.headers)) {
              if (value !== undefined && !FORBIDDEN_HEADERS.has(name)) headers[name] = value
            }
            const upstream = http.request({
              host: decision.address,
              family: decision.family,
              port: target.port === "" ? 80 : Number(target.port),
              method: req.method,
              path: `${target.pathname}${target.search}`,
              headers: { ...headers, host: target.host },
              setHost: false
            }, (answer) => {
              res.writeHead(answer.statusCode ?? 502, answer.headers)
              answer.pipe(res)
            })
            upstream.on("error", (error: NodeJS.ErrnoException) => {
              if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" })
              res.end(`Skein's sandbox proxy could not reach ${host}: ${error.code ?? "error"}\n`)
            })
            req.pipe(upstream)
          })
        })
        server.on("connect", (req: NodeHttp.IncomingMessage, client: NodeNet.Socket, head: Buffer) => {
          sockets.add(client)
          client.on("close", () => sockets.delete(client))
          client.on("error", () => client.destroy())
          const authority = Hosts.parseAuthority(req.url ?? "")
          const refuse = (host: string, why: string) => {
            const body = refusal(host, why)
            client.end(`HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`)
          }
          if (authority === undefined) return refuse("this request", "CONNECT must name host:port")
          decide(dns, allow, authority.host, (decision) => {
            if ("refused" in decision) return refuse(authority.host, decision.refused)
            const upstream = net.connect({ host: decision.address, port: authority.port, family: decision.family })
            sockets.add(upstream)
            upstream.on("close", () => sockets.delete(upstream))
            upstream.once("connect", () => {
              client.write("HTTP/1.1 200 Connection Established\r\n\r\n")
              if (head.length > 0) upstream.write(head)
              upstream.pipe(client)
              client.pipe(upstream)
            })
            upstream.on("error", (error: NodeJS.ErrnoException) => {
              if (client.writable && upstream.connecting) {
                client.end(`HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\nSkein's sandbox proxy could not reach ${authority.host}: ${error.code ?? "error"}\n`)
              } else client.destroy()
            })
            client.on("close", () => upstream.destroy())
          })
        })
        server.on("connection", (socket: NodeNet.Socket) => {
          sockets.add(socket)
          socket.on("close", () => sockets.delete(socket))
        })
        const failed = (error: Error) => resume(Effect.fail(`the sandbox's proxy could not start: ${error.message}`))
        server.once("error", failed)
        server.listen(socket, () => {
          server.off("error", failed)
          server.on("error", () => {})
          resume(Effect.succeed({ server, sockets }))
        })
      })),
    ({ server, sockets }) =>
      Effect.callback<void>((resume) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map(() => ({ socket })))
