// Compaction of a long session, in-process, through the embedding API (dist/index.mjs).
//
// A session log of N canonical events (default 100,000: turns of a prompt, a model call that
// reads a file, its tool call and result, a final answer) is written in a temporary home. Each
// run copies it afresh, then:
// - load:    `runtime.loadSession` of the session (reads, checks and folds the whole log): the
//            baseline, measured in the same run;
// - compact: `/compact` as a prompt (the scripted provider answers the summary call), from the
//            prompt to its outcome: choosing the cut, sending the summarised conversation,
//            logging the summary call and the `compaction` event, folding it.
// The model's input before and after (estimated tokens) come from the logged `compaction`
// event; the summary request's size is measured as the provider received it.
//
// Prints one JSON object: { events, turns, samples: { loadMs, compactMs }, usageBefore,
// usageAfter, summaryRequestChars }. Options: --events N, --runs R (default 3).
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import os from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { parseArgs } from "node:util"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const { values } = parseArgs({ options: { events: { type: "string" }, runs: { type: "string" } } })
const int = (v, fallback) => (v === undefined || v === "" ? fallback : Math.max(1, Number.parseInt(v, 10) || fallback))
const EVENTS = int(values.events ?? process.env.BENCH_COMPACTION_EVENTS, 100_000)
const RUNS = int(values.runs ?? process.env.BENCH_COMPACTION_RUNS, 3)

const { Skein, Runtime, Scripted } = await import(pathToFileURL(join(root, "dist", "index.mjs")).href)
const Effect = await import(pathToFileURL(join(root, "node_modules", "effect", "dist", "Effect.js")).href)

const dir = mkdtempSync(join(os.tmpdir(), "skein-bench-compaction-"))
const cwd = join(dir, "work")
mkdirSync(cwd)
const id = "bench-compaction"
const source = join(dir, "source.ndjson")

// The log: 6 events a turn.
const lines = [JSON.stringify({ type: "session", v: 4, id, cwd, created: 1_700_000_000_000, mode: "default" })]
let seq = 0
let turn = 0
const push = (t, type, data) => lines.push(JSON.stringify({ seq: ++seq, ts: 1_700_000_000_000 + seq, turn: t, type, data }))
const filler = "The module keeps its state in one place and every change goes through it. ".repeat(3)
while (seq + 6 <= EVENTS) {
  turn++
  const call = `call_${turn}`
  push(turn, "turn_start", { content: [{ type: "text", text: `Step ${turn}: look at src/file${turn % 50}.ts and tell me what it does. ${filler}` }] })
  push(turn, "model_response", { call: 1, parts: [{ type: "text", text: "Reading it." }, { type: "tool_call", id: call, name: "read", args: { path: `src/file${turn % 50}.ts` } }], stop: "tool_use", usage: { input: 1000, output: 20 } })
  push(turn, "tool_call", { id: call, name: "read", args: { path: `src/file${turn % 50}.ts` }, title: `Read src/file${turn % 50}.ts`, kind: "read" })
  push(turn, "tool_result", { id: call, title: `Read src/file${turn % 50}.ts`, ok: true, content: `1\texport const f${turn} = () => ${turn}\n2\t// ${filler}` })
  push(turn, "model_response", { call: 2, parts: [{ type: "text", text: `It exports f${turn}, which returns ${turn}. ${filler}` }], stop: "end_turn", usage: { input: 1100, output: 60 } })
  push(turn, "turn_end", { stopReason: "end_turn" })
}
writeFileSync(source, lines.join("\n") + "\n")

const script = { turns: [], compaction: Array.from({ length: RUNS + 1 }, () => [{ text: "The user asked for a walk through src/. Each file exports one function returning its step number. Nothing is left to do." }]) }

const samples = { loadMs: [], compactMs: [] }
let usageBefore
let usageAfter
let summaryRequestChars

for (let run = 0; run < RUNS; run++) {
  const home = join(dir, `home-${run}`)
  mkdirSync(join(home, "sessions"), { recursive: true, mode: 0o700 })
  copyFileSync(source, join(home, "sessions", `${id}.ndjson`))
  const scripted = Scripted.make(script)
  const provider = {
    ...scripted,
    stream: (request) => {
      if (request.purpose === "compaction") summaryRequestChars = JSON.stringify(request.messages).length
      return scripted.stream(request)
    }
  }
  const program = Effect.gen(function*() {
    const runtime = yield* Runtime
    let t = performance.now()
    const loaded = yield* runtime.loadSession({ sessionId: id, cwd })
    samples.loadMs.push(performance.now() - t)
    t = performance.now()
    const outcome = yield* loaded.session.prompt([{ type: "text", text: "/compact" }])
    samples.compactMs.push(performance.now() - t)
    if (outcome.error !== undefined) throw new Error(`compaction failed: ${outcome.error}`)
  })
  await Effect.runPromise(Effect.scoped(Effect.provide(program, Skein.layer({ home, provider, userHome: dir }))))
  const log = readFileSync(join(home, "sessions", `${id}.ndjson`), "utf8").trim().split("\n").map((l) => JSON.parse(l))
  const compaction = log.find((e) => e.type === "compaction")
  if (compaction === undefined) throw new Error("no compaction was logged")
  usageBefore = compaction.data.usageBefore
  usageAfter = compaction.data.usageAfter
  rmSync(home, { recursive: true, force: true })
}
rmSync(dir, { recursive: true, force: true })
process.stdout.write(JSON.stringify({ events: seq, turns: turn, samples, usageBefore, usageAfter, summaryRequestChars }) + "\n")
