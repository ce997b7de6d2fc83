// The session logs the session benches read (scripts/bench-sessions.mjs against Skein,
// scripts/bench-sessions-floor.mjs against the plain-Node floor): many small finished sessions
// to list, and one long one to load; the options both take, and how both measure.
import { mkdirSync, mkdtempSync, realpathSync, statSync, writeFileSync } from "node:fs"
import os from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"

const line = (o) => JSON.stringify(o) + "\n"
const uuid = (i) => `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`

/** A small finished session: header, a prompt, an answer with a read, its result, the end. */
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

/**
 * Writes `sessions` small logs under `listHome` (every tenth in `other`, for the cwd filter; the
 * rest in `workspace`) and one long log of about `events` events under `loadHome` (turns of six
 * events with text, a tool call and its result). Gives the long one's id and size.
 */
const writeSessionLogs = ({ listHome, loadHome, workspace, other, sessions, events }) => {
  for (let i = 0; i < sessions; i++) {
    writeFileSync(join(listHome, "sessions", `${uuid(i)}.ndjson`), smallLog(uuid(i), i % 10 === 0 ? other : workspace, i))
  }
  const bigId = uuid(999_999)
  const parts = [line({ type: "session", v: 2, id: bigId, cwd: workspace, created: 1_700_000_000_000, mode: "default", skein: "bench" })]
  let seq = 0
  let turn = 0
  const filler = "The quick brown fox jumps over the lazy dog. ".repeat(4)
  while (seq < events) {
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
  const file = join(loadHome, "sessions", `${bigId}.ndjson`)
  writeFileSync(file, parts.join(""))
  return { bigId, bigBytes: statSync(file).size }
}

/**
 * The options (--sessions N, --events M, --runs R, or BENCH_SESSIONS, BENCH_EVENTS,
 * BENCH_RUNS), and the logs written in a new temporary folder named after `name`: how long
 * writing them took, their folders, the long one's id and size.
 */
export const prepare = (name) => {
  const { values } = parseArgs({ options: { sessions: { type: "string" }, events: { type: "string" }, runs: { type: "string" } } })
  const int = (v, fallback) => (v === undefined || v === "" ? fallback : Math.max(1, Number.parseInt(v, 10) || fallback))
  const sessions = int(values.sessions ?? process.env.BENCH_SESSIONS, 1000)
  const events = int(values.events ?? process.env.BENCH_EVENTS, 100_000)
  const runs = int(values.runs ?? process.env.BENCH_RUNS, 5)
  const tmp = realpathSync(mkdtempSync(join(os.tmpdir(), `skein-${name}-`)))
  const folders = { listHome: join(tmp, "list-home"), loadHome: join(tmp, "load-home"), workspace: join(tmp, "workspace"), other: join(tmp, "other") }
  for (const dir of [join(folders.listHome, "sessions"), join(folders.loadHome, "sessions"), folders.workspace, folders.other]) mkdirSync(dir, { recursive: true })
  const t0 = process.hrtime.bigint()
  const big = writeSessionLogs({ ...folders, sessions, events })
  return { sessions, events, runs, tmp, ...folders, ...big, fixtureMs: Number(process.hrtime.bigint() - t0) / 1e6 }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}
export const round = (x) => Math.round(x * 10) / 10

/**
 * `listOnce` (every page, then the cwd filter's first) and `loadOnce` (the long log), each once to
 * warm up and then `runs` times: the medians, what was listed and replayed, and the samples.
 */
export const measure = async ({ listOnce, loadOnce, runs, sessions, events, bigBytes }) => {
  await listOnce()
  const lists = []
  for (let i = 0; i < runs; i++) lists.push(await listOnce())
  await loadOnce()
  const loads = []
  for (let i = 0; i < runs; i++) loads.push(await loadOnce())
  return {
    list: {
      sessions,
      firstPageMs: round(median(lists.map((l) => l.firstPage))),
      allPagesMs: round(median(lists.map((l) => l.allPages))),
      listed: lists[0].count,
      cwdFilterFirstPageMs: round(median(lists.map((l) => l.filteredPage))),
      cwdFilterListed: lists[0].filteredCount,
      samples: { firstPageMs: lists.map((l) => round(l.firstPage)), allPagesMs: lists.map((l) => round(l.allPages)) }
    },
    load: {
      events,
      logBytes: bigBytes,
      loadMs: round(median(loads.map((l) => l.loadMs))),
      replayedUpdates: loads[0].updates,
      samples: { loadMs: loads.map((l) => round(l.loadMs)) }
    }
  }
}
