/**
 * A project's own MCP servers end to end: the built agent, driven by the official ACP client, in
 * a folder below a repository's root whose `.mcp.json` files define real stdio servers (the
 * fixture written with Effect's `McpServer`). Trusted, they start and the model calls their
 * tools, the nearest file winning a name over farther ones and the user's, the client's over
 * all; not trusted, none of them is spawned; trusted at the first prompt, they start for that
 * prompt; loaded again once the folder is no longer trusted, they are not restarted from the
 * session's record. `skein doctor` lists them, their skipped entries and whether they start.
 */
import type * as acp from "@agentclientprotocol/sdk"
import { spawnSync } from "node:child_process"
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { type AgentProcess, expectClean, NODE, REPO_ROOT, SKEIN, useAgents, waitUntil } from "../support/AgentProcess.ts"
import { bundled } from "../support/FixtureBundle.ts"

const agents = useAgents()
/** The fixture MCP server, bundled once per checkout (test/support/FixtureBundle.ts). */
const FIXTURE = bundled(path.join(REPO_ROOT, "test/fixtures/mcp/server.ts"))

/** A server in a config file's shape: the fixture, which answers `echo {text: "env:WHO"}` with its `WHO`. */
const server = (env: Record<string, string>) => ({ command: NODE, args: [FIXTURE], env })
const mcpJson = (servers: Record<string, unknown>) => JSON.stringify({ mcpServers: servers })
const GIT = { ".git/HEAD": "ref: refs/heads/main\n" }

const workspaceOf = (home: string) => path.join(path.dirname(home), "workspace")
const trustFile = (home: string, folder: string, trusted: boolean) =>
  writeFileSync(path.join(home, "trust.json"), JSON.stringify({ folders: { [folder]: { trusted, at: 1_700_000_000_000 } } }))

const newSession = async (agent: AgentProcess, cwd: string, mcpServers: ReadonlyArray<unknown> = []): Promise<string> =>
  ((await agent.sdk.request("session/new", { cwd, mcpServers } as acp.NewSessionRequest)) as acp.NewSessionResponse).sessionId

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  if (!existsSync(`/proc/${pid}/stat`)) return true
  const stat = readFileSync(`/proc/${pid}/stat`, "latin1")
  return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z"
}

const ready = (agent: AgentProcess, name: string) => agent.stderr.split("\n").filter((l) => l.includes(`MCP server "${name}" is ready`)).length
const results = (agent: AgentProcess, sessionId: string) =>
  Object.fromEntries(agent.readLog(sessionId).filter((e: any) => e.type === "tool_result").map((e: any) => [e.data.id, e.data]))
const echo = (name: string, text: string, id: string) => ({ tool: `${name}__echo`, args: { text }, id })

describe("e2e: a project's MCP servers", () => {
  it("trusted, a nested folder's servers start from every .mcp.json up to the root: nearest wins, the client's over all; recorded owner-only", async () => {
    const agent = await agents.ready({
      script: {
        turns: [{
          calls: [[echo("dup", "env:WHO", "d"), echo("top", "env:WHO", "t"), echo("proj", "env:WHO", "p"), echo("proj", "env:API_TOKEN", "k")], [{ text: "done" }]]
        }]
      },
      files: {
        ...GIT,
        ".mcp.json": mcpJson({
          dup: server({ WHO: "root" }),
          top: server({ WHO: "root" }),
          proj: server({ WHO: "${PROJ_WHO:-root-default}", API_TOKEN: "${PROJ_API_TOKEN}" }),
          bad: { command: NODE, args: "not a list" }
        }),
        "pkg/.mcp.json": mcpJson({ dup: server({ WHO: "near" }) })
      },
      env: { PROJ_API_TOKEN: "pr0j-t0ken-from-env" },
      prepareHome: (home) => {
        writeFileSync(path.join(home, "config.json"), mcpJson({ dup: server({ WHO: "user" }), top: server({ WHO: "user" }) }))
        trustFile(home, workspaceOf(home), true)
      }
    })
    const pkg = path.join(agent.cwd, "pkg")
    const sessionId = await newSession(agent, pkg, [{ name: "top", command: NODE, args: [FIXTURE], env: [{ name: "WHO", value: "client" }] }])
    await waitUntil(() => ready(agent, "dup") === 1 && ready(agent, "top") === 1 && ready(agent, "proj") === 1, "the MCP servers to be ready", 20_000)

    expect((await agent.prompt(sessionId, "use them")).stopReason).toBe("end_turn")
    // Trusted already: no question.
    expect(agent.permissionRequests).toHaveLength(0)
    const by = results(agent, sessionId)
    expect([by.d.content, by.t.content, by.p.content]).toEqual(["env WHO=near", "env WHO=client", "env WHO=root-default"])
    expect(by.k.ok).toBe(true)
    expect(by.k.content).toMatch(/^env API_TOKEN=/)
    // A bad entry is skipped, and said on stderr.
    expect(agent.stderr).toContain(`MCP settings ${path.join(agent.cwd, ".mcp.json")}: mcpServers.bad: "args" must be a list of strings (skipped)`)
    // The overridden servers never ran: one of each name.
    expect(ready(agent, "dup") + ready(agent, "top") + ready(agent, "proj")).toBe(3)

    // The expanded token is in the settings beside the log (owner-only), never in the log.
    const log = agent.readLog(sessionId)
    expect(JSON.stringify(log)).not.toContain("pr0j-t0ken-from-env")
    const servers = log.find((e: any) => e.type === "mcp_servers").data.servers
    expect(servers.map((s: any) => s.name).sort()).toEqual(["dup", "proj", "top"])
    expect(servers.find((s: any) => s.name === "proj").env).toEqual(["WHO", "API_TOKEN"])
    const settings = path.join(agent.home, "sessions", `${sessionId}.mcp.json`)
    expect(statSync(settings).mode & 0o777).toBe(0o600)
    const recorded = JSON.parse(readFileSync(settings, "utf8"))
    expect(JSON.stringify(recorded)).toContain("pr0j-t0ken-from-env")
    expect([...recorded.project].sort()).toEqual(["dup", "proj"])
    expectClean(agent)
  })

  it("not trusted, nothing of the folder is spawned; the user's server runs and the session goes on", async () => {
    const agent = await agents.ready({
      script: { turns: [{ calls: [[echo("proj", "hi", "p"), echo("mine", "hi", "m")], [{ text: "done" }]] }, { calls: [[{ text: "again" }]] }] },
      files: { ...GIT, ".mcp.json": mcpJson({ proj: server({ MCP_FIXTURE_CHILD_PIDFILE: "proj.pid" }) }) },
      prepareHome: (home) => writeFileSync(path.join(home, "config.json"), mcpJson({ mine: server({}) })),
      permission: () => ({ outcome: { outcome: "selected", optionId: "reject_always" } })
    })
    const sessionId = await newSession(agent, agent.cwd)
    await waitUntil(() => ready(agent, "mine") === 1, "the user's MCP server to be ready", 20_000)
    expect((await agent.prompt(sessionId, "use them")).stopReason).toBe("end_turn")
    expect(agent.permissionRequests.map((r) => r.toolCall.title)).toEqual([expect.stringContaining("Trust this folder?")])
    expect(agent.permissionRequests[0]!.toolCall.title).toContain(".mcp.json")
    expect((await agent.prompt(sessionId, "again")).stopReason).toBe("end_turn")

    const by = results(agent, sessionId)
    expect(by.m).toMatchObject({ ok: true, content: "echo: hi" })
    expect(by.p.ok).toBe(false)
    expect(existsSync(path.join(agent.cwd, "proj.pid"))).toBe(false)
    expect(agent.stderr).not.toContain("MCP server \"proj\"")
    const events = agent.readLog(sessionId).filter((e: any) => e.type === "mcp_servers")
    expect(events.map((e: any) => e.data.servers.map((s: any) => s.name))).toEqual([["mine"]])
    expect(JSON.parse(readFileSync(path.join(agent.home, "sessions", `${sessionId}.mcp.json`), "utf8")).project).toBeUndefined()
    const doctor = spawnSync(NODE, [SKEIN, "doctor", "--home", agent.home, "--script", agent.scriptPath], { cwd: agent.cwd, encoding: "utf8" }).stdout
    expect(doctor).toContain(`${path.join(agent.cwd, ".mcp.json")}: NOT started: ${agent.cwd} was not trusted on`)
    expectClean(agent)
  })

  it("trusted at the first prompt, the folder's servers start for that prompt (replacing the user's of a name); loaded once it is no longer trusted, they do not", async () => {
    const agent = await agents.ready({
      script: {
        turns: [
          { calls: [[echo("proj", "env:WHO", "p1"), echo("dup", "env:WHO", "d1")], [{ text: "one" }]] },
          { calls: [[echo("proj", "env:WHO", "p2"), echo("dup", "env:WHO", "d2")], [{ text: "two" }]] }
        ]
      },
      files: { ...GIT, ".mcp.json": mcpJson({ proj: server({ WHO: "project" }), dup: server({ WHO: "project" }) }) },
      prepareHome: (home) => writeFileSync(path.join(home, "config.json"), mcpJson({ dup: server({ WHO: "user", MCP_FIXTURE_CHILD_PIDFILE: "user-dup.pid" }) })),
      permission: () => ({ outcome: { outcome: "selected", optionId: "allow_always" } })
    })
    const sessionId = await newSession(agent, agent.cwd)
    await waitUntil(() => ready(agent, "dup") === 1 && existsSync(path.join(agent.cwd, "user-dup.pid")), "the user's MCP server to be ready", 20_000)
    const grandchild = Number(readFileSync(path.join(agent.cwd, "user-dup.pid"), "utf8"))
    expect((await agent.prompt(sessionId, "use it")).stopReason).toBe("end_turn")
    expect(agent.permissionRequests).toHaveLength(1)
    expect(results(agent, sessionId).p1).toMatchObject({ ok: true, content: "env WHO=project" })
    expect(results(agent, sessionId).d1).toMatchObject({ ok: true, content: "env WHO=project" })
    // The user's server of that name was stopped, with what it started.
    await waitUntil(() => !alive(grandchild), "the replaced server's group to be gone", 5_000)
    const started = agent.readLog(sessionId).filter((e: any) => e.type === "mcp_servers")
    expect(started.map((e: any) => e.data.servers.map((s: any) => s.name).sort())).toEqual([["dup"], ["dup", "proj"]])
    const settings = path.join(agent.home, "sessions", `${sessionId}.mcp.json`)
    expect(JSON.parse(readFileSync(settings, "utf8")).project.sort()).toEqual(["dup", "proj"])

    // The folder is no longer trusted: loading the session does not start its server from the record.
    await agent.sdk.request("session/close", { sessionId })
    trustFile(agent.home, agent.cwd, false)
    // Nor does doctor --mcp, which starts what a session used.
    const doctor = spawnSync(NODE, [SKEIN, "doctor", "--home", agent.home, "--script", agent.scriptPath, "--mcp", sessionId], { cwd: agent.cwd, encoding: "utf8" }).stdout
    expect(doctor).toContain(`not started: proj, dup (the project's own): ${agent.cwd} was not trusted on`)
    expect(doctor).not.toContain("dup (stdio")
    await agent.sdk.request("session/load", { sessionId, cwd: agent.cwd, mcpServers: [] } as acp.LoadSessionRequest)
    // The user's, then the project's, then the user's again.
    await waitUntil(() => ready(agent, "dup") === 3, "the user's MCP server to be ready again", 20_000)
    expect((await agent.prompt(sessionId, "again")).stopReason).toBe("end_turn")
    expect(results(agent, sessionId).p2.ok).toBe(false)
    // The user's own server of that name is back.
    expect(results(agent, sessionId).d2).toMatchObject({ ok: true, content: "env WHO=user" })
    expect(ready(agent, "proj")).toBe(1)
    const last = agent.readLog(sessionId).filter((e: any) => e.type === "mcp_servers").at(-1)
    expect(last.data.servers.map((s: any) => s.name)).toEqual(["dup"])
    expect(JSON.parse(readFileSync(settings, "utf8")).project).toBeUndefined()
    expectClean(agent)
  })

  it("skein doctor lists the project's servers by file, each skipped entry, and whether they start", () => {
    const agent = agents.start({
      script: { turns: [] },
      files: {
        ...GIT,
        ".mcp.json": JSON.stringify({
          mcpServers: {
            proj: { command: "proj-server", env: { PROJ_SECRET_TOKEN: "do-not-print-me" } },
            flagged: { command: "flag-server", args: ["--token", "${DOCTOR_API_TOKEN}"] },
            broken: { command: "x", args: "no" },
            lacking: { command: "${NOT_SET_ANYWHERE}" }
          }
        })
      }
    })
    const doctor = (...args: Array<string>) =>
      spawnSync(NODE, [SKEIN, "doctor", "--home", agent.home, "--script", agent.scriptPath, ...args], { cwd: agent.cwd, encoding: "utf8", env: { ...process.env, SKEIN_HOME: "", DOCTOR_API_TOKEN: "t0ken-in-an-arg" } }).stdout
    const untrusted = doctor()
    expect(untrusted).toContain(`${path.join(agent.cwd, ".mcp.json")}: NOT started: it is not trusted yet`)
    expect(untrusted).toContain("proj: stdio proj-server (env: PROJ_SECRET_TOKEN)")
    expect(untrusted).toContain("skipped: mcpServers.broken: \"args\" must be a list of strings")
    expect(untrusted).toContain("skipped: mcpServers.lacking: ${NOT_SET_ANYWHERE} is not set in Skein's environment")
    expect(untrusted).toContain("flagged: stdio flag-server --token ")
    expect(untrusted).not.toContain("do-not-print-me")
    expect(untrusted).not.toContain("t0ken-in-an-arg")
    expect(doctor("--trust")).toContain(`${path.join(agent.cwd, ".mcp.json")}: started (every folder is trusted in this run`)
  })
})
