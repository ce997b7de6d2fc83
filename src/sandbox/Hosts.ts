/**
 * Which destinations the egress proxy admits. Pure.
 *
 * - A host is admitted when an entry of `sandbox.network.allow` names it exactly
 *   (case-insensitive, a trailing dot ignored), or an entry `*.example.com` covers it
 *   (`a.example.com`, `a.b.example.com`; not `example.com` itself).
 * - Once admitted by name, the address it resolves to must not be this machine's own
 *   (loopback, unspecified) nor link-local (cloud metadata services live at 169.254.169.254):
 *   a name whose DNS points there is refused, unless the entry names that address itself or
 *   the host is `localhost`. Private networks (10/8, 192.168/16, …) are admitted: company
 *   registries live there.
 */

/** The host as an entry would name it: lower case, no trailing dot, IPv6 without brackets. */
export const normalize = (host: string): string => {
  const lower = host.trim().toLowerCase().replace(/\.$/, "")
  return lower.startsWith("[") && lower.endsWith("]") ? lower.slice(1, -1) : lower
}

const isIpLiteral = (host: string): boolean => /^\d{1,3}(\.\d{1,3}){3}$/.test(host) || (host.includes(":") && /^[0-9a-f:.]+$/i.test(host))

/** The entry that admits `host`, if any. */
export const admittedBy = (allow: ReadonlyArray<string>, host: string): string | undefined => {
  const name = normalize(host)
  if (name === "") return undefined
  for (const raw of allow) {
    const entry = normalize(raw)
    if (entry === name) return raw
    if (entry.startsWith("*.") && !isIpLiteral(name) && name.endsWith(entry.slice(1)) && name.length > entry.length - 1) return raw
  }
  return undefined
}

const ipv4 = (address: string): ReadonlyArray<number> | undefined => {
  const parts = address.split(".").map(Number)
  return parts.length === 4 && parts.every((n) => Number.isInteger(n) && n >= 0 && n <= 255) ? parts : undefined
}

/** Loopback, unspecified or link-local: this machine, or its cloud's metadata service. */
const isLocalAddress = (address: string): boolean => {
  const lower = address.toLowerCase()
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower)
  const v4 = ipv4(mapped !== null ? mapped[1]! : lower)
  if (v4 !== undefined) return v4[0] === 127 || v4[0] === 0 || (v4[0] === 169 && v4[1] === 254)
  if (!lower.includes(":")) return false
  if (lower === "::1" || lower === "::") return true
  return /^fe[89ab]/.test(lower)
}

/**
 * Whether a connection to `address` (what `host` resolved to) may go ahead, once `entry`
 * admitted the host: any address but a local one, which only an entry naming that very
 * address (or `localhost`) opens.
 */
export const addressAllowed = (entry: string, host: string, address: string): boolean => {
  if (!isLocalAddress(address)) return true
  const named = normalize(entry)
  return named === normalize(address) || (named === "localhost" && normalize(host) === "localhost")
}

/** The `host:port` of a CONNECT request's target, or undefined. */
export const parseAuthority = (authority: string): { readonly host: string; readonly port: number } | undefined => {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]\s/]+):(\d{1,5})$/.exec(authority)
  if (match === null) return undefined
  const port = Number(match[2])
  return port > 0 && port < 65536 ? { host: normalize(match[1]!), port } : undefined
}
