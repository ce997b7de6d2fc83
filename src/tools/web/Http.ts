/**
 * One HTTP GET for `web_fetch`, with nothing of the user's in it.
 *
 * - Only the headers below are sent: a fixed User-Agent, Accept, Accept-Encoding. No cookie
 *   (there is no cookie jar: a `Set-Cookie` is never sent back), no Authorization, no
 *   credentials from the URL (`web_fetch` refuses URLs with them before this).
 * - No proxy: not the environment's (`HTTP(S)_PROXY`, whose URL may hold a password), not
 *   Node's global agent; a connection of its own (`agent: false`).
 * - The connection goes to the addresses given (`Resolved`, tried in turn), which the caller
 *   looked up and checked: a DNS answer that changes between the check and the connection
 *   cannot move it.
 *   TLS still checks the certificate against the host name.
 * - Redirects are not followed here (the caller decides about each).
 * - The body is read up to `maxBytes` after decompression (gzip, deflate, br), then the
 *   connection is closed and the body marked cut. Interrupting the effect closes it too.
 */
import type { IncomingMessage } from "node:http"
import type { LookupAddress } from "node:dns"
import type { LookupFunction } from "node:net"
import * as Effect from "effect/Effect"
import { VERSION } from "../../version.ts"

const USER_AGENT = `Skein/${VERSION} (web_fetch; +https://github.com/skein-agent/skein)`

export interface Resolved {
  readonly address: string
  readonly family: 4 | 6
}

export interface Response {
  readonly status: number
  readonly statusText: string
  /** Header names lower case; repeated ones joined with ", ". */
  readonly headers: Readonly<Record<string, string>>
  readonly body: Uint8Array
  /** More body came than `maxBytes`: what is here is the beginning. */
  readonly cut: boolean
  /** The address the connection went to. */
  readonly address: string
}

/** The addresses `name` resolves to (all of them), or why not. */
export const resolve = (name: string): Effect.Effect<ReadonlyArray<Resolved>, string> =>
  Effect.callback<ReadonlyArray<Resolved>, string>((resume) => {
    const dns = process.getBuiltinModule("node:dns")
    dns.lookup(name, { all: true, verbatim: true }, (error, addresses: ReadonlyArray<LookupAddress>) => {
      if (error !== null) return resume(Effect.fail(`${name} could not be resolved (${error.code ?? error.message})`))
      const found = addresses.filter((a) => a.family === 4 || a.family === 6).map((a) => ({ address: a.address, family: a.family as 4 | 6 }))
      resume(found.length === 0 ? Effect.fail(`${name} has no address`) : Effect.succeed(found))
    })
  })

const decoder = (encoding: string | undefined) => {
  const zlib = process.getBuiltinModule("node:zlib")
  switch ((encoding ?? "").trim().toLowerCase()) {
    case "gzip":
    case "x-gzip":
      return zlib.createGunzip()
    case "deflate":
      return zlib.createInflate()
    case "br":
      return zlib.createBrotliDecompress()
    default:
      return undefined
  }
}

const headersOf = (response: IncomingMessage): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(response.headers)) {
    if (value !== undefined) out[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : value
  }
  return out
}

/** GET `url` from one of the addresses `to` (at least one), reading at most `maxBytes` of its (decompressed) body. */
export const get = (url: URL, to: ReadonlyArray<Resolved>, maxBytes: number): Effect.Effect<Response, string> =>
  Effect.callback<Response, string>((resume) => {
    const client = process.getBuiltinModule(url.protocol === "https:" ? "node:https" : "node:http")
    let settled = false
    let unzip: ReturnType<typeof decoder>
    /** Closes the connection and the decompressor, whatever state they are in. */
    const close = () => {
      request.destroy()
      unzip?.destroy()
    }
    const finish = (result: Effect.Effect<Response, string>) => {
      if (settled) return
      settled = true
      resume(result)
    }
    const request = client.request(url, {
      method: "GET",
      agent: false,
      headers: {
        "user-agent": USER_AGENT,
        accept: "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,text/*;q=0.8,*/*;q=0.5",
        "accept-encoding": "gzip, deflate, br"
      },
      // The connection goes to the address that was checked, whatever DNS says now.
      lookup: ((_name: string, options: { readonly all?: boolean }, callback: (...args: ReadonlyArray<unknown>) => void) =>
        options.all === true ? callback(null, to) : callback(null, to[0]!.address, to[0]!.family)) as unknown as LookupFunction
    })
    request.on("error", (error: Error & { code?: string }) => finish(Effect.fail(error.code !== undefined ? `${error.message} (${error.code})` : error.message)))
    request.on("response", (response) => {
      const chunks: Array<Uint8Array> = []
      let size = 0
      let cut = false
      const done = () =>
        finish(Effect.succeed({
          status: response.statusCode ?? 0,
          statusText: response.statusMessage ?? "",
          headers: headersOf(response),
          body: Buffer.concat(chunks, size),
          cut,
          address: response.socket?.remoteAddress ?? to[0]!.address
        }))
      unzip = decoder(response.headers["content-encoding"])
      const body = unzip === undefined ? response : response.pipe(unzip)
      if (unzip !== undefined) {
        unzip.on("error", (error) => finish(Effect.fail(`the page's ${response.headers["content-encoding"]} encoding is broken (${error.message})`)))
      }
      body.on("data", (chunk: Buffer) => {
        if (settled) return
        const room = maxBytes - size
        if (chunk.length > room) {
          if (room > 0) chunks.push(chunk.subarray(0, room))
          size += Math.max(room, 0)
          cut = true
          done()
          close()
          return
        }
        chunks.push(chunk)
        size += chunk.length
      })
      body.on("end", done)
      // Closed without its end: cut off (the end, when there is one, comes first).
      body.on("close", () => finish(Effect.fail("the server closed the connection in the middle of the page")))
      const broken = () => finish(Effect.fail("the server closed the connection in the middle of the page"))
      response.on("aborted", broken)
      response.on("error", broken)
    })
    request.end()
    return Effect.sync(() => {
      settled = true
      close()
    })
  })
