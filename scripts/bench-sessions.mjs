// Session store benchmarks, over a spawned `skein acp` (dist/skein.mjs) speaking ACP on stdio:
//
// - list:  `session/list` (first page, and every page) with N sessions on disk (default 1,000);
// - load:  `session/load` of one log of M events (default 100,000): from the request to its
//          response, which follows every replayed `session/update` (all counted);
// - read:  the same log read and folded in-process is left to the unit tests; this measures
//          what a client waits for.
//
// Each measurement is the median of --runs (default 5) fresh processes, after one warm-up.
// Prints one JSON object on stdout: { list: {...}, load: {...} } with times in ms.
// Options: --sessions N, --events M, --runs R (or BENCH_SESSIONS, BENCH_EVENTS, BENCH_RUNS).
import { spawn } from "node:child_process"
import { existsSync, rmSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { measure, prepare, round } from "./bench-session-logs.mjs"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const skein = join(root, "dist", "skein.mjs")
if (!existsSync(skein)) {
  process.stderr.write("bench-sessions: dist/skein.mjs is missing (run `npm run build`)\n")
  process.exit(1)
}
// The fixtures (scripts/bench-session-logs.mjs).
const { sessions: SESSIONS, events: EVENTS, runs: RUNS, tmp, listHome, loadHome, workspace, other, bigId, bigBytes, fixtureMs } = prepare("bench-sessions")

const line = (o) => JSON.stringify(o) + "\n"

// ---- an ACP client over a spawned agent --------------------------------------------------------

const INITIALIZE = { method: "initialize", params: { protocolVersion: 1, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false } } }

/** Spawns the agent, initializes it, then runs `steps(request)`; returns what steps returns. */
const withAgent = (home, steps) =>
  new Promise((resolve, reject) => {
    // A provider (never called: nothing is prompted), as a user who opens sessions has; without one they are refused.
    const env = { ...process.env, OPENAI_BASE_URL: "http://127.0.0.1:9/v1", SKEIN_MODEL: "bench" }
    const child = spawn(process.execPath, [skein, "acp", "--home", home], { cwd: workspace, env, stdio: ["pipe", "pipe", "pipe"] })
    let buffer = ""
    let nextId = 1
    const waiting = new Map()
    let notifications = 0
    let stderr = ""
    child.stderr.on("data", (c) => (stderr += c))
    child.stdout.setEncoding("utf8")
    child.stdout.on("data", (chunk) => {
      buffer += chunk
      let nl
      while ((nl = buffer.indexOf("\n")) !== -1) {
        const text = buffer.slice(0, nl)
        buffer = buffer.slice(nl + 1)
        if (text.startsWith('{"jsonrpc":"2.0","method":"session/update"')) {
          notifications++
          continue
        }
        const message = JSON.parse(text)
        const w = waiting.get(message.id)
        if (w !== undefined) {
          waiting.delete(message.id)
          w(message)
        }
      }
    })
    child.on("error", reject)
    const request = (method, params) =>
      new Promise((res) => {
        const id = nextId++
        waiting.set(id, res)
        child.stdin.write(line({ jsonrpc: "2.0", id, method, params }))
      })
    const done = (value, error) => {
      child.stdin.end()
      const timer = setTimeout(() => child.kill("SIGKILL"), 5000)
      child.on("exit", () => {
        clearTimeout(timer)
        error ? reject(error) : resolve(value)
      })
    }
    request(INITIALIZE.method, INITIALIZE.params)
      .then(() => steps(request, () => notifications))
      .then((value) => done(value), (error) => done(undefined, new Error(`${error}\n${stderr}`)))
  })

const ms = (start) => Number(process.hrtime.bigint() - start) / 1e6

const listOnce = () =>
  withAgent(listHome, async (request) => {
    let start = process.hrtime.bigint()
    const first = await request("session/list", {})
    const firstPage = ms(start)
    if (first.error) throw new Error(JSON.stringify(first.error))
    start = process.hrtime.bigint()
    let cursor
    let count = 0
    do {
      const page = await request("session/list", cursor ? { cursor } : {})
      count += page.result.sessions.length
      cursor = page.result.nextCursor
    } while (cursor)
    const allPages = ms(start)
    start = process.hrtime.bigint()
    const filtered = await request("session/list", { cwd: other })
    const filteredPage = ms(start)
    return { firstPage, allPages, count, filteredPage, filteredCount: filtered.result.sessions.length }
  })

const loadOnce = () =>
  withAgent(loadHome, async (request, notifications) => {
    const start = process.hrtime.bigint()
    const response = await request("session/load", { sessionId: bigId, cwd: workspace, mcpServers: [] })
    const loadMs = ms(start)
    if (response.error) throw new Error(JSON.stringify(response.error))
    return { loadMs, updates: notifications() }
  })

try {
  const result = {
    fixtures: { sessions: SESSIONS, events: EVENTS, logBytes: bigBytes, buildMs: round(fixtureMs) },
    ...(await measure({ listOnce, loadOnce, runs: RUNS, sessions: SESSIONS, events: EVENTS, bigBytes })),
    runs: RUNS
  }
  process.stdout.write(JSON.stringify(result, null, 2) + "\n")
} finally {
  rmSync(tmp, { recursive: true, force: true })
}
