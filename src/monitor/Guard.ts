/**
 * Who may use the monitor, decided for each request before anything else runs. Pure.
 *
 * - **Host**: the request must name the monitor as it listens (for a loopback address also
 *   `localhost`, `127.0.0.1` and `[::1]` with its port). A page of another site whose name was
 *   made to resolve to this machine (DNS rebinding) names its own host, and is refused.
 * - **Token**: every request — the page, its script, the event streams, the answers — carries
 *   the capability token: in the cookie the one-time URL set (HttpOnly, SameSite=Strict, named
 *   after the port: cookies do not tell ports apart), in `Authorization: Bearer …` (a script),
 *   or, for the page itself, in `?token=` (the one-time URL, which then sets the cookie).
 *   Compared in constant time.
 * - **Origin**: a request that says where it comes from must come from the monitor itself;
 *   a request that changes something (POST) must say so. Cross-site requests carry no cookie
 *   anyway (SameSite=Strict); this closes the rest.
 */
import * as Crypto from "node:crypto"

export interface Guard {
  readonly token: string
  /** `host:port` values a request may name. */
  readonly hosts: ReadonlySet<string>
  /** The name of the cookie that holds the token. */
  readonly cookie: string
}

export interface Request {
  readonly method: string
  readonly path: string
  readonly host: string | undefined
  readonly origin: string | undefined
  readonly secFetchSite?: string | undefined
  readonly cookie: string | undefined
  readonly authorization: string | undefined
  /** `?token=` of the URL. */
  readonly queryToken: string | undefined
}

export type Verdict =
  | { readonly _tag: "ok"; readonly via: "cookie" | "bearer" }
  /** The one-time URL: set the cookie, and go to the same page without the token. */
  | { readonly _tag: "login" }
  | { readonly _tag: "refused"; readonly status: 401 | 403; readonly message: string }

const LOOPBACK = ["127.0.0.1", "localhost", "[::1]"]

const isLoopback = (host: string) => host === "localhost" || host === "::1" || host === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(host)

/** A URL's host part for an address (`[v6]`). */
export const hostPart = (host: string) => (host.includes(":") && !host.startsWith("[") ? `[${host}]` : host)

/** A new capability token: 32 random bytes, base64url. */
export const newToken = (): string => Crypto.randomBytes(32).toString("base64url")

/** Whether `host` listens on every interface. */
export const isWildcard = (host: string) => host === "0.0.0.0" || host === "::" || host === "[::]"

/**
 * The guard of a monitor listening at `host:port`. `local`: this machine's names and addresses,
 * which a monitor listening on every interface (`0.0.0.0`, `::`) answers to.
 */
export const make = (token: string, host: string, port: number, local: ReadonlyArray<string> = []): Guard => {
  const names = isWildcard(host) ? [...LOOPBACK, ...local.map(hostPart)] : isLoopback(host) ? [...LOOPBACK, hostPart(host)] : [hostPart(host)]
  return { token, hosts: new Set(names.map((name) => `${name.toLowerCase()}:${port}`)), cookie: `skein_monitor_${port}` }
}

/** Equal in constant time (digests of equal length, whatever the lengths given). */
export const sameSecret = (given: string, expected: string): boolean =>
  Crypto.timingSafeEqual(Crypto.createHash("sha256").update(given).digest(), Crypto.createHash("sha256").update(expected).digest())

/** One cookie's value from a `Cookie` header. */
export const cookieValue = (header: string | undefined, name: string): string | undefined => {
  if (header === undefined) return undefined
  for (const part of header.split(";")) {
    const eq = part.indexOf("=")
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim()
  }
  return undefined
}

/** The pages the one-time URL may open (its token becomes the cookie). */
const isPage = (path: string) => path === "/" || /^\/sessions\/[^/]+$/.test(path)

export const check = (guard: Guard, request: Request): Verdict => {
  const host = request.host?.toLowerCase()
  if (host === undefined || !guard.hosts.has(host)) {
    return { _tag: "refused", status: 403, message: "This monitor answers only at the address it printed." }
  }
  const mutating = request.method !== "GET" && request.method !== "HEAD"
  if (request.origin !== undefined) {
    let originHost: string | undefined
    try {
      const url = new URL(request.origin)
      originHost = url.protocol === "http:" ? url.host.toLowerCase() : undefined
    } catch {
      originHost = undefined
    }
    if (originHost === undefined || !guard.hosts.has(originHost)) {
      return { _tag: "refused", status: 403, message: "Requests from other sites are refused." }
    }
  } else if (mutating) {
    return { _tag: "refused", status: 403, message: "A request that changes something must come from the monitor's page." }
  }
  if (request.secFetchSite !== undefined && request.secFetchSite !== "same-origin" && request.secFetchSite !== "none") {
    return { _tag: "refused", status: 403, message: "Requests from other sites are refused." }
  }
  const cookie = cookieValue(request.cookie, guard.cookie)
  if (cookie !== undefined && sameSecret(cookie, guard.token)) return { _tag: "ok", via: "cookie" }
  const bearer = request.authorization?.startsWith("Bearer ") === true ? request.authorization.slice("Bearer ".length) : undefined
  if (bearer !== undefined && sameSecret(bearer, guard.token)) return { _tag: "ok", via: "bearer" }
  if (request.method === "GET" && isPage(request.path) && request.queryToken !== undefined && sameSecret(request.queryToken, guard.token)) {
    return { _tag: "login" }
  }
  return { _tag: "refused", status: 401, message: "Open the monitor with the URL Skein printed (it carries the token)." }
}

/** The cookie the one-time URL sets. */
export const setCookie = (guard: Guard): string => `${guard.cookie}=${guard.token}; HttpOnly; SameSite=Strict; Path=/`

/** Headers every response carries: nothing from elsewhere may run, frame or read the page. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-resource-policy": "same-origin",
  "cross-origin-opener-policy": "same-origin",
  "cache-control": "no-store"
}
