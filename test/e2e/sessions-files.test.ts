/**
 * End to end: the session store's files are the user's alone, whatever the umask (here the
 * loosest, 000): the sessions directory 0700, logs, locks and the MCP settings (with their
 * secrets) 0600. `skein sessions rm` removes every file of the session, secrets included.
 */
import { spawnSync } from "node:child_process"
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import * as path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { rawAgents } from "../fixtures/faults/harness.ts"
import { LOG_VERSION } from "../../src/log/Event.ts"
import { NODE, REPO_ROOT, SKEIN } from "../support/AgentProcess.ts"

const agents = rawAgents()
afterEach(() => agents.disposeAll())

const mode = (file: string) => (statSync(file).mode & 0o777).toString(8)

describe("e2e: session files", () => {
  it("a v1 log loads in an editor: upgraded once and quietly, the original kept as its backup", async () => {
    const agent = agents.start({ script: { turns: [] } })
    await agent.initialize()
    const dir = path.join(agent.home, "sessions")
    mkdirSync(dir, { recursive: true })
    const original = readFileSync(path.join(REPO_ROOT, "test/fixtures/logs/v1-basic.ndjson"), "utf8").split("/fixture/project").join(agent.cwd)
    writeFileSync(path.join(dir, "fixture-v1.ndjson"), original)
    const loaded = await agent.request("session/load", { sessionId: "fixture-v1", cwd: agent.cwd, mcpServers: [] })
    expect(loaded.error).toBeUndefined()
    expect(readdirSync(dir).sort()).toEqual(["fixture-v1.lock", "fixture-v1.ndjson", "fixture-v1.ndjson.v1.bak"])
    expect(readFileSync(path.join(dir, "fixture-v1.ndjson.v1.bak"), "utf8")).toBe(original)
    expect(JSON.parse(readFileSync(path.join(dir, "fixture-v1.ndjson"), "utf8").split("\n")[0]!).v).toBe(LOG_VERSION)
    // Routine: nothing about it in the editor's transcript.
    expect(agent.stderr).toBe("")
    expect(agent.problems).toEqual([])
  })

  it("under umask 000: the sessions directory is 0700, every file in it 0600; sessions rm removes them all", async () => {
    const agent = agents.start({ script: { turns: [{ calls: [[{ text: "Hi." }]] }] }, umask: "000" })
    await agent.initialize()
    const created = await agent.request("session/new", {
      cwd: agent.cwd,
      mcpServers: [{ name: "tools", command: "/nonexistent/mcp-server", args: [], env: [{ name: "API_TOKEN", value: "s3cret-token" }] }]
    })
    const sessionId = created.result.sessionId as string
    expect((await agent.prompt(sessionId, "hello")).result).toEqual({ stopReason: "end_turn" })
    const dir = path.join(agent.home, "sessions")
    expect(readdirSync(dir).sort()).toEqual([`${sessionId}.lock`, `${sessionId}.mcp.json`, `${sessionId}.ndjson`])
    expect(readFileSync(path.join(dir, `${sessionId}.mcp.json`), "utf8")).toContain("s3cret-token")
    expect(mode(dir)).toBe("700")
    for (const name of readdirSync(dir)) expect([name, mode(path.join(dir, name))]).toEqual([name, "600"])

    agent.closeStdin()
    expect(await agent.waitExit()).toEqual({ code: 0, signal: null })
    const rm = spawnSync(NODE, [SKEIN, "sessions", "rm", sessionId, "--home", agent.home], { encoding: "utf8", timeout: 20_000 })
    expect(rm.status).toBe(0)
    expect(readdirSync(dir)).toEqual([])
  })
})
