// The session protocol across processes, and a reader that stops reading:
//
// - turn: one scripted turn through `Skein.layer` (in process) and through `Skein.remote` to a
//   `skein serve` on a unix socket: throughput (deltas of text delivered per second, over a turn
//   of --deltas one-character deltas; a reader may get several merged into one event) and the
//   time from an update's emission (its `ts`) to its arrival, for a turn that streams one delta
//   every 5 ms;
// - clients: the server's RSS with --clients remote clients connected, each following a
//   session (`events`), against none;
// - backpressure: `skein acp` streams a turn of --stall-deltas deltas to a client that reads
//   nothing for --stall-ms (deltas of 100 characters: 10 MB of text by default), against the
//   same turn read at once: the agent's RSS before the prompt, at the end of the stall, its
//   peak (VmHWM), and whether the turn then completes.
//
// Prints one JSON object on stdout. Options: --runs R, --deltas N, --clients C,
// --stall-deltas N, --stall-ms MS.
import { spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import os from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { measureTurns } from "./bench-turns.mjs"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const SKEIN = join(root, "dist", "skein.mjs")
if (!existsSync(SKEIN) || !existsSync(join(root, "dist", "index.mjs"))) {
  process.stderr.write("bench-remote: dist/ is missing (run `npm run build`)\n")
  process.exit(1)
}
const { Runtime, Skein } = await import(join(root, "dist", "index.mjs"))
const { values } = parseArgs({
  options: { runs: { type: "string" }, deltas: { type: "string" }, clients: { type: "string" }, "stall-deltas": { type: "string" }, "stall-ms": { type: "string" } }
})
const int = (v, fallback) => (v === undefined || v === "" ? fallback : Math.max(1, Number.parseInt(v, 10) || fallback))
const RUNS = int(values.runs, 5)
const DELTAS = int(values.deltas, 20_000)
const CLIENTS = int(values.clients, 50)
const STALL_DELTAS = int(values["stall-deltas"], 100_000)
const STALL_MS = int(values["stall-ms"], 30_000)
const PACED = 200

const tmp = realpathSync(mkdtempSync(join(os.tmpdir(), "skein-bench-remote-")))
const workspace = join(tmp, "workspace")
mkdirSync(workspace)
const script = {
  turns: [
    ...Array.from({ length: RUNS + 1 }, () => ({ calls: [[{ text: "x", repeat: DELTAS }]] })),
    ...Array.from({ length: RUNS + 1 }, () => ({ calls: [[...Array.from({ length: PACED }, () => [{ text: "y" }, { sleep_ms: 5 }]).flat()]] }))
  ]
}
const scriptPath = join(tmp, "script.json")
writeFileSync(scriptPath, JSON.stringify(script))

const status = (pid, field) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? NaN)
const rssKB = (pid) => status(pid, "VmRSS")
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** Throughput and latency of turns through a Runtime layer. */
const turns = (layer) =>
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const runtime = yield* Runtime
    const session = yield* runtime.newSession({ cwd: workspace })
    return yield* measureTurns(session, RUNS)
  })).pipe(Effect.provide(layer)))

const serve = (home, listen) =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SKEIN, "serve", "--home", home, "--script", scriptPath, "--listen", listen], {
      env: { ...process.env, SKEIN_PROVIDER: "", SKEIN_HOME: "" },
      stdio: ["ignore", "ignore", "pipe"]
    })
    let err = ""
    child.stderr.on("data", (d) => {
      err += d
      if (err.includes("listening on")) resolve(child)
    })
    child.once("exit", (code) => reject(new Error(`skein serve exited ${code}: ${err}`)))
  })

const stop = (child) => new Promise((r) => {
  child.once("exit", r)
  child.kill("SIGTERM")
})

// ---- turn: in process vs a unix socket --------------------------------------------------------

const inProcess = await turns(Skein.layer({ home: join(tmp, "home-local"), script: JSON.parse(readFileSync(scriptPath, "utf8")) }))
const remoteHome = join(tmp, "home-remote")
mkdirSync(remoteHome)
const socket = join(remoteHome, "skein.sock")
const server = await serve(remoteHome, `unix:${socket}`)
const unix = await turns(Skein.remote({ url: `unix:${socket}` }))

// ---- clients: memory per connected client ----------------------------------------------------

const settle = async (pid) => {
  await sleep(500)
  return rssKB(pid)
}
const idleKB = await settle(server.pid)
const clients = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  const first = yield* Effect.provide(Effect.flatMap(Runtime, (r) => r.newSession({ cwd: workspace })), Skein.remote({ url: `unix:${socket}` }))
  for (let i = 0; i < CLIENTS; i++) {
    const runtime = yield* Effect.provide(Effect.scoped(Runtime), Skein.remote({ url: `unix:${socket}` })).pipe(Effect.orDie)
    void runtime
    // Each client holds its connection and follows the session until the bench ends.
    yield* Effect.forkScoped(Effect.provide(Effect.flatMap(Runtime, (r) => Effect.flatMap(r.getSession(first.id), (s) => Stream.runDrain(s.events))), Skein.remote({ url: `unix:${socket}` })))
  }
  const connectedKB = yield* Effect.promise(() => settle(server.pid))
  return { idleKB, connectedKB, perClientKB: (connectedKB - idleKB) / CLIENTS }
})))
await stop(server)

// ---- backpressure: a client that reads nothing -------------------------------------------------

const stallScript = join(tmp, "stall.json")
writeFileSync(stallScript, JSON.stringify({ turns: [{ calls: [[{ text: "z".repeat(100), repeat: STALL_DELTAS }]] }] }))

/** One `skein acp` streaming the big turn to a client that reads nothing for `stallMs` (0: reads at once). */
const stalled = (stallMs) => new Promise((resolve, reject) => {
  const home = join(tmp, `home-stall-${stallMs}`)
  const agent = spawn(process.execPath, [SKEIN, "acp", "--home", home, "--script", stallScript], {
    env: { ...process.env, SKEIN_PROVIDER: "", SKEIN_HOME: "" },
    stdio: ["pipe", "pipe", "ignore"]
  })
  let buffered = ""
  let answered = false
  const pending = new Map()
  let id = 0
  const request = (method, params) => new Promise((res) => {
    const n = ++id
    pending.set(n, res)
    agent.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: n, method, params }) + "\n")
  })
  agent.stdout.on("data", (chunk) => {
    buffered += chunk
    let nl
    while ((nl = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, nl)
      buffered = buffered.slice(nl + 1)
      const m = JSON.parse(line)
      if (m.id !== undefined && pending.has(m.id)) {
        pending.get(m.id)(m)
        pending.delete(m.id)
      }
    }
  })
  agent.once("exit", (code) => (answered ? undefined : reject(new Error(`skein acp exited ${code}`))))
  ;(async () => {
    await request("initialize", { protocolVersion: 1, clientCapabilities: {} })
    const { result } = await request("session/new", { cwd: workspace, mcpServers: [] })
    await sleep(500)
    const beforeKB = rssKB(agent.pid)
    const prompt = request("session/prompt", { sessionId: result.sessionId, prompt: [{ type: "text", text: "go" }] })
    const started = performance.now()
    // The client stops reading as soon as the turn starts.
    if (stallMs > 0) agent.stdout.pause()
    await sleep(stallMs)
    const stalledKB = rssKB(agent.pid)
    agent.stdout.resume()
    const answer = await prompt
    answered = true
    const peakKB = status(agent.pid, "VmHWM")
    const totalMs = performance.now() - started
    agent.stdin.end()
    resolve({ beforeKB, stalledKB, peakKB, totalMs, stopReason: answer.result?.stopReason ?? null })
  })().catch(reject)
})
const reading = await stalled(0)
const stalling = await stalled(STALL_MS)
const backpressure = { deltas: STALL_DELTAS, deltaChars: 100, stallMs: STALL_MS, reading, stalling }

rmSync(tmp, { recursive: true, force: true })
process.stdout.write(JSON.stringify({
  turn: { deltas: DELTAS, paced: PACED, inProcess, unix },
  clients: { clients: CLIENTS, ...clients },
  backpressure
}) + "\n")
