/**
 * What a user reads when the way to a `skein serve` fails: what happened, in plain words, and
 * what to do about it. Never a class name of the transport (`SocketOpenError`, `RpcClientError`):
 * those say nothing to someone whose editor shows the message.
 *
 * `explain` takes whatever the RPC client failed with (an `RpcClientError` and its reason, a
 * Node error, a `ws` error event, a `Gate.Refused`) and the URL the client was given.
 */
import * as Address from "./Address.ts"

type Loose = { readonly [key: string]: unknown }

const isObject = (u: unknown): u is Loose => typeof u === "object" && u !== null

/** The chain of causes inside an error: the error, its reason, its cause, a ws event's error, and so on. */
const chain = (error: unknown): Array<Loose> => {
  const out: Array<Loose> = []
  let current: unknown = error
  while (isObject(current) && out.length < 8 && !out.includes(current)) {
    out.push(current)
    current = current["reason"] !== undefined && isObject(current["reason"]) ? current["reason"] : current["cause"] ?? current["error"]
  }
  return out
}

const find = (links: ReadonlyArray<Loose>, key: string): unknown => links.find((link) => link[key] !== undefined)?.[key]

const tagged = (links: ReadonlyArray<Loose>, tag: string) => links.find((link) => link["_tag"] === tag)

const text = (links: ReadonlyArray<Loose>) =>
  links.map((link) => (typeof link["message"] === "string" ? link["message"] : "")).join(" ")

const LOST = new Set(["ECONNRESET", "EPIPE", "ECONNABORTED", "ERR_STREAM_DESTROYED"])
const UNREACHABLE = new Set(["ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "EHOSTDOWN", "ENETDOWN"])

/** Plain words for a failure to reach, or to stay connected to, the server at `url`. */
export const explain = (error: unknown, url: string): string => {
  const address = Address.parse(url)
  const unix = address._tag === "unix" ? address.path : undefined
  const started = unix !== undefined ? "is `skein serve` running? (It makes that socket when it starts.)" : `is \`skein serve --listen ${url}\` running?`
  const links = chain(error)
  const code = find(links, "code")
  const refused = tagged(links, "Refused")
  const wrongToken = `The Skein server at ${url} refused the token: give the token it was started with (SKEIN_SERVE_TOKEN or --token-file).`
  const full = (why: string) =>
    `The Skein server at ${url} refused the connection: ${why}. Close some, or start it with a higher --max-connections.`
  if (refused !== undefined) {
    const why = String(refused["why"] ?? "")
    switch (refused["reason"]) {
      case "refused":
        return /token/i.test(why) ? wrongToken : /too many connections/.test(why) ? full(why) : `The Skein server at ${url} refused the connection: ${why}.`
      case "foreign":
        return `What answers at ${url} is not a Skein server: check the address.`
      default:
        return `What listens at ${url} accepted the connection but did not answer as a Skein server does: is it \`skein serve\` (of this version)?`
    }
  }
  const status = /Unexpected server response: (\d{3})/.exec(text(links))
  if (status !== null) {
    return status[1] === "401"
      ? wrongToken
      : status[1] === "503"
      ? full("too many connections")
      : status[1] === "404"
      ? `${url} answered HTTP 404 to the WebSocket upgrade: check the path (the one \`skein serve --listen\` was given).`
      : `${url} answered HTTP ${status[1]} to the WebSocket upgrade: is it \`skein serve\`?`
  }
  if (code === "ECONNREFUSED") return `Nothing listens at ${unix ?? url}: ${started}`
  if (code === "ENOENT" && unix !== undefined) return `There is no socket at ${unix}: ${started}`
  if ((code === "EACCES" || code === "EPERM") && unix !== undefined) {
    return `Cannot open ${unix}: permission denied. The socket is only for the user who started \`skein serve\`: connect as that user.`
  }
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") return `Cannot find the host of ${url}: check the address.`
  if ((typeof code === "string" && UNREACHABLE.has(code)) || find(links, "kind") === "Timeout") {
    return `${url} did not answer: is the host reachable, and ${started.replace(/^is /, "")}`
  }
  if (/ping timeout/.test(text(links))) {
    return `The Skein server at ${url} stopped answering: is it still running, and the network up? The next request connects again.`
  }
  if (
    (typeof code === "string" && LOST.has(code)) ||
    tagged(links, "SocketCloseError") !== undefined ||
    tagged(links, "SocketReadError") !== undefined ||
    tagged(links, "SocketWriteError") !== undefined
  ) {
    return `The connection to the Skein server at ${url} was lost (the server stopped, or the network failed): is it still running? The next request connects again.`
  }
  if (tagged(links, "RpcClientDefect") !== undefined) {
    return `The Skein server at ${url} sent something this client cannot read: is it the same version of Skein?`
  }
  return `Cannot reach the Skein server at ${url}: ${started}`
}
