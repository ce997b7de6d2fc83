/**
 * `web_fetch` through `Tool.run` against a real HTTP server on loopback: HTML as Markdown
 * (scripts and styles gone, links absolute), text and JSON as they are, the honest cuts,
 * redirects (same host followed, another host reported and not fetched), nothing private
 * sent (no cookie after a `Set-Cookie`, no credentials), binary refused, charsets, the
 * time limit (on the TestClock), and URLs refused before anyone is asked.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/testing/TestClock"
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import * as Secrets from "../../src/secrets/Secrets.ts"
import * as Tool from "../../src/tools/Tool.ts"
import { HtmlLimit, MAX_BYTES, MAX_CHARS, target, web_fetch } from "../../src/tools/web_fetch.ts"
import * as TempDir from "../support/TempDir.ts"

type Handler = (request: IncomingMessage, response: ServerResponse) => void

/** An HTTP server on 127.0.0.1 serving `routes`, closed with the scope; it records every request's path and headers. */
const serve = (routes: Record<string, Handler>) =>
  Effect.acquireRelease(
    Effect.callback<{ readonly port: number; readonly seen: Array<{ readonly path: string; readonly headers: IncomingHttpHeaders }>; readonly close: () => void }>((resume) => {
      const seen: Array<{ readonly path: string; readonly headers: IncomingHttpHeaders }> = []
      const server = createServer((request, response) => {
        seen.push({ path: request.url ?? "", headers: request.headers })
        const handler = routes[request.url ?? ""]
        if (handler === undefined) return response.writeHead(404, { "content-type": "text/plain" }).end("no such page")
        handler(request, response)
      })
      server.listen(0, "127.0.0.1", () =>
        resume(Effect.succeed({
          port: (server.address() as AddressInfo).port,
          seen,
          close: () => {
            server.closeAllConnections()
            server.close()
          }
        })))
    }),
    (server) => Effect.sync(server.close)
  )

const ctx: Tool.ToolContext = { sessionId: "s-1", toolCallId: "c-1", cwd: "/", roots: ["/"] }
const run = (args: unknown) => Tool.run(web_fetch, args, ctx).pipe(Effect.provide(TempDir.platform))

const page = (body: string | Uint8Array, type = "text/html; charset=utf-8", headers: Record<string, string> = {}): Handler => (_request, response) =>
  response.writeHead(200, { "content-type": type, ...headers }).end(body)

const HTML = `<!doctype html><html><head><title>The Guide</title><style>body { color: red }</style>
<script>window.secretTracker = "do-not-show"</script></head>
<body><h1>Getting started</h1><p>Read the <a href="/docs/install">install notes</a> and <a href="javascript:void(0)">this</a>.</p>
<h2>Example</h2><pre><code>npm install skein</code></pre><ul><li>one</li><li>two</li></ul>
<table><tr><th>option</th><th>default</th></tr><tr><td>--mode</td><td><code>default</code></td></tr></table>
<script>document.write("also hidden")</script><noscript>enable js</noscript></body></html>`

describe("web_fetch", () => {
  it.effect("turns an HTML page into Markdown: headings, absolute links, code, lists, tables; no script, style or head", () =>
    Effect.gen(function*() {
      const server = yield* serve({ "/guide": page(HTML) })
      const url = `http://127.0.0.1:${server.port}/guide`
      const out = yield* run({ url, prompt: "how to install" })
      assert.isTrue(out.ok, out.content)
      const [heading, ...rest] = out.content.split("\n")
      assert.strictEqual(heading, `${url}: HTTP 200 OK, text/html, ${HTML.length} bytes`)
      assert.deepStrictEqual(rest.slice(0, 3), ["Title: The Guide", "The page, for: how to install", ""])
      const markdown = rest.slice(3).join("\n")
      assert.include(markdown, "# Getting started")
      assert.include(markdown, `Read the [install notes](http://127.0.0.1:${server.port}/docs/install) and this.`)
      assert.include(markdown, "## Example\n\n```\nnpm install skein\n```")
      assert.include(markdown, "-   one\n-   two")
      assert.include(markdown, "| option | default |\n| --- | --- |\n| --mode | default |")
      for (const hidden of ["secretTracker", "do-not-show", "also hidden", "color: red", "enable js", "javascript:"]) {
        assert.notInclude(out.content, hidden)
      }
      assert.strictEqual(web_fetch.title({ url }), `Fetch ${url} (127.0.0.1:${server.port} (this machine))`)
    }))

  it.effect("text and JSON come as they are; a page longer than the limit is cut with how much was left", () =>
    Effect.gen(function*() {
      const long = "x".repeat(MAX_CHARS + 1234)
      const server = yield* serve({ "/a.json": page("{\"a\": [1, 2]}", "application/json"), "/long.txt": page(long, "text/plain") })
      const json = yield* run({ url: `http://127.0.0.1:${server.port}/a.json` })
      assert.isTrue(json.ok)
      assert.isTrue(json.content.endsWith("\n\n{\"a\": [1, 2]}"), json.content)
      const cut = yield* run({ url: `http://127.0.0.1:${server.port}/long.txt` })
      const lines = cut.content.split("\n")
      assert.strictEqual(lines.at(-1), "(cut: 1234 more characters)")
      assert.strictEqual(lines.at(-3), "x".repeat(MAX_CHARS))
    }))

  it.effect("stops reading past the download limit and says so, counting what a compressed body unpacks to", () =>
    Effect.gen(function*() {
      const zlib = yield* Effect.promise(() => import("node:zlib"))
      const bomb = zlib.brotliCompressSync(Buffer.alloc(64 * 1024 * 1024, "z"))
      const server = yield* serve({
        "/bomb": page(bomb, "text/plain", { "content-encoding": "br" }),
        "/big": (_request, response) => {
          response.writeHead(200, { "content-type": "text/plain" })
          const chunk = "y".repeat(1024 * 1024)
          for (let i = 0; i < 7; i++) response.write(chunk)
          response.end()
        }
      })
      const out = yield* run({ url: `http://127.0.0.1:${server.port}/big` })
      assert.include(out.content.split("\n")[0]!, "more than 5.0 MB")
      assert.strictEqual(out.content.split("\n").at(-1), "(cut: only the first 5.0 MB of the page were downloaded)")
      assert.include(out.content, `(cut: ${MAX_BYTES - MAX_CHARS} more characters)`)
      const unpacked = yield* run({ url: `http://127.0.0.1:${server.port}/bomb` })
      assert.isBelow(bomb.length, 64 * 1024)
      assert.strictEqual(unpacked.content.split("\n").at(-1), "(cut: only the first 5.0 MB of the page were downloaded)")
      assert.include(unpacked.content, `(cut: ${MAX_BYTES - MAX_CHARS} more characters)`)
    }))

  it.effect("turns only the beginning of a very large HTML page into Markdown, and says so", () =>
    Effect.gen(function*() {
      const html = `<h1>Start</h1>${"<p>paragraph</p>".repeat(100)}<h2>Past the limit</h2>`
      const server = yield* serve({ "/large": page(html) })
      const out = yield* run({ url: `http://127.0.0.1:${server.port}/large` }).pipe(Effect.provideService(HtmlLimit, 200))
      assert.include(out.content, "# Start")
      assert.notInclude(out.content, "Past the limit")
      assert.strictEqual(out.content.split("\n").at(-1), `(cut: only the first 200 of the page's ${html.length} characters of HTML were turned into Markdown)`)
    }))

  it.effect("a redirect to another host is reported, not followed (127.0.0.1 and localhost are two hosts)", () =>
    Effect.gen(function*() {
      const server = yield* serve({
        "/moved": (_request, response) => response.writeHead(302, { location: `http://localhost:${server.port}/target` }).end()
      })
      const out = yield* run({ url: `http://127.0.0.1:${server.port}/moved` })
      assert.isTrue(out.ok)
      assert.strictEqual(
        out.content,
        `http://127.0.0.1:${server.port}/moved redirected (HTTP 302) to http://localhost:${server.port}/target, on another host ` +
          `(localhost:${server.port} (this machine)). It was not fetched: call web_fetch with that URL to read it (it is asked for on its own).`
      )
      assert.deepStrictEqual(server.seen.map((r) => r.path), ["/moved"])
    }))

  it.effect("follows redirects on the same host, sending no cookie it was given and nothing private", () =>
    Effect.gen(function*() {
      const server = yield* serve({
        "/login": (_request, response) =>
          response.writeHead(303, { location: "/home", "set-cookie": "session=abc123; Path=/" }).end(),
        "/home": page("<p>home</p>")
      })
      const url = `http://127.0.0.1:${server.port}/login`
      const out = yield* run({ url })
      assert.strictEqual(out.content.split("\n")[0], `http://127.0.0.1:${server.port}/home (redirected from ${url}): HTTP 200 OK, text/html, 11 bytes`)
      assert.deepStrictEqual(server.seen.map((r) => r.path), ["/login", "/home"])
      for (const { headers } of server.seen) {
        assert.deepStrictEqual(Object.keys(headers).sort(), ["accept", "accept-encoding", "connection", "host", "user-agent"])
        assert.match(headers["user-agent"]!, /^Skein\//)
      }
    }))

  it.effect("more than five redirects stop", () =>
    Effect.gen(function*() {
      const routes: Record<string, Handler> = {}
      for (let i = 0; i < 10; i++) routes[`/r${i}`] = (_request, response) => response.writeHead(301, { location: `/r${i + 1}` }).end()
      const server = yield* serve(routes)
      const out = yield* run({ url: `http://127.0.0.1:${server.port}/r0` })
      assert.isFalse(out.ok)
      assert.strictEqual(out.content, `http://127.0.0.1:${server.port}/r5 redirected more than 5 times; stopped.`)
      assert.strictEqual(server.seen.length, 6)
    }))

  it.effect("refuses binary bodies; reads a declared charset and a gzipped page; reports HTTP errors as failures", () =>
    Effect.gen(function*() {
      const zlib = yield* Effect.promise(() => import("node:zlib"))
      const server = yield* serve({
        "/logo.png": page(new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 0, 1, 2]), "image/png"),
        "/latin": page(Buffer.from("<p>caf\xe9 cr\xe8me</p>", "latin1"), "text/html; charset=windows-1252"),
        "/meta": page(Buffer.from("<html><head><meta charset=\"iso-8859-1\"></head><body><p>na\xefve</p></body></html>", "latin1"), "text/html"),
        "/zipped": page(zlib.gzipSync("<h1>packed</h1>"), "text/html", { "content-encoding": "gzip" })
      })
      const binary = yield* run({ url: `http://127.0.0.1:${server.port}/logo.png` })
      assert.isFalse(binary.ok)
      assert.strictEqual(
        binary.content,
        `http://127.0.0.1:${server.port}/logo.png: HTTP 200 OK, image/png, 8 bytes. This is not a web page or text, and web_fetch reads only those; it was not shown.`
      )
      assert.isTrue((yield* run({ url: `http://127.0.0.1:${server.port}/latin` })).content.endsWith("\n\ncafé crème"))
      assert.isTrue((yield* run({ url: `http://127.0.0.1:${server.port}/meta` })).content.endsWith("\n\nnaïve"))
      assert.isTrue((yield* run({ url: `http://127.0.0.1:${server.port}/zipped` })).content.endsWith("\n\n# packed"))
      // By name, the address it was fetched from is said.
      const named = yield* run({ url: `http://localhost:${server.port}/latin` })
      assert.strictEqual(named.content.split("\n")[0], `http://localhost:${server.port}/latin: HTTP 200 OK, text/html, 17 bytes, from 127.0.0.1`)
      const missing = yield* run({ url: `http://127.0.0.1:${server.port}/nothing` })
      assert.isFalse(missing.ok)
      assert.isTrue(missing.content.startsWith(`http://127.0.0.1:${server.port}/nothing: HTTP 404 Not Found, text/plain`))
      assert.isTrue(missing.content.endsWith("\n\nno such page"))
    }))

  it.effect("a page cut off by the server is an error, not half a page", () =>
    Effect.gen(function*() {
      const server = yield* serve({
        "/half": (_request, response) => {
          response.writeHead(200, { "content-type": "text/plain", "content-length": "1000" })
          response.write("only the start", () => response.destroy())
        }
      })
      const out = yield* run({ url: `http://127.0.0.1:${server.port}/half` })
      assert.deepStrictEqual(out, Tool.error(`http://127.0.0.1:${server.port}/half was not fetched: the server closed the connection in the middle of the page`))
    }))

  it.effect("gives up on a server that does not answer, after 30 s", () =>
    Effect.gen(function*() {
      let arrived = () => {}
      const inFlight = new Promise<void>((resolve) => (arrived = resolve))
      const server = yield* serve({ "/slow": () => arrived() })
      const fiber = yield* Effect.forkChild(run({ url: `http://127.0.0.1:${server.port}/slow` }))
      // The limit runs from a request in flight.
      yield* Effect.promise(() => inFlight)
      yield* TestClock.adjust("29 seconds")
      assert.isUndefined(fiber.pollUnsafe())
      yield* TestClock.adjust("1 second")
      const out = yield* Fiber.join(fiber)
      assert.deepStrictEqual(out, Tool.error(`http://127.0.0.1:${server.port}/slow did not answer within 30s; stopped.`))
    }))

  it.effect("refuses, before anything is asked or sent, URLs that are not http(s), carry credentials or a known secret", () =>
    Effect.gen(function*() {
      const secret = "sk-webfetch-test-0123456789abcdef"
      Secrets.registry().addValue(secret)
      const cases: ReadonlyArray<readonly [string, string]> = [
        ["file:///etc/passwd", "web_fetch reads only http:// and https:// URLs, not file:"],
        ["not a url", "not an absolute URL"],
        ["https://user:pw@example.com/", "carries a user name or password"],
        [`https://example.com/?key=${secret}`, "contains one of the secrets Skein knows"],
        [`https://example.com/${encodeURIComponent(secret).replace("-", "%2D")}`, "contains one of the secrets Skein knows"]
      ]
      for (const [url, why] of cases) {
        const out = yield* run({ url })
        assert.isFalse(out.ok, url)
        assert.include(out.content, why, url)
        assert.include(out.content, "Invalid arguments for web_fetch", url)
      }
    }))

  it.effect("a name that resolves to a private or local address is not fetched by that name; localhost must be this machine", () =>
    Effect.gen(function*() {
      const table = (address: string) => (_name: string) => Effect.succeed([{ address, family: 4 as const }])
      const inner = yield* Effect.flip(target(new URL("http://docs.example.com:8080/a?b=1"), table("10.1.2.3")))
      assert.strictEqual(
        inner,
        "docs.example.com resolves to 10.1.2.3 (private network). web_fetch reaches such an address only when the URL names it, " +
          "so that the user is asked about it as such: call web_fetch with http://10.1.2.3:8080/a?b=1 if that is what you mean."
      )
      assert.include(yield* Effect.flip(target(new URL("http://rebind.example/"), table("127.0.0.1"))), "(this machine)")
      // One inner address among public ones is enough to refuse: the connection could go to any.
      const mixed = (_name: string) => Effect.succeed([{ address: "93.184.215.14", family: 4 as const }, { address: "fd00::5", family: 6 as const }])
      assert.include(yield* Effect.flip(target(new URL("http://mixed.example/"), mixed)), "resolves to fd00::5 (private network)")
      assert.include(yield* Effect.flip(target(new URL("http://meta.example/"), table("169.254.169.254"))), "(link-local)")
      assert.deepStrictEqual(yield* target(new URL("http://example.com/"), table("93.184.215.14")), [{ address: "93.184.215.14", family: 4 }])
      assert.deepStrictEqual(yield* target(new URL("http://localhost/"), table("127.0.0.1")), [{ address: "127.0.0.1", family: 4 }])
      assert.include(yield* Effect.flip(target(new URL("http://localhost/"), table("203.0.113.9"))), "which is not this machine")
      // An address in the URL is connected to as it is, and the question names its kind.
      assert.deepStrictEqual(yield* target(new URL("http://[::1]:9/"), table("203.0.113.9")), [{ address: "::1", family: 6 }])
      assert.strictEqual(web_fetch.title({ url: "http://10.0.0.7/x" }), "Fetch http://10.0.0.7/x (10.0.0.7 (private network))")
      assert.strictEqual(web_fetch.title({ url: "http://169.254.169.254/" }), "Fetch http://169.254.169.254/ (169.254.169.254 (link-local))")
    }))
})
