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
import { rmSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { measure, prepare } from "./bench-session-logs.mjs"
import { Agent, msSince, now } from "../bench/client.mjs"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
// The fixtures, as scripts/bench-sessions.mjs writes them (scripts/bench-session-logs.mjs).
const { sessions: SESSIONS, events: EVENTS, runs: RUNS, tmp, listHome, loadHome, workspace, other, bigId, bigBytes } = prepare("bench-floor-sessions")

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

try {
  const result = {
    agent: "plain-Node floor (bench/floor.mjs)",
    fixtures: { sessions: SESSIONS, events: EVENTS, logBytes: bigBytes },
    ...(await measure({ listOnce, loadOnce, runs: RUNS, sessions: SESSIONS, events: EVENTS, bigBytes })),
    runs: RUNS
  }
  process.stdout.write(JSON.stringify(result, null, 2) + "\n")
} finally {
  rmSync(tmp, { recursive: true, force: true })
}
