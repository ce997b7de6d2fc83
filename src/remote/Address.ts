/**
 * Where `skein serve` listens and where a client connects: `unix:PATH`, `tcp://HOST:PORT` or
 * `ws://HOST:PORT/PATH`. A unix socket is protected by its file mode (0600); tcp and ws need a
 * token, and a host that is not loopback must be named explicitly.
 */

export type Address =
  | { readonly _tag: "unix"; readonly path: string }
  | { readonly _tag: "tcp"; readonly host: string; readonly port: number }
  | { readonly _tag: "ws"; readonly host: string; readonly port: number; readonly path: string }

/** The address an URL names, or why it names none. */
export const parse = (url: string): Address | { readonly _tag: "invalid"; readonly message: string } => {
  if (url.startsWith("unix:")) {
    const path = url.slice("unix:".length).replace(/^\/\/(?=\/)/, "")
    return path.length > 0 ? { _tag: "unix", path } : { _tag: "invalid", message: `"${url}" names no socket file (unix:PATH)` }
  }
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return { _tag: "invalid", message: `"${url}" is not an address: use unix:PATH, tcp://HOST:PORT or ws://HOST:PORT/PATH` }
  }
  if (parsed.protocol !== "tcp:" && parsed.protocol !== "ws:") {
    return { _tag: "invalid", message: `"${url}": the scheme must be unix:, tcp:// or ws://` }
  }
  // `ws://host:80/…`: the URL parser drops a port that is its scheme's default.
  const explicit80 = parsed.port === "" && /^[a-z]+:\/\/(?:\[[^\]]*\]|[^/:@]*):80(?:[/?#]|$)/i.test(url)
  const port = explicit80 ? 80 : Number(parsed.port)
  const host = parsed.hostname.replace(/^\[(.*)\]$/, "$1")
  if (!Number.isInteger(port) || port <= 0 || port > 65535 || (parsed.port === "" && !explicit80)) {
    return { _tag: "invalid", message: `"${url}" needs a port (1-65535)` }
  }
  if (parsed.username !== "" || parsed.password !== "") {
    return { _tag: "invalid", message: "An address carries no credentials: give the token with SKEIN_SERVE_TOKEN or --token-file" }
  }
  return parsed.protocol === "tcp:" ? { _tag: "tcp", host, port } : { _tag: "ws", host, port, path: parsed.pathname === "" ? "/" : parsed.pathname }
}

/** Whether a host is this machine only. */
export const isLoopback = (host: string): boolean =>
  host === "localhost" || host === "::1" || /^127(?:\.\d{1,3}){3}$/.test(host)

export const format = (address: Address): string => {
  switch (address._tag) {
    case "unix":
      return `unix:${address.path}`
    case "tcp":
      return `tcp://${address.host.includes(":") ? `[${address.host}]` : address.host}:${address.port}`
    case "ws":
      return `ws://${address.host.includes(":") ? `[${address.host}]` : address.host}:${address.port}${address.path}`
  }
}
