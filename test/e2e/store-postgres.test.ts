/**
 * End to end: `skein acp --store postgres://…` keeps its sessions in a PostgreSQL database (a
 * throwaway server this file starts), so another Skein — another home, another machine —
 * lists, loads and goes on with them; while one Skein holds a session, another is refused it.
 */
import { spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { expect, it } from "vitest"
import { errorCode, expectClean, NODE, type Script, SKEIN, useAgents } from "../support/AgentProcess.ts"
import * as Postgres from "../support/Postgres.ts"

const agents = useAgents()

const script: Script = {
  turns: [
    { expect: "^first$", calls: [[{ text: "One." }]] },
    { expect: "^second$", calls: [[{ text: "Two." }]] }
  ]
}

const texts = (updates: ReadonlyArray<any>) => updates.flatMap((u) => (u.sessionUpdate === "agent_message_chunk" || u.sessionUpdate === "user_message_chunk" ? [u.content.text] : []))

Postgres.describeWithPostgres("e2e: sessions kept in PostgreSQL", (server) => {
  it("one Skein writes a session, another (another home) lists, loads and continues it; a held session is refused elsewhere", async () => {
    const db = await server().createDatabase()
    const store = ["--store", db.url]
    const first = await agents.ready({ script, args: store })
    const sessionId = await first.newSession()
    expect((await first.prompt(sessionId, "first")).stopReason).toBe("end_turn")
    // Nothing under the home: the session is in the database.
    const sessions = path.join(first.home, "sessions")
    expect(existsSync(sessions) ? readdirSync(sessions) : []).toEqual([])

    // While the first Skein holds it, another is refused it, with a clear error.
    const second = await agents.ready({ script, args: store })
    const listed = await second.sdk.request<{ sessions: Array<{ sessionId: string; title?: string }> }>("session/list", {})
    expect(listed.sessions.map((s) => [s.sessionId, s.title])).toEqual([[sessionId, "first"]])
    const refused = await second.sdk.request("session/load", { sessionId, cwd: first.cwd, mcpServers: [] }).then(() => undefined, (error) => error)
    expect(errorCode(refused)).toBeDefined()
    expect(String(refused?.message ?? JSON.stringify(refused))).toMatch(/open in another Skein|lease/i)

    // Once the first lets go, the second loads it (the whole history replayed) and goes on.
    await first.sdk.request("session/close", { sessionId })
    await second.sdk.request("session/load", { sessionId, cwd: first.cwd, mcpServers: [] })
    expect(texts(second.updates(sessionId))).toEqual(["first", "One."])
    expect((await second.prompt(sessionId, "second")).stopReason).toBe("end_turn")
    expect(texts(second.updates(sessionId))).toEqual(["first", "One.", "Two."])
    expectClean(first)
    expectClean(second)

    // At a terminal, with a home of its own: the same sessions, by id or by a prefix of it.
    const cli = (...args: Array<string>) =>
      spawnSync(NODE, [SKEIN, ...args, "--store", db.url, "--home", path.join(second.home, "elsewhere")], { cwd: first.cwd, encoding: "utf8", timeout: 20_000 })
    const listedAtTerminal = cli("sessions", "list", "--json")
    expect(listedAtTerminal.status).toBe(0)
    expect(listedAtTerminal.stdout.trim().split("\n").map((l) => JSON.parse(l).id)).toEqual([sessionId])
    const shown = cli("sessions", "show", sessionId.slice(0, 8))
    expect(shown.status).toBe(0)
    expect(shown.stdout).toContain("> second")
    const replayed = cli("replay", sessionId)
    expect(replayed.status).toBe(0)
    expect(replayed.stdout).toContain("Two.")
    expect(cli("sessions", "show", "zzzz").status).toBe(2)
  })

  it("skein doctor --store says whether the database answers, its schema version and its sessions", async () => {
    const db = await server().createDatabase()
    // A ready provider (a script), so the exit code is the store's.
    const scriptFile = path.join(mkdtempSync(path.join(os.tmpdir(), "skein-doctor-")), "script.json")
    writeFileSync(scriptFile, JSON.stringify(script))
    const doctor = (url: string) => spawnSync(NODE, [SKEIN, "doctor", "--script", scriptFile, "--store", url], { encoding: "utf8", timeout: 20_000 })
    const fresh = doctor(db.url)
    expect(fresh.status).toBe(0)
    expect(fresh.stdout).toContain("Session store (PostgreSQL)")
    expect(fresh.stdout).toMatch(/PostgreSQL \d+[^\n]*: reachable/)
    expect(fresh.stdout).toContain("schema: not created yet")
    // Once a Skein used it: the schema's version and the sessions.
    const agent = await agents.ready({ script, args: ["--store", db.url] })
    const sessionId = await agent.newSession()
    expect((await agent.prompt(sessionId, "first")).stopReason).toBe("end_turn")
    const used = doctor(db.url)
    expect(used.stdout).toMatch(/schema: version 2 \(lease_presence\), 2 migration\(s\) applied/)
    expect(used.stdout).toMatch(/sessions: 1 \(3 events\); held by a Skein now: 1/)
    const down = doctor("postgres://skein@127.0.0.1:1/nothing")
    expect(down.stdout).toContain("not reachable")
    expect(down.status).toBe(1)
  })

  it("a database that cannot be reached is a clear error on session/new, and nothing is written", async () => {
    const agent = await agents.ready({ script, args: ["--store", `postgres://skein@127.0.0.1:1/nothing`] })
    const failed = await agent.sdk.request("session/new", { cwd: agent.cwd, mcpServers: [] }).then(() => undefined, (error) => error)
    expect(failed).toBeDefined()
    expect(String(failed?.message ?? JSON.stringify(failed))).toMatch(/session database/i)
  })
})
