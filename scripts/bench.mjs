// `npm run bench`: start-up of Skein against baselines measured in the same run.
//
// For each agent, every run spawns a fresh process, writes `initialize` right after spawn,
// and times (process.hrtime.bigint) the arrival of the response line; then it sends
// `session/new` and times its response, measured from the same spawn ("ready").
// Agents: Skein (dist/skein.mjs acp), a plain-Node floor (bench/floor.mjs) and a minimal
// agent on the official ACP SDK (bench/sdk-agent.mjs). Runs are interleaved so drift in
// machine load hits every agent alike. Writes bench/results.json and bench/results.md.
//
// Options: --runs N (default 15, or BENCH_RUNS), --warmup N (default 2, or BENCH_WARMUP).
// A missed target is reported in the table, not by the exit code; only a broken run fails.
import { spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import os from "node:os"
import { dirname, join, relative } from "node:path"
import { parseArgs } from "node:util"
import { fileURLToPath } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const { values } = parseArgs({
  options: { runs: { type: "string" }, warmup: { type: "string" } }
})
const positiveInt = (value, fallback, name) => {
  if (value === undefined || value === "") return fallback
  const n = Number(value)
  if (!Number.isInteger(n) || n < 0) {
    process.stderr.write(`bench: ${name} must be a non-negative integer\n`)
    process.exit(2)
  }
  return n
}
const RUNS = Math.max(1, positiveInt(values.runs ?? process.env.BENCH_RUNS, 15, "--runs"))
const WARMUP = positiveInt(values.warmup ?? process.env.BENCH_WARMUP, 2, "--warmup")
const RUN_TIMEOUT_MS = 10_000

const TARGETS = { initialize: 2.5, ready: 2 }

const tmp = realpathSync(mkdtempSync(join(os.tmpdir(), "skein-bench-")))
const home = join(tmp, "home")
const workspace = join(tmp, "workspace")
mkdirSync(workspace, { recursive: true })

const agents = [
  { id: "skein", name: "Skein", args: [join(root, "dist", "skein.mjs"), "acp", "--home", home] },
  { id: "floor", name: "plain-Node floor", args: [join(root, "bench", "floor.mjs")] },
  { id: "sdk", name: "ACP SDK agent", args: [join(root, "bench", "sdk-agent.mjs")] }
]
for (const agent of agents) {
  if (!existsSync(agent.args[0])) {
    process.stderr.write(`bench: ${relative(root, agent.args[0])} is missing${agent.id === "skein" ? " (run `npm run build`)" : ""}\n`)
    process.exit(1)
  }
}

const line = (message) => JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n"
const INITIALIZE = line({
  id: 1,
  method: "initialize",
  params: {
    protocolVersion: 1,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    clientInfo: { name: "skein-bench", version: "1" }
  }
})
const SESSION_NEW = line({ id: 2, method: "session/new", params: { cwd: workspace, mcpServers: [] } })

const env = { ...process.env }
delete env.NODE_OPTIONS // the same flags for every agent: none

/** One cold start: spawn → initialize response → session/new response → stdin closed → exit. */
const runOnce = (agent) =>
  new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint()
    const child = spawn(process.execPath, agent.args, { cwd: workspace, env, stdio: ["pipe", "pipe", "pipe"] })
    child.stdin.write(INITIALIZE)
    let initNs
    let readyNs
    let buffer = ""
    let stderr = ""
    let settled = false
    const finish = (error, value) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      if (error) {
        child.kill("SIGKILL")
        reject(new Error(`${agent.name}: ${error}${stderr.trim() ? `\n${stderr.trim()}` : ""}`))
      } else {
        resolve(value)
      }
    }
    const timer = setTimeout(() => finish(`no answer within ${RUN_TIMEOUT_MS / 1000} s`), RUN_TIMEOUT_MS)
    child.stderr.setEncoding("utf8")
    child.stderr.on("data", (d) => (stderr += d))
    child.stdin.on("error", () => {})
    child.on("error", (e) => finish(`cannot spawn: ${e.message}`))
    child.stdout.setEncoding("utf8")
    child.stdout.on("data", (chunk) => {
      const now = process.hrtime.bigint()
      buffer += chunk
      let newline
      while ((newline = buffer.indexOf("\n")) >= 0) {
        const text = buffer.slice(0, newline)
        buffer = buffer.slice(newline + 1)
        let message
        try {
          message = JSON.parse(text)
        } catch {
          return finish(`not JSON on stdout: ${text.slice(0, 200)}`)
        }
        if (message.error !== undefined) return finish(`request ${message.id} failed: ${JSON.stringify(message.error)}`)
        if (message.id === 1 && initNs === undefined) {
          initNs = now - t0
          child.stdin.write(SESSION_NEW)
        } else if (message.id === 2 && readyNs === undefined) {
          readyNs = now - t0
          child.stdin.end()
        }
      }
    })
    child.on("exit", (code, signal) => {
      if (readyNs === undefined) return finish(`exited early (${signal ?? `code ${code}`})`)
      if (code !== 0) return finish(`exited with ${signal ?? `code ${code}`} after stdin closed`)
      finish(undefined, { initialize: Number(initNs) / 1e6, ready: Number(readyNs) / 1e6 })
    })
  })

// ── statistics ────────────────────────────────────────────────────────────────────────────
const quantile = (sorted, q) => {
  if (sorted.length === 1) return sorted[0]
  const pos = (sorted.length - 1) * q
  const lo = Math.floor(pos)
  const hi = Math.ceil(pos)
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo)
}
const round = (x, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits
const summarize = (samples) => {
  const sorted = [...samples].sort((a, b) => a - b)
  return {
    median: round(quantile(sorted, 0.5)),
    p90: round(quantile(sorted, 0.9)),
    min: round(sorted[0]),
    max: round(sorted[sorted.length - 1]),
    samples: samples.map((x) => round(x))
  }
}

// ── run ───────────────────────────────────────────────────────────────────────────────────
const main = async () => {
  const started = Date.now()
  const loadBefore = os.loadavg()[0]
  process.stdout.write(`bench: ${WARMUP} warm-up + ${RUNS} measured runs per agent (${agents.map((a) => a.name).join(", ")}), node ${process.version}\n`)
  const samples = Object.fromEntries(agents.map((a) => [a.id, { initialize: [], ready: [] }]))
  for (let i = 0; i < WARMUP; i++) for (const agent of agents) await runOnce(agent)
  for (let i = 0; i < RUNS; i++) {
    // Rotate the order so no agent always runs right after another.
    for (let k = 0; k < agents.length; k++) {
      const agent = agents[(i + k) % agents.length]
      const result = await runOnce(agent)
      samples[agent.id].initialize.push(result.initialize)
      samples[agent.id].ready.push(result.ready)
    }
    if (process.stdout.isTTY) process.stdout.write(`\r  run ${i + 1}/${RUNS}`)
  }
  process.stdout.write(process.stdout.isTTY ? "\n\n" : "\n")

  const stats = Object.fromEntries(
    agents.map((a) => [a.id, { initialize: summarize(samples[a.id].initialize), ready: summarize(samples[a.id].ready) }])
  )
  const figure = (metric, subject, baseline, target, description) => {
    const s = stats[subject][metric]
    const b = stats[baseline][metric]
    const ratio = round(s.median / b.median)
    return {
      metric,
      description,
      subject: agents.find((a) => a.id === subject).name,
      baselineName: agents.find((a) => a.id === baseline).name,
      median: s.median,
      p90: s.p90,
      baseline: { median: b.median, p90: b.p90 },
      ratio,
      ratioP90: round(s.p90 / b.p90),
      target: target ?? null,
      met: target === undefined ? null : ratio <= target
    }
  }
  const figures = [
    figure("initialize", "skein", "floor", TARGETS.initialize, "spawn → initialize response"),
    figure("ready", "skein", "floor", TARGETS.ready, "spawn → session/new response (initialize, then session/new)"),
    figure("initialize", "skein", "sdk", undefined, "spawn → initialize response, against the ACP SDK agent"),
    figure("ready", "skein", "sdk", undefined, "spawn → session/new response, against the ACP SDK agent"),
    figure("initialize", "sdk", "floor", undefined, "the ACP SDK agent against the floor (context)")
  ]

  const cpus = os.cpus()
  const results = {
    date: new Date().toISOString(),
    machine: {
      cpu: cpus[0]?.model ?? "unknown",
      cores: cpus.length,
      memoryGB: round(os.totalmem() / 2 ** 30, 1),
      platform: `${os.platform()} ${os.release()} ${os.arch()}`,
      node: process.version,
      // A busy machine inflates every figure (the ratios less so): the 1-minute load average
      // before and after the runs.
      loadAverage: { before: round(loadBefore), after: round(os.loadavg()[0]) }
    },
    method: {
      runs: RUNS,
      warmup: WARMUP,
      clock: "process.hrtime.bigint(), from just before spawn() to the arrival of the response line",
      note: "ready = initialize sent at spawn, session/new sent when its response arrives; ratios are of medians",
      compileCache: "dist/skein.mjs calls module.enableCompileCache() in its banner; warm-ups fill whatever cache that gives"
    },
    agents: Object.fromEntries(agents.map((a) => [a.id, { name: a.name, command: ["node", ...a.args.map((p) => (p.startsWith(root) ? relative(root, p) : p.startsWith(tmp) ? `<tmp>${p.slice(tmp.length)}` : p))] }])),
    figures,
    stats,
    durationSeconds: round((Date.now() - started) / 1000, 1)
  }

  const ms = (x) => `${x.toFixed(1)} ms`
  const rows = figures.map((f) => {
    const name = f.baselineName === "plain-Node floor" ? f.metric : `${f.metric} (vs ${f.baselineName})`
    const label = f.subject === "Skein" ? name : `${f.subject}: ${f.metric} (vs ${f.baselineName})`
    return [
      label,
      `${ms(f.median)} (p90 ${ms(f.p90)})`,
      `${ms(f.baseline.median)} (p90 ${ms(f.baseline.p90)})`,
      `${f.ratio.toFixed(2)}×`,
      f.target === null ? "—" : `≤ ${f.target}×`,
      f.met === null ? "—" : f.met ? "yes" : "**no**"
    ]
  })
  const header = ["metric", "Skein", "baseline", "ratio", "target", "met?"]
  const table = [
    `| ${header.join(" | ")} |`,
    `| ${header.map((h, i) => (i === 0 ? "---" : "---:")).join(" | ")} |`,
    ...rows.map((r) => `| ${r.join(" | ")} |`)
  ].join("\n")
  const m = results.machine
  const md = [
    "# Start-up benchmark",
    "",
    `${results.date.slice(0, 10)}, ${m.cpu}, ${m.cores} cores, Node ${m.node}, ${m.platform}.`,
    `${RUNS} runs per agent after ${WARMUP} warm-up${WARMUP === 1 ? "" : "s"}, interleaved; median (p90) from spawn to the response line.`,
    "Baseline is the plain-Node floor (`bench/floor.mjs`) unless named; the last row compares the SDK agent (`bench/sdk-agent.mjs`), not Skein.",
    ...(Math.max(m.loadAverage.before, m.loadAverage.after) > m.cores
      ? ["", `**The machine was busy** (1-minute load average ${m.loadAverage.before} → ${m.loadAverage.after} on ${m.cores} cores): absolute times are inflated and noisy; compare ratios, and rerun on an idle machine.`]
      : []),
    "",
    table,
    "",
    "`initialize`: issue target (within 2.5× of the floor). `ready` (initialize, then session/new): design target (within 2×).",
    ""
  ].join("\n")

  mkdirSync(join(root, "bench"), { recursive: true })
  writeFileSync(join(root, "bench", "results.json"), JSON.stringify(results, null, 2) + "\n")
  writeFileSync(join(root, "bench", "results.md"), md)
  process.stdout.write(`${md}\nwrote bench/results.json and bench/results.md in ${results.durationSeconds} s\n`)
}

try {
  await main()
} catch (error) {
  process.stderr.write(`\nbench failed: ${error?.message ?? error}\n`)
  process.exitCode = 1
} finally {
  rmSync(tmp, { recursive: true, force: true })
}
