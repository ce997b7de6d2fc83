/**
 * Hooks and workspace trust end to end: the built agent driven by the official ACP client.
 * A repository's PreToolUse hook denies `rm -rf` and the model reads why; a repository's
 * hook does not run until the folder is trusted (the question answered once, remembered in
 * Skein's home); `skein replay --rerun` repeats the logged decisions without running hooks.
 */
import { spawnSync } from "node:child_process"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { expectClean, NODE, SKEIN, useAgents } from "../support/AgentProcess.ts"

const agents = useAgents()

const settingsJson = (hooks: Record<string, unknown>) => JSON.stringify({ hooks })
const commandHook = (command: string, matcher = "") => [{ matcher, hooks: [{ type: "command", command }] }]

const DENY_RM = "jq -r .tool_input.command | grep -q 'rm -rf' && { echo 'rm -rf is not allowed here: use git clean' >&2; exit 2; }; exit 0"

const rmTurn = { calls: [[{ tool: "bash", args: { command: "rm -rf build" }, id: "b1" }], [{ text: "done" }]] }

describe("e2e: hooks and workspace trust", () => {
  it("a PreToolUse hook denies rm -rf: the client and the model see why, and a re-run repeats the decision without running the hook", async () => {
    const agent = await agents.ready({
      script: { turns: [rmTurn] },
      files: { ".claude/settings.json": settingsJson({ PreToolUse: commandHook(DENY_RM, "Bash") }), "build/out.txt": "x" },
      args: ["--trust"]
    })
    const sessionId = await agent.newSession()
    expect((await agent.prompt(sessionId, "clean the build")).stopReason).toBe("end_turn")
    expect(existsSync(path.join(agent.cwd, "build", "out.txt"))).toBe(true)
    const log = agent.readLog(sessionId)
    const result = log.find((e: any) => e.type === "tool_result")
    expect(result.data.ok).toBe(false)
    expect(result.data.content).toContain("rm -rf is not allowed here: use git clean")
    expect(log.filter((e: any) => e.type === "hook").map((e: any) => [e.data.event, e.data.decision])).toEqual([["PreToolUse", "deny"]])
    // The client's card of the call says why too.
    const update = agent.received.find((n) => n.update.sessionUpdate === "tool_call_update" && (n.update as any).status === "failed")
    expect(JSON.stringify(update?.update)).toContain("use git clean")
    expectClean(agent)
    agent.closeStdin()
    await agent.waitExit()

    // The hook now would leave a mark; the re-run answers from the log and never runs it.
    writeFileSync(path.join(agent.cwd, ".claude", "settings.json"), settingsJson({ PreToolUse: commandHook("touch hook-ran; exit 0", "Bash") }))
    const rerun = spawnSync(NODE, [SKEIN, "replay", sessionId, "--rerun", "--home", agent.home], { cwd: agent.cwd, encoding: "utf8" })
    expect(rerun.stdout).toContain("behave as logged")
    expect(rerun.status).toBe(0)
    expect(existsSync(path.join(agent.cwd, "hook-ran"))).toBe(false)
    expect(existsSync(path.join(agent.cwd, "build", "out.txt"))).toBe(true)
  })

  it("an untrusted repository's hook does not run until the folder is trusted; the answer is asked once and remembered", async () => {
    let trustAnswer = "cancel"
    const agent = await agents.ready({
      script: { turns: [{ calls: [[{ text: "one" }]] }, { calls: [[{ text: "two" }]] }] },
      files: { ".claude/settings.json": settingsJson({ UserPromptSubmit: commandHook("echo ran >> hook-runs; exit 0") }) },
      permission: () => {
        if (trustAnswer === "cancel") return { outcome: { outcome: "cancelled" } }
        return { outcome: { outcome: "selected", optionId: trustAnswer } }
      }
    })
    const runs = () => (existsSync(path.join(agent.cwd, "hook-runs")) ? readFileSync(path.join(agent.cwd, "hook-runs"), "utf8").split("\n").filter(Boolean).length : 0)
    const doctor = () => spawnSync(NODE, [SKEIN, "doctor", "--home", agent.home, "--script", agent.scriptPath], { cwd: agent.cwd, encoding: "utf8" }).stdout

    expect(doctor()).toContain("NOT loaded (its hooks, agents, commands, skills, settings and MCP servers): it is not trusted yet")
    // No answer: nothing of the folder loads, and the session does not ask again.
    const first = await agent.newSession()
    await agent.prompt(first, "hello")
    await agent.prompt(first, "again")
    expect(agent.permissionRequests).toHaveLength(1)
    const question = agent.permissionRequests[0]!
    expect(question.toolCall.title).toContain("Trust this folder?")
    expect(question.toolCall.title).toContain(".claude/settings.json")
    expect(question.options.map((o) => o.optionId)).toEqual(["allow_always", "reject_always"])
    expect(runs()).toBe(0)
    expect(existsSync(path.join(agent.home, "trust.json"))).toBe(false)

    // A new session asks again; trusted, the hook runs from that prompt on.
    trustAnswer = "allow_always"
    const second = await agent.newSession()
    await agent.prompt(second, "hello")
    expect(agent.permissionRequests).toHaveLength(2)
    expect(runs()).toBe(1)
    const trust = JSON.parse(readFileSync(path.join(agent.home, "trust.json"), "utf8"))
    expect(trust.folders[agent.cwd].trusted).toBe(true)
    expect(doctor()).toContain("loaded: ")

    // Remembered: the next session is not asked, and its hook runs.
    const third = await agent.newSession()
    await agent.prompt(third, "hello")
    expect(agent.permissionRequests).toHaveLength(2)
    expect(runs()).toBe(2)
    expectClean(agent)
  })

  it("\"Don't trust\" is remembered: never asked again, nothing of the folder loads, and doctor says why", async () => {
    const agent = await agents.ready({
      script: { turns: [{ calls: [[{ text: "one" }]] }] },
      files: {
        ".claude/settings.json": settingsJson({ UserPromptSubmit: commandHook("touch hook-ran; exit 0") }),
        ".skein/commands/ship.md": "Ship $ARGUMENTS\n"
      },
      permission: () => ({ outcome: { outcome: "selected", optionId: "reject_always" } })
    })
    const first = await agent.newSession()
    await agent.prompt(first, "hello")
    const second = await agent.newSession()
    await agent.prompt(second, "hello")
    expect(agent.permissionRequests).toHaveLength(1)
    expect(existsSync(path.join(agent.cwd, "hook-ran"))).toBe(false)
    // Its command is not offered either.
    const commands = agent.received.filter((n) => n.update.sessionUpdate === "available_commands_update").flatMap((n: any) => n.update.availableCommands.map((c: any) => c.name))
    expect(commands).not.toContain("ship")
    const doctor = spawnSync(NODE, [SKEIN, "doctor", "--home", agent.home, "--script", agent.scriptPath], { cwd: agent.cwd, encoding: "utf8" }).stdout
    expect(doctor).toContain("was not trusted on")
    expectClean(agent)
  })
})
