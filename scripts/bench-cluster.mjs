// Sessions on a cluster (`skein serve --cluster`), on a throwaway PostgreSQL server this script
// starts (Debian's `postgresql`; the section reports it missing otherwise):
//
// - turn: a session held by runner A, prompted through runner B's endpoint (every update crosses
//   from A to B) against the same session prompted through A's own endpoint: the time from an
//   update's emission (its `ts`) to its arrival for a turn that streams one delta every 5 ms, and
//   the throughput of a turn of --deltas one-character deltas;
// - creation: sessions made per second by --clients programs at once, half through each of two
//   runners, against a `skein serve --store` on the same database (one process, no cluster);
// - failover: kill -9 of the runner holding a session mid-turn, to the client's `turn_end`
//   (cancelled) through the other runner, against the shard-lock expiry it waits for.
//
// Prints one JSON object on stdout. Options: --runs R, --deltas N, --sessions N, --clients C,
// --lock-expiry S.
import { spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import os from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { measureTurns, median } from "./bench-turns.mjs"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const SKEIN = join(root, "dist", "skein.mjs")
if (!existsSync(SKEIN) || !existsSync(join(root, "dist", "index.mjs"))) {
  process.stderr.write("bench-cluster: dist/ is missing (run `npm run build`)\n")
  process.exit(1)
}
const Postgres = await import(join(root, "test", "support", "Postgres.ts"))
if (Postgres.available() === undefined) {
  process.stdout.write(JSON.stringify({ skipped: Postgres.skipReason }) + "\n")
  process.exit(0)
}
const { Runtime, Skein } = await import(join(root, "dist", "index.mjs"))
const { values } = parseArgs({
  options: { runs: { type: "string" }, deltas: { type: "string" }, sessions: { type: "string" }, clients: { type: "string" }, "lock-expiry": { type: "string" } }
})
const int = (v, fallback) => (v === undefined || v === "" ? fallback : Math.max(1, Number.parseInt(v, 10) || fallback))
const RUNS = int(values.runs, 5)
const DELTAS = int(values.deltas, 5_000)
const SESSIONS = int(values.sessions, 200)
const CLIENTS = int(values.clients, 8)
const LOCK_EXPIRY_S = int(values["lock-expiry"], 10)
const PACED = 200
const TOKEN = "a-bench-cluster-token-long-enough"

const tmp = realpathSync(mkdtempSync(join(os.tmpdir(), "skein-bench-cluster-")))
const workspace = join(tmp, "workspace")
mkdirSync(workspace)
// The session's turns, in the order `turns` runs them: through A's endpoint, then through B's.
const turnsOnce = [
  ...Array.from({ length: RUNS + 1 }, () => ({ calls: [[{ text: "x", repeat: DELTAS }]] })),
  ...Array.from({ length: RUNS + 1 }, () => ({ calls: [[...Array.from({ length: PACED }, () => [{ text: "y" }, { sleep_ms: 5 }]).flat()]] }))
]
const script = { turns: [...turnsOnce, ...turnsOnce] }
const scriptPath = join(tmp, "script.json")
writeFileSync(scriptPath, JSON.stringify(script))
const slowScript = join(tmp, "slow.json")
writeFileSync(slowScript, JSON.stringify({ turns: [{ calls: [[{ text: "started " }, { sleep_ms: 600_000 }]] }] }))

const port = () => 20_000 + Math.floor(Math.random() * 30_000)
const children = []

/** Starts `skein serve` with `args` and waits until it listens; its endpoint's URL and its runner address. */
const serve = (name, args, scriptFile = scriptPath) =>
  new Promise((resolve, reject) => {
    const home = join(tmp, `home-${name}`)
    mkdirSync(home, { recursive: true })
    const listen = `tcp://127.0.0.1:${port()}`
    const child = spawn(process.execPath, [SKEIN, "serve", "--home", home, "--script", scriptFile, "--listen", listen, ...args], {
      env: { ...process.env, SKEIN_PROVIDER: "", SKEIN_HOME: "", SKEIN_SERVE_TOKEN: TOKEN },
      stdio: ["ignore", "ignore", "pipe"]
    })
    children.push(child)
    let err = ""
    child.stderr.on("data", (d) => {
      err += d
      if (err.includes("listening on")) resolve({ child, url: listen, runner: args[args.indexOf("--runner") + 1] })
    })
    child.once("exit", (code) => reject(new Error(`skein serve (${name}) exited ${code}: ${err.slice(-2000)}`)))
  })
const runner = (db, name, scriptFile) =>
  serve(name, ["--cluster", db, "--runner", `127.0.0.1:${port()}`, "--lock-expiry", String(LOCK_EXPIRY_S)], scriptFile)
const stop = (child, signal = "SIGTERM") => new Promise((r) => {
  if (child.exitCode !== null || child.signalCode !== null) return r()
  child.once("exit", r)
  child.kill(signal)
})
const remote = (server) => Skein.remote({ url: server.url, token: TOKEN })
const run = (server, effect) => Effect.runPromise(Effect.scoped(effect).pipe(Effect.provide(remote(server))))

/** A session made through `via` that the cluster placed on `on`. */
const sessionOn = async (via, on) => {
  for (let i = 0; i < 60; i++) {
    const made = await run(via, Effect.flatMap(Runtime, (rt) => rt.newSession({ cwd: workspace })))
    if (made.runner === on.runner) return made.id
    await run(via, Effect.flatMap(Runtime, (rt) => rt.deleteSession(made.id)))
  }
  throw new Error(`bench-cluster: no session landed on ${on.runner}`)
}

/** Turn figures for the session `id` prompted through `server`. */
const turns = (server, id) => run(server, Effect.flatMap(Effect.flatMap(Runtime, (rt) => rt.getSession(id)), (session) => measureTurns(session, RUNS)))

/** Sessions made per second by CLIENTS programs at once, spread over `servers`. */
const creation = async (servers) => {
  const perClient = Math.ceil(SESSIONS / CLIENTS)
  const started = performance.now()
  await Promise.all(Array.from({ length: CLIENTS }, (_, c) =>
    run(servers[c % servers.length], Effect.gen(function*() {
      const runtime = yield* Runtime
      for (let i = 0; i < perClient; i++) yield* runtime.newSession({ cwd: workspace })
    }))))
  return (perClient * CLIENTS) / ((performance.now() - started) / 1000)
}

const server = await Postgres.start()
try {
  // ---- turn: through another runner vs the session's own ----------------------------------------
  const db = (await server.createDatabase()).url
  const a = await runner(db, "a")
  const b = await runner(db, "b")
  const id = await sessionOn(b, a)
  const samples = { local: [], remote: [] }
  // Interleaved: A's endpoint (local to the session), then B's (every update crosses runners).
  const local = await turns(a, id)
  const crossed = await turns(b, id)
  samples.local.push(local)
  samples.remote.push(crossed)

  // ---- creation: two runners vs one serve --store ---------------------------------------------------
  const clusterRates = []
  const storeRates = []
  const single = await serve("store", ["--store", (await server.createDatabase()).url, "--max-live-sessions", "10000"])
  for (let i = 0; i < 3; i++) {
    clusterRates.push(await creation([a, b]))
    storeRates.push(await creation([single]))
  }
  await stop(single.child)
  await stop(a.child)
  await stop(b.child)

  // ---- failover: kill -9 mid-turn, to the client's turn_end ----------------------------------------
  const failovers = []
  for (let i = 0; i < 3; i++) {
    const fdb = (await server.createDatabase()).url
    const fa = await runner(fdb, `fa${i}`, slowScript)
    const fb = await runner(fdb, `fb${i}`, slowScript)
    const sid = await sessionOn(fb, fa)
    let killed = 0
    const end = await run(fb, Effect.gen(function*() {
      const runtime = yield* Runtime
      const session = yield* runtime.getSession(sid)
      let last
      yield* session.turn([{ type: "text", text: "go" }]).pipe(
        Stream.runForEach((e) => Effect.sync(() => {
          last = e
          if (e.type === "text_delta" && killed === 0) {
            killed = performance.now()
            fa.child.kill("SIGKILL")
          }
        }))
      )
      return last
    }))
    if (end?.type !== "turn_end" || end.data.stopReason !== "cancelled") throw new Error(`bench-cluster: the failed-over turn ended ${JSON.stringify(end?.data)}`)
    failovers.push(performance.now() - killed)
    await stop(fb.child)
    await stop(fa.child, "SIGKILL")
  }

  process.stdout.write(JSON.stringify({
    turn: { deltas: DELTAS, paced: PACED, local, remote: crossed },
    creation: { sessions: SESSIONS, clients: CLIENTS, cluster: { perSecond: median(clusterRates), samples: clusterRates }, store: { perSecond: median(storeRates), samples: storeRates } },
    failover: { lockExpiryMs: LOCK_EXPIRY_S * 1000, ms: median(failovers), samples: failovers }
  }) + "\n")
} finally {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
  await server.stop()
  rmSync(tmp, { recursive: true, force: true })
}
