/**
 * Where a web address points, in words a user answering a question reads. Pure.
 *
 * - `host`: what a permission for `web_fetch` is about: the URL's host with its port when it
 *   is not the scheme's default (`localhost:3000` and `localhost:5432` are different servers;
 *   `127.0.0.1` and `localhost` are different hosts).
 * - `reach`: what kind of address an IP is: this machine (loopback, unspecified), a link-local
 *   one (cloud metadata services live at 169.254.169.254), a private network's (10/8,
 *   172.16/12, 192.168/16, 100.64/10, fc00::/7), or public.
 */

/** A host as it is compared: lower case, no trailing dot, IPv6 without brackets. */
const normalize = (host: string): string => {
  const lower = host.trim().toLowerCase().replace(/\.$/, "")
  return lower.startsWith("[") && lower.endsWith("]") ? lower.slice(1, -1) : lower
}

/** Whether a host (normalized) is an IP address rather than a name. */
export const isIpLiteral = (host: string): boolean => /^\d{1,3}(\.\d{1,3}){3}$/.test(host) || (host.includes(":") && /^[0-9a-f:.]+$/i.test(host))

type Reach = "this machine" | "link-local" | "private network" | "public"

const ipv4 = (address: string): ReadonlyArray<number> | undefined => {
  const parts = address.split(".")
  if (parts.length !== 4 || !parts.every((part) => /^\d{1,3}$/.test(part))) return undefined
  const numbers = parts.map(Number)
  return numbers.every((n) => n <= 255) ? numbers : undefined
}

/** The kind of an IP address (v4, v6, or v4 mapped into v6). */
export const reach = (address: string): Reach => {
  const lower = normalize(address)
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower)
  const v4 = ipv4(mapped !== null ? mapped[1]! : lower)
  if (v4 !== undefined) {
    const [a, b] = [v4[0]!, v4[1]!]
    if (a === 127 || a === 0) return "this machine"
    if (a === 169 && b === 254) return "link-local"
    if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 100 && b >= 64 && b <= 127)) return "private network"
    return "public"
  }
  if (lower === "::1" || lower === "::") return "this machine"
  if (/^fe[89ab][0-9a-f]?:/.test(lower)) return "link-local"
  if (/^f[cd][0-9a-f]{0,2}:/.test(lower)) return "private network"
  return "public"
}

/** Whether `name` means this machine by its name alone (`localhost`, `*.localhost`). */
export const isLocalhostName = (name: string): boolean => {
  const host = normalize(name)
  return host === "localhost" || host.endsWith(".localhost")
}

/** The host a permission is about: host name (lower case) and the port when it is not the default. */
export const host = (url: URL): string => url.host.toLowerCase()

/** The name of a `host` (as `host` gives it): without its port, IPv6 without brackets. */
export const nameOf = (host: string): string => normalize(host.replace(/:\d+$/, ""))

/** The host name alone, IPv6 without brackets. */
export const hostname = (url: URL): string => normalize(url.hostname)

/**
 * How a URL's host reads in a question: its kind said when it is not a public name
 * ("127.0.0.1 (this machine)", "10.0.0.5 (private network)").
 */
export const describe = (url: URL): string => {
  const name = hostname(url)
  if (isLocalhostName(name)) return `${host(url)} (this machine)`
  if (!isIpLiteral(name)) return host(url)
  const kind = reach(name)
  return kind === "public" ? host(url) : `${host(url)} (${kind})`
}
