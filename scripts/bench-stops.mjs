// How soon Skein stops what it was asked to stop: the timings the tests leave to the bench
// (they assert only that it stops, never how fast, so a busy machine cannot fail them).
//
// - cancel:   a turn inside a model call that would last ten minutes; `session/cancel` → the
//             prompt's answer (`cancelled`). Baseline: a prompt of a turn that answers at once
//             → its answer, in the same process (its second such prompt: the first compiles).
// - shutdown: a turn whose bash command (and one it left in the background) would run ten
//             minutes; SIGTERM → the process has exited (0), the command's group killed and
//             the log synced. Baseline: SIGTERM to an idle `skein acp` (initialized, one
//             session) → exited.
//
// Each run is a fresh `skein acp` (dist/skein.mjs, scripted provider, a temporary home).
// Prints one JSON object: { samples: { cancelMs, promptMs, shutdownMs, idleShutdownMs } }.
// Options: --runs R (default 5).
import { spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import os from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const { values } = parseArgs({ options: { runs: { type: "string" } } })
const RUNS = Math.max(1, Number.parseInt(values.runs ?? "5", 10) || 5)
const SKEIN = join(root, "dist", "skein.mjs")
const dir = mkdtempSync(join(os.tmpdir(), "skein-bench-stops-"))

const ms = (from) => Number(process.hrtime.bigint() - from) / 1e6

/** A `skein acp` and a line reader over its stdout. */
const agent = (script, args = []) => {
  const home = mkdtempSync(join(dir, "home-"))
  const cwd = join(home, "work")
  mkdirSync(cwd)
  writeFileSync(join(home, "script.json"), JSON.stringify(script))
  const env = { ...process.env, SKEIN_HOME: "", SKEIN_PROVIDER: "", SKEIN_SCRIPT: "" }
  const child = spawn(process.execPath, [SKEIN, "acp", "--home", home, "--script", join(home, "script.json"), ...args], { cwd, env, stdio: ["pipe", "pipe", "ignore"] })
  const waiting = []
  let buffer = ""
  child.stdout.on("data", (chunk) => {
    buffer += chunk.toString()
    let at
    while ((at = buffer.indexOf("\n")) !== -1) {
      const message = JSON.parse(buffer.slice(0, at))
      buffer = buffer.slice(at + 1)
      for (const w of [...waiting]) {
        if (w.match(message)) {
          waiting.splice(waiting.indexOf(w), 1)
          w.resolve(message)
        }
      }
    }
  })
  const exited = new Promise((resolve) => child.once("exit", (code) => resolve(code)))
  let id = 0
  const next = (match) => new Promise((resolve) => waiting.push({ match, resolve }))
  const send = (method, params, notification = false) => {
    const own = ++id
    child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", ...(notification ? {} : { id: own }), method, params })}\n`)
    return notification ? undefined : next((m) => m.id === own && m.method === undefined)
  }
  const start = async () => {
    await send("initialize", { protocolVersion: 1, clientCapabilities: {} })
    return (await send("session/new", { cwd, mcpServers: [] })).result.sessionId
  }
  const prompt = (sessionId, text) => send("session/prompt", { sessionId, prompt: [{ type: "text", text }] })
  const chunk = (text) => next((m) => m.method === "session/update" && m.params?.update?.content?.text === text)
  return { child, cwd, exited, send, start, prompt, chunk, next }
}

const samples = { cancelMs: [], promptMs: [], shutdownMs: [], idleShutdownMs: [] }

for (let run = 0; run < RUNS; run++) {
  // cancel, and its baseline
  {
    const quick = { calls: [[{ text: "quick" }]] }
    const a = agent({ turns: [quick, quick, { calls: [[{ text: "a" }, { sleep_ms: 600_000 }, { text: "never" }]] }] })
    const sessionId = await a.start()
    await a.prompt(sessionId, "warm")
    let t = process.hrtime.bigint()
    await a.prompt(sessionId, "one")
    samples.promptMs.push(ms(t))
    const answered = a.prompt(sessionId, "two")
    await a.chunk("a")
    t = process.hrtime.bigint()
    a.send("session/cancel", { sessionId }, true)
    const answer = await answered
    samples.cancelMs.push(ms(t))
    if (answer.result?.stopReason !== "cancelled") throw new Error(`cancel: ${JSON.stringify(answer)}`)
    a.child.stdin.end()
    await a.exited
  }
  // shutdown, and its baseline
  {
    const idle = agent({ turns: [] })
    await idle.start()
    let t = process.hrtime.bigint()
    idle.child.kill("SIGTERM")
    await idle.exited
    samples.idleShutdownMs.push(ms(t))

    const busy = agent({ turns: [{ calls: [[{ tool: "bash", args: { command: "echo started; sleep 600 & sleep 600" }, id: "b1" }]] }] }, ["--mode", "bypassPermissions"])
    const sessionId = await busy.start()
    busy.prompt(sessionId, "run it")
    await busy.next((m) => m.method === "session/update" && m.params?.update?.sessionUpdate === "tool_call_update" && JSON.stringify(m.params.update).includes("started"))
    t = process.hrtime.bigint()
    busy.child.kill("SIGTERM")
    const code = await busy.exited
    samples.shutdownMs.push(ms(t))
    if (code !== 0) throw new Error(`shutdown: exit ${code}`)
  }
}

rmSync(dir, { recursive: true, force: true })
process.stdout.write(`${JSON.stringify({ runs: RUNS, samples })}\n`)
