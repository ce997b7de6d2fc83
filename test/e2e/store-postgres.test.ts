/**
 * End to end: `skein acp --store postgres://…` keeps its sessions in a PostgreSQL database (a
 * throwaway server this file starts), so another Skein — another home, another machine —
 * lists, loads and goes on with them; while one Skein holds a session, another is refused it.
 */
import { spawnSync } from "node:child_process"
import { existsSync, readdirSync } from "node:fs"
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

  it("a database that cannot be reached is a clear error on session/new, and nothing is written", async () => {
    const agent = await agents.ready({ script, args: ["--store", `postgres://skein@127.0.0.1:1/nothing`] })
    const failed = await agent.sdk.request("session/new", { cwd: agent.cwd, mcpServers: [] }).then(() => undefined, (error) => error)
    expect(failed).toBeDefined()
    expect(String(failed?.message ?? JSON.stringify(failed))).toMatch(/session database/i)
  })
})
