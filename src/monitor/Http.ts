/**
 * The monitor's HTTP surface. Every request passes `Guard.check` first (host, origin, token);
 * every response carries `Guard.SECURITY_HEADERS` (a CSP that runs only the page's own
 * script). Routes:
 *
 * - `GET /`, `GET /sessions/ID`: the page (`?token=` there sets the cookie, then redirects to
 *   the same page without it); `GET /app.js`, `GET /app.css`: its script and style;
 * - `GET /api/overview`: the sessions and the approvals inbox, as server-sent events;
 * - `GET /api/sessions/ID/events?from=SEQ` (or `Last-Event-ID`): one session's events;
 * - `POST /api/answer {sessionId, requestId, optionId}`: answers a question — refused (403)
 *   unless the monitor was started with `--web-approve`.
 *
 * The page is built from the log's data with text nodes only; nothing the server sends is
 * markup.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { isSessionId } from "../log/Listing.ts"
import type { Assets } from "./Assets.ts"
import * as Guard from "./Guard.ts"
import type { Hub } from "./Hub.ts"

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Skein monitor</title>
<link rel="stylesheet" href="/app.css">
<script src="/app.js" defer></script>
</head>
<body>
<noscript>The Skein monitor needs JavaScript.</noscript>
<main id="app"></main>
</body>
</html>
`

const AnswerBody = Schema.Struct({ sessionId: Schema.String, requestId: Schema.String, optionId: Schema.String })
const decodeAnswer = Schema.decodeUnknownEffect(Schema.fromJsonString(AnswerBody))

/** The largest request body read (an answer is a few hundred bytes). */
const MAX_BODY = 16 * 1024

const respond = (response: HttpServerResponse.HttpServerResponse) => HttpServerResponse.setHeaders(response, Guard.SECURITY_HEADERS)
const text = (status: number, body: string) => respond(HttpServerResponse.text(`${body}\n`, { status }))
const json = (status: number, body: unknown) => respond(HttpServerResponse.jsonUnsafe(body, { status }))

const header = (request: HttpServerRequest.HttpServerRequest, name: string): string | undefined => {
  const value = request.headers[name]
  return typeof value === "string" ? value : undefined
}

export interface Options {
  readonly guard: Guard.Guard
  readonly hub: Hub
  readonly approve: boolean
  readonly assets: () => Assets
}

/** The server's answer to one request. */
export const app = (options: Options) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const url = new URL(request.url, "http://monitor")
    const path = url.pathname
    const verdict = Guard.check(options.guard, {
      method: request.method,
      path,
      host: header(request, "host"),
      origin: header(request, "origin"),
      secFetchSite: header(request, "sec-fetch-site"),
      cookie: header(request, "cookie"),
      authorization: header(request, "authorization"),
      queryToken: url.searchParams.get("token") ?? undefined
    })
    if (verdict._tag === "refused") return text(verdict.status, verdict.message)
    if (verdict._tag === "login") {
      // The token moves to the cookie; the address bar (and history) keep the page without it.
      return respond(HttpServerResponse.empty({ status: 303, headers: { location: path, "set-cookie": Guard.setCookie(options.guard) } }))
    }
    const method = request.method
    const sessionPage = /^\/sessions\/([^/]+)$/.exec(path)
    const sessionEvents = /^\/api\/sessions\/([^/]+)\/events$/.exec(path)
    if (method === "GET" && (path === "/" || sessionPage !== null)) return respond(HttpServerResponse.html(PAGE))
    if (method === "GET" && path === "/app.js") {
      return respond(HttpServerResponse.text(options.assets().js, { contentType: "text/javascript; charset=utf-8" }))
    }
    if (method === "GET" && path === "/app.css") return respond(HttpServerResponse.text(options.assets().css, { contentType: "text/css; charset=utf-8" }))
    if (method === "GET" && path === "/api/overview") return respond(events(options.hub.overview))
    if (method === "GET" && sessionEvents !== null) {
      // Session ids need no escaping: anything else (a malformed escape included) names none.
      const sessionId = sessionEvents[1]!
      if (!isSessionId(sessionId)) return text(404, "No such session.")
      const from = Number(header(request, "last-event-id") ?? url.searchParams.get("from") ?? "0")
      return respond(events(options.hub.session(sessionId, Number.isSafeInteger(from) && from >= 0 ? from : 0)))
    }
    if (path === "/api/answer") {
      if (method !== "POST") return text(405, "POST an answer here.")
      if (!options.approve) return text(403, "This monitor is read-only: start it with --web-approve to answer questions here.")
      if (!(header(request, "content-type") ?? "").startsWith("application/json")) return text(415, "Send the answer as application/json.")
      if (Number(header(request, "content-length") ?? "0") > MAX_BODY) return text(413, "The answer is too large.")
      const body = yield* Effect.orElseSucceed(request.text, () => "")
      if (body.length > MAX_BODY) return text(413, "The answer is too large.")
      const decoded = yield* Effect.result(decodeAnswer(body))
      if (decoded._tag === "Failure") return text(400, "An answer is {sessionId, requestId, optionId}.")
      const { optionId, requestId, sessionId } = decoded.success
      const answered = yield* Effect.result(options.hub.answer(sessionId, requestId, optionId))
      if (answered._tag === "Success") return json(200, { answered: true })
      return answered.failure._tag === "closed"
        ? json(409, { answered: false, message: "This question is no longer open: it was answered or withdrawn." })
        : json(502, { answered: false, message: answered.failure.message })
    }
    return text(404, "Not found.")
  })

const events = (stream: Parameters<typeof HttpServerResponse.stream>[0]) =>
  HttpServerResponse.stream(stream, { contentType: "text/event-stream; charset=utf-8", headers: { "x-accel-buffering": "no" } })
