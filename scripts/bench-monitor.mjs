// The web monitor under load, in headless Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core): `skein serve --web` with the scripted provider, sessions driven by an Effect
// program through `Skein.remote` (dist/index.mjs).
// - a turn of --deltas one-character deltas: its time from the prompt to its end with the
//   session's page open, against the same turn with no page (interleaved), and the page's
//   longest main-thread stall meanwhile (a 50 ms timer's lateness), and its JS heap after;
// - --sessions live sessions: the overview's time from navigation to every row shown, then one
//   short turn in each at once, with the page's longest stall meanwhile.
// Prints one JSON object on stdout ({skipped} without Chromium). Options: --runs N,
// --deltas N, --sessions N.
import { spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import os from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const SKEIN = join(root, "dist", "skein.mjs")
const CHROMIUM = process.env.SKEIN_TEST_CHROMIUM ?? "/usr/bin/chromium"
const { values } = parseArgs({ options: { runs: { type: "string" }, deltas: { type: "string" }, sessions: { type: "string" } } })
const int = (v, fallback) => (v === undefined || v === "" ? fallback : Math.max(1, Number.parseInt(v, 10) || fallback))
const RUNS = int(values.runs, 3)
const DELTAS = int(values.deltas, 100_000)
const SESSIONS = int(values.sessions, 200)

if (!existsSync(CHROMIUM)) {
  process.stdout.write(JSON.stringify({ skipped: `${CHROMIUM} is missing (apt-get install chromium)` }) + "\n")
  process.exit(0)
}
const { chromium } = await import("playwright-core")
const { Runtime, Skein } = await import(join(root, "dist", "index.mjs"))

const tmp = realpathSync(mkdtempSync(join(os.tmpdir(), "skein-bench-monitor-")))
const workspace = join(tmp, "workspace")
mkdirSync(workspace)
const servers = []
/** A `skein serve --web` whose sessions each play `turns`; its home and monitor URL. */
const startServer = async (name, turns) => {
  const home = join(tmp, `home-${name}`)
  mkdirSync(home)
  const scriptPath = join(tmp, `script-${name}.json`)
  writeFileSync(scriptPath, JSON.stringify({ turns }))
  const server = spawn(process.execPath, [SKEIN, "serve", "--home", home, "--script", scriptPath, "--web", "127.0.0.1:0"], { stdio: ["ignore", "ignore", "pipe"] })
  servers.push(server)
  let stderr = ""
  const url = await new Promise((resolve, reject) => {
    server.stderr.on("data", (c) => {
      stderr += c
      const m = /monitor at (http:\/\/\S+)/.exec(stderr)
      if (m && stderr.includes("listening on")) resolve(m[1])
    })
    server.once("exit", (code) => reject(new Error(`skein serve exited ${code}: ${stderr}`)))
  })
  return { home, url, base: url.replace(/\/\?token=.*$/, "") }
}
const one = await startServer("turn", Array.from({ length: 2 * RUNS + 1 }, () => ({ calls: [[{ text: "x", repeat: DELTAS }]] })))
const many = await startServer("many", [{ calls: [[{ text: "a short answer" }]] }])

const profile = mkdtempSync(join(tmp, "chromium-"))
const context = await chromium.launchPersistentContext(profile, {
  executablePath: CHROMIUM,
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
})
const page = await context.newPage()
await page.goto(one.url)
const watchStalls = () =>
  page.evaluate(() => {
    window.__stall = 0
    let last = performance.now()
    clearInterval(window.__timer)
    window.__timer = setInterval(() => {
      const t = performance.now()
      window.__stall = Math.max(window.__stall, t - last - 50)
      last = t
    }, 50)
  })
const stall = () => page.evaluate(() => window.__stall)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] ?? null

const run = (server, effect) => Effect.runPromise(Effect.scoped(Effect.provide(effect, Skein.remote({ url: `unix:${server.home}/skein.sock` }))))
const base = one.base

const turn = await run(one, Effect.gen(function*() {
  const runtime = yield* Runtime
  const session = yield* runtime.newSession({ cwd: workspace })
  yield* Effect.promise(() => page.goto(`${base}/sessions/${session.id}`))
  const timeTurn = Effect.gen(function*() {
    const t0 = performance.now()
    yield* Stream.runDrain(session.turn([{ type: "text", text: "go" }]))
    return performance.now() - t0
  })
  yield* timeTurn // warm-up
  const withPage = []
  const withoutPage = []
  const stalls = []
  for (let i = 0; i < RUNS; i++) {
    yield* Effect.promise(() => page.goto(`${base}/sessions/${session.id}`))
    yield* Effect.promise(() => page.locator(".footer").first().waitFor())
    yield* Effect.promise(watchStalls)
    withPage.push(yield* timeTurn)
    yield* Effect.promise(() => page.waitForFunction((n) => document.querySelectorAll(".footer").length >= n && [...document.querySelectorAll(".footer")].every((f) => f.textContent.startsWith("Ended")), i + 2, { timeout: 60_000 }))
    stalls.push(yield* Effect.promise(stall))
    yield* Effect.promise(() => page.goto("about:blank"))
    withoutPage.push(yield* timeTurn)
  }
  yield* Effect.promise(() => page.goto(`${base}/sessions/${session.id}`))
  yield* Effect.promise(() => page.waitForFunction(() => document.querySelectorAll(".footer").length > 0))
  const heap = yield* Effect.promise(() => page.evaluate(() => (performance.memory ? performance.memory.usedJSHeapSize : null)))
  return { withPage, withoutPage, withPageMs: median(withPage), withoutPageMs: median(withoutPage), stalls, stallMs: median(stalls), heapBytes: heap }
}))

// Many sessions, on a server whose sessions each play one short turn.
const sessions = await run(many, Effect.gen(function*() {
  const runtime = yield* Runtime
  const all = []
  for (let i = 0; i < SESSIONS; i++) all.push(yield* runtime.newSession({ cwd: workspace }))
  const t0 = performance.now()
  yield* Effect.promise(() => page.goto(many.url))
  yield* Effect.promise(() => page.waitForFunction((n) => document.querySelectorAll("ul.tree > li").length >= n, SESSIONS, { timeout: 60_000 }))
  const overviewMs = performance.now() - t0
  yield* Effect.promise(watchStalls)
  const t1 = performance.now()
  yield* Effect.forEach(all, (s) => Stream.runDrain(s.turn([{ type: "text", text: "go" }])), { concurrency: "unbounded", discard: true })
  const burstMs = performance.now() - t1
  yield* Effect.promise(() => page.waitForTimeout(500))
  const burstStall = yield* Effect.promise(stall)
  return { count: SESSIONS, overviewMs, burstMs, burstStallMs: burstStall }
}))
const result = { deltas: DELTAS, runs: RUNS, turn, sessions }

await context.close()
for (const server of servers) {
  server.kill("SIGTERM")
  await new Promise((resolve) => server.once("exit", resolve))
}
rmSync(tmp, { recursive: true, force: true })
process.stdout.write(JSON.stringify(result) + "\n")
