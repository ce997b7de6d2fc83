/**
 * The web monitor's HTTP surface against the built binary, without a browser: the token is
 * needed for every route (the page, its files, both event streams, the answer route, an
 * unknown path), the Host and Origin must be the monitor's own, every response carries the CSP,
 * an answer is refused without `--web-approve`, and the first answer wins — the page's or the
 * editor's — with the other side seeing the question withdrawn. `skein monitor` watches a
 * running server, or reads the logs when none runs.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { type AgentProcess, NODE, type Script, SKEIN, useAgents, waitUntil } from "../support/AgentProcess.ts"
import { type Server, useServers } from "../support/Serve.ts"

const agents = useAgents()
const { serve } = useServers()
const call = (tool: string, args: unknown, id?: string) => ({ tool, args, ...(id !== undefined ? { id } : {}) })

const urlIn = (stderr: string): string => {
  const match = /monitor at (http:\/\/\S+)/.exec(stderr)
  if (match === null) throw new Error(`no monitor URL in: ${stderr}`)
  return match[1]!
}
const parts = (url: string) => ({ base: url.replace(/\/\?token=.*$/, ""), token: url.split("token=")[1]! })

/** A server-sent event stream being read: its messages so far, and a wait for what comes. */
const openEvents = async (url: string, headers: Record<string, string>) => {
  const controller = new AbortController()
  const response = await fetch(url, { headers, signal: controller.signal })
  expect(response.status).toBe(200)
  expect(response.headers.get("content-type")).toContain("text/event-stream")
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  const messages: Array<any> = []
  let buffer = ""
  let ended = false
  const pump = (async () => {
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        buffer += decoder.decode(value, { stream: true })
        let end: number
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const frame = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          for (const line of frame.split("\n")) if (line.startsWith("data: ")) messages.push(JSON.parse(line.slice(6)))
        }
      }
    } catch {
      // aborted
    }
    ended = true
  })()
  return {
    messages,
    until: async (predicate: (messages: Array<any>) => boolean, what: string) => {
      await waitUntil(() => predicate(messages) || ended, what, 15_000)
      if (!predicate(messages)) throw new Error(`the stream ended before ${what}`)
      return messages
    },
    close: async () => {
      controller.abort()
      await pump
    }
  }
}

/** Reads a server-sent event stream until `until` holds for the messages so far. */
const readEvents = async (url: string, headers: Record<string, string>, until: (messages: Array<any>) => boolean): Promise<Array<any>> => {
  const stream = await openEvents(url, headers)
  try {
    return await stream.until(until, "the expected events")
  } finally {
    await stream.close()
  }
}

const editor = (server: Server, permission: "never" | "allow"): Promise<AgentProcess> =>
  agents.ready({
    script: { turns: [] },
    args: ["--connect", `unix:${server.home}/skein.sock`],
    permission: permission === "never" ? () => new Promise(() => {}) : (request) => ({ outcome: { outcome: "selected", optionId: request.options[0]!.optionId } })
  })

const writeScript = (file: string): Script => ({ turns: [{ calls: [[call("write", { path: file, content: "written\n" }, "w1")], [{ text: "ok" }]] }] })

describe("web monitor: HTTP", () => {
  it("needs the token on every route, the monitor's own Host and Origin, and sends its CSP everywhere", async () => {
    const server = await serve({ turns: [] }, undefined, {}, ["--web", "127.0.0.1:0"])
    const { base, token } = parts(urlIn(server.stderr))
    const port = new URL(base).port
    const routes: Array<[string, string]> = [
      ["GET", "/"],
      ["GET", "/sessions/abc"],
      ["GET", "/app.js"],
      ["GET", "/app.css"],
      ["GET", "/api/overview"],
      ["GET", "/api/sessions/abc/events"],
      ["POST", "/api/answer"],
      ["GET", "/nothing-here"]
    ]
    for (const [method, route] of routes) {
      for (const headers of [{}, { authorization: "Bearer wrong-token" }, { cookie: `skein_monitor_${port}=wrong` }, { cookie: `skein_monitor_1=${token}` }]) {
        const response = await fetch(base + route, { method, headers: { origin: base, ...headers } })
        expect([route, response.status]).toEqual([route, 401])
        expect(response.headers.get("content-security-policy")).toContain("script-src 'self'")
        await response.body?.cancel()
      }
    }
    // The token in a URL opens pages only.
    expect((await fetch(`${base}/api/overview?token=${token}`)).status).toBe(401)
    const login = await fetch(`${base}/?token=${token}`, { redirect: "manual" })
    expect(login.status).toBe(303)
    expect(login.headers.get("location")).toBe("/")
    expect(login.headers.get("set-cookie")).toBe(`skein_monitor_${port}=${token}; HttpOnly; SameSite=Strict; Path=/`)

    const cookie = { cookie: `skein_monitor_${port}=${token}` }
    const page = await fetch(`${base}/`, { headers: cookie })
    expect(page.status).toBe(200)
    const html = await page.text()
    expect(html).toContain(`<script src="/app.js" defer></script>`)
    expect(html).not.toMatch(/<script>/)
    expect(page.headers.get("content-security-policy")).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
    expect((await fetch(`${base}/app.js`, { headers: cookie })).headers.get("content-type")).toContain("text/javascript")
    // A path that names no session (a malformed escape, a separator) is simply not found.
    for (const bad of ["%E0%A4%A", "..%2F..%2Fetc", "a%00b"]) expect((await fetch(`${base}/api/sessions/${bad}/events`, { headers: cookie })).status).toBe(404)

    // Another name for this machine (DNS rebinding): refused (fetch cannot set Host).
    const rebound = await new Promise<number>((resolve, reject) =>
      http.get(`${base}/api/overview`, { headers: { ...cookie, host: `evil.example:${port}` } }, (res) => {
        res.resume()
        resolve(res.statusCode!)
      }).on("error", reject))
    expect(rebound).toBe(403)
    // A request from another site: refused.
    for (const headers of [{ origin: "http://evil.example" }, { origin: "http://127.0.0.1:1" }, { "sec-fetch-site": "same-site" }]) {
      const response = await fetch(`${base}/api/overview`, { headers: { ...cookie, ...headers } })
      expect(response.status).toBe(403)
      await response.body?.cancel()
    }
    // Read-only: an answer is refused, whatever it says.
    const answer = await fetch(`${base}/api/answer`, {
      method: "POST",
      headers: { ...cookie, origin: base, "content-type": "application/json" },
      body: JSON.stringify({ sessionId: "a", requestId: "1.1", optionId: "allow_once" })
    })
    expect(answer.status).toBe(403)
  })

  it("the page answers first: the tool runs, the editor's request is withdrawn, and a second answer finds the question closed", async () => {
    const server = await serve(writeScript("first.txt"), undefined, {}, ["--web", "127.0.0.1:0", "--web-approve"])
    const { base, token } = parts(urlIn(server.stderr))
    const auth = { authorization: `Bearer ${token}` }
    const agent = await editor(server, "never")
    const sessionId = await agent.newSession()
    const prompt = agent.prompt(sessionId, "write")
    const messages = await readEvents(`${base}/api/overview`, auth, (m) => m.some((x) => x.type === "inbox" && x.added.length > 0))
    const question = messages.flatMap((m) => (m.type === "inbox" ? m.added : []))[0]
    expect(question).toMatchObject({ sessionId, toolCall: { toolCallId: "w1", kind: "edit" } })
    const post = (body: unknown, headers: Record<string, string> = {}) =>
      fetch(`${base}/api/answer`, { method: "POST", headers: { ...auth, origin: base, "content-type": "application/json", ...headers }, body: JSON.stringify(body) })

    // Malformed answers are refused and change nothing.
    expect((await post({ sessionId, requestId: question.requestId, optionId: "allow_once" }, { "content-type": "text/plain" })).status).toBe(415)
    expect((await post({ sessionId })).status).toBe(400)
    expect((await post({ sessionId, requestId: question.requestId, optionId: "not_offered" })).status).toBe(409)
    expect((await fetch(`${base}/api/answer`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: "{}" })).status).toBe(403)

    const first = await post({ sessionId, requestId: question.requestId, optionId: "allow_once" })
    expect([first.status, await first.json()]).toEqual([200, { answered: true }])
    const second = await post({ sessionId, requestId: question.requestId, optionId: "reject_once" })
    expect(second.status).toBe(409)
    expect((await prompt).stopReason).toBe("end_turn")
    expect(readFileSync(path.join(agent.cwd, "first.txt"), "utf8")).toBe("written\n")
    const request = agent.messages().find((m) => m.method === "session/request_permission")!
    await waitUntil(() => agent.messages().some((m) => m.method === "$/cancel_request" && m.params?.requestId === request.id), "the editor's request withdrawn", 10_000)
  })

  it("the editor answers first: the inbox sees the question withdrawn, and the page's answer finds it closed", async () => {
    const server = await serve(writeScript("second.txt"), undefined, {}, ["--web", "127.0.0.1:0", "--web-approve"])
    const { base, token } = parts(urlIn(server.stderr))
    const auth = { authorization: `Bearer ${token}` }
    let answerNow: (() => void) | undefined
    const agent = await agents.ready({
      script: { turns: [] },
      args: ["--connect", `unix:${server.home}/skein.sock`],
      permission: (request) => new Promise((resolve) => (answerNow = () => resolve({ outcome: { outcome: "selected", optionId: request.options[0]!.optionId } })))
    })
    const sessionId = await agent.newSession()
    const overview = await openEvents(`${base}/api/overview`, auth)
    const prompt = agent.prompt(sessionId, "write")
    await waitUntil(() => answerNow !== undefined, "the editor's permission request", 10_000)
    const seen = await overview.until((m) => m.some((x) => x.type === "inbox" && x.added.length > 0), "the question in the inbox")
    const question = seen.flatMap((m) => (m.type === "inbox" ? m.added : []))[0]
    answerNow!()
    expect((await prompt).stopReason).toBe("end_turn")
    const messages = await overview.until((m) => m.some((x) => x.type === "inbox" && x.removed.length > 0), "the question withdrawn")
    await overview.close()
    expect(messages.flatMap((m) => (m.type === "inbox" ? m.removed : []))).toEqual([question.key])
    const late = await fetch(`${base}/api/answer`, {
      method: "POST",
      headers: { ...auth, origin: base, "content-type": "application/json" },
      body: JSON.stringify({ sessionId, requestId: question.requestId, optionId: "reject_once" })
    })
    expect(late.status).toBe(409)
    expect(existsSync(path.join(agent.cwd, "second.txt"))).toBe(true)
  })

  it("streams a session from its log, then live, with the SSE id of the last logged event", async () => {
    const script: Script = { turns: [{ calls: [[{ text: "one" }]] }, { calls: [[{ text: "two" }]] }] }
    const server = await serve(script, undefined, {}, ["--web", "127.0.0.1:0"])
    const { base, token } = parts(urlIn(server.stderr))
    const auth = { authorization: `Bearer ${token}` }
    const agent = await editor(server, "never")
    const sessionId = await agent.newSession()
    await agent.prompt(sessionId, "first")
    const events = (m: Array<any>) => m.flatMap((x) => (x.type === "events" ? x.events : []))
    const logged = await readEvents(`${base}/api/sessions/${sessionId}/events`, auth, (m) => events(m).some((e: any) => e.type === "turn_end"))
    expect(logged[0]).toMatchObject({ type: "hello", mode: "live", approve: false })
    expect(logged[1]).toMatchObject({ type: "session", row: { id: sessionId, live: true }, questions: [] })
    const lastSeq = events(logged).at(-1).seq
    // From a seq on: only what came after it (the second turn, live).
    const later = await openEvents(`${base}/api/sessions/${sessionId}/events`, { ...auth, "last-event-id": String(lastSeq) })
    await later.until((m) => m.some((x) => x.type === "session"), "the stream to start")
    await agent.prompt(sessionId, "second")
    const after = events(await later.until((m) => events(m).some((e: any) => e.type === "turn_end"), "the second turn"))
    await later.close()
    expect(after.every((e: any) => e.turn === 2)).toBe(true)
    expect(after.find((e: any) => e.type === "model_response").data.parts).toEqual([{ type: "text", text: "two" }])
    expect(after.filter((e: any) => e.type === "turn_start")).toHaveLength(1)
    const gone = await readEvents(`${base}/api/sessions/no-such-session/events`, auth, (m) => m.some((x) => x.type === "gone"))
    expect(gone.at(-1)).toMatchObject({ type: "gone" })
  })
})

describe("skein monitor", () => {
  const running: Array<ChildProcess> = []
  afterEach(async () => {
    for (const child of running.splice(0)) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM")
        await new Promise((resolve) => child.once("exit", resolve))
      }
    }
  })
  const monitor = async (home: string, extra: ReadonlyArray<string> = []) => {
    const child = spawn(NODE, [SKEIN, "monitor", "--home", home, ...extra], { env: { ...process.env, SKEIN_HOME: "" }, stdio: ["ignore", "pipe", "pipe"] })
    running.push(child)
    let stderr = ""
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    await waitUntil(() => /monitor at http/.test(stderr) && stderr.split("\n").length > 2, "skein monitor to start", 10_000)
    return { child, stderr: () => stderr }
  }

  it("watches the running skein serve, and stops with it; without one, reads the logs read-only", async () => {
    const server = await serve({ turns: [{ calls: [[{ text: "logged answer" }]] }] }, undefined)
    const agent = await editor(server, "never")
    const sessionId = await agent.newSession()
    await agent.prompt(sessionId, "hello there")

    const live = await monitor(server.home, ["--web-approve"])
    expect(live.stderr()).toContain(`watching the skein serve at unix:${server.home}/skein.sock`)
    const { base, token } = parts(urlIn(live.stderr()))
    const overview = await readEvents(`${base}/api/overview`, { authorization: `Bearer ${token}` }, (m) => m.some((x) => x.type === "inbox"))
    expect(overview[0]).toMatchObject({ type: "hello", mode: "live", approve: true })
    expect(overview[1].rows.find((r: any) => r.id === sessionId)).toMatchObject({ live: true, title: "hello there" })
    // The server stops: so does the monitor.
    server.child.kill("SIGTERM")
    const code = await new Promise((resolve) => live.child.once("exit", resolve))
    expect(code).toBe(1)
    expect(live.stderr()).toContain("stopped; the monitor stops with it")

    const logs = await monitor(server.home, ["--web-approve"])
    expect(logs.stderr()).toContain("no skein serve answers")
    expect(logs.stderr()).toContain("(read-only)")
    const l = parts(urlIn(logs.stderr()))
    const rows = await readEvents(`${l.base}/api/overview`, { authorization: `Bearer ${l.token}` }, (m) => m.some((x) => x.type === "inbox"))
    expect(rows[0]).toMatchObject({ mode: "logs", approve: false })
    expect(rows[1].rows.find((r: any) => r.id === sessionId)).toMatchObject({ live: false, title: "hello there" })
    const events = await readEvents(`${l.base}/api/sessions/${sessionId}/events`, { authorization: `Bearer ${l.token}` }, (m) => m.some((x) => x.type === "events"))
    const logged = events.flatMap((x) => (x.type === "events" ? x.events : []))
    expect(logged.find((e: any) => e.type === "model_response").data.parts).toEqual([{ type: "text", text: "logged answer" }])
  })

  it("refuses a bad --web, and --web-approve without --web on serve", async () => {
    for (const [args, message] of [
      [["monitor", "--web", "nowhere"], "--web takes HOST:PORT"],
      [["monitor", "--web", "127.0.0.1:70000"], "--web takes HOST:PORT"],
      [["serve", "--web-approve"], "--web-approve goes with --web HOST:PORT"]
    ] as const) {
      const child = spawn(NODE, [SKEIN, ...args], { env: { ...process.env, SKEIN_HOME: path.join(process.cwd(), "does-not-exist-home") }, stdio: ["ignore", "pipe", "pipe"] })
      let stderr = ""
      child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
      const code = await new Promise((resolve) => child.once("exit", resolve))
      expect([code, stderr]).toEqual([2, expect.stringContaining(message)])
    }
  })
})
