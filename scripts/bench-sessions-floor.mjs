// The baseline of scripts/bench-sessions.mjs: the same measurements over the plain-Node floor
// (bench/floor.mjs, which answers `session/list` and `session/load` with synchronous fs and
// JSON.parse, no checks) instead of Skein.
//
// The fixtures have the shapes and sizes scripts/bench-sessions.mjs writes (N small finished
// sessions, every tenth in another cwd; one log of M events in turns of six); each measurement is
// the median of --runs fresh processes after one warm-up, from the request to its response (for
// `session/load`, after every replayed update). Prints one JSON object, times in ms:
// { list: { firstPageMs, allPagesMs, cwdFilterFirstPageMs, … }, load: { loadMs, … } } with samples.
// Options: --sessions N, --events M, --runs R (or BENCH_SESSIONS, BENCH_EVENTS, BENCH_RUNS).
import { mkdirSync, mkdtempSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs"
import os from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { Agent, msSince, now } from "../bench/client.mjs"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const { values } = parseArgs({ options: { sessions: { type: "string" }, events: { type: "string" }, runs: { type: "string" } } })
const int = (v, fallback) => (v === undefined || v === "" ? fallback : Math.max(1, Number.parseInt(v, 10) || fallback))
const SESSIONS = int(values.sessions ?? process.env.BENCH_SESSIONS, 1000)
const EVENTS = int(values.events ?? process.env.BENCH_EVENTS, 100_000)
const RUNS = int(values.runs ?? process.env.BENCH_RUNS, 5)

const tmp = realpathSync(mkdtempSync(join(os.tmpdir(), "skein-bench-floor-sessions-")))
const listHome = join(tmp, "list-home")
const loadHome = join(tmp, "load-home")
const workspace = join(tmp, "workspace")
const other = join(tmp, "other")
for (const dir of [join(listHome, "sessions"), join(loadHome, "sessions"), workspace, other]) mkdirSync(dir, { recursive: true })

const line = (o) => JSON.stringify(o) + "\n"
const uuid = (i) => `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`

// ---- fixtures: as in scripts/bench-sessions.mjs ---------------------------------------------
const smallLog = (id, cwd, i) => {
  const t = 1_700_000_000_000 + i * 1000
  return line({ type: "session", v: 2, id, cwd, created: t, mode: "default", skein: "bench" }) +
    line({ seq: 1, ts: t, turn: 1, type: "turn_start", data: { content: [{ type: "text", text: `Task number ${i}: summarise the notes and fix the failing test` }] } }) +
    line({ seq: 2, ts: t + 1, turn: 1, type: "model_response", data: { call: 1, parts: [{ type: "text", text: "Reading." }, { type: "tool_call", id: "c1", name: "read", args: { path: "notes.txt" } }], stop: "tool_use" } }) +
    line({ seq: 3, ts: t + 2, turn: 1, type: "tool_call", data: { id: "c1", name: "read", args: { path: "notes.txt" }, title: "Read notes.txt", kind: "read" } }) +
    line({ seq: 4, ts: t + 3, turn: 1, type: "tool_result", data: { id: "c1", ok: true, content: "1\tHello notes" } }) +
    line({ seq: 5, ts: t + 4, turn: 1, type: "model_response", data: { call: 2, parts: [{ type: "text", text: "Done." }], stop: "end_turn", usage: { input: 1200, output: 40 } } }) +
    line({ seq: 6, ts: t + 5, turn: 1, type: "turn_end", data: { stopReason: "end_turn" } })
}
for (let i = 0; i < SESSIONS; i++) {
  writeFileSync(join(listHome, "sessions", `${uuid(i)}.ndjson`), smallLog(uuid(i), i % 10 === 0 ? other : workspace, i))
}
const bigId = uuid(999_999)
{
  const parts = [line({ type: "session", v: 2, id: bigId, cwd: workspace, created: 1_700_000_000_000, mode: "default", skein: "bench" })]
  let seq = 0
  let turn = 0
  const filler = "The quick brown fox jumps over the lazy dog. ".repeat(4)
  while (seq < EVENTS) {
    turn++
    const ts = 1_700_000_000_000 + seq
    const id = `call_${turn}`
    parts.push(
      line({ seq: ++seq, ts, turn, type: "turn_start", data: { content: [{ type: "text", text: `Step ${turn}: look at file ${turn}.txt` }] } }),
      line({ seq: ++seq, ts, turn, type: "model_response", data: { call: 1, parts: [{ type: "thinking", text: "Let me look." }, { type: "text", text: filler }, { type: "tool_call", id, name: "read", args: { path: `${turn}.txt` } }], stop: "tool_use", usage: { input: 1000 + turn, output: 60 } } }),
      line({ seq: ++seq, ts, turn, type: "tool_call", data: { id, name: "read", args: { path: `${turn}.txt` }, title: `Read ${turn}.txt`, kind: "read", locations: [{ path: `${workspace}/${turn}.txt` }] } }),
      line({ seq: ++seq, ts, turn, type: "tool_result", data: { id, ok: true, content: `1\t${filler}\n2\t${filler}` } }),
      line({ seq: ++seq, ts, turn, type: "model_response", data: { call: 2, parts: [{ type: "text", text: `Read ${turn}.txt. ${filler}` }], stop: "end_turn", usage: { input: 1100 + turn, output: 80 } } }),
      line({ seq: ++seq, ts, turn, type: "turn_end", data: { stopReason: "end_turn" } })
    )
  }
  writeFileSync(join(loadHome, "sessions", `${bigId}.ndjson`), parts.join(""))
}
const bigBytes = statSync(join(loadHome, "sessions", `${bigId}.ndjson`)).size

// ---- measurements ------------------------------------------------------------------------------
const floor = (home) =>
  new Agent("plain-Node floor", [join(root, "bench", "floor.mjs")], { cwd: workspace, env: { ...process.env, BENCH_HOME: home } })

const listOnce = async () => {
  const agent = floor(listHome)
  try {
    await agent.initialize()
    const first = await agent.request("session/list", {})
    const firstPage = msSince(first.sent, first.t)
    const start = now()
    let cursor
    let count = 0
    do {
      const page = await agent.request("session/list", cursor ? { cursor } : {})
      count += page.result.sessions.length
      cursor = page.result.nextCursor
    } while (cursor)
    const allPages = msSince(start)
    const filtered = await agent.request("session/list", { cwd: other })
    return { firstPage, allPages, count, filteredPage: msSince(filtered.sent, filtered.t), filteredCount: filtered.result.sessions.length }
  } finally {
    await agent.close()
  }
}

const loadOnce = async () => {
  const agent = floor(loadHome)
  try {
    await agent.initialize()
    const before = agent.updates
    const r = await agent.request("session/load", { sessionId: bigId, cwd: workspace, mcpServers: [] })
    return { loadMs: msSince(r.sent, r.t), updates: r.updates - before }
  } finally {
    await agent.close()
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}
const round = (x) => Math.round(x * 10) / 10

try {
  await listOnce()
  const lists = []
  for (let i = 0; i < RUNS; i++) lists.push(await listOnce())
  await loadOnce()
  const loads = []
  for (let i = 0; i < RUNS; i++) loads.push(await loadOnce())
  const result = {
    agent: "plain-Node floor (bench/floor.mjs)",
    fixtures: { sessions: SESSIONS, events: EVENTS, logBytes: bigBytes },
    list: {
      sessions: SESSIONS,
      firstPageMs: round(median(lists.map((l) => l.firstPage))),
      allPagesMs: round(median(lists.map((l) => l.allPages))),
      listed: lists[0].count,
      cwdFilterFirstPageMs: round(median(lists.map((l) => l.filteredPage))),
      cwdFilterListed: lists[0].filteredCount,
      samples: { firstPageMs: lists.map((l) => round(l.firstPage)), allPagesMs: lists.map((l) => round(l.allPages)) }
    },
    load: {
      events: EVENTS,
      logBytes: bigBytes,
      loadMs: round(median(loads.map((l) => l.loadMs))),
      replayedUpdates: loads[0].updates,
      samples: { loadMs: loads.map((l) => round(l.loadMs)) }
    },
    runs: RUNS
  }
  process.stdout.write(JSON.stringify(result, null, 2) + "\n")
} finally {
  rmSync(tmp, { recursive: true, force: true })
}
