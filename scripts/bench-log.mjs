// Log append throughput, in-process, with the default durability (each event appended as it
// happens, no fsync per event; one fsync at the end of the turn).
//
// - writer:  Skein's `SessionLog` writer (src/log/SessionLog.ts, bundled here with esbuild, Effect
//            external) appends N canonical events one `append` call each, as a session does, then
//            syncs once;
// - runtime: one session of the embedding API (src/index.ts) runs a scripted turn whose first
//            model call asks for K tool calls of an unknown tool (nothing runs, nothing is
//            asked): every canonical event goes the whole way (stamp, lock, append, fold,
//            publish); events/s counts the lines the turn added to the log;
// - floor:   plain Node: `JSON.stringify` of the same events + `fs.writeSync` on a file opened
//            for append, one call per event, then one `fsyncSync`;
// - appendFileSync: the same lines with `fs.appendFileSync` (opens and closes the file per
//            line): context, not the baseline.
//
// Runs are interleaved; prints one JSON object: { writer, runtime, floor, appendFileSync } with
// samples in events/s. Options: --events N (default 20,000), --tools K (default 5,000),
// --runs R (default 5).
import { closeSync, fsyncSync, mkdirSync, mkdtempSync, openSync, readFileSync, realpathSync, rmSync, appendFileSync, writeSync } from "node:fs"
import os from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { bundle } from "./bench-bundle.mjs"

const { values } = parseArgs({ options: { events: { type: "string" }, tools: { type: "string" }, runs: { type: "string" } } })
const int = (v, fallback) => (v === undefined || v === "" ? fallback : Math.max(1, Number.parseInt(v, 10) || fallback))
const EVENTS = int(values.events ?? process.env.BENCH_LOG_EVENTS, 20_000)
const TOOLS = int(values.tools ?? process.env.BENCH_LOG_TOOLS, 5_000)
const RUNS = int(values.runs ?? process.env.BENCH_LOG_RUNS, 5)

// The writer and the runtime from src/, with Effect and the platform external (resolved from
// the repository's node_modules, like dist/index.mjs).
const { SessionLog, Skein, Runtime, NodeFileSystem, NodePath, Effect, Layer } = await bundle("log", [
  `export { SessionLog } from "./src/log/SessionLog.ts"`,
  `export { Skein, Runtime } from "./src/index.ts"`,
  `export * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"`,
  `export * as NodePath from "@effect/platform-node/NodePath"`,
  `export * as Effect from "effect/Effect"`,
  `export * as Layer from "effect/Layer"`
])

const tmp = realpathSync(mkdtempSync(join(os.tmpdir(), "skein-bench-log-")))
const workspace = join(tmp, "workspace")
mkdirSync(workspace)
const uuid = (i) => `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`
const now = () => process.hrtime.bigint()
const msSince = (t0) => Number(now() - t0) / 1e6

/** N events of a long turn, the shapes of a real one (about 200 bytes a line). */
const makeEvents = (sessionId, n) => {
  const events = []
  const ts = Date.now()
  const text = "The quick brown fox jumps over the lazy dog. ".repeat(2)
  for (let seq = 1; seq <= n; seq++) {
    const k = seq % 3
    const id = `call_1_1_${seq}`
    const body = k === 0
      ? { type: "tool_call", data: { id, name: "read", args: { path: `src/file${seq}.ts` }, title: `Read src/file${seq}.ts`, kind: "read" } }
      : k === 1
      ? { type: "tool_result", data: { id, ok: true, status: "done", content: `1\t${text}` } }
      : { type: "model_response", data: { call: seq, parts: [{ type: "text", text }], stop: "tool_use", usage: { input: 1000, output: 60 } } }
    events.push({ ...body, sessionId, seq, ts: ts + seq, turn: 1 })
  }
  return events
}
const header = (id) => ({ type: "session", v: 2, id, cwd: workspace, created: Date.now(), mode: "default", skein: "bench" })

const platform = Layer.mergeAll(NodeFileSystem.layer, NodePath.layer)

let serial = 0
const writerRun = async () => {
  const home = join(tmp, `writer-${serial++}`)
  const id = uuid(serial)
  const events = makeEvents(id, EVENTS)
  const program = Effect.scoped(Effect.gen(function*() {
    const log = yield* SessionLog
    const writer = yield* log.create(header(id))
    const t0 = now()
    for (const event of events) yield* writer.append([event])
    yield* writer.sync
    return msSince(t0)
  }))
  const ms = await Effect.runPromise(program.pipe(Effect.provide(SessionLog.layer({ home }).pipe(Layer.provide(platform)))))
  const lines = readFileSync(join(home, "sessions", `${id}.ndjson`), "utf8").split("\n").length - 2
  if (lines !== EVENTS) throw new Error(`writer: ${lines} lines logged, expected ${EVENTS}`)
  return (EVENTS / ms) * 1000
}

/** The same event objects, the same field order, one write per line, one fsync. */
const floorRun = () => {
  const dir = join(tmp, `floor-${serial++}`)
  mkdirSync(dir)
  const events = makeEvents(uuid(serial), EVENTS)
  const fd = openSync(join(dir, "log.ndjson"), "a")
  writeSync(fd, JSON.stringify(header(uuid(serial))) + "\n")
  const t0 = now()
  for (const e of events) writeSync(fd, JSON.stringify({ seq: e.seq, ts: e.ts, turn: e.turn, type: e.type, data: e.data }) + "\n")
  fsyncSync(fd)
  const ms = msSince(t0)
  closeSync(fd)
  return (EVENTS / ms) * 1000
}

const appendFileRun = () => {
  const dir = join(tmp, `append-${serial++}`)
  mkdirSync(dir)
  const file = join(dir, "log.ndjson")
  const events = makeEvents(uuid(serial), EVENTS)
  appendFileSync(file, JSON.stringify(header(uuid(serial))) + "\n")
  const t0 = now()
  for (const e of events) appendFileSync(file, JSON.stringify({ seq: e.seq, ts: e.ts, turn: e.turn, type: e.type, data: e.data }) + "\n")
  const fd = openSync(file, "a")
  fsyncSync(fd)
  closeSync(fd)
  return (EVENTS / msSince(t0)) * 1000
}

/** One scripted turn of K unknown-tool calls through a session of the embedding API. */
const script = {
  turns: [{
    calls: [
      Array.from({ length: TOOLS }, (_, i) => ({ tool: "no_such_tool", args: { i }, id: `c${i}` })),
      [{ text: "done" }]
    ]
  }]
}
const runtimeRun = async () => {
  const home = join(tmp, `runtime-${serial++}`)
  const program = Effect.gen(function*() {
    const runtime = yield* Runtime
    const session = yield* runtime.newSession({ cwd: workspace })
    const t0 = now()
    const outcome = yield* session.prompt([{ type: "text", text: "go" }])
    const ms = msSince(t0)
    return { ms, outcome, id: session.id }
  })
  const { ms, outcome, id } = await Effect.runPromise(Effect.scoped(program).pipe(Effect.provide(Skein.layer({ home, script }))))
  if (outcome.stopReason !== "end_turn" || outcome.error !== undefined) throw new Error(`runtime: the turn ended ${JSON.stringify(outcome)}`)
  const events = readFileSync(join(home, "sessions", `${id}.ndjson`), "utf8").split("\n").length - 2
  return { rate: (events / ms) * 1000, events }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}

try {
  // One warm-up of each, then interleaved runs.
  await writerRun()
  floorRun()
  appendFileRun()
  await runtimeRun()
  const samples = { writer: [], floor: [], appendFileSync: [], runtime: [] }
  let runtimeEvents = 0
  for (let i = 0; i < RUNS; i++) {
    samples.writer.push(await writerRun())
    samples.floor.push(floorRun())
    samples.appendFileSync.push(appendFileRun())
    const r = await runtimeRun()
    samples.runtime.push(r.rate)
    runtimeEvents = r.events
  }
  const round = (x) => Math.round(x)
  const out = {
    events: EVENTS,
    runtimeEvents,
    toolCalls: TOOLS,
    runs: RUNS,
    unit: "events/s",
    ...Object.fromEntries(Object.entries(samples).map(([k, xs]) => [k, { median: round(median(xs)), samples: xs.map(round) }]))
  }
  process.stdout.write(JSON.stringify(out, null, 2) + "\n")
} finally {
  rmSync(tmp, { recursive: true, force: true })
}
