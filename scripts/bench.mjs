// `npm run bench`: Skein's performance budgets, each figure against a baseline measured in the
// same run (see "Performance budgets" in the design notes). Writes bench/results.json and
// bench/results.md, prints the table, and refreshes the table in README.md (between the
// `bench:results` markers). A missed target is reported in the table, not by the exit code; only
// a broken run fails.
//
// Agents are spawned on this Node (node_modules/.bin/node under npm) and driven over stdio by one
// raw client (bench/client.mjs), the same for every agent:
// - Skein:  dist/skein.cjs acp --home <tmp> [--script <tmp>] (the build `npm run bench` just made);
// - floor:  bench/floor.mjs, plain Node answering the same requests with no library at all;
// - SDK:    bench/sdk-agent.mjs, a minimal agent on the official @agentclientprotocol/sdk;
// - relay:  bench/relay.mjs, plain Node relaying a model server's stream with the built-in fetch.
//
// Figures (medians of several runs; p90 is the 90th-percentile run on the slow side):
// 1. cold start: spawn → `initialize` response, and → `session/new` response (initialize first);
//    fresh processes, interleaved; baseline: the floor (target ≤ 2×), context: the SDK agent, and
//    the main thread's on-CPU time to the `session/new` response (robust to a busy machine).
//    The same against the previous commit (bench/previous.mjs: the merge-base with main, built in
//    this run's temporary directory), interleaved with the rest in the same run.
// 2. first chunk: `session/prompt` written → first `agent_message_chunk` line read, on an
//    initialized agent with a session; one scripted turn per prompt (one text delta); baseline:
//    the SDK agent answering with one chunk.
// 2b. first prompt: a fresh process per sample with a real HTTP provider (`--provider openai-chat`,
//    OPENAI_BASE_URL at a local SSE server in this process that streams a fixed answer):
//    `initialize`, `session/new`, a pause, then `session/prompt` written → first
//    `agent_message_chunk` read; baseline: bench/relay.mjs, plain Node relaying the same stream
//    with the built-in `fetch` (target ≤ 1.1×). Two pauses after `session/new`: an editor's (the
//    user types; the target row) and none (a script that prompts at once). Then a second prompt
//    in the same process, as soon as the first is answered (a warm process). And the RSS after the
//    editor's pause, the provider's warm-up done, before the prompt.
// 3. streaming throughput: one turn of 100,000 scripted text deltas; `session/update` lines per
//    second from the prompt written to its response read; baseline: the SDK agent relaying as
//    many deltas (target ≥ 1×); context: the agent's CPU time per turn, and the floor, which only
//    writes lines (the reader's ceiling).
// 4. memory: VmRSS (/proc/<pid>/status) after initialize and a settle, after the first
//    `session/new` and a settle (target ≤ 1.3× the floor's; also against the previous commit),
//    then with 100 and 1,000 live idle sessions; the added RSS per session (target < 1 MB); also
//    after a forced GC.
// 5. sessions: `session/list` over 1,000 logged sessions (target < 50 ms for a page) and
//    `session/load` of a 100,000-event log (target < 1 s), by scripts/bench-sessions.mjs; the
//    same over the floor by scripts/bench-sessions-floor.mjs.
// 6. log append: events/s of Skein's log writer, and of the whole canonical event path of a
//    session, against plain `writeSync` of the same lines, by scripts/bench-log.mjs.
// 7. remote: scripts/bench-remote.mjs (a turn over a unix socket against in process, memory per
//    remote client, a reader that stalls).
// 7b. cluster: scripts/bench-cluster.mjs (a turn through another runner than the session's
//    against its own, sessions created per second across two runners against one serve --store,
//    failover time after a kill -9 against the shard-lock expiry).
// 10. checkpoint: scripts/bench-checkpoint.mjs (a checkpoint of a 10,000-file workspace, first and
//    after 10 files changed, time and disk, against `git stash` of the same tree in the same run;
//    target: ≤ 1× git stash).
// 9. sandbox: scripts/bench-sandbox.mjs (the `bash` tool in-process, `true` and `git status` in
//    a repository, sandboxed against unsandboxed, in pairs; target: ≤ 10 ms added, the median of
//    the paired differences; also Skein's own CPU per call, both ways).
// 10. telemetry: scripts/bench-telemetry.mjs (cold start and a turn with OpenTelemetry off, the
//    exporter never loaded, against on, exporting to a local OTLP/HTTP receiver; interleaved).
// 11. monitor: scripts/bench-monitor.mjs (the web monitor in headless Chromium: a 100,000-delta
//    turn with its page open against none, the page's longest stall; 200 sessions' overview).
// 8. subagents (child sessions), shown natively (`clientCapabilities.subagents`), 64 allowed to
//    run at once by the home's config.json:
//    - memory: VmRSS while the parent's turn is blocked in a model call, with 64 children
//      (idle: each answered and `wait_agent` returned; or mid-turn: each said a word and sleeps
//      in its own model call), minus the same process in the same state with no child; per
//      child (target < 0.5 MB); also after a forced GC. Fresh process per run and scenario.
//    - spawn: the parent's `spawn_agent` tool call read → the child announced
//      (`subagent_update`), and → the child's first `agent_message_chunk`; baseline, interleaved
//      in the same process: `session/new` written → its response, and → the first chunk of a
//      prompt written on that response (target: a child starts in < 5 ms).
//    - streaming: `--provider openai-chat` at a local SSE server in this process that streams
//      each session 200 deltas, one every 10 ms (each stream on its own timer, the timers spread
//      over one period; all start SUB_FIRST_TOKEN_MS after every stream of the round has asked,
//      each response's headers sent at once, as providers do), each delta the time it was written; the lag of a delta is its line's arrival minus that time. 64 children at
//      once against one child alone (target: the worst child's p99 within 5 ms of the lone
//      child's) and against 64 top-level sessions streaming the same; one child against one
//      top-level session. Rounds interleaved, each on a new parent session.
//
// Options (or environment):
//   --runs N        cold starts per agent (15, BENCH_RUNS)     --warmup N   (2, BENCH_WARMUP)
//   --prompts N     first-chunk prompts per agent (15)         --deltas N   deltas per turn (100000)
//   --turns N       throughput turns per agent after one warm-up turn (5)
//   --first N       first-prompt runs per agent and pause (15)   --pause MS  the editor's pause (500)
//   --mem-runs N    memory runs (3)                            --sessions-runs N (5)
//   --sub-runs N    subagents: memory runs and streaming rounds per scenario (3)
//   --spawns N      subagents: spawn timings (20)
//   --sub-deltas N  subagents: deltas per stream (200)     --sub-pace MS  between two deltas of a stream (10)
//   --only LIST     comma-separated sections: cold,chunk,prompt,throughput,memory,sessions,log,remote,subagents,compaction,cluster,stops,sandbox,telemetry,monitor,checkpoint
//   --previous REF  the commit to compare with (BENCH_PREVIOUS; default: the merge-base with main,
//                   or HEAD^ on main); "none": no comparison
//   --merge         with --only: put the sections run into the recorded results (bench/results.*),
//                   keeping the other sections' figures as they were recorded
//   --no-readme     do not touch README.md
//   --help, -h      this text
// A partial run (--only) prints its table and writes nothing, unless --merge.
import { execFile } from "node:child_process"
import http from "node:http"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import os from "node:os"
import { dirname, join, relative } from "node:path"
import { parseArgs } from "node:util"
import { fileURLToPath } from "node:url"
import { Agent, msSince, now, sleep } from "../bench/client.mjs"
import { buildPrevious } from "../bench/previous.mjs"
import { warmCodeCache } from "./warm-code-cache.mjs"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
/** This file's opening comment: what the bench does and its options. */
const usage = () => {
  const lines = []
  for (const line of readFileSync(fileURLToPath(import.meta.url), "utf8").split("\n")) {
    if (!line.startsWith("//")) break
    lines.push(line.replace(/^\/\/ ?/, ""))
  }
  return `${lines.join("\n")}\n`
}
const OPTIONS = {
  runs: { type: "string" },
  warmup: { type: "string" },
  prompts: { type: "string" },
  deltas: { type: "string" },
  turns: { type: "string" },
  first: { type: "string" },
  pause: { type: "string" },
  "mem-runs": { type: "string" },
  "sessions-runs": { type: "string" },
  "sub-runs": { type: "string" },
  spawns: { type: "string" },
  "sub-deltas": { type: "string" },
  "sub-pace": { type: "string" },
  merge: { type: "boolean" },
  only: { type: "string" },
  previous: { type: "string" },
  "no-readme": { type: "boolean" },
  help: { type: "boolean", short: "h" }
}
const parseOptions = () => {
  try {
    return parseArgs({ options: OPTIONS }).values
  } catch (error) {
    process.stderr.write(`bench: ${error.message} (options: npm run bench -- --help)\n`)
    process.exit(2)
  }
}
const values = parseOptions()
if (values.help) {
  process.stdout.write(usage())
  process.exit(0)
}
const nonNegative = (value, fallback, name) => {
  if (value === undefined || value === "") return fallback
  const n = Number(value)
  if (!Number.isInteger(n) || n < 0) {
    process.stderr.write(`bench: ${name} must be a non-negative integer\n`)
    process.exit(2)
  }
  return n
}
const RUNS = Math.max(1, nonNegative(values.runs ?? process.env.BENCH_RUNS, 15, "--runs"))
const WARMUP = nonNegative(values.warmup ?? process.env.BENCH_WARMUP, 2, "--warmup")
const PROMPTS = Math.max(1, nonNegative(values.prompts, 15, "--prompts"))
const PROMPT_WARMUP = 3
const DELTAS = Math.max(1, nonNegative(values.deltas, 100_000, "--deltas"))
const TURNS = Math.max(1, nonNegative(values.turns, 5, "--turns"))
const FIRST = Math.max(1, nonNegative(values.first, 15, "--first"))
const PAUSE_MS = nonNegative(values.pause, 500, "--pause")
const MEM_RUNS = Math.max(1, nonNegative(values["mem-runs"], 3, "--mem-runs"))
const SESSIONS_RUNS = Math.max(1, nonNegative(values["sessions-runs"], 5, "--sessions-runs"))
const SUB_RUNS = Math.max(1, nonNegative(values["sub-runs"], 3, "--sub-runs"))
const SPAWNS = Math.max(1, nonNegative(values.spawns, 20, "--spawns"))
const SECTIONS = ["cold", "chunk", "prompt", "throughput", "memory", "sessions", "log", "remote", "subagents", "compaction", "cluster", "stops", "sandbox", "telemetry", "monitor", "checkpoint"]
const only = values.only === undefined ? SECTIONS : values.only.split(",").map((s) => s.trim())
for (const s of only) {
  if (!SECTIONS.includes(s)) {
    process.stderr.write(`bench: unknown section "${s}" (sections: ${SECTIONS.join(", ")})\n`)
    process.exit(2)
  }
}
const MEM_COUNTS = [100, 1000]
const PREVIOUS = values.previous ?? process.env.BENCH_PREVIOUS
const SETTLE_MS = 500

const TARGETS = {
  coldStart: 2, // × the floor, initialize and session/new
  idleRss: 1.3, // × the floor's RSS, idle after session/new
  firstPrompt: 1.1, // × the plain-Node relay, first prompt of a fresh process
  throughput: 1, // × the SDK agent, at least
  sessionKB: 1024, // added RSS per idle session, under
  loadMs: 1000, // session/load of 100,000 events, under
  listMs: 50, // session/list page over 1,000 sessions, under
  childKB: 512, // added RSS per child session, under
  childStartMs: 5, // spawn_agent → the child's first output, under
  childLagMs: 5, // the worst child's p99 update lag, 64 streaming at once, over a lone child's, at most
  cancelMs: 1000, // session/cancel mid-model-call → the prompt's answer, under ("about a second")
  shutdownMs: 2000, // SIGTERM mid-command → exited, under ("about 2 s")
  sandboxAddedMs: 10, // a sandboxed command's time over the same command's unsandboxed, at most
  checkpoint: 1 // a checkpoint's time and disk against git stash of the same tree, at most
}

const tmp = realpathSync(mkdtempSync(join(os.tmpdir(), "skein-bench-")))
const workspace = join(tmp, "workspace")
mkdirSync(workspace, { recursive: true })
let homes = 0
const freshHome = () => join(tmp, `home-${++homes}`)

// The command as installed (`bin.skein`).
const SKEIN = join(root, "dist", "skein.cjs")
const FLOOR = join(root, "bench", "floor.mjs")
const SDK = join(root, "bench", "sdk-agent.mjs")
const RELAY = join(root, "bench", "relay.mjs")
const GC_PROBE = join(root, "bench", "gc-probe.mjs")
for (const file of [SKEIN, FLOOR, SDK, RELAY]) {
  if (!existsSync(file)) {
    process.stderr.write(`bench: ${relative(root, file)} is missing${file === SKEIN ? " (run `npm run build`)" : ""}\n`)
    process.exit(1)
  }
}

const env = { ...process.env }
delete env.NODE_OPTIONS // the same flags for every agent: none
// Nothing reaches a real provider: no provider settings from this shell.
for (const k of Object.keys(env)) if (/^(SKEIN|OPENAI|ANTHROPIC)_/.test(k)) delete env[k]
// Skein's code cache lives in this run's temporary directory, filled before anything is measured
// the way the build fills a user's (scripts/warm-code-cache.mjs): the starts measured are those
// a user makes after an install. "skein-nocache" is Skein with the cache off: every start is then
// like the first one after an install or upgrade.
env.SKEIN_CODE_CACHE_DIR = join(tmp, "code-cache")
const envNoCache = { ...env, SKEIN_NO_CODE_CACHE: "1" }

const NAMES = { skein: "Skein", "skein-nocache": "Skein without its code cache", "skein-prev": "the previous commit", floor: "plain-Node floor", sdk: "ACP SDK agent", relay: "plain-Node relay" }

/** The previous commit's build (bench/previous.mjs), once `main` has built it; undefined with `--previous none`. */
let previous

/**
 * A provider for Skein when no script answers: an OpenAI-compatible server on a closed port,
 * never called (no prompt is sent). A user who opens sessions has one configured; without it,
 * `session/new` answers `auth_required`.
 */
const PROVIDER_ENV = { OPENAI_BASE_URL: "http://127.0.0.1:9/v1", SKEIN_MODEL: "bench" }

/** Starts an agent; Skein gets a fresh home (or `home`) and, when given, a script (else `PROVIDER_ENV`). */
const start = (id, { script, nodeArgs, args: extra = [], env: more, home, Class = Agent } = {}) => {
  if (id === "skein" || id === "skein-nocache" || id === "skein-prev") {
    const args = [id === "skein-prev" ? previous.skein : SKEIN, "acp", "--home", home ?? freshHome(), ...extra]
    if (script !== undefined) {
      const file = join(tmp, `script-${homes}.json`)
      writeFileSync(file, JSON.stringify(script))
      args.push("--script", file)
    }
    const base = id === "skein" ? env : id === "skein-prev" ? previous.env : envNoCache
    const provider = script === undefined ? PROVIDER_ENV : {}
    return new Class(NAMES[id], args, { cwd: workspace, env: { ...base, ...provider, ...more }, nodeArgs })
  }
  return new Agent(NAMES[id], [id === "floor" ? FLOOR : id === "relay" ? RELAY : SDK], { cwd: workspace, env: { ...env, ...more }, nodeArgs })
}

const progress = (text) => {
  if (process.stdout.isTTY) process.stdout.write(`\r\x1b[K${text}`)
}
const section = (text) => {
  if (process.stdout.isTTY) process.stdout.write("\r\x1b[K")
  process.stdout.write(`bench: ${text}\n`)
}

// ── statistics ────────────────────────────────────────────────────────────────────────────
const quantile = (sorted, q) => {
  if (sorted.length === 1) return sorted[0]
  const pos = (sorted.length - 1) * q
  const lo = Math.floor(pos)
  const hi = Math.ceil(pos)
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo)
}
const round = (x, digits = 2) => (x === null || x === undefined ? x : Math.round(x * 10 ** digits) / 10 ** digits)
/** Median and p90 (on the slow side: the 10th percentile when higher is better). */
const summarize = (samples, higherIsBetter = false) => {
  const sorted = [...samples].sort((a, b) => a - b)
  return {
    median: round(quantile(sorted, 0.5)),
    p90: round(quantile(sorted, higherIsBetter ? 0.1 : 0.9)),
    min: round(sorted[0]),
    max: round(sorted[sorted.length - 1]),
    samples: samples.map((x) => round(x))
  }
}

// ── 1. cold start ─────────────────────────────────────────────────────────────────────────
const coldOnce = async (id) => {
  const agent = start(id)
  try {
    const init = await agent.request("initialize", {
      protocolVersion: 1,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
      clientInfo: { name: "skein-bench", version: "1" }
    }, 10_000)
    const initSched = agent.schedMs()
    const ready = await agent.request("session/new", { cwd: workspace, mcpServers: [] }, 10_000)
    const readySched = agent.schedMs()
    const exit = await agent.close()
    if (exit.code !== 0) throw new Error(`${agent.name} exited with ${exit.signal ?? `code ${exit.code}`} after stdin closed${agent.stderrTail()}`)
    return {
      initialize: msSince(agent.t0, init.t),
      ready: msSince(agent.t0, ready.t),
      // The child's main thread, at the response (includes the read of the response by nobody else).
      initializeCpu: initSched?.cpu ?? null,
      readyCpu: readySched?.cpu ?? null,
      readyWait: readySched?.wait ?? null
    }
  } finally {
    agent.kill()
  }
}

const coldStart = async () => {
  const ids = ["skein", ...(previous !== undefined ? ["skein-prev"] : []), "floor", "sdk", "skein-nocache"]
  section(`cold start: ${WARMUP} warm-up + ${RUNS} runs per agent, interleaved`)
  const keys = ["initialize", "ready", "initializeCpu", "readyCpu", "readyWait"]
  const samples = Object.fromEntries(ids.map((id) => [id, Object.fromEntries(keys.map((k) => [k, []]))]))
  for (let i = 0; i < WARMUP; i++) for (const id of ids) await coldOnce(id)
  for (let i = 0; i < RUNS; i++) {
    for (let k = 0; k < ids.length; k++) {
      const id = ids[(i + k) % ids.length] // rotate: no agent always runs right after another
      const r = await coldOnce(id)
      for (const k of keys) if (r[k] !== null) samples[id][k].push(r[k])
    }
    progress(`  run ${i + 1}/${RUNS}`)
  }
  return Object.fromEntries(
    ids.map((id) => [id, Object.fromEntries(keys.filter((k) => samples[id][k].length > 0).map((k) => [k, summarize(samples[id][k])]))])
  )
}

// ── 2. first chunk ────────────────────────────────────────────────────────────────────────
const firstChunk = async () => {
  const ids = ["skein", "sdk", "floor"]
  const total = PROMPT_WARMUP + PROMPTS
  section(`first chunk: ${PROMPT_WARMUP} warm-up + ${PROMPTS} prompts per agent (one delta each), interleaved`)
  const script = { turns: Array.from({ length: total }, () => ({ calls: [[{ text: "x" }]] })) }
  const agents = Object.fromEntries(ids.map((id) => [id, start(id, { script })]))
  try {
    const sessions = {}
    for (const id of ids) {
      await agents[id].initialize()
      sessions[id] = await agents[id].newSession(workspace)
    }
    const samples = Object.fromEntries(ids.map((id) => [id, []]))
    for (let i = 0; i < total; i++) {
      for (let k = 0; k < ids.length; k++) {
        const id = ids[(i + k) % ids.length]
        const agent = agents[id]
        let first
        agent.onChunk = (t) => {
          if (first === undefined) first = t
        }
        const r = await agent.prompt(sessions[id], "deltas:1", 10_000)
        agent.onChunk = undefined
        if (first === undefined) throw new Error(`${agent.name}: no agent_message_chunk before the prompt response`)
        if (r.result?.stopReason !== "end_turn") throw new Error(`${agent.name}: prompt ended ${JSON.stringify(r.result)}`)
        if (i >= PROMPT_WARMUP) samples[id].push(msSince(r.sent, first))
      }
      progress(`  prompt ${i + 1}/${total}`)
    }
    return Object.fromEntries(ids.map((id) => [id, summarize(samples[id])]))
  } finally {
    await Promise.all(ids.map((id) => agents[id].close()))
  }
}

// ── 2b. first prompt of a fresh process, over HTTP ───────────────────────────────────────
// The model: a local server that answers every POST with the same Chat Completions stream (one
// text delta first), as a fast local model server would.
const SSE_EVENTS = [
  { choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] },
  { choices: [{ index: 0, delta: { content: "Hello" }, finish_reason: null }] },
  { choices: [{ index: 0, delta: { content: " world" }, finish_reason: null }] },
  { choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
  { choices: [], usage: { prompt_tokens: 12, completion_tokens: 2, total_tokens: 14 } }
]
const SSE_BODY = SSE_EVENTS.map((e) => `data: ${JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk", created: 1730000000, model: "bench", ...e })}\n\n`).join("") + "data: [DONE]\n\n"

const sseServer = () =>
  new Promise((resolve) => {
    let requests = 0
    const server = http.createServer((req, res) => {
      req.resume()
      req.on("end", () => {
        requests++
        res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
        res.end(SSE_BODY)
      })
    })
    server.listen(0, "127.0.0.1", () =>
      resolve({
        url: `http://127.0.0.1:${server.address().port}/v1`,
        requests: () => requests,
        close: () => new Promise((done) => {
          server.closeAllConnections()
          server.close(() => done())
        })
      }))
  })

const firstPromptOnce = async (id, url, pauseMs) => {
  const agent = start(id, {
    args: ["--provider", "openai-chat", "--model", "bench"],
    env: { OPENAI_BASE_URL: url, BENCH_MODEL: "bench" }
  })
  try {
    await agent.initialize()
    const opened = await agent.request("session/new", { cwd: workspace, mcpServers: [] })
    const sessionId = opened.result.sessionId
    if (pauseMs > 0) await sleep(pauseMs)
    // Idle after the pause: Skein's provider warm-up is done by then.
    const idleKB = agent.rssKB()
    /** Prompt written → its first chunk read. */
    const promptOnce = async () => {
      let first
      agent.onChunk = (t) => {
        if (first === undefined) first = t
      }
      const r = await agent.prompt(sessionId, "Say hello.", 10_000)
      agent.onChunk = undefined
      if (first === undefined) throw new Error(`${agent.name}: no agent_message_chunk before the prompt response${agent.stderrTail()}`)
      if (r.result?.stopReason !== "end_turn") throw new Error(`${agent.name}: prompt ended ${JSON.stringify(r.result)}${agent.stderrTail()}`)
      return msSince(r.sent, first)
    }
    const firstMs = await promptOnce()
    // The same process, warm: the next prompt as soon as the first is answered.
    const secondMs = await promptOnce()
    const exit = await agent.close()
    if (exit.code !== 0) throw new Error(`${agent.name} exited with ${exit.signal ?? `code ${exit.code}`}${agent.stderrTail()}`)
    return { first: firstMs, second: secondMs, ready: msSince(agent.t0, opened.t), idleKB }
  } finally {
    agent.kill()
  }
}

const firstPrompt = async () => {
  const ids = ["skein", "relay"]
  const pauses = [PAUSE_MS, 0]
  section(`first prompt over HTTP: ${WARMUP} warm-up + ${FIRST} fresh processes per agent and pause (${pauses.join(" ms, ")} ms after session/new), interleaved`)
  const server = await sseServer()
  try {
    const samples = Object.fromEntries(pauses.map((p) => [p, Object.fromEntries(ids.map((id) => [id, []]))]))
    const ready = Object.fromEntries(ids.map((id) => [id, []]))
    const second = Object.fromEntries(ids.map((id) => [id, []]))
    const idle = Object.fromEntries(ids.map((id) => [id, []]))
    for (let i = 0; i < WARMUP; i++) for (const id of ids) await firstPromptOnce(id, server.url, 0)
    for (let i = 0; i < FIRST; i++) {
      for (let k = 0; k < ids.length * pauses.length; k++) {
        const j = (i + k) % (ids.length * pauses.length) // rotate: no run always follows the same one
        const id = ids[j % ids.length]
        const pause = pauses[Math.floor(j / ids.length)]
        const r = await firstPromptOnce(id, server.url, pause)
        samples[pause][id].push(r.first)
        ready[id].push(r.ready)
        second[id].push(r.second)
        if (pause === PAUSE_MS) idle[id].push(r.idleKB)
      }
      progress(`  run ${i + 1}/${FIRST}`)
    }
    // Every model request is a prompt's: nothing else (a warm-up) reaches the model's server.
    const expected = (WARMUP + FIRST * pauses.length) * ids.length * 2
    if (server.requests() !== expected) throw new Error(`the model server got ${server.requests()} requests for ${expected} prompts`)
    return {
      ...Object.fromEntries(pauses.map((p) => [p, Object.fromEntries(ids.map((id) => [id, summarize(samples[p][id])]))])),
      ready: Object.fromEntries(ids.map((id) => [id, summarize(ready[id])])),
      second: Object.fromEntries(ids.map((id) => [id, summarize(second[id])])),
      idleKB: Object.fromEntries(ids.map((id) => [id, summarize(idle[id])]))
    }
  } finally {
    await server.close()
  }
}

// ── 3. streaming throughput ───────────────────────────────────────────────────────────────
const throughput = async () => {
  const ids = ["skein", "sdk", "floor"]
  section(`throughput: 1 warm-up + ${TURNS} turns of ${DELTAS.toLocaleString("en")} deltas per agent, interleaved`)
  const script = { turns: Array.from({ length: TURNS + 1 }, () => ({ calls: [[{ text: "x", repeat: DELTAS }]] })) }
  const samples = Object.fromEntries(ids.map((id) => [id, []]))
  const rss = Object.fromEntries(ids.map((id) => [id, []]))
  const cpu = Object.fromEntries(ids.map((id) => [id, []]))
  const updateCounts = Object.fromEntries(ids.map((id) => [id, []]))
  const agents = Object.fromEntries(ids.map((id) => [id, start(id, { script })]))
  try {
    const sessions = {}
    for (const id of ids) {
      await agents[id].initialize()
      sessions[id] = await agents[id].newSession(workspace)
    }
    for (let i = 0; i <= TURNS; i++) {
      for (let k = 0; k < ids.length; k++) {
        const id = ids[(i + k) % ids.length]
        const agent = agents[id]
        const before = agent.updates
        const textBefore = agent.chunkText
        const cpu0 = agent.cpuMs()
        const r = await agent.prompt(sessions[id], `deltas:${DELTAS}`, 120_000)
        const cpu1 = agent.cpuMs()
        // Every delta is one character: an agent may merge deltas a reader has not taken yet
        // into one update, so the text delivered is what counts.
        const delivered = r.chunkText - textBefore
        if (delivered !== DELTAS) throw new Error(`${agent.name}: ${delivered} characters of text for ${DELTAS} one-character deltas`)
        if (i > 0) {
          samples[id].push((delivered / msSince(r.sent, r.t)) * 1000)
          updateCounts[id].push(r.updates - before)
          rss[id].push(agent.rssKB())
          if (cpu0 !== null && cpu1 !== null) cpu[id].push(cpu1 - cpu0)
        }
      }
      progress(`  turn ${i + 1}/${TURNS + 1}`)
    }
    return Object.fromEntries(
      ids.map((id) => [id, { ...summarize(samples[id], true), cpuMsPerTurn: cpu[id].length ? summarize(cpu[id]) : null, rssAfterTurnKB: rss[id], updatesPerTurn: updateCounts[id] }])
    )
  } finally {
    await Promise.all(ids.map((id) => agents[id].close()))
  }
}

// ── 4. memory ─────────────────────────────────────────────────────────────────────────────
/** RSS after a forced full GC, from the preloaded probe (bench/gc-probe.mjs), in KB. */
const probe = async (agent) => {
  const from = agent.stderr.length
  process.kill(agent.pid, "SIGUSR2")
  for (let i = 0; i < 200; i++) {
    await sleep(10)
    const m = /skein-bench-mem (\{.*\})\n/.exec(agent.stderr.slice(from))
    if (m !== null) {
      const u = JSON.parse(m[1])
      return { rssKB: Math.round(u.rss / 1024), heapUsedKB: Math.round(u.heapUsed / 1024), externalKB: Math.round(u.external / 1024) }
    }
  }
  throw new Error(`${agent.name}: the GC probe did not answer${agent.stderrTail()}`)
}

/**
 * RSS idle after `initialize` (0 sessions), after the first `session/new` (1), then with each of
 * `counts` live sessions; each point after a settle, and from the first session on also after a
 * forced GC (the probe loads modules of its own at its first use: none is counted before it).
 */
const memoryOnce = async (id, counts) => {
  // Skein keeps every session live here (its default cap would close idle ones past 256).
  const agent = start(id, { nodeArgs: ["--import", GC_PROBE], args: id === "skein" ? ["--max-live-sessions", String(Math.max(1, ...counts) + 1)] : [] })
  try {
    await agent.initialize()
    await sleep(SETTLE_MS)
    const points = [{ sessions: 0, rssKB: agent.rssKB() }]
    await agent.newSession(workspace)
    let live = 1
    await sleep(SETTLE_MS)
    points.push({ sessions: 1, rssKB: agent.rssKB(), gc: await probe(agent) })
    for (const n of counts) {
      while (live < n) {
        const batch = Math.min(50, n - live)
        await Promise.all(Array.from({ length: batch }, () => agent.newSession(workspace)))
        live += batch
      }
      await sleep(SETTLE_MS)
      points.push({ sessions: n, rssKB: agent.rssKB(), gc: await probe(agent) })
    }
    return points
  } finally {
    await agent.close()
  }
}

const memory = async () => {
  section(`memory: ${MEM_RUNS} runs; RSS idle, then with ${MEM_COUNTS.join(" and ")} live sessions`)
  const ids = ["skein", ...(previous !== undefined ? ["skein-prev"] : []), "floor", "sdk"]
  const runs = Object.fromEntries(ids.map((id) => [id, []]))
  for (let i = 0; i < MEM_RUNS; i++) {
    for (let k = 0; k < ids.length; k++) {
      const id = ids[(i + k) % ids.length]
      runs[id].push(await memoryOnce(id, id === "skein" ? MEM_COUNTS : []))
    }
    progress(`  run ${i + 1}/${MEM_RUNS}`)
  }
  const at = (points, n) => points.find((p) => p.sessions === n)
  const over = (f) => Object.fromEntries(ids.map((id) => [id, f(id)]))
  const idle = (id, n = 0) => summarize(runs[id].map((p) => at(p, n).rssKB))
  const idleGc = (id, n) => summarize(runs[id].map((p) => at(p, n).gc.rssKB))
  // After a forced GC: from the first session's point (the first with the probe), per session added since.
  const perSession = Object.fromEntries(MEM_COUNTS.map((n) => [n, {
    rssKB: summarize(runs.skein.map((p) => at(p, n).rssKB)),
    addedKBPerSession: summarize(runs.skein.map((p) => (at(p, n).rssKB - at(p, 0).rssKB) / n)),
    afterGc: {
      rssKB: summarize(runs.skein.map((p) => at(p, n).gc.rssKB)),
      addedKBPerSession: summarize(runs.skein.map((p) => (at(p, n).gc.rssKB - at(p, 1).gc.rssKB) / (n - 1))),
      addedHeapKBPerSession: summarize(runs.skein.map((p) => (at(p, n).gc.heapUsedKB - at(p, 1).gc.heapUsedKB) / (n - 1)))
    }
  }]))
  return {
    idleKB: over((id) => idle(id)),
    sessionIdleKB: over((id) => idle(id, 1)),
    sessionIdleAfterGcKB: over((id) => idleGc(id, 1)),
    sessions: perSession,
    raw: runs
  }
}

// ── 5. sessions (list, load) and 6. log append: helper scripts ───────────────────────────
const runScript = (script, args, timeout = 300_000) =>
  new Promise((resolve) => {
    const file = join(root, "scripts", script)
    if (!existsSync(file)) return resolve({ missing: true, file: `scripts/${script}` })
    const childEnv = { ...env }
    for (const k of ["BENCH_RUNS", "BENCH_SESSIONS", "BENCH_EVENTS"]) delete childEnv[k]
    execFile(process.execPath, [file, ...args], { cwd: root, env: childEnv, maxBuffer: 64 * 1024 * 1024, timeout }, (error, stdout, stderr) => {
      if (error) return resolve({ error: `${script}: ${error.message.split("\n")[0]}\n${String(stderr).trim().slice(-2000)}` })
      try {
        resolve({ value: JSON.parse(stdout) })
      } catch {
        resolve({ error: `${script}: its output is not one JSON object: ${String(stdout).slice(0, 300)}` })
      }
    })
  })

const sessionsBench = async () => {
  // HOOK: scripts/bench-sessions.mjs (a colleague's) measures Skein; its JSON is read as is:
  //   { list: { sessions, firstPageMs, allPagesMs, cwdFilterFirstPageMs, samples? },
  //     load: { events, loadMs, replayedUpdates, samples? } }
  // Without it, the rows say the hook is missing.
  section(`sessions: scripts/bench-sessions.mjs (Skein) and scripts/bench-sessions-floor.mjs (floor), ${SESSIONS_RUNS} runs each`)
  const skein = await runScript("bench-sessions.mjs", ["--runs", String(SESSIONS_RUNS)])
  const floor = await runScript("bench-sessions-floor.mjs", ["--runs", String(SESSIONS_RUNS)])
  return { skein, floor }
}

const logBench = async () => {
  section("log append: scripts/bench-log.mjs (writer, runtime, floor)")
  return runScript("bench-log.mjs", [])
}

const remoteBench = async () => {
  section("remote: scripts/bench-remote.mjs (in process vs a unix socket, remote clients, a reader that stalls 30 s)")
  return runScript("bench-remote.mjs", ["--runs", "5"])
}

// ── 8. child sessions (subagents) ─────────────────────────────────────────────────────────
// Every child is shown natively (the client declares `clientCapabilities.subagents`): its updates
// carry its own session id, so each line read is known to be the parent's or one child's.
const SUB_CHILDREN = 64
const SUB_SLEEP_MS = 600_000 // a model call that only a cancel ends
const SUB_DELTAS = Math.max(10, nonNegative(values["sub-deltas"], 200, "--sub-deltas")) // per streaming session
const SUB_EVERY_MS = Math.max(1, nonNegative(values["sub-pace"], 10, "--sub-pace")) // between two deltas of one stream
// The first token of a stream, after the last of the round asked. Real models take hundreds of
// ms; a server that answered in 0 ms would measure the last child's spawn, not the streaming.
const SUB_FIRST_TOKEN_MS = 100
const SUB_SPAWN_WARMUP = 3
const SUB_STREAM_ROUNDS = SUB_RUNS

/** A home whose config lets 64 children run at once, with two custom agents (the parent's tools). */
const subHome = () => {
  const home = freshHome()
  mkdirSync(join(home, "agents"), { recursive: true })
  writeFileSync(join(home, "config.json"), JSON.stringify({ subagents: { maxRunning: SUB_CHILDREN, maxPerSession: 10_000 } }))
  // The scripted provider gives the children of each agent their own turns.
  for (const name of ["quick", "busy"]) {
    writeFileSync(join(home, "agents", `${name}.md`), `---\nname: ${name}\ndescription: a child of the bench (${name})\n---\nA child of the bench.\n`)
  }
  return home
}
const subInitialize = (agent) =>
  agent.request("initialize", {
    protocolVersion: 1,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false, subagents: {} },
    clientInfo: { name: "skein-bench", version: "1" }
  })

const UPDATE_MARK = Buffer.from('"method":"session/update"')
const CHUNK_MARK = Buffer.from('"sessionUpdate":"agent_message_chunk"')
const SESSION_MARK = Buffer.from('"sessionId":"')
const TEXT_MARK = Buffer.from('"text":"')
const SPAWN_MARK = Buffer.from('"title":"Spawn ')
const within = (buf, mark, start, end) => {
  const at = buf.indexOf(mark, start)
  return at !== -1 && at < end ? at : -1
}
/** The first quoted value after `mark` in a line (by a byte search; ids and digits need no unescaping). */
const valueAfter = (buf, mark, start, end) => {
  const at = within(buf, mark, start, end)
  if (at === -1) return undefined
  const from = at + mark.length
  return buf.toString("latin1", from, buf.indexOf(0x22, from))
}

/** The bench client, also handing each `session/update` line to `onUpdate(buf, start, end, t)`. */
class Watched extends Agent {
  onLine(buf, start, end, t) {
    if (this.onUpdate !== undefined) {
      const mark = buf.indexOf(UPDATE_MARK, start)
      if (mark !== -1 && mark < end && mark - start < 64) this.onUpdate(buf, start, end, t)
    }
    super.onLine(buf, start, end, t)
  }
}

const waitFor = async (what, test, timeoutMs = 60_000) => {
  const until = Date.now() + timeoutMs
  while (!test()) {
    if (Date.now() > until) throw new Error(`subagents: no ${what} within ${timeoutMs / 1000} s`)
    await sleep(2)
  }
}
const tool = (name, args) => ({ tool: name, args })
const spawnCalls = (n, agent) => Array.from({ length: n }, (_, i) => tool("spawn_agent", { task: `task ${i + 1}`, agent }))

// 8a. memory. One process per run and scenario: a warm-up turn with one child (the child code is
// loaded), then the baseline turn, blocked in a model call with no child, then the measured turn,
// blocked the same way with 64 children; each is measured after a settle, then cancelled.
const subMemoryOnce = async (scenario) => {
  const measured = scenario === "idle"
    ? { calls: [spawnCalls(SUB_CHILDREN, "quick"), [tool("wait_agent", {})], [{ text: "w" }, { sleep_ms: SUB_SLEEP_MS }]] }
    : { calls: [spawnCalls(SUB_CHILDREN, "busy"), [{ text: "m" }, { sleep_ms: SUB_SLEEP_MS }]] }
  const script = {
    turns: [
      { calls: [[tool("spawn_agent", { task: "warm up", agent: "quick" })], [tool("wait_agent", {})], [{ text: "ok" }]] },
      { calls: [[{ text: "b" }, { sleep_ms: SUB_SLEEP_MS }]] },
      measured
    ],
    agents: {
      quick: { turns: [{ calls: [[{ text: "done" }]] }] },
      busy: { turns: [{ calls: [[{ text: "working" }, { sleep_ms: SUB_SLEEP_MS }]] }] }
    }
  }
  const agent = start("skein", { script, home: subHome(), Class: Watched, nodeArgs: ["--import", GC_PROBE] })
  try {
    await subInitialize(agent)
    const sessionId = await agent.newSession(workspace)
    const warm = await agent.prompt(sessionId, "warm up", 30_000)
    if (warm.result?.stopReason !== "end_turn") throw new Error(`subagents: the warm-up turn ended ${JSON.stringify(warm.result)}${agent.stderrTail()}`)
    // The probe loads its modules at its first use: before both points, not between them.
    await probe(agent)
    const said = new Set() // the sessions that sent a chunk in this turn
    let firstSpawn
    let lastChild
    agent.onUpdate = (buf, start, end, t) => {
      if (within(buf, CHUNK_MARK, start, end) === -1) {
        if (firstSpawn === undefined && within(buf, SPAWN_MARK, start, end) !== -1) firstSpawn = t
        return
      }
      const id = valueAfter(buf, SESSION_MARK, start, end)
      if (said.has(id)) return
      said.add(id)
      if (id !== sessionId) lastChild = t
    }
    const measure = async (prompt, children) => {
      said.clear()
      firstSpawn = lastChild = undefined
      const turn = agent.prompt(sessionId, prompt, 120_000)
      let failed
      turn.catch((e) => (failed = e))
      await waitFor(`chunk from the parent and ${children} children`, () => failed !== undefined || (said.has(sessionId) && said.size === children + 1))
      if (failed !== undefined) throw failed
      await sleep(SETTLE_MS)
      const point = { rssKB: agent.rssKB(), gc: await probe(agent) }
      if (children > 0) point.spawnAllMs = msSince(firstSpawn, lastChild)
      const cancel = now()
      agent.send({ method: "session/cancel", params: { sessionId } })
      const r = await turn
      if (r.result?.stopReason !== "cancelled") throw new Error(`subagents: the measured turn ended ${JSON.stringify(r.result)}`)
      point.cancelMs = msSince(cancel, r.t)
      return point
    }
    const base = await measure("baseline", 0)
    const loaded = await measure(scenario, SUB_CHILDREN)
    return { base, loaded }
  } finally {
    agent.onUpdate = undefined
    await agent.close()
  }
}

// 8b. spawn. One process: a parent whose every turn spawns one child (which answers at once) and
// waits for it, interleaved with new top-level sessions each given one prompt.
const subSpawn = async () => {
  const total = SUB_SPAWN_WARMUP + SPAWNS
  const script = {
    turns: [
      { calls: [[{ text: "x" }]] }, // every top-level session's first turn
      ...Array.from({ length: total }, () => ({ calls: [[tool("spawn_agent", { task: "answer", agent: "quick" })], [tool("wait_agent", {})], [{ text: "ok" }]] }))
    ],
    agents: { quick: { turns: [{ calls: [[{ text: "done" }]] }] } }
  }
  const agent = start("skein", { script, home: subHome(), Class: Watched })
  const keys = ["announced", "childPrompt", "childFirst", "newSession", "newSessionFirst", "promptFirst"]
  const samples = Object.fromEntries(keys.map((k) => [k, []]))
  try {
    await subInitialize(agent)
    const parent = await agent.newSession(workspace)
    await agent.prompt(parent, "first")
    const child = async () => {
      let spawned, announced, prompted, first, id
      agent.onUpdate = (buf, start, end, t) => {
        const { params } = JSON.parse(buf.toString("utf8", start, end))
        const u = params.update
        if (params.sessionId === parent) {
          if (spawned === undefined && u.sessionUpdate === "tool_call" && String(u.title).startsWith("Spawn ")) spawned = t
          else if (id === undefined && u.sessionUpdate === "subagent_update" && u.title !== undefined) {
            id = u.sessionId
            announced = t
          }
        } else if (params.sessionId === id) {
          if (prompted === undefined && u.sessionUpdate === "session_message") prompted = t
          else if (first === undefined && u.sessionUpdate === "agent_message_chunk") first = t
        }
      }
      const r = await agent.prompt(parent, "spawn", 30_000)
      agent.onUpdate = undefined
      if (r.result?.stopReason !== "end_turn" || [spawned, announced, prompted, first].includes(undefined)) {
        throw new Error(`subagents: a spawn turn ended ${JSON.stringify(r.result)} without every event of its child${agent.stderrTail()}`)
      }
      return { announced: msSince(spawned, announced), childPrompt: msSince(spawned, prompted), childFirst: msSince(spawned, first) }
    }
    const topLevel = async () => {
      const opened = await agent.request("session/new", { cwd: workspace, mcpServers: [] })
      let first
      agent.onChunk = (t) => {
        if (first === undefined) first = t
      }
      const r = await agent.prompt(opened.result.sessionId, "x", 30_000)
      agent.onChunk = undefined
      if (first === undefined) throw new Error("subagents: a new session's prompt sent no chunk")
      return { newSession: msSince(opened.sent, opened.t), newSessionFirst: msSince(opened.sent, first), promptFirst: msSince(r.sent, first) }
    }
    for (let i = 0; i < total; i++) {
      const pair = i % 2 === 0 ? [child, topLevel] : [topLevel, child]
      const r = { ...(await pair[0]()), ...(await pair[1]()) }
      if (i >= SUB_SPAWN_WARMUP) for (const k of keys) samples[k].push(r[k])
      progress(`  spawn ${i + 1}/${total}`)
    }
    return Object.fromEntries(keys.map((k) => [k, summarize(samples[k])]))
  } finally {
    agent.onUpdate = undefined
    await agent.close()
  }
}

// 8c. streaming. The model: a local server answering Chat Completions streams. A parent prompted
// `bench-parent N` gets N `spawn_agent` calls, then "ok" once it has tool results; a session
// whose first prompt is `bench-stream …` (a child's task, or a top-level prompt) gets
// SUB_DELTAS deltas, one every SUB_EVERY_MS, each delta the time it was written
// (process.hrtime.bigint, ns) and `;`. A response's headers go out as soon as it is asked (as
// providers send theirs before the first token), so a response's start is not its first delta.
// Streams wait until the number `expect(n)` announced have asked, then start together
// SUB_FIRST_TOKEN_MS later, each on its own timer, the n timers spread evenly over one period
// (as independent model streams are): what is measured is the children streaming at once, not
// their spawning, nor bursts of 64 deltas written in the same instant.
const streamServer = () =>
  new Promise((resolve) => {
    const timers = new Set()
    let waiting = []
    let expected = 1
    const event = (e) => `data: ${JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk", created: 1730000000, model: "bench", ...e })}\n\n`
    const finish = (reason) => event({ choices: [{ index: 0, delta: {}, finish_reason: reason }] }) + "data: [DONE]\n\n"
    const stream = (res, offsetMs) => {
      let sent = 0
      let timer = setTimeout(() => {
        const tick = () => {
          res.write(event({ choices: [{ index: 0, delta: { content: `${process.hrtime.bigint()};` }, finish_reason: null }] }))
          if (++sent === SUB_DELTAS) {
            clearInterval(timer)
            timers.delete(timer)
            res.end(finish("stop"))
          }
        }
        timers.delete(timer)
        timer = setInterval(tick, SUB_EVERY_MS)
        timers.add(timer)
        tick()
      }, offsetMs)
      timers.add(timer)
    }
    const server = http.createServer((req, res) => {
      const body = []
      req.on("data", (d) => body.push(d))
      req.on("end", () => {
        const messages = JSON.parse(Buffer.concat(body).toString("utf8")).messages ?? []
        const user = messages.find((m) => m.role === "user")
        const asked = typeof user?.content === "string" ? user.content : (user?.content ?? []).map((c) => c.text ?? "").join("")
        res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
        if (asked.includes("bench-stream")) {
          res.flushHeaders()
          waiting.push(res)
          if (waiting.length < expected) return
          waiting.forEach((r, i) => stream(r, SUB_FIRST_TOKEN_MS + (i * SUB_EVERY_MS) / waiting.length))
          waiting = []
          return
        }
        const n = Number(/bench-parent (\d+)/.exec(asked)?.[1] ?? 0)
        if (n === 0 || messages.some((m) => m.role === "tool")) {
          res.end(event({ choices: [{ index: 0, delta: { role: "assistant", content: "ok" }, finish_reason: null }] }) + finish("stop"))
          return
        }
        const calls = Array.from({ length: n }, (_, i) => ({
          index: i,
          id: `call_${i + 1}`,
          type: "function",
          function: { name: "spawn_agent", arguments: JSON.stringify({ task: `bench-stream child ${i + 1}` }) }
        }))
        res.end(event({ choices: [{ index: 0, delta: { role: "assistant", tool_calls: calls }, finish_reason: null }] }) + finish("tool_calls"))
      })
    })
    server.listen(0, "127.0.0.1", () =>
      resolve({
        url: `http://127.0.0.1:${server.address().port}/v1`,
        expect: (n) => {
          expected = n
        },
        close: () => new Promise((done) => {
          for (const timer of timers) clearTimeout(timer)
          server.closeAllConnections()
          server.close(() => done())
        })
      }))
  })

const subStream = async () => {
  const server = await streamServer()
  const agent = start("skein", {
    home: subHome(),
    Class: Watched,
    args: ["--provider", "openai-chat", "--model", "bench"],
    env: { OPENAI_BASE_URL: server.url, BENCH_MODEL: "bench" }
  })
  const scenarios = ["many", "one", "direct", "manyDirect"]
  const runs = Object.fromEntries(scenarios.map((s) => [s, []]))
  try {
    await subInitialize(agent)
    const once = async (scenario) => {
      const sessionIds = []
      for (let i = 0; i < (scenario === "manyDirect" ? SUB_CHILDREN : 1); i++) sessionIds.push(await agent.newSession(workspace))
      const sessionId = sessionIds[0]
      const bySession = new Map() // session → { lags: [ms], arrivals: [ms] }
      agent.onUpdate = (buf, start, end, t) => {
        if (within(buf, CHUNK_MARK, start, end) === -1) return
        const text = valueAfter(buf, TEXT_MARK, start, end)
        if (text === undefined || !/^(\d+;)+$/.test(text)) return // the parent's "ok"
        const id = valueAfter(buf, SESSION_MARK, start, end)
        let s = bySession.get(id)
        if (s === undefined) bySession.set(id, (s = { lags: [], arrivals: [] }))
        const at = Number(t) / 1e6
        for (const sent of text.split(";")) {
          if (sent === "") continue
          s.lags.push(Number(t - BigInt(sent)) / 1e6)
          s.arrivals.push(at)
        }
      }
      const cpu0 = agent.cpuMs()
      const streams = scenario === "many" || scenario === "manyDirect" ? SUB_CHILDREN : 1
      server.expect(streams)
      const benchCpu0 = process.cpuUsage()
      const direct = scenario === "direct" || scenario === "manyDirect"
      const prompt = direct ? "bench-stream direct" : `bench-parent ${scenario === "many" ? SUB_CHILDREN : 1}`
      const sent = now()
      const rs = await Promise.all(sessionIds.map((id) => agent.prompt(id, prompt, 120_000)))
      const r = { sent, t: rs.reduce((a, b) => (b.t > a ? b.t : a), rs[0].t), result: rs.find((x) => x.result?.stopReason !== "end_turn")?.result ?? rs[0].result }
      const cpu1 = agent.cpuMs()
      const benchCpu = process.cpuUsage(benchCpu0)
      agent.onUpdate = undefined
      if (r.result?.stopReason !== "end_turn") throw new Error(`subagents: a streaming turn ended ${JSON.stringify(r.result)}${agent.stderrTail()}`)
      if (direct ? sessionIds.some((id) => !bySession.has(id)) || bySession.size !== streams : bySession.has(sessionId) || bySession.size !== streams) {
        throw new Error(`subagents: ${bySession.size} sessions streamed for ${streams} (${scenario})`)
      }
      const all = []
      const steady = [] // without the first and the last tenth of each stream (its start and its end)
      const childP99 = []
      let stall = 0
      const tenth = Math.floor(SUB_DELTAS / 10)
      for (const s of bySession.values()) {
        if (s.lags.length !== SUB_DELTAS) throw new Error(`subagents: a stream delivered ${s.lags.length} deltas of ${SUB_DELTAS}`)
        childP99.push(quantile([...s.lags].sort((a, b) => a - b), 0.99))
        for (const x of s.lags) all.push(x)
        for (let i = tenth; i < SUB_DELTAS - tenth; i++) steady.push(s.lags[i])
        for (let i = 1; i < s.arrivals.length; i++) stall = Math.max(stall, s.arrivals[i] - s.arrivals[i - 1] - SUB_EVERY_MS)
      }
      all.sort((a, b) => a - b)
      steady.sort((a, b) => a - b)
      return {
        p50: quantile(all, 0.5),
        p99: quantile(all, 0.99),
        max: all[all.length - 1],
        worstChildP99: Math.max(...childP99),
        steadyP99: quantile(steady, 0.99),
        steadyMax: steady[steady.length - 1],
        maxStall: stall,
        deltas: all.length,
        turnMs: msSince(r.sent, r.t),
        cpuMs: cpu0 !== null && cpu1 !== null ? cpu1 - cpu0 : null,
        benchCpuMs: (benchCpu.user + benchCpu.system) / 1000
      }
    }
    await once("many") // warm-up: the HTTP client, children, the code of every path
    for (let i = 0; i < SUB_STREAM_ROUNDS; i++) {
      for (let k = 0; k < scenarios.length; k++) {
        const s = scenarios[(i + k) % scenarios.length]
        runs[s].push(await once(s))
      }
      progress(`  streaming round ${i + 1}/${SUB_STREAM_ROUNDS}`)
    }
  } finally {
    agent.onUpdate = undefined
    await agent.close()
    await server.close()
  }
  const keys = Object.keys(runs.many[0]).filter((k) => runs.many[0][k] !== null)
  return Object.fromEntries(scenarios.map((s) => [s, { ...Object.fromEntries(keys.map((k) => [k, summarize(runs[s].map((r) => r[k]))])), runs: runs[s] }]))
}

const subagentsBench = async () => {
  section(`subagents: memory (${SUB_RUNS} runs × idle, mid-turn; ${SUB_CHILDREN} children), spawn (${SUB_SPAWN_WARMUP} warm-up + ${SPAWNS}), streaming (1 warm-up + ${SUB_STREAM_ROUNDS} rounds × ${SUB_CHILDREN} children, 1 child, 1 and ${SUB_CHILDREN} top-level sessions; ${SUB_DELTAS} deltas each, one every ${SUB_EVERY_MS} ms)`)
  const memoryRuns = { idle: [], busy: [] }
  for (let i = 0; i < SUB_RUNS; i++) {
    for (const scenario of i % 2 === 0 ? ["idle", "busy"] : ["busy", "idle"]) memoryRuns[scenario].push(await subMemoryOnce(scenario))
    progress(`  memory run ${i + 1}/${SUB_RUNS}`)
  }
  const perChild = (runs, rss) => summarize(runs.map((r) => (rss(r.loaded) - rss(r.base)) / SUB_CHILDREN))
  const memory = Object.fromEntries(Object.entries(memoryRuns).map(([scenario, runs]) => [scenario, {
    baseKB: summarize(runs.map((r) => r.base.rssKB)),
    loadedKB: summarize(runs.map((r) => r.loaded.rssKB)),
    addedKBPerChild: perChild(runs, (p) => p.rssKB),
    afterGc: {
      baseKB: summarize(runs.map((r) => r.base.gc.rssKB)),
      addedKBPerChild: perChild(runs, (p) => p.gc.rssKB),
      addedHeapKBPerChild: perChild(runs, (p) => p.gc.heapUsedKB)
    },
    spawnAllMs: summarize(runs.map((r) => r.loaded.spawnAllMs)),
    cancelMs: summarize(runs.map((r) => r.loaded.cancelMs)),
    runs
  }]))
  const spawn = await subSpawn()
  const stream = await subStream()
  return { children: SUB_CHILDREN, memory, spawn, stream }
}

// ── figures ───────────────────────────────────────────────────────────────────────────────
const figures = []
/**
 * target: { kind: "ratio<=" | "ratio>=" | "<" | "over<=", value, text } — the value compared is
 * the ratio for ratio targets, the median for absolute ones, and for "over<=" what is added
 * (`added`: measured pair by pair, when the figure has it; else the median minus the baseline's).
 */
const addFigure = (f) => {
  const ratio = f.ratio !== undefined ? f.ratio : f.median != null && f.baseline?.median ? round(f.median / f.baseline.median) : null
  let met = null
  if (f.target != null && f.median != null) {
    if (f.target.kind === "ratio<=") met = ratio !== null && ratio <= f.target.value
    else if (f.target.kind === "ratio>=") met = ratio !== null && ratio >= f.target.value
    else if (f.target.kind === "<") met = f.median < f.target.value
    else if (f.target.kind === "over<=") met = f.added != null ? f.added <= f.target.value : f.baseline?.median != null && f.median - f.baseline.median <= f.target.value
  }
  figures.push({ ...f, ratio, target: f.target ?? null, met })
}

const missing = (group, id, label, unit, target, note) =>
  addFigure({ group, id, label, unit, subject: "Skein", median: null, p90: null, baseline: null, target, note })

const buildFigures = (r) => {
  if (r.cold) {
    const c = r.cold
    const floor = (m) => ({ name: NAMES.floor, median: c.floor[m].median, p90: c.floor[m].p90 })
    const sdk = (m) => ({ name: NAMES.sdk, median: c.sdk[m].median, p90: c.sdk[m].p90 })
    const target = { kind: "ratio<=", value: TARGETS.coldStart, text: `≤ ${TARGETS.coldStart}× floor` }
    addFigure({ group: "cold start", id: "cold.initialize", label: "spawn → `initialize` response", unit: "ms", subject: "Skein", ...c.skein.initialize, baseline: floor("initialize"), target })
    addFigure({ group: "cold start", id: "cold.ready", label: "spawn → `session/new` response", unit: "ms", subject: "Skein", ...c.skein.ready, baseline: floor("ready"), target })
    if (c.skein.readyCpu && c.floor.readyCpu) {
      addFigure({ group: "cold start", id: "cold.ready.cpu", label: "main-thread CPU to `session/new` response", unit: "ms", subject: "Skein", ...c.skein.readyCpu, baseline: { name: NAMES.floor, median: c.floor.readyCpu.median, p90: c.floor.readyCpu.p90 }, note: "on-CPU time of the agent's main thread (/proc/<pid>/schedstat): hardly affected by a busy machine" })
    }
    const nocache = c["skein-nocache"]
    addFigure({ group: "cold start", id: "cold.initialize.nocache", label: "spawn → `initialize`, without the code cache (first start)", unit: "ms", subject: "Skein", ...nocache.initialize, baseline: floor("initialize"), note: "SKEIN_NO_CODE_CACHE=1: what the first start after an install or upgrade costs, before its exit writes the cache" })
    const prev = c["skein-prev"]
    if (prev !== undefined) {
      const was = (m) => ({ name: NAMES["skein-prev"], median: prev[m].median, p90: prev[m].p90 })
      addFigure({ group: "cold start", id: "cold.initialize.previous", label: "spawn → `initialize` (vs the previous commit)", unit: "ms", subject: "Skein", ...c.skein.initialize, baseline: was("initialize") })
      addFigure({ group: "cold start", id: "cold.ready.previous", label: "spawn → `session/new` (vs the previous commit)", unit: "ms", subject: "Skein", ...c.skein.ready, baseline: was("ready") })
      if (c.skein.readyCpu && prev.readyCpu) {
        addFigure({ group: "cold start", id: "cold.ready.cpu.previous", label: "main-thread CPU to `session/new` (vs the previous commit)", unit: "ms", subject: "Skein", ...c.skein.readyCpu, baseline: was("readyCpu") })
      }
    }
    addFigure({ group: "cold start", id: "cold.initialize.sdk", label: "spawn → `initialize` (vs SDK agent)", unit: "ms", subject: "Skein", ...c.skein.initialize, baseline: sdk("initialize") })
    addFigure({ group: "cold start", id: "cold.ready.sdk", label: "spawn → `session/new` (vs SDK agent)", unit: "ms", subject: "Skein", ...c.skein.ready, baseline: sdk("ready") })
  }
  if (r.chunk) {
    const c = r.chunk
    addFigure({ group: "first chunk", id: "chunk.first", label: "prompt → first `agent_message_chunk`", unit: "ms", subject: "Skein", ...c.skein, baseline: { name: NAMES.sdk, median: c.sdk.median, p90: c.sdk.p90 } })
    addFigure({ group: "first chunk", id: "chunk.first.floor", label: "prompt → first chunk (vs floor)", unit: "ms", subject: "Skein", ...c.skein, baseline: { name: NAMES.floor, median: c.floor.median, p90: c.floor.p90 } })
  }
  if (r.prompt) {
    const p = r.prompt
    const relay = (pause) => ({ name: NAMES.relay, median: p[pause].relay.median, p90: p[pause].relay.p90 })
    addFigure({
      group: "first prompt",
      id: "prompt.first",
      label: `fresh process over HTTP, prompt ${PAUSE_MS} ms after \`session/new\` → first chunk`,
      unit: "ms",
      subject: "Skein",
      ...p[PAUSE_MS].skein,
      baseline: relay(PAUSE_MS),
      target: { kind: "ratio<=", value: TARGETS.firstPrompt, text: `≤ ${TARGETS.firstPrompt}× relay` },
      note: "an editor: the user types the first prompt after the session opens"
    })
    if (p[0] !== undefined && PAUSE_MS !== 0) {
      addFigure({
        group: "first prompt",
        id: "prompt.first.immediate",
        label: "fresh process over HTTP, prompt right after `session/new` → first chunk",
        unit: "ms",
        subject: "Skein",
        ...p[0].skein,
        baseline: relay(0),
        note: "a script that prompts at once: nothing is idle before the prompt"
      })
    }
    addFigure({
      group: "first prompt",
      id: "prompt.ready",
      label: "spawn → `session/new` response, with the HTTP provider",
      unit: "ms",
      subject: "Skein",
      ...p.ready.skein,
      baseline: { name: NAMES.relay, median: p.ready.relay.median, p90: p.ready.relay.p90 },
      note: "the warm-up must not delay it: it starts after this answer"
    })
    addFigure({
      group: "first prompt",
      id: "prompt.second",
      label: "the second prompt of the process over HTTP, as soon as the first is answered → first chunk",
      unit: "ms",
      subject: "Skein",
      ...p.second.skein,
      baseline: { name: `${NAMES.relay}, its second prompt`, median: p.second.relay.median, p90: p.second.relay.p90 },
      note: "a warm process: what each prompt costs once everything is loaded"
    })
    addFigure({
      group: "first prompt",
      id: "prompt.idleRss",
      label: `RSS idle ${PAUSE_MS} ms after \`session/new\`, with the HTTP provider (its warm-up done)`,
      unit: "KB",
      subject: "Skein",
      ...p.idleKB.skein,
      baseline: { name: `${NAMES.relay}, idle`, median: p.idleKB.relay.median, p90: p.idleKB.relay.p90 },
      note: "the warm-up loads Node's HTTP client before the first prompt, on purpose; the relay loads its fetch (undici) at its first prompt"
    })
  }
  if (r.throughput) {
    const t = r.throughput
    addFigure({
      group: "throughput",
      id: "throughput.updates",
      label: `${DELTAS.toLocaleString("en")} text deltas → deltas delivered/s`,
      unit: "deltas/s",
      higherIsBetter: true,
      subject: "Skein",
      median: t.skein.median,
      p90: t.skein.p90,
      samples: t.skein.samples,
      baseline: { name: NAMES.sdk, median: t.sdk.median, p90: t.sdk.p90 },
      target: { kind: "ratio>=", value: TARGETS.throughput, text: `≥ ${TARGETS.throughput}× SDK agent` },
      note: `session/update messages per turn: Skein ${t.skein.updatesPerTurn.join(", ")} (deltas its reader had not taken yet are merged), SDK agent ${t.sdk.updatesPerTurn.join(", ")}`
    })
    if (t.skein.cpuMsPerTurn && t.sdk.cpuMsPerTurn) {
      addFigure({
        group: "throughput",
        id: "throughput.cpu",
        label: `agent CPU per turn of ${DELTAS.toLocaleString("en")} deltas`,
        unit: "ms",
        subject: "Skein",
        ...t.skein.cpuMsPerTurn,
        baseline: { name: NAMES.sdk, median: t.sdk.cpuMsPerTurn.median, p90: t.sdk.cpuMsPerTurn.p90 },
        note: "user + system time of the agent process (/proc/<pid>/stat, 10 ms ticks)"
      })
    }
    addFigure({
      group: "throughput",
      id: "throughput.updates.floor",
      label: "deltas delivered/s (vs floor: the reader's ceiling)",
      unit: "deltas/s",
      higherIsBetter: true,
      subject: "Skein",
      median: t.skein.median,
      p90: t.skein.p90,
      baseline: { name: NAMES.floor, median: t.floor.median, p90: t.floor.p90 }
    })
  }
  if (r.memory) {
    const m = r.memory
    addFigure({ group: "memory", id: "memory.idle", label: "RSS idle (after `initialize`)", unit: "KB", subject: "Skein", ...m.idleKB.skein, baseline: { name: NAMES.floor, median: m.idleKB.floor.median, p90: m.idleKB.floor.p90 } })
    addFigure({ group: "memory", id: "memory.idle.sdk", label: "RSS idle (vs SDK agent)", unit: "KB", subject: "Skein", ...m.idleKB.skein, baseline: { name: NAMES.sdk, median: m.idleKB.sdk.median, p90: m.idleKB.sdk.p90 } })
    if (m.sessionIdleKB !== undefined) {
      const session = (id) => ({ median: m.sessionIdleKB[id].median, p90: m.sessionIdleKB[id].p90 })
      addFigure({
        group: "memory",
        id: "memory.session",
        label: "RSS idle after the first `session/new`",
        unit: "KB",
        subject: "Skein",
        ...session("skein"),
        baseline: { name: NAMES.floor, ...session("floor") },
        target: { kind: "ratio<=", value: TARGETS.idleRss, text: `≤ ${TARGETS.idleRss}× floor` },
        note: "the scripted provider: nothing to warm"
      })
      if (m.sessionIdleKB["skein-prev"] !== undefined) {
        addFigure({ group: "memory", id: "memory.session.previous", label: "RSS idle after the first `session/new` (vs the previous commit)", unit: "KB", subject: "Skein", ...session("skein"), baseline: { name: NAMES["skein-prev"], ...session("skein-prev") } })
      }
    }
    for (const n of MEM_COUNTS) {
      const s = m.sessions[n]
      addFigure({
        group: "memory",
        id: `memory.perSession.${n}`,
        label: `added RSS per session, ${n.toLocaleString("en")} live (ratio: RSS ÷ idle RSS)`,
        unit: "KB",
        subject: "Skein",
        ...s.addedKBPerSession,
        // The baseline is Skein idle; the ratio is the RSS with n sessions over the idle RSS.
        baseline: { name: "Skein idle RSS", median: m.idleKB.skein.median, p90: m.idleKB.skein.p90 },
        ratio: round(s.rssKB.median / m.idleKB.skein.median),
        ratioNote: `RSS with ${n} sessions ÷ idle RSS`,
        target: { kind: "<", value: TARGETS.sessionKB, text: "< 1 MB" },
        afterGc: s.afterGc
      })
    }
  }
  if (r.sessions) {
    const { skein, floor } = r.sessions
    const fl = floor.value
    const sk = skein.value
    const stat = (v, samples) => (samples?.length ? summarize(samples) : { median: v ?? null, p90: null })
    const listTarget = { kind: "<", value: TARGETS.listMs, text: `< ${TARGETS.listMs} ms` }
    const loadTarget = { kind: "<", value: TARGETS.loadMs, text: "< 1 s" }
    const base = (v, samples) => (fl ? { name: NAMES.floor, ...stat(v, samples) } : null)
    const note = skein.missing ? `hook: ${skein.file} is missing` : skein.error ? `error: ${skein.error}` : undefined
    if (sk) {
      const n = sk.list?.sessions ?? 1000
      const e = sk.load?.events ?? 100_000
      addFigure({ group: "sessions", id: "sessions.list.first", label: `\`session/list\`, first page of ${n.toLocaleString("en")}`, unit: "ms", subject: "Skein", ...stat(sk.list?.firstPageMs, sk.list?.samples?.firstPageMs), baseline: base(fl?.list.firstPageMs, fl?.list.samples?.firstPageMs), target: listTarget })
      addFigure({ group: "sessions", id: "sessions.list.cwd", label: "`session/list`, first page, `cwd` filter", unit: "ms", subject: "Skein", ...stat(sk.list?.cwdFilterFirstPageMs, sk.list?.samples?.cwdFilterFirstPageMs), baseline: base(fl?.list.cwdFilterFirstPageMs), target: listTarget })
      addFigure({ group: "sessions", id: "sessions.list.all", label: `\`session/list\`, every page (${Math.ceil(n / 50)})`, unit: "ms", subject: "Skein", ...stat(sk.list?.allPagesMs, sk.list?.samples?.allPagesMs), baseline: base(fl?.list.allPagesMs, fl?.list.samples?.allPagesMs) })
      addFigure({ group: "sessions", id: "sessions.load", label: `\`session/load\`, ${e.toLocaleString("en")} events`, unit: "ms", subject: "Skein", ...stat(sk.load?.loadMs, sk.load?.samples?.loadMs), baseline: base(fl?.load.loadMs, fl?.load.samples?.loadMs), target: loadTarget, replayedUpdates: sk.load?.replayedUpdates })
    } else {
      missing("sessions", "sessions.list.first", "`session/list`, first page of 1,000", "ms", listTarget, note)
      missing("sessions", "sessions.load", "`session/load`, 100,000 events", "ms", loadTarget, note)
    }
    if (floor.error || floor.missing) figures[figures.length - 1].note = `floor: ${floor.error ?? "missing"}`
  }
  if (r.log) {
    const l = r.log.value
    if (l) {
      const base = { name: "plain `writeSync` per line", ...summarize(l.floor.samples, true) }
      addFigure({ group: "log append", id: "log.writer", label: `log writer, ${l.events.toLocaleString("en")} appends, 1 fsync`, unit: "events/s", higherIsBetter: true, subject: "Skein", ...summarize(l.writer.samples, true), baseline: base })
      addFigure({ group: "log append", id: "log.runtime", label: `session turn, ${l.runtimeEvents.toLocaleString("en")} canonical events`, unit: "events/s", higherIsBetter: true, subject: "Skein", ...summarize(l.runtime.samples, true), baseline: base })
      addFigure({ group: "log append", id: "log.appendFileSync", label: "log writer (vs `appendFileSync` per line)", unit: "events/s", higherIsBetter: true, subject: "Skein", ...summarize(l.writer.samples, true), baseline: { name: "`appendFileSync` per line", ...summarize(l.appendFileSync.samples, true) } })
    } else {
      missing("log append", "log.writer", "log writer", "events/s", null, r.log.error ?? "scripts/bench-log.mjs is missing")
    }
  }
}

const remoteFigures = (r) => {
  const v = r.value
  if (!v) return missing("remote", "remote.throughput", "turn over a unix socket", "deltas/s", null, r.error ?? "scripts/bench-remote.mjs is missing")
  const stat = (samples, higherIsBetter = false) => summarize(samples, higherIsBetter)
  const t = v.turn
  addFigure({
    group: "remote",
    id: "remote.throughput",
    label: `a turn of ${t.deltas.toLocaleString("en")} deltas over a unix socket (\`Skein.remote\`)`,
    unit: "deltas/s",
    higherIsBetter: true,
    subject: "Skein",
    ...stat(t.unix.samples.deltasPerSecond, true),
    baseline: { name: "in process (`Skein.layer`)", ...stat(t.inProcess.samples.deltasPerSecond, true) }
  })
  addFigure({
    group: "remote",
    id: "remote.lag",
    label: `time from an update's emission to its arrival, over a unix socket (${t.paced} paced deltas)`,
    unit: "ms",
    subject: "Skein",
    ...stat(t.unix.samples.meanLagMs),
    baseline: { name: "in process", ...stat(t.inProcess.samples.meanLagMs) }
  })
  const c = v.clients
  addFigure({
    group: "remote",
    id: "remote.client",
    label: `server memory per connected remote client (${c.clients}, each following a session)`,
    unit: "KB",
    subject: "Skein",
    median: round(c.perClientKB, 1),
    p90: null,
    baseline: { name: "server RSS with no client", median: c.idleKB, p90: null },
    ratio: round(c.connectedKB / c.idleKB),
    ratioNote: `RSS with ${c.clients} clients ÷ RSS with none`
  })
  const b = v.backpressure
  addFigure({
    group: "remote",
    id: "remote.stall",
    label: `peak RSS, a client that reads nothing for ${b.stallMs / 1000} s of a ${(b.deltas * b.deltaChars / 1e6).toLocaleString("en")} MB, ${b.deltas.toLocaleString("en")}-delta turn`,
    unit: "KB",
    subject: "Skein",
    median: b.stalling.peakKB,
    p90: null,
    baseline: { name: "the same turn read at once", median: b.reading.peakKB, p90: null },
    note: `RSS before the prompt ${b.stalling.beforeKB} KB, at the end of the stall ${b.stalling.stalledKB} KB; the turn then ended ${b.stalling.stopReason}`
  })
}

const compactionBench = async () => {
  section("compaction: scripts/bench-compaction.mjs (a 100,000-event session: load, then /compact)")
  return runScript("bench-compaction.mjs", ["--runs", "3"])
}

const stopsBench = async () => {
  section("stops: scripts/bench-stops.mjs (session/cancel mid-model-call, SIGTERM mid-command; a fresh skein acp each)")
  return runScript("bench-stops.mjs", ["--runs", "5"])
}

const clusterBench = async () => {
  section("cluster: scripts/bench-cluster.mjs (two runners of skein serve --cluster on a throwaway PostgreSQL server)")
  return runScript("bench-cluster.mjs", ["--runs", "5"])
}

const sandboxBench = async () => {
  section("sandbox: scripts/bench-sandbox.mjs (the bash tool: `true` and `git status`, sandboxed and not, interleaved)")
  return runScript("bench-sandbox.mjs", ["--runs", "100", "--warm", "10"])
}

const sandboxFigures = (r) => {
  const v = r.value
  const target = { kind: "over<=", value: TARGETS.sandboxAddedMs, text: `≤ unsandboxed + ${TARGETS.sandboxAddedMs} ms` }
  if (!v || v.skipped) return missing("sandbox", "sandbox.true", "`true` through the bash tool, sandboxed", "ms", target, r.error ?? v?.skipped ?? "scripts/bench-sandbox.mjs is missing")
  for (const [key, id, what] of [["true", "sandbox.true", "`true`"], ["gitStatus", "sandbox.git", "`git status` in a repository of 200 files"]]) {
    const sandboxed = summarize(v[key].sandboxed)
    const plain = summarize(v[key].plain)
    const a = v[key].added
    if (a) section(`sandbox: ${what}: added ${round(a.median)} ms, the median of ${v[key].plain.length} paired differences (90% interval ${round(a.low)}–${round(a.high)} ms)`)
    addFigure({
      group: "sandbox",
      id,
      label: `${what} through the bash tool, sandboxed (call → result)`,
      unit: "ms",
      subject: "Skein",
      ...sandboxed,
      baseline: { name: "the same, unsandboxed", ...plain },
      target,
      ...(v[key].added ? { added: round(v[key].added.median) } : {}),
      note: v[key].added
        ? `added: ${round(v[key].added.median)} ms, the median of ${v[key].plain.length} paired differences (90% interval ${round(v[key].added.low)}–${round(v[key].added.high)} ms); medians apart: ${round(sandboxed.median - plain.median)} ms`
        : `added: ${round(sandboxed.median - plain.median)} ms at the median, ${round(sandboxed.p90 - plain.p90)} ms at p90`
    })
    const cpu = v[key].cpu
    if (cpu) {
      section(`sandbox: ${what}: Skein's own CPU added ${round(cpu.added.median)} ms (90% interval ${round(cpu.added.low)}–${round(cpu.added.high)} ms)`)
      addFigure({
        group: "sandbox",
        id: `${id}.cpu`,
        label: `${what} through the bash tool, sandboxed: Skein's own CPU per call`,
        unit: "ms",
        subject: "Skein",
        ...summarize(cpu.sandboxed),
        baseline: { name: "the same, unsandboxed", ...summarize(cpu.plain) },
        added: round(cpu.added.median),
        note: `this process's CPU time (user + system) in each call, not its children's: what Skein itself adds (${round(cpu.added.median)} ms, the median of the paired differences, 90% interval ${round(cpu.added.low)}–${round(cpu.added.high)} ms), hardly moved by a busy machine`
      })
    }
  }
}

const telemetryBench = async () => {
  section("telemetry: scripts/bench-telemetry.mjs (OpenTelemetry off against on, to a local OTLP/HTTP receiver)")
  return runScript("bench-telemetry.mjs", ["--runs", String(RUNS), "--turns", "20"])
}

const telemetryFigures = (r) => {
  const v = r.value
  if (!v) return missing("telemetry", "telemetry.cold", "cold start with telemetry off", "ms", null, r.error ?? "scripts/bench-telemetry.mjs is missing")
  for (const [key, label] of [["initialize", "`initialize`"], ["ready", "ready (`initialize` + `session/new`)"]]) {
    addFigure({
      group: "telemetry",
      id: `telemetry.cold.${key}`,
      label: `cold start to ${label}, telemetry on (exporting to a local receiver)`,
      unit: "ms",
      subject: "Skein",
      ...summarize(v.cold.on[key]),
      baseline: { name: "telemetry off (no OTEL_* variable: the exporter is not loaded)", ...summarize(v.cold.off[key]) }
    })
  }
  addFigure({
    group: "telemetry",
    id: "telemetry.turn",
    label: "a turn (a tool call, then 200 deltas), telemetry on",
    unit: "ms",
    subject: "Skein",
    ...summarize(v.turn.on.samples),
    baseline: { name: "telemetry off", ...summarize(v.turn.off.samples) },
    note: `${v.exported.spans} spans exported in ${v.exported.requests} requests`
  })
}

const monitorBench = async () => {
  section("monitor: scripts/bench-monitor.mjs (skein serve --web in headless Chromium)")
  return runScript("bench-monitor.mjs", ["--runs", "3"])
}

const monitorFigures = (r) => {
  const v = r.value
  if (!v || v.skipped) return missing("monitor", "monitor.turn", "a 100,000-delta turn with its page open", "ms", null, r.error ?? v?.skipped ?? "scripts/bench-monitor.mjs is missing")
  addFigure({
    group: "monitor",
    id: "monitor.turn",
    label: `a turn of ${v.deltas.toLocaleString("en")} deltas with its page open in the monitor`,
    unit: "ms",
    subject: "Skein",
    ...summarize(v.turn.withPage),
    baseline: { name: "the same turn, no page open", ...summarize(v.turn.withoutPage) },
    note: `the page's longest main-thread stall meanwhile: ${round(v.turn.stallMs, 1)} ms; its JS heap after: ${v.turn.heapBytes === null ? "n/a" : `${round(v.turn.heapBytes / 1e6, 1)} MB`}`
  })
  addFigure({
    group: "monitor",
    id: "monitor.sessions",
    label: `the overview of ${v.sessions.count} live sessions: navigation → every row shown`,
    unit: "ms",
    subject: "Skein",
    median: round(v.sessions.overviewMs, 1),
    p90: null,
    note: `then one turn in each at once (${round(v.sessions.burstMs, 0)} ms): the page's longest stall ${round(v.sessions.burstStallMs, 1)} ms`
  })
}

const checkpointBench = async () => {
  section("checkpoint: scripts/bench-checkpoint.mjs (10,000 files: a first checkpoint and one after 10 changes, against git stash)")
  // The first checkpoint of 10,000 files takes seconds on a busy machine: more time than the other scripts get.
  return runScript("bench-checkpoint.mjs", ["--runs", "3"], 900_000)
}

const checkpointFigures = (r) => {
  const v = r.value
  const target = { kind: "ratio<=", value: TARGETS.checkpoint, text: `≤ ${TARGETS.checkpoint}× git stash` }
  if (!v || v.skipped) return missing("checkpoint", "checkpoint.first.ms", "a first checkpoint of 10,000 files", "ms", target, r.error ?? v?.skipped ?? "scripts/bench-checkpoint.mjs is missing")
  const rows = [
    ["first", "ms", `a first checkpoint of ${v.files} files (time)`, "git stash -u of them (all untracked)"],
    ["first", "bytes", `a first checkpoint of ${v.files} files (disk, its index included)`, "git stash -u of them (what .git grew by)"],
    ["second", "ms", `a checkpoint after ${v.changed} of them changed (time)`, "git stash of the 10 changes (the files committed)"],
    ["second", "bytes", `a checkpoint after ${v.changed} of them changed (disk added)`, "git stash of the 10 changes (what .git grew by)"]
  ]
  for (const [which, unit, label, baseline] of rows) {
    const value = (side) => v[which].map((run) => (unit === "ms" ? run[side].ms : run[side].bytes / 1024))
    addFigure({
      group: "checkpoint",
      id: `checkpoint.${which}.${unit}`,
      label,
      unit: unit === "ms" ? "ms" : "KB",
      subject: "Skein",
      ...summarize(value("skein")),
      baseline: { name: baseline, ...summarize(value("stash")) },
      target
    })
  }
}

const clusterFigures = (r) => {
  const v = r.value
  if (!v || v.skipped) return missing("cluster", "cluster.lag", "a turn through another runner", "ms", null, r.error ?? v?.skipped ?? "scripts/bench-cluster.mjs is missing")
  const t = v.turn
  addFigure({
    group: "cluster",
    id: "cluster.lag",
    label: `a turn through another runner than the session's: time from an update's emission to its arrival (${t.paced} paced deltas)`,
    unit: "ms",
    subject: "Skein",
    ...summarize(t.remote.samples.meanLagMs),
    baseline: { name: "through the session's own runner", ...summarize(t.local.samples.meanLagMs) },
    note: `added per update: ${round(t.remote.meanLagMs - t.local.meanLagMs, 2)} ms`
  })
  addFigure({
    group: "cluster",
    id: "cluster.throughput",
    label: `a turn of ${t.deltas.toLocaleString("en")} deltas through another runner than the session's`,
    unit: "deltas/s",
    higherIsBetter: true,
    subject: "Skein",
    ...summarize(t.remote.samples.deltasPerSecond, true),
    baseline: { name: "through the session's own runner", ...summarize(t.local.samples.deltasPerSecond, true) }
  })
  const c = v.creation
  addFigure({
    group: "cluster",
    id: "cluster.creation",
    label: `sessions created per second, ${c.clients} programs at once, across two runners`,
    unit: "sessions/s",
    higherIsBetter: true,
    subject: "Skein",
    ...summarize(c.cluster.samples, true),
    baseline: { name: "one `skein serve --store` on the same database", ...summarize(c.store.samples, true) }
  })
  addFigure({
    group: "cluster",
    id: "cluster.failover",
    label: "failover: kill -9 of the runner holding a session mid-turn → the client's `turn_end` (cancelled) through another runner",
    unit: "ms",
    subject: "Skein",
    ...summarize(v.failover.samples),
    baseline: { name: "the shard-lock expiry it waits for", median: v.failover.lockExpiryMs, p90: null }
  })
}

const stopsFigures = (r) => {
  const v = r.value
  const cancelTarget = { kind: "<", value: TARGETS.cancelMs, text: `< ${TARGETS.cancelMs} ms` }
  const shutdownTarget = { kind: "<", value: TARGETS.shutdownMs, text: `< ${TARGETS.shutdownMs} ms` }
  if (!v) {
    const note = r.error ?? "scripts/bench-stops.mjs is missing"
    missing("stops", "stops.cancel", "`session/cancel` mid-model-call → the prompt answers `cancelled`", "ms", cancelTarget, note)
    return missing("stops", "stops.shutdown", "SIGTERM mid-command → exited 0", "ms", shutdownTarget, note)
  }
  addFigure({
    group: "stops",
    id: "stops.cancel",
    label: "`session/cancel` mid-model-call → the prompt answers `cancelled`",
    unit: "ms",
    subject: "Skein",
    ...summarize(v.samples.cancelMs),
    baseline: { name: "a prompt of a turn that answers at once", ...summarize(v.samples.promptMs) },
    target: cancelTarget,
    note: "the model call it cuts short would last ten minutes (the tests assert that it stops, this how soon)"
  })
  addFigure({
    group: "stops",
    id: "stops.shutdown",
    label: "SIGTERM mid-command → exited 0 (the command's group killed, the log synced)",
    unit: "ms",
    subject: "Skein",
    ...summarize(v.samples.shutdownMs),
    baseline: { name: "SIGTERM to an idle `skein acp`", ...summarize(v.samples.idleShutdownMs) },
    target: shutdownTarget,
    note: "the command (and one it left in the background) would run ten minutes"
  })
}

const compactionFigures = (r) => {
  const v = r.value
  if (!v) return missing("compaction", "compaction.time", "`/compact` of a 100,000-event session", "ms", null, r.error ?? "scripts/bench-compaction.mjs is missing")
  addFigure({
    group: "compaction",
    id: "compaction.time",
    label: `\`/compact\` of a ${v.events.toLocaleString("en")}-event session (${v.turns.toLocaleString("en")} turns), prompt → outcome`,
    unit: "ms",
    subject: "Skein",
    ...summarize(v.samples.compactMs),
    baseline: { name: "loading the same session (`runtime.loadSession`)", ...summarize(v.samples.loadMs) },
    note: `the summary request sent ${Math.round(v.summaryRequestChars / 1000).toLocaleString("en")} thousand characters of the conversation (its newest part within 60% of the window)`
  })
  addFigure({
    group: "compaction",
    id: "compaction.input",
    label: "the model's input (estimated tokens) after the compaction",
    unit: "tokens",
    subject: "Skein",
    median: v.usageAfter,
    p90: v.usageAfter,
    baseline: { name: "before it", median: v.usageBefore, p90: v.usageBefore }
  })
}

const subagentsFigures = (v) => {
  const n = v.children
  const base = (name, s) => ({ name, median: s.median, p90: s.p90 })
  const references = "for reference (published elsewhere, not measured here): Pixir +6.5 MB per child, claude-agent-acp +183 MB per session"
  for (const [scenario, what] of [["idle", `${n} idle (each answered, \`wait_agent\` returned)`], ["busy", `${n} mid-turn (each inside its model call)`]]) {
    const m = v.memory[scenario]
    addFigure({
      group: "subagents",
      id: `subagents.memory.${scenario}`,
      label: `added RSS per child, ${what} (ratio: RSS ÷ RSS with no child)`,
      unit: "KB",
      subject: "Skein",
      ...m.addedKBPerChild,
      baseline: base("Skein RSS, the parent mid-turn, no child", m.baseKB),
      ratio: round(m.loadedKB.median / m.baseKB.median),
      ratioNote: `RSS with ${n} children ÷ RSS with none, the same process and parent state`,
      target: { kind: "<", value: TARGETS.childKB, text: "< 0.5 MB" },
      afterGc: m.afterGc,
      note: `after a forced GC ${fmt(m.afterGc.addedKBPerChild.median, "KB")} per child, of which JS heap ${fmt(m.afterGc.addedHeapKBPerChild.median, "KB")}; ${references}`
    })
  }
  const sp = v.spawn
  addFigure({
    group: "subagents",
    id: "subagents.spawn.first",
    label: "`spawn_agent` call → the child's first `agent_message_chunk`",
    unit: "ms",
    subject: "Skein",
    ...sp.childFirst,
    baseline: base("`session/new` + a prompt → its first chunk", sp.newSessionFirst),
    target: { kind: "<", value: TARGETS.childStartMs, text: `< ${TARGETS.childStartMs} ms` },
    note: "the parent's spawn_agent tool_call line read → the child's first chunk read; the baseline: session/new written → the first chunk of a prompt written on its response, a new top-level session in the same process"
  })
  addFigure({
    group: "subagents",
    id: "subagents.spawn.announced",
    label: "`spawn_agent` call → the child announced (`subagent_update`)",
    unit: "ms",
    subject: "Skein",
    ...sp.announced,
    baseline: base("`session/new` → its response", sp.newSession)
  })
  const st = v.stream
  const streaming = `${n} children streaming at once (${SUB_DELTAS} deltas each, one every ${SUB_EVERY_MS} ms)`
  const lagNote = "lag: the line of a delta read by the client minus the time the model server wrote it (the delta's own text), one clock"
  addFigure({
    group: "subagents",
    id: "subagents.stream.p50",
    label: `${streaming}: update lag p50, model server → client`,
    unit: "ms",
    subject: "Skein",
    ...st.many.p50,
    baseline: base("one child streaming alone", st.one.p50),
    note: lagNote
  })
  addFigure({
    group: "subagents",
    id: "subagents.stream.p99",
    label: `${streaming}: the worst child's p99 lag`,
    unit: "ms",
    subject: "Skein",
    ...st.many.worstChildP99,
    baseline: base("one child streaming alone, its p99", st.one.worstChildP99),
    target: { kind: "over<=", value: TARGETS.childLagMs, text: `≤ lone child + ${TARGETS.childLagMs} ms` },
    note: `without the first and last tenth of each stream, the p99 of every child's deltas is ${fmt(st.many.steadyP99.median, "ms")} (one child alone: ${fmt(st.one.steadyP99.median, "ms")})`
  })
  addFigure({
    group: "subagents",
    id: "subagents.stream.max",
    label: `${streaming}: the largest lag of any delta`,
    unit: "ms",
    subject: "Skein",
    ...st.many.max,
    baseline: base("one child streaming alone", st.one.max),
    note: `the longest gap between two deltas of one stream beyond the ${SUB_EVERY_MS} ms pace: ${fmt(st.many.maxStall.median, "ms")} (one child alone: ${fmt(st.one.maxStall.median, "ms")})`
  })
  addFigure({
    group: "subagents",
    id: "subagents.stream.sessions",
    label: `${streaming}: update lag p50 (vs as many top-level sessions)`,
    unit: "ms",
    subject: "Skein",
    ...st.many.p50,
    baseline: base(`${n} top-level sessions streaming the same at once`, st.manyDirect.p50),
    note: `the worst session's p99: ${fmt(st.many.worstChildP99.median, "ms")} for children, ${fmt(st.manyDirect.worstChildP99.median, "ms")} for top-level sessions; agent CPU per round ${fmt(st.many.cpuMs?.median, "ms")} and ${fmt(st.manyDirect.cpuMs?.median, "ms")} (the children's includes spawning them)`
  })
  addFigure({
    group: "subagents",
    id: "subagents.stream.child",
    label: "one child streaming: update lag p50",
    unit: "ms",
    subject: "Skein",
    ...st.one.p50,
    baseline: base("a top-level session streaming the same", st.direct.p50)
  })
}

// ── output ────────────────────────────────────────────────────────────────────────────────
const fmt = (x, unit) => {
  if (x === null || x === undefined) return "—"
  switch (unit) {
    case "ms":
      return `${x < 10 ? x.toFixed(2) : x.toFixed(1)} ms`
    case "KB":
      return x >= 10_000 ? `${(x / 1024).toFixed(1)} MB` : `${Math.round(x)} KB`
    case "updates/s":
    case "deltas/s":
    case "events/s":
      return `${Math.round(x).toLocaleString("en")}/s`
    default:
      return String(x)
  }
}
const cell = (median, p90, unit) => (median === null || median === undefined ? "—" : `${fmt(median, unit)}${p90 == null ? "" : ` (p90 ${fmt(p90, unit)})`}`)

const tableOf = (figs) => {
  const header = ["figure", "Skein", "baseline", "ratio", "target", "met?"]
  const rows = figs.map((f) => [
    `${f.group}: ${f.label}`,
    f.median === null ? `not measured${f.note ? ` (${f.note.split("\n")[0]})` : ""}` : cell(f.median, f.p90, f.unit),
    f.baseline ? `${cell(f.baseline.median, f.baseline.p90, f.unit)}, ${f.baseline.name}` : "—",
    f.ratio === null || f.ratio === undefined ? "—" : `${f.ratio.toFixed(2)}×`,
    f.target ? f.target.text : "—",
    f.met === null ? (f.target ? "**not measured**" : "—") : f.met ? "yes" : "**no**"
  ])
  return [
    `| ${header.join(" | ")} |`,
    `| ${header.map((_, i) => (i === 0 ? "---" : "---:")).join(" | ")} |`,
    ...rows.map((r) => `| ${r.join(" | ")} |`)
  ].join("\n")
}

const machineLine = (m, date) =>
  `${date.slice(0, 10)}, ${m.cpu}, ${m.cores} cores, ${m.memoryGB} GB, Node ${m.node}, ${m.platform}; 1-minute load average ${m.loadAverage.before} → ${m.loadAverage.after}.`

const README_START = "<!-- bench:results:start -->"
const README_END = "<!-- bench:results:end -->"

const updateReadme = (block) => {
  const file = join(root, "README.md")
  if (!existsSync(file)) return false
  const text = readFileSync(file, "utf8")
  const a = text.indexOf(README_START)
  const b = text.indexOf(README_END)
  if (a === -1 || b === -1 || b < a) return false
  writeFileSync(file, `${text.slice(0, a + README_START.length)}\n${block}\n${text.slice(b)}`)
  return true
}

/** The figure groups of each section, and where each section's raw results are kept. */
const GROUPS = { cold: ["cold start"], chunk: ["first chunk"], prompt: ["first prompt"], throughput: ["throughput"], memory: ["memory"], sessions: ["sessions"], log: ["log append"], remote: ["remote"], subagents: ["subagents"], compaction: ["compaction"], cluster: ["cluster"], stops: ["stops"], sandbox: ["sandbox"], telemetry: ["telemetry"], monitor: ["monitor"], checkpoint: ["checkpoint"] }
const RAW_KEYS = { memory: ["memory", "memoryRuns"] }
const sectionOf = (group) => SECTIONS.find((s) => GROUPS[s].includes(group)) ?? ""

/** results.md, the README block and the summary, from a results.json (a full run's, or one with sections merged in). */
const render = (json) => {
  const { machine, date, figures: figs } = json
  const busy = Math.max(machine.loadAverage.before, machine.loadAverage.after) > machine.cores
  const table = tableOf(figs)
  const missed = figs.filter((f) => f.met === false)
  const unmeasured = figs.filter((f) => f.target && f.met === null)
  const summary = [
    missed.length === 0 ? "Every measured target is met." : `Missed: ${missed.map((f) => `${f.group}: ${f.label} (${f.ratio !== null && f.target.kind.startsWith("ratio") ? `${f.ratio.toFixed(2)}×` : fmt(f.median, f.unit)}, target ${f.target.text})`).join("; ")}.`,
    ...(unmeasured.length ? [`Not measured: ${unmeasured.map((f) => `${f.group}: ${f.label}${f.note ? ` — ${f.note.split("\n")[0]}` : ""}`).join("; ")}.`] : [])
  ]
  const merged = Object.entries(json.merged ?? {})
  const mergedLine = merged.length === 0
    ? []
    : ["", `Measured later and merged in (\`npm run bench -- --only <section> --merge\`): ${merged.map(([s, m]) => `${s} on ${m.date.slice(0, 10)} (1-minute load average ${m.loadAverage.before} → ${m.loadAverage.after})`).join("; ")}; the rest on ${date.slice(0, 10)}.`]
  const mem = json.raw?.memory
  const counts = json.method?.memory?.counts ?? []
  const memoryNote = mem?.sessions && counts.every((n) => mem.sessions[n])
    ? `After a forced GC, the added RSS per session is ${counts.map((n) => `${fmt(mem.sessions[n].afterGc.addedKBPerSession.median, "KB")} (${n})`).join(" and ")}, of which JS heap ${counts.map((n) => `${fmt(mem.sessions[n].afterGc.addedHeapKBPerSession.median, "KB")}`).join(" and ")}.`
    : undefined
  const sub = json.raw?.subagents
  const subagentsNote = sub
    ? [
      `Subagents: each figure with ${sub.children} children shown natively (\`clientCapabilities.subagents\`); memory in a fresh process per run, the parent's turn blocked in a model call with no child, then (the next turn) with the children, after a settle; after a forced GC the added RSS per child is ${fmt(sub.memory.idle.afterGc.addedKBPerChild.median, "KB")} idle and ${fmt(sub.memory.busy.afterGc.addedKBPerChild.median, "KB")} mid-turn.`,
      `Spawning ${sub.children} children in one response (one after another) takes ${fmt(sub.memory.busy.spawnAllMs.median, "ms")} to the last one's first chunk, and cancelling the parent then ends the ${sub.children} in ${fmt(sub.memory.busy.cancelMs.median, "ms")}.`,
      `Streaming: on \`--provider openai-chat\` at a local server that writes each delta with the time it wrote it, each stream on its own timer (spread over one period), all starting ${SUB_FIRST_TOKEN_MS} ms after every stream of the round has asked (each response's headers sent at once); without the first and last tenth of each stream, the p99 lag is ${fmt(sub.stream.many.steadyP99.median, "ms")} for ${sub.children} children, ${fmt(sub.stream.manyDirect.steadyP99.median, "ms")} for ${sub.children} top-level sessions and ${fmt(sub.stream.one.steadyP99.median, "ms")} for one child alone.`,
      "References, not measured here: Pixir publishes +6.5 MB per child; claude-agent-acp was measured at +183 MB per session."
    ].join(" ")
    : undefined
  const m = json.method ?? {}
  const runs = [
    m.cold && `cold start ${m.cold.runs} (+${m.cold.warmup} warm-up)`,
    m.chunk && `first chunk ${m.chunk.prompts} prompts (+${m.chunk.warmup})`,
    m.prompt && `first prompt ${m.prompt.runs} per pause (+${m.prompt.warmup})`,
    m.throughput && `throughput ${m.throughput.turns} turns (+${m.throughput.warmupTurns})`,
    m.memory && `memory ${m.memory.runs}`,
    m.sessions && `sessions ${m.sessions.runs}`,
    m.log && "log 5",
    m.subagents && `subagents: memory ${m.subagents.memoryRuns} per scenario, spawn ${m.subagents.spawns} (+${m.subagents.spawnWarmup}), streaming ${m.subagents.streamRounds} rounds (+1)`
  ].filter(Boolean)
  const md = [
    "# Benchmarks",
    "",
    machineLine(machine, date),
    ...(busy ? ["", `**The machine was busy** (load average above its ${machine.cores} cores): absolute figures are inflated and noisy; the ratios, measured interleaved, hold better. Rerun on an idle machine for absolute numbers.`] : []),
    ...mergedLine,
    "",
    table,
    "",
    ...summary,
    "",
    "Medians; p90 is the 90th-percentile run on the slow side. Baselines run in the same `npm run bench`, interleaved with Skein:",
    "the plain-Node floor (`bench/floor.mjs`) answers with no library at all; the ACP SDK agent (`bench/sdk-agent.mjs`) is a minimal",
    "agent on `@agentclientprotocol/sdk` that relays deltas with awaited `notify` calls; the plain-Node relay (`bench/relay.mjs`) relays",
    "a local model server's stream with Node's built-in `fetch`, as the vendors' SDKs do (Skein's providers use `node:http`). How each figure is taken: `scripts/bench.mjs`.",
    "The CPU rows (main-thread on-CPU time from `/proc/<pid>/schedstat`, process CPU from `/proc/<pid>/stat`) have no target; they",
    "show the work done, which a busy machine hardly changes, where wall-clock figures also count the wait for a CPU.",
    `Runs: ${runs.join(", ")}.`,
    ...(m.previous ? ["", `The previous commit is ${m.previous.commit.slice(0, 10)} (${m.previous.subject}), built in the same run from the same dependencies (\`bench/previous.mjs\`) and measured interleaved with this one.`] : []),
    ...(memoryNote ? ["", memoryNote] : []),
    ...(subagentsNote ? ["", subagentsNote] : []),
    ""
  ].join("\n")
  const readme = [
    machineLine(machine, date) + (busy ? " The machine was busy: absolute figures are inflated." : "") + (mergedLine.length > 0 ? ` ${mergedLine[1]}` : ""),
    "",
    table,
    "",
    ...summary,
    "",
    "Produced by `npm run bench` from a clean build; method and notes in [bench/results.md](bench/results.md), every sample in `bench/results.json`."
  ].join("\n")
  return { md, readme }
}

// ── run ───────────────────────────────────────────────────────────────────────────────────
const main = async () => {
  const started = Date.now()
  const loadBefore = os.loadavg()[0]
  const full = only.length === SECTIONS.length
  const resultsFile = join(root, "bench", "results.json")
  if (values.merge && !full && !existsSync(resultsFile)) throw new Error("--merge: there are no recorded results (bench/results.json) to merge into; run every section once")
  process.stdout.write(`bench: node ${process.version}, sections ${only.join(", ")}\n`)
  const unwarmed = await warmCodeCache({ env })
  if (unwarmed !== undefined) throw new Error(`the code cache was not filled: ${unwarmed}`)
  if (PREVIOUS !== "none" && (only.includes("cold") || only.includes("memory"))) {
    section(`the previous commit: building ${PREVIOUS || "the merge-base with main"} (bench/previous.mjs)`)
    previous = await buildPrevious({ root, tmp, asked: PREVIOUS, env })
    NAMES["skein-prev"] = `the previous commit (${previous.short})`
    section(`  ${previous.short} ${previous.subject}`)
  }
  const results = {}
  if (only.includes("cold")) results.cold = await coldStart()
  if (only.includes("chunk")) results.chunk = await firstChunk()
  if (only.includes("prompt")) results.prompt = await firstPrompt()
  if (only.includes("throughput")) results.throughput = await throughput()
  if (only.includes("memory")) results.memory = await memory()
  if (only.includes("sessions")) results.sessions = await sessionsBench()
  if (only.includes("log")) results.log = await logBench()
  if (only.includes("remote")) results.remote = await remoteBench()
  if (only.includes("subagents")) results.subagents = await subagentsBench()
  if (only.includes("compaction")) results.compaction = await compactionBench()
  if (only.includes("cluster")) results.cluster = await clusterBench()
  if (only.includes("stops")) results.stops = await stopsBench()
  if (only.includes("sandbox")) results.sandbox = await sandboxBench()
  if (only.includes("telemetry")) results.telemetry = await telemetryBench()
  if (only.includes("monitor")) results.monitor = await monitorBench()
  if (only.includes("checkpoint")) results.checkpoint = await checkpointBench()
  if (process.stdout.isTTY) process.stdout.write("\r\x1b[K")
  buildFigures(results)
  if (results.remote) remoteFigures(results.remote)
  if (results.subagents) subagentsFigures(results.subagents)
  if (results.compaction) compactionFigures(results.compaction)
  if (results.cluster) clusterFigures(results.cluster)
  if (results.stops) stopsFigures(results.stops)
  if (results.sandbox) sandboxFigures(results.sandbox)
  if (results.telemetry) telemetryFigures(results.telemetry)
  if (results.monitor) monitorFigures(results.monitor)
  if (results.checkpoint) checkpointFigures(results.checkpoint)

  const cpus = os.cpus()
  const date = new Date().toISOString()
  const machine = {
    cpu: cpus[0]?.model ?? "unknown",
    cores: cpus.length,
    memoryGB: round(os.totalmem() / 2 ** 30, 1),
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    node: process.version,
    // A busy machine inflates every figure (the ratios less so).
    loadAverage: { before: round(loadBefore), after: round(os.loadavg()[0]) }
  }
  const sectionMethods = {
    cold: { runs: RUNS, warmup: WARMUP, note: "fresh process per run, interleaved; ready = initialize at spawn, session/new on its response" },
    chunk: { prompts: PROMPTS, warmup: PROMPT_WARMUP, note: "one agent process each, one session, one scripted turn (one text delta) per prompt" },
    prompt: { runs: FIRST, warmup: WARMUP, pauseMs: [PAUSE_MS, 0], note: "fresh process per run, interleaved; --provider openai-chat at a local SSE server in the bench process; the relay (bench/relay.mjs) POSTs with the built-in fetch" },
    throughput: { deltas: DELTAS, turns: TURNS, warmupTurns: 1, note: "Skein: script {text:'x', repeat}; SDK agent: awaited client.notify per delta; floor: synchronous writes" },
    memory: { runs: MEM_RUNS, settleMs: SETTLE_MS, counts: MEM_COUNTS, note: "VmRSS from /proc after a settle: after initialize, after the first session/new, then with each count of live sessions; afterGc: process.memoryUsage() after a forced GC (bench/gc-probe.mjs preloaded into every agent, without --expose-gc, which would keep Skein from its code cache), from the first session on, per session added since it" },
    sessions: { runs: SESSIONS_RUNS, skein: "scripts/bench-sessions.mjs", floor: "scripts/bench-sessions-floor.mjs" },
    log: { script: "scripts/bench-log.mjs", note: "in-process; default durability: no fsync per event, one at the turn's end" },
    compaction: { script: "scripts/bench-compaction.mjs", note: "in-process (dist/index.mjs, file store, scripted provider): a log of 100,000 events written afresh for each run; load = runtime.loadSession of it (the baseline), compact = the prompt `/compact` to its outcome; model input sizes are the logged compaction's estimates (4 characters a token)" },
    checkpoint: { script: "scripts/bench-checkpoint.mjs", note: "in-process (src/checkpoints/Shadow.ts bundled): 100 folders of 100 files of about 1 KB, fresh copies per run, Skein and git interleaved; disk: the shadow repository's size (its index included) against what the stash added to .git" },
    sandbox: { script: "scripts/bench-sandbox.mjs", note: "in-process (src/tools/bash.ts bundled): the bash tool's call to its result, with a session's sandbox (bubblewrap, the session's namespaces made in the warm-up) and without, in 100 pairs after 10 thrown away, the order alternating within pairs; what is added is the median of the paired differences, with a 90% bootstrap interval" },
    cluster: { script: "scripts/bench-cluster.mjs", note: "two runners (skein serve --cluster, scripted provider) on a PostgreSQL server started by the script; Effect programs through Skein.remote on tcp; lock expiry 10 s; creation: 200 sessions by 8 programs, 3 rounds; failover: 3 fresh clusters" },
    stops: { script: "scripts/bench-stops.mjs", note: "a fresh skein acp per run (dist/skein.mjs, scripted provider, a temporary home); times from writing the cancel (or sending SIGTERM) to reading the answer (or the exit)" },
    telemetry: { script: "scripts/bench-telemetry.mjs", note: "skein acp, scripted; off: no OTEL_* variable; on: OTEL_EXPORTER_OTLP_ENDPOINT at a local OTLP/HTTP receiver in the script (http/json); cold starts interleaved, turns on one process per setting, interleaved" },
    monitor: { script: "scripts/bench-monitor.mjs", note: "skein serve --web (scripted) with Debian's chromium driven by playwright-core; sessions driven by an Effect program through Skein.remote; stalls: lateness of a 50 ms timer in the page" },
    remote: { script: "scripts/bench-remote.mjs", note: "Effect programs (dist/index.mjs) against Skein.layer and against skein serve on a unix socket; the stall is skein acp with a client that pauses its reads" },
    subagents: {
      children: SUB_CHILDREN,
      memoryRuns: SUB_RUNS,
      spawns: SPAWNS,
      spawnWarmup: SUB_SPAWN_WARMUP,
      streamRounds: SUB_STREAM_ROUNDS,
      deltasPerChild: SUB_DELTAS,
      everyMs: SUB_EVERY_MS,
      settleMs: SETTLE_MS,
      note: "skein acp with clientCapabilities.subagents and a home config.json {subagents: {maxRunning: 64}}. memory: a fresh process per run and scenario (scripted; custom agents quick and busy in $SKEIN_HOME/agents): a warm-up turn with one child, the baseline turn (the parent blocked in a model call, no child), the measured turn (the parent blocked the same way, 64 children idle after answering or sleeping inside their model call); VmRSS after a settle and after a forced GC (bench/gc-probe.mjs), then session/cancel. spawn: one process (scripted), a parent turn per spawn (spawn_agent, wait_agent), interleaved with session/new + one prompt; times between lines read by the client. streaming: one process on --provider openai-chat at a local SSE server in the bench process; each response's headers sent at once; each stream on its own timer, the timers of a round spread over one period and started " + SUB_FIRST_TOKEN_MS + " ms after all its streams have asked; each delta is its write time (hrtime); after one warm-up round of 64 children, rounds of 64 children, 1 child, 1 top-level session and 64 top-level sessions, interleaved, each on new sessions"
    }
  }
  const json = {
    date,
    machine,
    method: {
      clock: "process.hrtime.bigint() in the client; times run from writing a request (or spawn) to reading the response line",
      p90: "the 90th-percentile run on the slow side (for rates: the 10th percentile of the rate)",
      ratio: "Skein's median ÷ the baseline's median (memory per session: RSS with N sessions ÷ idle RSS; per child: RSS with the children ÷ RSS with none)",
      client: "bench/client.mjs: one raw reader for every agent; session/update lines are counted by a byte search, other lines parsed",
      ...Object.fromEntries(Object.entries(sectionMethods).filter(([k]) => only.includes(k))),
      ...(previous !== undefined ? { previous: { commit: previous.commit, subject: previous.subject, note: "bench/previous.mjs: git archive of the commit into the run's temporary directory, built there over this checkout's node_modules, its code cache filled in a directory of its own; started interleaved with this build" } } : {}),
      codeCache: "dist/skein.mjs loads dist/skein-main.cjs through a V8 code cache written at exit by a run that served; here in the run's temporary directory, filled first as the build fills a user's (scripts/warm-code-cache.mjs: initialize, session/new, one scripted turn)"
    },
    targets: TARGETS,
    figures,
    missed: figures.filter((f) => f.met === false).map((f) => f.id),
    raw: {
      cold: results.cold,
      chunk: results.chunk,
      prompt: results.prompt,
      throughput: results.throughput,
      memory: results.memory && { ...results.memory, raw: undefined },
      memoryRuns: results.memory?.raw,
      sessions: results.sessions,
      log: results.log,
      remote: results.remote,
      subagents: results.subagents,
      compaction: results.compaction,
      cluster: results.cluster,
      stops: results.stops,
      sandbox: results.sandbox,
      telemetry: results.telemetry,
      monitor: results.monitor
    },
    durationSeconds: round((Date.now() - started) / 1000, 1)
  }

  if (values.merge && !full) {
    // The sections run replace their figures and raw results; every other section stays as recorded.
    const recorded = JSON.parse(readFileSync(resultsFile, "utf8"))
    const groups = new Set(only.flatMap((s) => GROUPS[s]))
    const rawKeys = only.flatMap((s) => RAW_KEYS[s] ?? [s])
    const mergedFigures = [...recorded.figures.filter((f) => !groups.has(f.group)), ...json.figures]
      .map((f, i) => [f, i])
      .sort(([f, i], [g, j]) => SECTIONS.indexOf(sectionOf(f.group)) - SECTIONS.indexOf(sectionOf(g.group)) || i - j)
      .map(([f]) => f)
    const merged = { ...recorded.merged }
    for (const s of only) merged[s] = { date, machine: machine.cpu, loadAverage: machine.loadAverage, durationSeconds: json.durationSeconds }
    Object.assign(json, {
      date: recorded.date,
      machine: recorded.machine,
      method: { ...recorded.method, ...Object.fromEntries(only.filter((s) => json.method[s] !== undefined).map((s) => [s, json.method[s]])) },
      targets: { ...recorded.targets, ...TARGETS },
      figures: mergedFigures,
      missed: mergedFigures.filter((f) => f.met === false).map((f) => f.id),
      raw: { ...recorded.raw, ...Object.fromEntries(rawKeys.map((k) => [k, json.raw[k]])) },
      merged,
      durationSeconds: recorded.durationSeconds
    })
  }
  const { md, readme: readmeBlock } = render(json)
  // Only a full run, or a partial one with --merge, replaces the recorded results; a partial one just prints.
  const write = full || values.merge
  if (write) {
    mkdirSync(join(root, "bench"), { recursive: true })
    writeFileSync(resultsFile, JSON.stringify(json, null, 2) + "\n")
    writeFileSync(join(root, "bench", "results.md"), md)
  }
  let readme = false
  if (!values["no-readme"] && write) readme = updateReadme(readmeBlock)
  process.stdout.write(
    `\n${md}\n${write ? `wrote bench/results.json and bench/results.md${readme ? " and the table in README.md" : ""}` : "partial run (--only): nothing written"} in ${round((Date.now() - started) / 1000, 1)} s\n`
  )
}

try {
  await main()
} catch (error) {
  process.stderr.write(`\nbench failed: ${error?.stack ?? error}\n`)
  process.exitCode = 1
} finally {
  rmSync(tmp, { recursive: true, force: true })
}
