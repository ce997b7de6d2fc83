/**
 * What `skein acp` has loaded when it answers `initialize` and `session/new`: nothing a session
 * needs only once it does something. Node's crypto (commands' containment, hashes, temporary
 * names), node:v8 and node:perf_hooks (the young-generation cap, for sessions that stream), child
 * processes, workers, the HTTP client and its TLS, zlib and readline all wait for their first
 * use, and still come when needed. And no stack trace is formatted (the first one makes V8 find
 * every line end of the 1 MB bundle), and no Schema built at its first use (src/Lazy.ts) is built
 * but the ACP requests the answers decoded. What the agent has loaded is read by a probe preloaded into
 * it (test/fixtures/modules-probe.mjs), at the moment it hands each response to stdout.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterEach, describe, expect, it } from "vitest"
import { type RawAgent, rawAgents, sleep, until } from "../fixtures/faults/harness.ts"
import type { Script } from "../support/AgentProcess.ts"
import { unexpectedSchemas } from "../../scripts/startup-modules.mjs"

const PROBE = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "fixtures", "modules-probe.mjs")
const BUNDLE = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "dist", "skein-main.cjs")

/** Built-ins (as `require` names them) that no answer before a session's first turn may wait for. */
const NOT_AT_START = [
  "crypto",
  "v8",
  "perf_hooks",
  "child_process",
  "worker_threads",
  "http",
  "https",
  "http2",
  "tls",
  "zlib",
  "readline",
  "inspector",
  "internal/deps/undici/undici",
  // Node's promise API of the file system: opening a session looks at folders with callbacks.
  "internal/fs/promises"
]

const agents = rawAgents()
const temporaries: Array<string> = []
afterEach(async () => {
  await agents.disposeAll()
  for (const dir of temporaries.splice(0)) rmSync(dir, { recursive: true, force: true })
})

interface ProbeLine {
  readonly response?: unknown
  readonly builtins: ReadonlyArray<string>
  readonly stacks?: number
  /** The Schemas built so far of those built at their first use (`Lazy.schema`; the ACP wire model's are named `acp.*`). */
  readonly schemas: ReadonlyArray<string>
}

const probeLines = (file: string): Array<ProbeLine> =>
  existsSync(file) ? readFileSync(file, "utf8").trim().split("\n").filter((l) => l.length > 0).map((l) => JSON.parse(l) as ProbeLine) : []

/** What the probe saw when the response to `id` was handed to stdout. */
const probedAt = (file: string, id: number | string): ProbeLine => {
  const line = probeLines(file).find((l) => l.response === id)
  if (line === undefined) throw new Error(`the probe saw no response to #${String(id)}`)
  return line
}
/** The built-ins loaded when the response to `id` was handed to stdout. */
const atResponse = (file: string, id: number | string): ReadonlyArray<string> => probedAt(file, id).builtins

/** What the probe sees now (SIGUSR2). */
const probeNow = async (agent: RawAgent, file: string): Promise<ProbeLine> => {
  const before = probeLines(file).filter((l) => l.response === undefined).length
  agent.child.kill("SIGUSR2")
  await until(() => probeLines(file).filter((l) => l.response === undefined).length > before, "the modules probe", 10_000, 10)
  return probeLines(file).filter((l) => l.response === undefined).at(-1)!
}
/** The built-ins loaded now, by the probe (SIGUSR2). */
const loadedNow = async (agent: RawAgent, file: string): Promise<ReadonlyArray<string>> => (await probeNow(agent, file)).builtins


const start = (options: { readonly script?: Script; readonly args?: ReadonlyArray<string>; readonly env?: Record<string, string> }) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "skein-startup-"))
  temporaries.push(dir)
  const probeFile = path.join(dir, "modules.ndjson")
  const agent = agents.start({
    script: options.script,
    args: options.args ?? [],
    env: { ...options.env, NODE_OPTIONS: `--import ${PROBE}`, SKEIN_MODULES_PROBE_FILE: probeFile, SKEIN_MODULES_PROBE_RESPONSES: "1" }
  })
  return { agent, probeFile }
}

/** `initialize`, then `session/new` right after its answer (as editors send it): the built-ins of neither answer that may not be there. */
const openAtOnce = async (agent: RawAgent, probeFile: string) => {
  const init = await agent.initialize()
  expect(init.error).toBeUndefined()
  const opened = await agent.request("session/new", { cwd: agent.cwd, mcpServers: [] })
  expect(opened.error).toBeUndefined()
  expect(atResponse(probeFile, init.id as number).filter((m) => NOT_AT_START.includes(m))).toEqual([])
  expect(atResponse(probeFile, opened.id as number).filter((m) => NOT_AT_START.includes(m))).toEqual([])
  expect(probedAt(probeFile, opened.id as number).stacks).toBe(0)
  // Of the Schemas built at their first use, the answers built only the ACP requests they decoded:
  // none of the session's vocabulary, its log's events or the session protocol, no other request.
  // The same rule as the build's (scripts/startup-modules.mjs).
  const built = probedAt(probeFile, opened.id as number).schemas
  expect(unexpectedSchemas(built)).toEqual([])
  for (const name of ["acp.InitializeRequest", "acp.NewSessionRequest", "acp.McpServer"]) expect(built).toContain(name)
  expect(probedAt(probeFile, init.id as number).schemas.filter((name) => /Request$/.test(name))).toEqual(["acp.InitializeRequest"])
  return opened.result.sessionId as string
}

describe("skein acp start-up", () => {
  it("answers initialize and session/new without loading what only a session's work needs, and loads it when used", async () => {
    const { agent, probeFile } = start({
      script: { turns: [{ calls: [[{ tool: "bash", args: { command: "echo contained" } }], [{ text: "Ran it." }]] }] },
      args: ["--mode", "bypassPermissions"]
    })
    const sessionId = await openAtOnce(agent, probeFile)

    // Idle with a session open: still nothing of it (the young-generation cap is for sessions that stream).
    await sleep(300)
    expect((await loadedNow(agent, probeFile)).filter((m) => NOT_AT_START.includes(m))).toEqual([])

    // A command runs as before: what it needs (child processes, the containment's crypto) loads now.
    const response = await agent.prompt(sessionId, "run it", 30_000)
    expect(response.result).toEqual({ stopReason: "end_turn" })
    const results = agent.updates(sessionId).filter((u) => u.sessionUpdate === "tool_call_update" && u.status === "completed")
    expect(JSON.stringify(results)).toContain("contained")
    let loaded = await loadedNow(agent, probeFile)
    expect(loaded).toContain("child_process")
    expect(loaded).toContain("crypto")
    // The turn built the Schemas it used: the prompt's request, the events it logged and checked.
    const schemas = (await probeNow(agent, probeFile)).schemas
    for (const name of ["acp.PromptRequest", "UserBlock", "CanonicalBody", "turn_start", "tool_call", "tool_result", "turn_end"]) expect(schemas).toContain(name)
    // The first prompt brings the young-generation cap (node:v8, node:perf_hooks) within seconds, however busy the machine.
    for (let i = 0; i < 200 && !(loaded.includes("v8") && loaded.includes("perf_hooks")); i++) {
      await sleep(50)
      loaded = await loadedNow(agent, probeFile)
    }
    expect(loaded).toContain("v8")
    expect(loaded).toContain("perf_hooks")
    expect(agent.problems).toEqual([])
  })

  it("with an HTTP provider too: its client, TLS and the warm-up wait for the session to be answered", async () => {
    const { agent, probeFile } = start({
      args: ["--provider", "openai-chat", "--model", "m"],
      // Nothing listens there: no request may go out before a prompt (the warm-up connects to nothing: its connection is in memory).
      env: { OPENAI_BASE_URL: "https://127.0.0.1:9/v1", OPENAI_API_KEY: "sk-e2e-startup", ANTHROPIC_API_KEY: "", ANTHROPIC_AUTH_TOKEN: "" }
    })
    await openAtOnce(agent, probeFile)
    expect(agent.problems).toEqual([])
  })

  it("a provider at an http:// URL is called with Node's http client: neither fetch's undici nor TLS is loaded, warm-up and turn included", async () => {
    const chunk = (delta: object, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 0, model: "m", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
    let requests = 0
    const server = http.createServer((req, res) => {
      req.resume()
      req.on("end", () => {
        requests++
        res.writeHead(200, { "content-type": "text/event-stream" })
        res.end(chunk({ role: "assistant", content: "Hello over http" }) + chunk({}, "stop") + "data: [DONE]\n\n")
      })
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    try {
      const { agent, probeFile } = start({
        args: ["--provider", "openai-chat", "--model", "m"],
        env: { OPENAI_BASE_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, OPENAI_API_KEY: "sk-e2e-startup", ANTHROPIC_API_KEY: "", ANTHROPIC_AUTH_TOKEN: "" }
      })
      const sessionId = await openAtOnce(agent, probeFile)
      // The warm-up (a request to a loopback server of Skein's own) has run once the HTTP client is loaded.
      let loaded = await loadedNow(agent, probeFile)
      for (let i = 0; i < 200 && !loaded.includes("_http_client"); i++) {
        await sleep(50)
        loaded = await loadedNow(agent, probeFile)
      }
      expect(loaded).toContain("_http_client")
      // It opened no socket and listened on none: no cluster module (what `listen` loads), no child processes, no datagrams.
      expect(loaded.filter((m) => ["cluster", "child_process", "dgram", "internal/cluster/primary"].includes(m))).toEqual([])
      const response = await agent.prompt(sessionId, "hello?", 30_000)
      expect(response.result).toEqual({ stopReason: "end_turn" })
      expect(JSON.stringify(agent.updates(sessionId))).toContain("Hello over http")
      expect(requests).toBe(1)
      loaded = await loadedNow(agent, probeFile)
      expect(loaded).toContain("http")
      expect(loaded.filter((m) => ["internal/deps/undici/undici", "https", "tls", "http2"].includes(m))).toEqual([])
      expect(agent.problems).toEqual([])
    } finally {
      server.closeAllConnections()
      server.close()
    }
  })

  it("the bundle copies the exports of node:fs, node:path and node:os once, not once per file that imports them", () => {
    // Each copy is a getter per export, kept for the life of the process (scripts/build.mjs, sharedBuiltins).
    const text = readFileSync(BUNDLE, "utf8")
    for (const name of ["node:fs", "node:path", "node:os"]) {
      expect({ name, requires: text.split(`require(${JSON.stringify(name)})`).length - 1 }).toEqual({ name, requires: 2 })
    }
  })

  it("the bundles carry the tool worker without its HTML converter, which is a file of its own loaded with the first page", () => {
    // The bundles' text stays in memory as long as a process runs: turndown and its DOM (about 250 KB) are not in it.
    for (const bundle of [BUNDLE, BUNDLE.replace("skein-main.cjs", "skein-remote.cjs")]) {
      const text = readFileSync(bundle, "utf8")
      expect({ bundle, domino: text.includes("HierarchyRequestError") }).toEqual({ bundle, domino: false })
    }
    expect(readFileSync(BUNDLE.replace("skein-main.cjs", "skein-markdown.cjs"), "utf8")).toContain("HierarchyRequestError")
  })
})
