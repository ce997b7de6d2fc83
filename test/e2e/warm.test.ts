/**
 * `skein acp` with an HTTP provider warms it while the client is idle after the first session
 * opened: Node's HTTP client is loaded before the first prompt, no request reaches the
 * provider before that prompt, and nothing is warmed before a session exists. What the agent
 * has loaded is read by a probe preloaded into it (test/fixtures/modules-probe.mjs).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterEach, describe, expect, it } from "vitest"
import { type RawAgent, rawAgents, sleep, until } from "../fixtures/faults/harness.ts"

const PROBE = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "fixtures", "modules-probe.mjs")

const agents = rawAgents()
const servers: Array<http.Server> = []
const temporaries: Array<string> = []
afterEach(async () => {
  await agents.disposeAll()
  for (const dir of temporaries.splice(0)) rmSync(dir, { recursive: true, force: true })
  for (const server of servers.splice(0)) {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
})

const event = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`

/** A Chat Completions server that answers "Hi." to every call and records the calls. */
const startServer = async () => {
  const calls: Array<{ url: string; authorization: string | undefined }> = []
  const server = http.createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      calls.push({ url: req.url ?? "", authorization: req.headers.authorization })
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.end(event({ role: "assistant", content: "Hi." }) + event({}, "stop") + "data: [DONE]\n\n")
    })
  })
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return { calls, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` }
}

/** Whether the agent has loaded Node's HTTP client (`node:http`'s, which providers use), by the probe. */
const httpClientLoaded = async (agent: RawAgent, file: string): Promise<boolean> => {
  // Whole lines only: the probe's append creates the file before it writes its line, so an empty
  // file (read as one line by a split) may be seen between the two.
  const lines = () => (existsSync(file) ? readFileSync(file, "utf8").split("\n").slice(0, -1) : [])
  const before = lines().length
  agent.child.kill("SIGUSR2")
  await until(() => lines().length > before, "the modules probe", 10_000, 10)
  const { builtins } = JSON.parse(lines().at(-1)!) as { builtins: ReadonlyArray<string> }
  return builtins.includes("_http_client")
}

/** The agent with `openai-chat` at `url`, and the file its probe writes to. */
const start = (url: string) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "skein-probe-"))
  temporaries.push(dir)
  const probeFile = path.join(dir, "modules.ndjson")
  const agent = agents.start({
    args: ["--provider", "openai-chat", "--model", "m"],
    env: {
      NODE_OPTIONS: `--import ${PROBE}`,
      SKEIN_MODULES_PROBE_FILE: probeFile,
      OPENAI_BASE_URL: url,
      OPENAI_API_KEY: "sk-e2e-warm",
      ANTHROPIC_API_KEY: "",
      ANTHROPIC_AUTH_TOKEN: ""
    }
  })
  return { agent, probeFile }
}

describe("skein acp warms its HTTP provider while idle", () => {
  it("after the first session opens: the HTTP client is loaded before the prompt, which alone reaches the provider", async () => {
    const server = await startServer()
    const { agent, probeFile } = start(server.url)
    const init = await agent.initialize()
    expect(init.error).toBeUndefined()
    // Idle after `initialize`, with no session: nothing is warmed.
    await sleep(300)
    expect(await httpClientLoaded(agent, probeFile)).toBe(false)

    // Idle after the session opened: the HTTP client loads (within seconds, however busy the machine).
    const sessionId = await agent.newSession()
    let loaded = false
    for (let i = 0; i < 200 && !loaded; i++) {
      loaded = await httpClientLoaded(agent, probeFile)
      if (!loaded) await sleep(50)
    }
    expect(loaded).toBe(true)
    expect(server.calls).toEqual([])

    const response = await agent.prompt(sessionId, "hello")
    expect(response.result).toEqual({ stopReason: "end_turn" })
    expect(agent.updates(sessionId).filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text)).toEqual(["Hi."])
    expect(server.calls).toEqual([{ url: "/v1/chat/completions", authorization: "Bearer sk-e2e-warm" }])
    expect(agent.problems).toEqual([])
  })
})
