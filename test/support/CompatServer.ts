/**
 * A local OpenAI-compatible model server for tests (node:http on 127.0.0.1, a free port), as
 * Ollama or vLLM would be: `GET /v1/models` lists `models`, `POST /v1/chat/completions`
 * streams `answer` as Server-Sent Events. Every request is recorded (method, path, headers,
 * parsed body). `refuse(n, status)` makes the next n chat completions fail with that status.
 *
 *   const server = await CompatServer.start({ models: ["tiny-coder"], answer: "Hi." })
 *   server.url            // http://127.0.0.1:PORT/v1
 *   server.requests       // [{ method, path, headers, body }]
 *   await server.close()
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"

export interface Recorded {
  readonly method: string
  readonly path: string
  readonly headers: http.IncomingHttpHeaders
  readonly body: any
}

export interface CompatServer {
  readonly url: string
  readonly requests: Array<Recorded>
  readonly refuse: (times: number, status: number) => void
  readonly close: () => Promise<void>
}

const chunk = (delta: Record<string, unknown>, finish: string | null) =>
  `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 0, model: "m", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`

export const start = (options: { readonly models: ReadonlyArray<string>; readonly answer: string; readonly key?: string }): Promise<CompatServer> =>
  new Promise((resolve) => {
    const requests: Array<Recorded> = []
    let refusals: { times: number; status: number } = { times: 0, status: 0 }
    const server = http.createServer((req, res) => {
      let text = ""
      req.setEncoding("utf8").on("data", (c: string) => (text += c))
      req.on("end", () => {
        let body: unknown
        try {
          body = text === "" ? undefined : JSON.parse(text)
        } catch {
          body = text
        }
        const path = req.url ?? ""
        requests.push({ method: req.method ?? "", path, headers: req.headers, body })
        const authorized = options.key === undefined || req.headers.authorization === `Bearer ${options.key}`
        if (!authorized) {
          res.writeHead(401, { "content-type": "application/json" })
          res.end(JSON.stringify({ error: { message: "Incorrect API key provided", type: "invalid_request_error", code: "invalid_api_key" } }))
        } else if (req.method === "GET" && path === "/v1/models") {
          res.writeHead(200, { "content-type": "application/json" })
          res.end(JSON.stringify({ object: "list", data: options.models.map((id) => ({ id, object: "model", owned_by: "local" })) }))
        } else if (req.method === "POST" && path === "/v1/chat/completions") {
          if (refusals.times > 0) {
            refusals = { ...refusals, times: refusals.times - 1 }
            res.writeHead(refusals.status, { "content-type": "application/json" })
            res.end(JSON.stringify({ error: { message: "The server refused this one", type: "server_error" } }))
            return
          }
          res.writeHead(200, { "content-type": "text/event-stream" })
          res.end(`${chunk({ role: "assistant", content: options.answer }, null)}${chunk({}, "stop")}data: [DONE]\n\n`)
        } else {
          res.writeHead(404, { "content-type": "application/json" })
          res.end(JSON.stringify({ error: { message: "not found" } }))
        }
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resolve({
        url: `http://127.0.0.1:${port}/v1`,
        requests,
        refuse: (times, status) => {
          refusals = { times, status }
        },
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections()
            server.close(() => done())
          })
      })
    })
  })
