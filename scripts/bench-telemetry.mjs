// Telemetry's cost: `skein acp` with OpenTelemetry off (no OTEL_* variable: the exporter is
// never loaded) and on (OTEL_EXPORTER_OTLP_ENDPOINT at a local OTLP/HTTP receiver in this
// process, http/json), interleaved in one run:
// - cold start: spawn → `initialize` response, and → `session/new` response;
// - a turn: `session/prompt` written → its response, for a turn of a model call with a tool call
//   (read) and one with 200 text deltas, on an initialized agent (one process per setting).
// With it on, the spans the receiver got are counted (the exporter flushes at exit).
//
// Prints one JSON object on stdout. Options: --runs N (cold starts per setting), --turns N.
import http from "node:http"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import os from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { Agent, msSince } from "../bench/client.mjs"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const SKEIN = join(root, "dist", "skein.mjs")
const { values } = parseArgs({ options: { runs: { type: "string" }, turns: { type: "string" } } })
const int = (v, fallback) => (v === undefined || v === "" ? fallback : Math.max(1, Number.parseInt(v, 10) || fallback))
const RUNS = int(values.runs, 15)
const TURNS = int(values.turns, 20)

const tmp = realpathSync(mkdtempSync(join(os.tmpdir(), "skein-bench-telemetry-")))
const workspace = join(tmp, "workspace")
mkdirSync(workspace)
writeFileSync(join(workspace, "notes.txt"), "hello\n")
const turn = { calls: [[{ tool: "read", args: { path: "notes.txt" } }], [{ text: "x", repeat: 200 }, { usage: { input: 1000, output: 200 } }]] }
const scriptPath = join(tmp, "script.json")
writeFileSync(scriptPath, JSON.stringify({ turns: Array.from({ length: TURNS + 3 }, () => turn) }))

let spans = 0
let requests = 0
const receiver = http.createServer((req, res) => {
  const chunks = []
  req.on("data", (c) => chunks.push(c))
  req.on("end", () => {
    requests++
    if (req.url === "/v1/traces") {
      try {
        for (const rs of JSON.parse(Buffer.concat(chunks).toString("utf8")).resourceSpans ?? []) for (const ss of rs.scopeSpans ?? []) spans += (ss.spans ?? []).length
      } catch {}
    }
    res.writeHead(200, { "content-type": "application/json" }).end("{}")
  })
})
await new Promise((resolve) => receiver.listen(0, "127.0.0.1", resolve))
const endpoint = `http://127.0.0.1:${receiver.address().port}`

const baseEnv = { ...process.env }
for (const key of Object.keys(baseEnv)) if (key.startsWith("OTEL_")) delete baseEnv[key]
const envs = { off: baseEnv, on: { ...baseEnv, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" } }
let homes = 0
const start = (setting) => {
  const home = join(tmp, `home-${++homes}`)
  mkdirSync(home)
  return new Agent(`skein (telemetry ${setting})`, [SKEIN, "acp", "--home", home, "--script", scriptPath], { cwd: workspace, env: envs[setting] })
}
const init = (agent) =>
  agent.request("initialize", {
    protocolVersion: 1,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    clientInfo: { name: "skein-bench", version: "1" }
  }, 10_000)

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? null : s[Math.floor((s.length - 1) / 2)]
}

const cold = { off: { initialize: [], ready: [] }, on: { initialize: [], ready: [] } }
const order = ["off", "on"]
for (let i = 0; i < RUNS + 2; i++) {
  for (let k = 0; k < 2; k++) {
    const setting = order[(i + k) % 2]
    const agent = start(setting)
    try {
      const a = await init(agent)
      const b = await agent.request("session/new", { cwd: workspace, mcpServers: [] }, 10_000)
      await agent.close()
      if (i >= 2) {
        cold[setting].initialize.push(msSince(agent.t0, a.t))
        cold[setting].ready.push(msSince(agent.t0, b.t))
      }
    } finally {
      agent.kill()
    }
  }
}

const turns = { off: [], on: [] }
const agents = { off: start("off"), on: start("on") }
try {
  const sessions = {}
  for (const setting of order) {
    await init(agents[setting])
    sessions[setting] = await agents[setting].newSession(workspace)
  }
  for (let i = 0; i < TURNS + 1; i++) {
    for (let k = 0; k < 2; k++) {
      const setting = order[(i + k) % 2]
      const agent = agents[setting]
      const sent = process.hrtime.bigint()
      const response = await agent.prompt(sessions[setting], "go", 30_000)
      if (i > 0) turns[setting].push(msSince(sent, response.t))
    }
  }
  for (const setting of order) await agents[setting].close()
} finally {
  for (const agent of Object.values(agents)) agent.kill()
}
receiver.close()
rmSync(tmp, { recursive: true, force: true })

process.stdout.write(JSON.stringify({
  runs: RUNS,
  turns: TURNS,
  cold: {
    off: { initialize: cold.off.initialize, ready: cold.off.ready, initializeMs: median(cold.off.initialize), readyMs: median(cold.off.ready) },
    on: { initialize: cold.on.initialize, ready: cold.on.ready, initializeMs: median(cold.on.initialize), readyMs: median(cold.on.ready) }
  },
  turn: { off: { samples: turns.off, ms: median(turns.off) }, on: { samples: turns.on, ms: median(turns.on) } },
  exported: { requests, spans }
}) + "\n")
