/**
 * MCP servers end to end: the built agent, driven by a real ACP client, starts the stdio MCP
 * servers passed in `session/new`, the scripted model calls their tools through the permission
 * gate, results reach the client, a crash is told once, and no server outlives its session or
 * the agent.
 */
import type * as acp from "@agentclientprotocol/sdk"
import { spawnSync } from "node:child_process"
import { existsSync, readFileSync, statSync } from "node:fs"
import * as path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { type AgentProcess, expectClean, message, NODE, REPO_ROOT, SKEIN, useAgents, waitUntil } from "../support/AgentProcess.ts"
import { bundled } from "../support/FixtureBundle.ts"

// Until the MCP integration is applied to the server (src/server/AcpServer.ts passes `mcpServers`
// on), there is nothing to drive end to end. Remove this guard with the integration.

const agents = useAgents()
/** The fixture MCP server, bundled once per checkout (test/support/FixtureBundle.ts). */
const FIXTURE = bundled(path.join(REPO_ROOT, "test/fixtures/mcp/server.ts"))

/** Grandchildren the fixture spawned, killed after each test whatever happened (they would outlive a SIGKILLed agent). */
const spawned: Array<number> = []
afterEach(() => {
  for (const pid of spawned.splice(0)) {
    try {
      process.kill(pid, "SIGKILL")
    } catch {
      // gone, as it should be
    }
  }
})

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  if (process.platform !== "linux" || !existsSync(`/proc/${pid}/stat`)) return true
  const stat = readFileSync(`/proc/${pid}/stat`, "latin1")
  return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z"
}

const fixture = (agent: AgentProcess, name: string, extra: Record<string, string> = {}) => ({
  name,
  command: NODE,
  args: [FIXTURE],
  env: Object.entries({ MCP_FIXTURE_NOTES: agent.cwd, ...extra }).map(([key, value]) => ({ name: key, value }))
})

/** `session/new` with MCP servers (the SDK's typed helper in AgentProcess passes none). */
const newSession = async (agent: AgentProcess, mcpServers: ReadonlyArray<unknown>): Promise<string> =>
  ((await agent.sdk.request("session/new", { cwd: agent.cwd, mcpServers } as acp.NewSessionRequest)) as acp.NewSessionResponse).sessionId

/** The grandchild `sleep` the fixture starts (it lives in the server's process group). */
const grandchild = async (file: string): Promise<number> => {
  await waitUntil(() => existsSync(file) && readFileSync(file, "utf8") !== "", "the fixture's grandchild", 10_000)
  const pid = Number(readFileSync(file, "utf8"))
  spawned.push(pid)
  return pid
}

const readyLines = (agent: AgentProcess, name: string) => agent.stderr.split("\n").filter((l) => l.includes(`MCP server "${name}" is ready`)).length

const toolUpdates = (updates: ReadonlyArray<any>, id: string) =>
  updates.filter((u) => (u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update") && u.toolCallId === id)

describe("e2e: MCP servers from session/new", () => {
  it("advertises what works, connects in the background, gates the mutating tool, and the results reach the client", async () => {
    const agent = agents.start({
      script: {
        turns: [{
          calls: [
            [
              { tool: "fix__echo", args: { text: "hi" }, id: "e1" },
              { tool: "fix__write_note", args: { name: "note.txt", text: "hello" }, id: "w1" },
              { tool: "fix__picture", args: {}, id: "p1" }
            ],
            [{ text: "done" }]
          ]
        }]
      }
    })
    const init = await agent.initialize()
    expect(init.agentCapabilities?.mcpCapabilities).toEqual({ http: true, sse: false })

    const pidfile = path.join(agent.root, "child.pid")
    const sessionId = await newSession(agent, [fixture(agent, "fix", { MCP_FIXTURE_CHILD_PIDFILE: pidfile, MCP_FIXTURE_TOKEN: "t0ps3cret" })])
    // session/new does not wait for the server: it answered before the server was ready.
    expect(readyLines(agent, "fix")).toBe(0)
    await waitUntil(() => readyLines(agent, "fix") === 1, "the MCP server to be ready", 10_000)
    const child = await grandchild(pidfile)

    expect((await agent.prompt(sessionId, "use the tools")).stopReason).toBe("end_turn")
    // Only the mutating tool asked, with the live call and "always" covering the whole tool.
    expect(agent.permissionRequests.map((r) => r.toolCall.toolCallId)).toEqual(["w1"])
    const request = agent.permissionRequests[0]!
    expect(request.toolCall).toMatchObject({ title: "fix — write_note", kind: "other", rawInput: { name: "note.txt", text: "hello" } })
    expect(request.options.map((o) => o.name)).toContain("Always allow fix__write_note calls")

    const updates = agent.updates(sessionId)
    expect(toolUpdates(updates, "e1")[0]).toMatchObject({ sessionUpdate: "tool_call", title: "fix — echo", kind: "read" })
    expect(toolUpdates(updates, "e1").at(-1)).toMatchObject({ status: "completed", content: [{ type: "content", content: { type: "text", text: "echo: hi" } }] })
    const wrote = toolUpdates(updates, "w1").at(-1) as any
    expect(wrote.status).toBe("completed")
    expect(wrote.content[0].content.text).toBe(`wrote note.txt\nnote.txt: file://${path.join(agent.cwd, "note.txt")}`)
    expect((toolUpdates(updates, "p1").at(-1) as any).content[0].content.text).toBe("[image image/png, 4 bytes]\na picture")
    expect(readFileSync(path.join(agent.cwd, "note.txt"), "utf8")).toBe("hello")
    expect(updates.at(-1)).toEqual(message("done", "m1.1"))

    // The log says which servers were used, without the values of their env; those are owner-only beside it.
    const log = agent.readLog(sessionId)
    const recorded = log.find((e: any) => e.type === "mcp_servers")
    expect(recorded.data).toEqual({ servers: [{ name: "fix", transport: "stdio", command: NODE, env: ["MCP_FIXTURE_NOTES", "MCP_FIXTURE_CHILD_PIDFILE", "MCP_FIXTURE_TOKEN"] }] })
    expect(JSON.stringify(log)).not.toContain("t0ps3cret")
    const settings = path.join(agent.home, "sessions", `${sessionId}.mcp.json`)
    expect(statSync(settings).mode & 0o777).toBe(0o600)
    expect(readFileSync(settings, "utf8")).toContain("t0ps3cret")

    // Closing the session stops its server, grandchildren included.
    await agent.sdk.request("session/close", { sessionId })
    await waitUntil(() => !alive(child), "the server's group to be gone", 3_000)
    expectClean(agent)
  })

  it("skein replay --rerun starts the session's recorded MCP servers: their calls run again and match", async () => {
    const agent = await agents.ready({
      script: { turns: [{ calls: [[{ tool: "fix__echo", args: { text: "again" }, id: "e1" }], [{ text: "done" }]] }] }
    })
    const sessionId = await newSession(agent, [fixture(agent, "fix", { MCP_FIXTURE_TOKEN: "t0ps3cret" })])
    await waitUntil(() => readyLines(agent, "fix") === 1, "the MCP server to be ready", 10_000)
    expect((await agent.prompt(sessionId, "echo")).stopReason).toBe("end_turn")
    const rerun = spawnSync(NODE, [SKEIN, "replay", sessionId, "--rerun", "--json", "--home", agent.home], {
      cwd: agent.cwd,
      encoding: "utf8",
      timeout: 60_000
    })
    expect(rerun.status, rerun.stderr).toBe(0)
    const report = JSON.parse(rerun.stdout)
    expect(report.diverged).toBe(false)
    expect(report.turns.map((t: any) => [t.compared, t.differences.length])).toEqual([[1, 0]])
    expect(rerun.stdout).not.toContain("t0ps3cret")
    expectClean(agent)
  })

  it("a crash mid-call is told once in the turn; the session goes on; load without servers reconnects the recorded ones", async () => {
    const agent = await agents.ready({
      script: {
        turns: [
          { calls: [[{ tool: "fix__crash", args: {}, id: "c1" }], [{ text: "carrying on" }]] },
          { calls: [[{ text: "still here" }]] },
          { calls: [[{ tool: "fix__echo", args: { text: "back" }, id: "e2" }], [{ text: "ok" }]] }
        ]
      },
      permission: () => ({ outcome: { outcome: "selected", optionId: "allow_once" } })
    })
    const pidfile = path.join(agent.root, "child.pid")
    const sessionId = await newSession(agent, [fixture(agent, "fix", { MCP_FIXTURE_CHILD_PIDFILE: pidfile })])
    await waitUntil(() => readyLines(agent, "fix") === 1, "the MCP server to be ready", 10_000)
    const child = await grandchild(pidfile)

    expect((await agent.prompt(sessionId, "crash it")).stopReason).toBe("end_turn")
    const crashed = toolUpdates(agent.updates(sessionId), "c1").at(-1) as any
    expect(crashed.status).toBe("failed")
    expect(crashed.content[0].content.text).toContain("The MCP server \"fix\" failed: The server exited with code 3")
    const notices = agent.updates(sessionId).filter((u: any) => u.sessionUpdate === "agent_message_chunk" && u.content.text.includes("is unavailable"))
    expect(notices).toHaveLength(1)
    expect((notices[0] as any).content.text).toContain("MCP server \"fix\" is unavailable: The server exited with code 3.")
    expect(agent.updates(sessionId).at(-1)).toEqual(message("carrying on", "m1.1"))
    expect(agent.stderr).toContain("MCP server \"fix\" failed: The server exited with code 3")
    await waitUntil(() => !alive(child), "the crashed server's group to be gone", 3_000)

    // Told once: the next turn says nothing more about it.
    const before = agent.updates(sessionId).length
    expect((await agent.prompt(sessionId, "again")).stopReason).toBe("end_turn")
    expect(agent.updates(sessionId).slice(before)).toEqual([message("still here", "m2.1")])
    expect(agent.readLog(sessionId).filter((e: any) => e.type === "notice")).toHaveLength(1)

    // Reopened without servers from the client: the recorded ones start again.
    await agent.sdk.request("session/close", { sessionId })
    await agent.sdk.request("session/load", { sessionId, cwd: agent.cwd, mcpServers: [] })
    await waitUntil(() => readyLines(agent, "fix") === 2, "the recorded MCP server to be ready again", 10_000)
    await grandchild(pidfile)
    expect((await agent.prompt(sessionId, "echo")).stopReason).toBe("end_turn")
    expect(toolUpdates(agent.updates(sessionId), "e2").at(-1)).toMatchObject({ status: "completed", content: [{ content: { text: "echo: back" } }] })
    // The same servers: nothing new recorded.
    expect(agent.readLog(sessionId).filter((e: any) => e.type === "mcp_servers")).toHaveLength(1)
    expectClean(agent)
  })

  it("a command that does not exist is reported in the first turn; closing stdin leaves no server behind", async () => {
    const agent = await agents.ready({ script: { turns: [{ calls: [[{ text: "hello" }]] }] } })
    const pidfile = path.join(agent.root, "child.pid")
    const sessionId = await newSession(agent, [
      { name: "ghost", command: "skein-no-such-mcp-server", args: [], env: [] },
      fixture(agent, "fix", { MCP_FIXTURE_CHILD_PIDFILE: pidfile })
    ])
    await waitUntil(() => readyLines(agent, "fix") === 1, "the MCP server to be ready", 10_000)
    const child = await grandchild(pidfile)
    expect((await agent.prompt(sessionId, "hi")).stopReason).toBe("end_turn")
    expect(agent.updates(sessionId)).toEqual([
      message("MCP server \"ghost\" is unavailable: Cannot start `skein-no-such-mcp-server` (ENOENT). Its tools are withdrawn for the rest of this session.\n\n", "e3"),
      message("hello", "m1.1")
    ])
    // What the session's servers log names the session, not the request that opened it.
    const failed = agent.stderr.split("\n").find((line) => line.includes('MCP server "ghost" failed'))
    expect(failed).toContain(`session: '${sessionId}'`)
    expect(failed).not.toContain("session/new")
    agent.closeStdin()
    expect((await agent.waitExit(5_000)).code).toBe(0)
    expect(alive(child)).toBe(false)
    expectClean(agent)
  })
})
