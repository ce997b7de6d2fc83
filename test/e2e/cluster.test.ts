/**
 * End to end: `skein serve --cluster postgres://…` runners (the built binary, real processes) on
 * a throwaway PostgreSQL server. A session made through one runner is prompted through another
 * (by an Effect program through `Skein.remote`, and by an editor through `skein acp --connect`);
 * a runner killed with SIGKILL mid-turn loses no completed event, its turn ends `cancelled` for
 * the client, no tool runs twice and the next prompt works; a runner stopped with SIGTERM lets
 * its turn end first, and its sessions go on elsewhere.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { PgClient } from "@effect/sql-pg"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import { SqlClient } from "effect/sql/SqlClient"
import * as Stream from "effect/Stream"
import { afterEach, expect, it } from "vitest"
import { Runtime, type SessionEvent, Skein } from "../../src/index.ts"
import { isEphemeral } from "../../src/log/Event.ts"
import { NODE, SKEIN, useAgents, waitUntil } from "../support/AgentProcess.ts"
import * as Postgres from "../support/Postgres.ts"
import { freePort } from "../support/Serve.ts"

const TOKEN = "a-cluster-token-long-enough"
const agents = useAgents()

const script = {
  turns: [
    { expect: "^first$", calls: [[{ text: "One." }]] },
    // Reads a file (a tool that runs once), then streams until the runner is killed.
    {
      expect: "^slow$",
      calls: [[{ text: "Reading." }, { tool: "read", args: { path: "notes.txt" }, id: "r1" }], [{ text: "part " }, { sleep_ms: 60_000 }, { text: "never" }]]
    },
    { expect: "^after$", calls: [[{ text: "Back." }]] }
  ]
}

interface Runner {
  readonly child: ChildProcess
  readonly runner: string
  readonly url: string
  stderr: string
}

const roots: Array<string> = []
const runners: Array<Runner> = []
afterEach(async () => {
  for (const r of runners.splice(0)) {
    if (r.child.exitCode === null && r.child.signalCode === null) {
      r.child.kill("SIGKILL")
      await new Promise((resolve) => r.child.once("exit", resolve))
    }
  }
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true })
})

/** A workspace and a script both runners share (the same paths, as on a shared volume). */
const workspace = () => {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "skein-cluster-")))
  roots.push(root)
  const cwd = path.join(root, "ws")
  mkdirSync(cwd)
  writeFileSync(path.join(cwd, "notes.txt"), "cluster notes\n")
  const scriptPath = path.join(root, "script.json")
  writeFileSync(scriptPath, JSON.stringify(script))
  return { root, cwd, scriptPath }
}

/** Starts a runner of the cluster in `db` and waits until it serves. */
const startRunner = async (db: string, ws: { root: string; scriptPath: string }, name: string, extra: ReadonlyArray<string> = []): Promise<Runner> => {
  const home = path.join(ws.root, `home-${name}`)
  mkdirSync(home, { recursive: true })
  const runnerPort = freePort()
  const servePort = freePort()
  const args = [
    SKEIN, "serve", "--home", home, "--script", ws.scriptPath,
    "--cluster", db, "--runner", `127.0.0.1:${runnerPort}`, "--listen", `tcp://127.0.0.1:${servePort}`,
    "--lock-expiry", "3", ...extra
  ]
  const child = spawn(NODE, args, { env: { ...process.env, SKEIN_SERVE_TOKEN: TOKEN, SKEIN_PROVIDER: "", SKEIN_HOME: "" }, stdio: ["ignore", "pipe", "pipe"] })
  const runner: Runner = { child, runner: `127.0.0.1:${runnerPort}`, url: `tcp://127.0.0.1:${servePort}`, stderr: "" }
  runners.push(runner)
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`runner ${name} did not start: ${runner.stderr}`)), 30_000)
    child.stderr!.on("data", (chunk: Buffer) => {
      runner.stderr += chunk.toString()
      if (runner.stderr.includes("listening on")) {
        clearTimeout(timer)
        resolve()
      }
    })
    child.once("exit", (code) => {
      clearTimeout(timer)
      reject(new Error(`runner ${name} exited ${code}: ${runner.stderr}`))
    })
  })
  return runner
}

/** Runs `f` against the Runtime of the runner at `url` (an Effect program using `Skein.remote`). */
const through = <A, E>(runner: Runner, f: Effect.Effect<A, E, Runtime | Scope.Scope>): Promise<A> =>
  Effect.runPromise(Effect.scoped(f).pipe(Effect.provide(Skein.remote({ url: runner.url, token: TOKEN })))) as Promise<A>

/** A turn of `sessionId` prompted through `runner`: the runner that holds the session, and every event. */
const turnThrough = (runner: Runner, sessionId: string, prompt: string) =>
  through(runner, Effect.gen(function*() {
    const session = yield* Effect.flatMap(Effect.service(Runtime), (rt) => rt.getSession(sessionId))
    return { runner: session.runner, events: yield* Stream.runCollect(session.turn([{ type: "text", text: prompt }])) }
  }))

const text = (events: ReadonlyArray<SessionEvent>) => events.flatMap((e) => (e.type === "text_delta" ? [e.data.text] : [])).join("")

/** A new session (made through `via`) that the cluster placed on `on`. */
const sessionOn = async (via: Runner, on: Runner, cwd: string): Promise<string> => {
  for (let i = 0; i < 40; i++) {
    const made = await through(via, Effect.flatMap(Effect.service(Runtime), (rt) => rt.newSession({ cwd })))
    if (made.runner === on.runner) return made.id
    await through(via, Effect.flatMap(Effect.service(Runtime), (rt) => rt.deleteSession(made.id)))
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  throw new Error(`no session landed on ${on.runner}`)
}

Postgres.describeWithPostgres("e2e: a cluster of runners on PostgreSQL", (server) => {
  it("a session made through runner A is prompted through runner B, by a program and by an editor", async () => {
    const db = (await server().createDatabase()).url
    const ws = workspace()
    const a = await startRunner(db, ws, "a")
    const b = await startRunner(db, ws, "b")
    const made = await through(a, Effect.flatMap(Effect.service(Runtime), (rt) => rt.newSession({ cwd: ws.cwd })))
    expect([a.runner, b.runner]).toContain(made.runner)
    const { events: first } = await turnThrough(b, made.id, "first")
    expect(text(first)).toBe("One.")
    expect(first.at(-1)?.type).toBe("turn_end")

    // An editor on runner B (skein acp --connect) loads it, history and all.
    const editor = await agents.ready({ script: { turns: [] }, args: ["--connect", b.url], env: { SKEIN_SERVE_TOKEN: TOKEN } })
    await editor.sdk.request("session/load", { sessionId: made.id, cwd: ws.cwd, mcpServers: [] })
    const shown = editor.updates(made.id).flatMap((u: any) => (u.sessionUpdate === "agent_message_chunk" || u.sessionUpdate === "user_message_chunk" ? [u.content.text] : []))
    expect(shown).toEqual(["first", "One."])
    // Both runners list it (the store is shared).
    const listed = await through(a, Effect.flatMap(Effect.service(Runtime), (rt) => rt.listSessions({})))
    expect(listed.sessions.map((s) => s.id)).toContain(made.id)
  })

  it("a runner's web monitor lists the cluster's sessions, its live ones with the runner that holds them, and follows one", async () => {
    const db = (await server().createDatabase()).url
    const ws = workspace()
    const a = await startRunner(db, ws, "a", ["--web", "127.0.0.1:0"])
    const made = await through(a, Effect.flatMap(Effect.service(Runtime), (rt) => rt.newSession({ cwd: ws.cwd })))
    await turnThrough(a, made.id, "first")
    const url = /monitor at (http:\/\/\S+)/.exec(a.stderr)![1]!
    const base = url.replace(/\/\?token=.*$/, "")
    const auth = { authorization: `Bearer ${url.split("token=")[1]}` }
    /** The data of an event stream until `done` holds. */
    const read = async (path: string, done: (messages: Array<any>) => boolean) => {
      const controller = new AbortController()
      const response = await fetch(base + path, { headers: auth, signal: controller.signal })
      const messages: Array<any> = []
      let buffer = ""
      for await (const chunk of response.body!) {
        buffer += Buffer.from(chunk as Uint8Array).toString("utf8")
        const lines = buffer.split("\n")
        buffer = lines.pop()!
        for (const line of lines) if (line.startsWith("data: ")) messages.push(JSON.parse(line.slice(6)))
        if (done(messages)) break
      }
      controller.abort()
      return messages
    }
    const overview = await read("/api/overview", (m) => m.some((x) => x.type === "inbox"))
    expect(overview[0]).toMatchObject({ type: "hello", mode: "live", runner: a.runner })
    expect(overview[1].rows.find((r: any) => r.id === made.id)).toMatchObject({ live: true, runner: a.runner, title: "first" })
    const events = await read(`/api/sessions/${made.id}/events`, (m) => m.some((x) => x.type === "events" && x.events.some((e: any) => e.type === "turn_end")))
    const said = events.flatMap((x) => (x.type === "events" ? x.events : [])).find((e: any) => e.type === "model_response")
    expect(said.data.parts).toEqual([{ type: "text", text: "One." }])
  })

  it("kill -9 of the runner holding a session mid-turn: the turn ends cancelled for the client, nothing completed is lost, no tool runs twice, the next prompt works", async () => {
    const db = (await server().createDatabase()).url
    const ws = workspace()
    const a = await startRunner(db, ws, "a")
    const b = await startRunner(db, ws, "b")
    const sessionId = await sessionOn(b, a, ws.cwd)
    await through(b, Effect.flatMap(Effect.flatMap(Effect.service(Runtime), (rt) => rt.getSession(sessionId)), (s) => s.prompt([{ type: "text", text: "first" }])))

    const killedAt = { t: 0 }
    const events = await through(b, Effect.gen(function*() {
      const rt = yield* Runtime
      const session = yield* rt.getSession(sessionId)
      return yield* session.turn([{ type: "text", text: "slow" }]).pipe(
        Stream.tap((e) =>
          Effect.sync(() => {
            // Once the second model call streams (the tool has run), kill the runner.
            if (e.type === "text_delta" && e.data.text === "part " && killedAt.t === 0) {
              killedAt.t = Date.now()
              a.child.kill("SIGKILL")
            }
          })
        ),
        Stream.runCollect
      )
    }))
    // How long the failover takes is measured by `npm run bench` (cluster), not asserted here.
    expect(killedAt.t).toBeGreaterThan(0)
    const end = events.at(-1)
    expect(end?.type).toBe("turn_end")
    expect(end?.type === "turn_end" ? end.data.stopReason : undefined).toBe("cancelled")
    // Nothing shown twice: the logged part of the turn, sent again from the new runner, was dropped.
    const shown = events.filter((e) => !isEphemeral(e)).map((e) => e.seq)
    expect(shown).toEqual([...new Set(shown)].sort((x, y) => x - y))

    // The log: the read ran once and its result is there; the interrupted call closed as cancelled.
    const record = await through(b, Effect.flatMap(Effect.service(Runtime), (rt) => rt.readSession(sessionId)))
    const results = record.events.filter((e) => e.type === "tool_result" && e.data.id === "r1")
    expect(results).toHaveLength(1)
    expect(results[0]?.type === "tool_result" ? results[0].data.ok : undefined).toBe(true)
    const seqs = record.events.map((e) => e.seq)
    expect(seqs).toEqual(seqs.map((_, i) => i + 1))
    expect(record.events.filter((e) => e.type === "turn_end").map((e) => (e.type === "turn_end" ? e.data.stopReason : ""))).toEqual(["end_turn", "cancelled"])

    // The next prompt works, on the runner left.
    const after = await turnThrough(b, sessionId, "after")
    expect(after.runner).toBe(b.runner)
    expect(text(after.events)).toBe("Back.")
  })

  it("kill -9 of the runner holding a session, then at once a load through another runner: loaded, never refused; the session goes on there", async () => {
    const db = (await server().createDatabase()).url
    const ws = workspace()
    writeFileSync(ws.scriptPath, JSON.stringify({ turns: [{ calls: [[{ text: "One." }]] }, { calls: [[{ text: "Back." }]] }] }))
    const a = await startRunner(db, ws, "a")
    const b = await startRunner(db, ws, "b")
    const sessionId = await sessionOn(b, a, ws.cwd)
    await through(b, Effect.flatMap(Effect.flatMap(Effect.service(Runtime), (rt) => rt.getSession(sessionId)), (s) => s.prompt([{ type: "text", text: "first" }])))
    const editor = await agents.ready({ script: { turns: [] }, args: ["--connect", b.url], env: { SKEIN_SERVE_TOKEN: TOKEN } })

    // Runner A dies just after renewing its lease, made long here: a load that waited for the
    // lease to run out (rather than for A) would be refused long after A's shards moved.
    await Effect.runPromise(Effect.provide(
      Effect.flatMap(Effect.service(SqlClient), (sql) => sql`UPDATE skein_leases SET expires_at = now() + interval '10 minutes' WHERE session_id = ${sessionId}`),
      PgClient.layer({ url: Redacted.make(db) })
    ))
    a.child.kill("SIGKILL")
    await editor.sdk.request("session/load", { sessionId, cwd: ws.cwd, mcpServers: [] })
    const shown = editor.updates(sessionId).flatMap((u: any) => (u.sessionUpdate === "agent_message_chunk" || u.sessionUpdate === "user_message_chunk" ? [u.content.text] : []))
    expect(shown).toEqual(["first", "One."])
    // The next prompt runs where the session is now.
    const after = await turnThrough(b, sessionId, "after")
    expect(after.runner).toBe(b.runner)
    expect(text(after.events)).toBe("Back.")
  }, 90_000)

  it("SIGTERM to the runner holding a session mid-turn: the turn ends as it would have, then the session goes on elsewhere", async () => {
    const db = (await server().createDatabase()).url
    const ws = workspace()
    writeFileSync(ws.scriptPath, JSON.stringify({
      turns: [
        { calls: [[{ text: "draining " }, { sleep_ms: 1500 }, { text: "done." }]] },
        { calls: [[{ text: "Still here." }]] }
      ]
    }))
    const a = await startRunner(db, ws, "a")
    const b = await startRunner(db, ws, "b")
    const sessionId = await sessionOn(b, a, ws.cwd)
    // A program follows the session through runner B the whole time.
    const followed = through(b, Effect.gen(function*() {
      const rt = yield* Runtime
      const session = yield* rt.getSession(sessionId)
      return yield* session.subscribe(0).pipe(Stream.takeUntil((e) => e.type === "turn_end" && e.turn === 2), Stream.runCollect)
    }))
    let stopped = false
    const events = await through(b, Effect.gen(function*() {
      const rt = yield* Runtime
      const session = yield* rt.getSession(sessionId)
      return yield* session.turn([{ type: "text", text: "go" }]).pipe(
        Stream.tap((e) =>
          Effect.sync(() => {
            if (e.type === "text_delta" && !stopped) {
              stopped = true
              a.child.kill("SIGTERM")
            }
          })
        ),
        Stream.runCollect
      )
    }))
    const end = events.at(-1)
    expect(end?.type === "turn_end" ? end.data.stopReason : end?.type).toBe("end_turn")
    expect(text(events)).toBe("draining done.")
    await waitUntil(() => a.child.exitCode !== null, "runner A to exit", 20_000)
    expect(a.child.exitCode).toBe(0)
    const next = await turnThrough(b, sessionId, "again")
    expect(next.runner).toBe(b.runner)
    expect(text(next.events)).toBe("Still here.")
    // The follower saw both turns, across the move, each logged event once and in order.
    const seen = await followed
    const logged = seen.filter((e) => !isEphemeral(e)).map((e) => e.seq)
    expect(logged).toEqual([...new Set(logged)].sort((x, y) => x - y))
    expect(seen.filter((e) => e.type === "turn_end").map((e) => e.turn)).toEqual([1, 2])
  })

  it("a runner's port drops a connection that does not start with the cluster's token", async () => {
    const db = (await server().createDatabase()).url
    const ws = workspace()
    const a = await startRunner(db, ws, "a")
    const [host, port] = a.runner.split(":")
    const tryWith = (first: string) =>
      new Promise<string>((resolve) => {
        const socket = net.connect({ host, port: Number(port) }, () => socket.write(first))
        let got = ""
        socket.on("data", (d) => (got += d.toString("latin1")))
        socket.on("close", () => resolve(got))
        socket.on("error", () => undefined)
        setTimeout(() => socket.destroy(), 5_000)
      })
    // A wrong token, then a request: the connection closes, nothing is answered.
    expect(await tryWith("skein-runner 0000\n" + "x".repeat(64))).toBe("")
    // No first line at all.
    expect(await tryWith("y".repeat(1024))).toBe("")
    await waitUntil(() => (a.stderr.match(/refused a runner connection/g) ?? []).length >= 2, "the refusals logged")
    expect(a.stderr).not.toContain("0000")
  })

  it("skein doctor --cluster shows the runners and how the shards are spread", async () => {
    const db = (await server().createDatabase()).url
    const ws = workspace()
    const a = await startRunner(db, ws, "a")
    const b = await startRunner(db, ws, "b")
    await waitUntil(() => {
      const out = spawnSync(NODE, [SKEIN, "doctor", "--script", ws.scriptPath, "--cluster", db], { encoding: "utf8", timeout: 20_000 }).stdout
      return out.includes(a.runner) && out.includes(b.runner) && !/unassigned: [1-9]/.test(out)
    }, "both runners to hold shards", 20_000)
    const doctor = spawnSync(NODE, [SKEIN, "doctor", "--script", ws.scriptPath, "--cluster", db], { encoding: "utf8", timeout: 20_000 })
    expect(doctor.status).toBe(0)
    expect(doctor.stdout).toContain("Cluster (PostgreSQL)")
    expect(doctor.stdout).toMatch(new RegExp(`${a.runner.replace(".", "\\.")}: healthy, \\d+ shards`))
    const down = spawnSync(NODE, [SKEIN, "doctor", "--script", ws.scriptPath, "--cluster", "postgres://skein@127.0.0.1:1/nothing"], { encoding: "utf8", timeout: 20_000 })
    expect(down.status).toBe(1)
    expect(down.stdout).toContain("not reachable")
  })
})

