/**
 * `web_fetch {url, prompt?}`: a web page as Markdown (HTML) or as text, bounded.
 *
 * - Asked for per host (`Address.host`) like a change, since a URL can carry out what the
 *   model read (the permission gate; an "always" answer covers that one host). The question
 *   shows the full URL and says when the host is this machine or a private network's.
 * - Only `http:` and `https:`; no URL with a user name or password; no URL that holds one of
 *   the secrets Skein knows (`src/secrets`): those are refused before anyone is asked.
 * - A name that resolves to this machine, a link-local or a private address is not fetched
 *   by that name (the question did not say where it leads): the model is told to name the
 *   address itself, which is then asked for as such. `localhost` must resolve to this machine.
 * - Redirects on the same host are followed (at most `MAX_REDIRECTS`); one to another host
 *   is not: the result names the new URL, which needs a `web_fetch` (and a question) of its own.
 * - Nothing of the user's is sent (`web/Http.ts`): no cookies, no credentials, no proxy.
 * - At most `MAX_BYTES` are read, in at most `TIMEOUT`; the Markdown or text is cut at
 *   `MAX_CHARS` characters with a note of how much more there was. Binary bodies are refused.
 * - `prompt` is what the caller wants from the page: it is echoed above the page, and no
 *   model reads the page for it (that would be a model call no one asked for).
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Secrets from "../secrets/Secrets.ts"
import * as Tool from "./Tool.ts"
import * as Address from "./web/Address.ts"
import * as Http from "./web/Http.ts"
import * as Page from "./web/Page.ts"
import * as ToolWorker from "./worker/ToolWorker.ts"

export const MAX_BYTES = 5 * 1024 * 1024
export const MAX_CHARS = 100_000
const MAX_REDIRECTS = 5
const TIMEOUT = Duration.seconds(30)
const MAX_URL = 8192

/**
 * Characters of HTML turned into Markdown at most: the beginning of a larger page is (a page
 * of 1 MB takes seconds and over 100 MB of the worker's heap, and gives far more Markdown
 * than `MAX_CHARS` already).
 */
export const HtmlLimit = Context.Reference<number>("skein/tools/web_fetch/HtmlLimit", { defaultValue: () => 1_000_000 })

/** Why `raw` cannot be fetched at all, before anyone is asked; undefined when it can. */
const urlProblem = (raw: string): string | undefined => {
  if (raw.length > MAX_URL) return `the URL is longer than ${MAX_URL} characters`
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return "not an absolute URL (give it with http:// or https://)"
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return `web_fetch reads only http:// and https:// URLs, not ${url.protocol}`
  if (url.username !== "" || url.password !== "") return "the URL carries a user name or password; web_fetch sends no credentials"
  const decoded = (() => {
    try {
      return decodeURIComponent(raw)
    } catch {
      return raw
    }
  })()
  if (Secrets.redact(raw) !== raw || Secrets.redact(decoded) !== decoded) {
    return "the URL contains one of the secrets Skein knows (a key or token); it is never sent anywhere"
  }
  return undefined
}

const Url = Schema.String.check(Schema.makeFilter((raw: string) => urlProblem(raw) ?? true)).annotate({
  description: "The page's absolute http:// or https:// URL"
})

const Params = Schema.Struct({
  url: Url,
  prompt: Schema.optionalKey(
    Schema.String.annotate({ description: "What you want from the page (shown with it; no model reads the page for you)" })
  )
})
type Params = typeof Params.Type

/** A same-host redirect target, or where it leads when it leaves the host or the web. */
type Hop = { readonly _tag: "follow"; readonly url: URL } | { readonly _tag: "stop"; readonly output: Tool.ToolOutput }

const withHost = (url: URL, address: string): string => {
  const copy = new URL(url.href)
  copy.hostname = address.includes(":") ? `[${address}]` : address
  return copy.href
}

/**
 * The address to connect to for `url`, or why not (see the module's rules on names and
 * addresses); `lookup` resolves a name (DNS, or a test's table).
 */
export const target = (
  url: URL,
  lookup: (name: string) => Effect.Effect<ReadonlyArray<Http.Resolved>, string> = Http.resolve
): Effect.Effect<ReadonlyArray<Http.Resolved>, string> => {
  const name = Address.hostname(url)
  if (Address.isIpLiteral(name)) return Effect.succeed([{ address: name, family: name.includes(":") ? 6 : 4 }])
  return Effect.flatMap(lookup(name), (addresses) => {
    if (Address.isLocalhostName(name)) {
      const elsewhere = addresses.find((a) => Address.reach(a.address) !== "this machine")
      return elsewhere === undefined ? Effect.succeed(addresses) : Effect.fail(`${name} resolves to ${elsewhere.address}, which is not this machine; it was not fetched`)
    }
    const inner = addresses.find((a) => Address.reach(a.address) !== "public")
    if (inner === undefined) return Effect.succeed(addresses)
    return Effect.fail(
      `${name} resolves to ${inner.address} (${Address.reach(inner.address)}). web_fetch reaches such an address only when the URL names it, ` +
        `so that the user is asked about it as such: call web_fetch with ${withHost(url, inner.address)} if that is what you mean.`
    )
  })
}

const redirect = (from: URL, response: Http.Response, hops: number): Hop | undefined => {
  if (response.status < 300 || response.status > 399 || response.status === 304) return undefined
  const location = response.headers["location"]
  if (location === undefined || location.trim() === "") return undefined
  let next: URL
  try {
    next = new URL(location, from)
  } catch {
    return { _tag: "stop", output: Tool.error(`${from.href} redirected (HTTP ${response.status}) to an address that is not a URL.`) }
  }
  next.hash = ""
  if (next.protocol !== "http:" && next.protocol !== "https:") {
    return { _tag: "stop", output: Tool.error(`${from.href} redirected (HTTP ${response.status}) to a ${next.protocol} address, which web_fetch does not read.`) }
  }
  if (Address.host(next) !== Address.host(from)) {
    return {
      _tag: "stop",
      output: Tool.ok(
        `${from.href} redirected (HTTP ${response.status}) to ${next.href}, on another host (${Address.describe(next)}). ` +
          "It was not fetched: call web_fetch with that URL to read it (it is asked for on its own)."
      )
    }
  }
  if (hops >= MAX_REDIRECTS) return { _tag: "stop", output: Tool.error(`${from.href} redirected more than ${MAX_REDIRECTS} times; stopped.`) }
  return { _tag: "follow", url: next }
}

/** GETs `start`, following redirects on its host: the last response and its URL, or a result to give as it is. */
const follow = (start: URL) =>
  Effect.gen(function*() {
    let url = start
    for (let hops = 0;; hops++) {
      const to = yield* target(url)
      const response = yield* Http.get(url, to, MAX_BYTES)
      const hop = redirect(url, response, hops)
      if (hop === undefined) return { _tag: "page" as const, url, response, address: response.address }
      if (hop._tag === "stop") return { _tag: "result" as const, output: hop.output }
      url = hop.url
    }
  })

/** The first line of a result: the URL, where it came from, status, type, size (and the address, for a name). */
const describePage = (url: URL, response: Http.Response, start: URL, address: string): string => {
  const type = Page.mediaType(response.headers["content-type"]) || "no content type"
  const size = response.cut ? `more than ${Page.size(MAX_BYTES)}` : Page.size(response.body.length)
  const moved = url.href === start.href ? "" : ` (redirected from ${start.href})`
  const from = Address.isIpLiteral(Address.hostname(url)) ? "" : `, from ${address}`
  return `${url.href}${moved}: HTTP ${response.status}${response.statusText === "" ? "" : ` ${response.statusText}`}, ${type}, ${size}${from}`
}

/** The response as the model reads it. */
const present = (start: URL, url: URL, response: Http.Response, address: string, prompt: string | undefined) =>
  Effect.gen(function*() {
    const contentType = response.headers["content-type"]
    const kind = Page.kind(contentType, response.body)
    const heading = describePage(url, response, start, address)
    if (kind === "binary") {
      return Tool.error(`${heading}. This is not a web page or text, and web_fetch reads only those; it was not shown.`)
    }
    const label = Page.charset(contentType, response.body, kind === "html")
    const decoded = Page.decode(response.body, label)
    let body = decoded.text
    const htmlLimit = yield* HtmlLimit
    const htmlCut = kind === "html" && decoded.text.length > htmlLimit
    if (kind === "html") {
      const converted = yield* ToolWorker.markdown(htmlCut ? decoded.text.slice(0, htmlLimit) : decoded.text, url.href).pipe(
        Effect.mapError((message) => `${heading}. Its HTML could not be turned into Markdown: ${message}`)
      )
      if (Option.isNone(converted)) {
        return Tool.error(`${heading}. Turning its HTML into Markdown took longer than ${ToolWorker.formatLimit(yield* ToolWorker.TimeLimit)}; stopped.`)
      }
      body = converted.value
    }
    const shown = Page.cut(body, MAX_CHARS)
    const title = kind === "html" ? Page.title(decoded.text) : undefined
    const lines = [
      heading,
      ...(title !== undefined ? [`Title: ${title}`] : []),
      ...(decoded.unknown ? [`(The page says its charset is ${label}, which is not known here; it was read as UTF-8.)`] : []),
      ...(prompt !== undefined && prompt.trim() !== "" ? [`The page, for: ${prompt.trim()}`] : []),
      "",
      shown.text === "" ? "(The page has no text.)" : shown.text,
      ...(shown.left > 0 ? ["", `(cut: ${shown.left} more characters)`] : []),
      ...(htmlCut ? ["", `(cut: only the first ${htmlLimit} of the page's ${decoded.text.length} characters of HTML were turned into Markdown)`] : []),
      ...(response.cut ? ["", `(cut: only the first ${Page.size(MAX_BYTES)} of the page were downloaded)`] : [])
    ]
    const text = lines.join("\n")
    return response.status >= 400 ? Tool.error(text) : Tool.ok(text)
  })

export const web_fetch = Tool.define<Params>({
  name: "web_fetch",
  description: "Fetch a web page (http:// or https://) and read it: HTML as Markdown, other text as it is. " +
    "The user is asked per host unless allowed. Same-host redirects are followed; a redirect to another host is reported " +
    `and needs its own web_fetch. Pages are cut at ${MAX_CHARS} characters (${Page.size(MAX_BYTES)} downloaded), ` +
    "binary files are refused, and nothing private (cookies, credentials) is sent. " +
    "`prompt` says what you want from the page; it is shown with the page (no model summarizes it for you).",
  kind: "fetch",
  mutating: true,
  parameters: Params,
  title: ({ url }) => {
    const parsed = new URL(url)
    return `Fetch ${url} (${Address.describe(parsed)})`
  },
  locations: () => [],
  scope: ({ url }) => {
    const parsed = new URL(url)
    return { kind: "host", value: Address.host(parsed), label: `fetches from ${Address.describe(parsed)}` }
  },
  execute: ({ prompt, url }) =>
    Effect.gen(function*() {
      const start = new URL(url)
      start.hash = ""
      const fetched = yield* follow(start).pipe(Effect.timeoutOption(TIMEOUT))
      if (Option.isNone(fetched)) return Tool.error(`${start.href} did not answer within ${Duration.format(TIMEOUT)}; stopped.`)
      if (fetched.value._tag === "result") return fetched.value.output
      return yield* present(start, fetched.value.url, fetched.value.response, fetched.value.address, prompt)
    }).pipe(Effect.catch((message: string) => Effect.succeed(Tool.error(`${url} was not fetched: ${message}`))))
})
