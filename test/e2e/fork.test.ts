/**
 * End to end: forking sessions through the built binary. Over ACP, `session/fork` (unstable;
 * advertised as `sessionCapabilities.fork`) driven by the official client's unstable binding,
 * every line checked against the unstable schema: the fork answers like `session/new`, is live
 * at once, and goes on with the conversation up to the session's last turn while the session
 * goes on with its own. At a terminal, `skein sessions fork ID [--turn N]` and what
 * `skein sessions show` says of a fork; its refusals exit 2.
 */
import { spawnSync } from "node:child_process"
import { readFileSync } from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { type AgentProcess, errorCode, expectClean, NODE, type Script, SKEIN, useAgents, waitUntil } from "../support/AgentProcess.ts"

const agents = useAgents()

/** Turn N of any session plays `turns[N-1]`; `expect` checks which prompt it got. */
const script: Script = {
  turns: [
    { expect: "^one$", calls: [[{ text: "Reading." }, { tool: "read", args: { path: "notes.txt" } }], [{ text: "It says hi." }]] },
    { expect: "^two$", calls: [[{ text: "Second answer." }]] },
    { expect: "^(three|fork three)$", calls: [[{ text: "Third answer." }]] },
    { calls: [[{ text: "Slow answer" }, { sleep_ms: 60_000 }]] }
  ]
}

const skein = (agent: AgentProcess, ...args: Array<string>) =>
  spawnSync(NODE, [SKEIN, ...args, "--home", agent.home], { cwd: agent.cwd, encoding: "utf8", timeout: 20_000 })

const logText = (agent: AgentProcess, sessionId: string) => readFileSync(path.join(agent.home, "sessions", `${sessionId}.ndjson`), "utf8")

/** A log's events without what a fork changes (`seq` is compared separately). */
const bodies = (events: ReadonlyArray<any>) => events.map((e) => ({ ts: e.ts, turn: e.turn, type: e.type, data: e.data }))

const fork = (agent: AgentProcess, params: Record<string, unknown>) =>
  agent.sdk.request<{ sessionId: string; modes?: any; configOptions?: any }>("session/fork", params)

describe("e2e: session/fork", () => {
  it("is advertised; the fork answers like session/new, is live at once, and each session goes on with its own conversation", async () => {
    const agent = await agents.start({ script, files: { "notes.txt": "hi\n" }, unstable: true })
    const init = await agent.initialize()
    expect(init.agentCapabilities?.sessionCapabilities).toMatchObject({ fork: {} })
    const parent = await agent.newSession()
    expect((await agent.prompt(parent, "one")).stopReason).toBe("end_turn")
    expect((await agent.prompt(parent, "two")).stopReason).toBe("end_turn")
    await agent.sdk.request("session/set_mode", { sessionId: parent, modeId: "plan" })
    const before = logText(agent, parent)
    const updatesBefore = agent.written.length

    const forked = await fork(agent, { sessionId: parent, cwd: agent.cwd, mcpServers: [] })
    expect(forked.sessionId).not.toBe(parent)
    expect(forked.modes?.currentModeId).toBe("plan")
    expect(forked.configOptions?.find((o: any) => o.id === "mode")?.currentValue).toBe("plan")
    // Nothing replayed: the client has the conversation already (session state, such as commands or a title, may come).
    const replayed = new Set(["user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan"])
    expect(agent.written.slice(updatesBefore).filter((n) => n.sessionId === forked.sessionId && replayed.has(n.update.sessionUpdate))).toEqual([])
    expect(logText(agent, parent)).toBe(before)

    const parentLog = agent.readLog(parent)
    const forkLog = agent.readLog(forked.sessionId)
    expect(forkLog[0]).toMatchObject({ type: "session", id: forked.sessionId, cwd: agent.cwd, forkedFrom: { sessionId: parent, turn: 2 } })
    expect(bodies(forkLog.slice(1))).toEqual(bodies(parentLog.slice(1)))
    expect(forkLog.slice(1).map((e: any) => e.seq)).toEqual(parentLog.slice(1).map((_: any, i: number) => i + 1))

    // The fork is live: it takes a prompt (its third turn) without session/load.
    await agent.sdk.request("session/set_mode", { sessionId: forked.sessionId, modeId: "default" })
    expect((await agent.prompt(forked.sessionId, "fork three")).stopReason).toBe("end_turn")
    expect(agent.updates(forked.sessionId)).toContainEqual({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Third answer." }, messageId: "m3.1" })
    expect((await agent.prompt(parent, "three")).stopReason).toBe("end_turn")
    const forkPrompts = agent.readLog(forked.sessionId).filter((e: any) => e.type === "turn_start").map((e: any) => e.data.content[0].text)
    const parentPrompts = agent.readLog(parent).filter((e: any) => e.type === "turn_start").map((e: any) => e.data.content[0].text)
    expect(forkPrompts).toEqual(["one", "two", "fork three"])
    expect(parentPrompts).toEqual(["one", "two", "three"])
    expect(logText(agent, parent).startsWith(before)).toBe(true)

    // Both are listed; the fork loads like any session (its history replayed).
    const listed = await agent.sdk.request("session/list", {})
    expect(listed.sessions.map((s) => s.sessionId).sort()).toEqual([parent, forked.sessionId].sort())
    expectClean(agent)
  })

  it("forks the turn before one that still runs; refuses unknown ids (-32002), a cwd that is no directory, children and a system prompt (-32602)", async () => {
    const subagents: Script = {
      turns: [{ calls: [[{ tool: "spawn_agent", args: { task: "look", agent: "explorer" }, id: "s1" }], [{ tool: "wait_agent", args: {}, id: "w1" }], [{ text: "done" }]] }],
      agents: { explorer: { turns: [{ calls: [[{ text: "Nothing to see." }]] }] } }
    }
    const agent = await agents.start({ script: { ...subagents, turns: [...subagents.turns, { calls: [[{ text: "Slow" }, { sleep_ms: 60_000 }]] }] }, unstable: true })
    await agent.initialize()
    const parent = await agent.newSession()
    expect((await agent.prompt(parent, "delegate")).stopReason).toBe("end_turn")
    const child = agent.readLog(parent).find((e: any) => e.type === "subagent" && e.data.event === "spawned").data.id as string

    const running = agent.prompt(parent, "slow")
    await agent.waitForUpdate(parent, (u: any) => u.sessionUpdate === "agent_message_chunk" && u.content.text === "Slow")
    const forked = await fork(agent, { sessionId: parent, cwd: agent.cwd, mcpServers: [] })
    expect(agent.readLog(forked.sessionId)[0].forkedFrom).toEqual({ sessionId: parent, turn: 1 })
    expect(agent.readLog(forked.sessionId).some((e: any) => e.turn === 2)).toBe(false)
    await agent.cancel(parent)
    expect((await running).stopReason).toBe("cancelled")

    expect(await errorCode(fork(agent, { sessionId: "no-such-session", cwd: agent.cwd, mcpServers: [] }))).toBe(-32002)
    expect(await errorCode(fork(agent, { sessionId: parent, cwd: path.join(agent.cwd, "missing"), mcpServers: [] }))).toBe(-32602)
    expect(await errorCode(fork(agent, { sessionId: child, cwd: agent.cwd, mcpServers: [] }))).toBe(-32602)
    // A system prompt Skein did not offer to apply (sessionCapabilities.systemPrompt) is refused, not ignored.
    const systemPrompt = { mode: "append", content: [{ type: "text", text: "Be brief." }] }
    expect(await errorCode(fork(agent, { sessionId: parent, cwd: agent.cwd, mcpServers: [], systemPrompt }))).toBe(-32602)
    const refused = await agent.requestRaw("session/fork", { sessionId: child, cwd: agent.cwd })
    expect(refused.error?.message).toContain("is a child session")
    // Refusals left no session behind.
    const listed = await agent.sdk.request("session/list", {})
    expect(listed.sessions.map((s) => s.sessionId).sort()).toEqual([parent, forked.sessionId].sort())
    expectClean(agent)
  })
})

describe("e2e: skein sessions fork", () => {
  /** A session of three turns written by `skein acp`, which has exited (its lock is gone). */
  const threeTurns = async () => {
    const agent = await agents.ready({ script, files: { "notes.txt": "hi\n" } })
    const sessionId = await agent.newSession()
    for (const prompt of ["one", "two", "three"]) expect((await agent.prompt(sessionId, prompt)).stopReason).toBe("end_turn")
    agent.closeStdin()
    expect((await agent.waitExit()).code).toBe(0)
    return { agent, sessionId }
  }

  it("prints the new id; the fork holds the session's turns up to N; show says where it came from; the session is untouched", async () => {
    const { agent, sessionId } = await threeTurns()
    const before = logText(agent, sessionId)
    const out = skein(agent, "sessions", "fork", sessionId.slice(0, 8), "--turn", "2")
    expect(out.stderr).toContain(`Forked ${sessionId} at turn 2: `)
    expect(out.status).toBe(0)
    const id = out.stdout.trim()
    expect(id).toMatch(/^[0-9a-f-]{36}$/)
    expect(out.stdout).toBe(`${id}\n`)
    expect(logText(agent, sessionId)).toBe(before)
    const parentLog = agent.readLog(sessionId)
    const forkLog = agent.readLog(id)
    expect(forkLog[0]).toMatchObject({ id, cwd: agent.cwd, forkedFrom: { sessionId, turn: 2 } })
    expect(bodies(forkLog.slice(1))).toEqual(bodies(parentLog.slice(1).filter((e: any) => e.turn === null || e.turn <= 2)))

    const show = skein(agent, "sessions", "show", id)
    expect(show.status).toBe(0)
    expect(show.stdout).toContain(`origin   forked from ${sessionId} at turn 2`)
    expect(show.stdout).toContain("> two")
    expect(show.stdout).not.toContain("> three")

    // Default: the last turn.
    const last = skein(agent, "sessions", "fork", sessionId)
    expect(last.status).toBe(0)
    expect(agent.readLog(last.stdout.trim())[0].forkedFrom).toEqual({ sessionId, turn: 3 })

    // The fork goes on in an editor: loaded, then prompted (its turn 3).
    const editor = await agents.ready({ script, args: ["--home", agent.home] })
    await editor.sdk.request("session/load", { sessionId: id, cwd: agent.cwd, mcpServers: [] })
    expect((await editor.prompt(id, "fork three")).stopReason).toBe("end_turn")
    expect(agent.readLog(id).filter((e: any) => e.type === "turn_start").map((e: any) => e.turn)).toEqual([1, 2, 3])
    expectClean(editor)
  })

  it("refuses with exit 2: a bad --turn, a turn that does not exist, an unknown id, a turn another process runs", async () => {
    const { agent, sessionId } = await threeTurns()
    const refused = (...args: Array<string>) => {
      const out = skein(agent, "sessions", "fork", ...args)
      expect(out.stdout).toBe("")
      return out
    }
    expect(refused(sessionId, "--turn", "x").status).toBe(2)
    expect(refused(sessionId, "--turn", "1.5").stderr).toContain("--turn must be a whole number")
    const nine = refused(sessionId, "--turn", "9")
    expect(nine.status).toBe(2)
    expect(nine.stderr).toBe(`skein: Session ${sessionId} has no turn 9: its turns are 1 to 3\n`)
    expect(refused("ffffffff").status).toBe(2)
    expect(refused().status).toBe(2)
    expect(skein(agent, "sessions", "show", sessionId, "--turn", "1").status).toBe(2)

    // A turn that runs in a live `skein acp` (which holds the session).
    const editor = await agents.ready({ script, args: ["--home", agent.home] })
    await editor.sdk.request("session/resume", { sessionId, cwd: agent.cwd, mcpServers: [] })
    const running = editor.prompt(sessionId, "four")
    await editor.waitForUpdate(sessionId, (u: any) => u.sessionUpdate === "agent_message_chunk" && u.content.text === "Slow answer")
    await waitUntil(() => agent.readLog(sessionId).some((e: any) => e.type === "turn_start" && e.turn === 4), "turn 4 in the log")
    const busy = refused(sessionId, "--turn", "4")
    expect(busy.status).toBe(2)
    expect(busy.stderr).toContain(`Turn 4 of session ${sessionId} is still running`)
    const meanwhile = skein(agent, "sessions", "fork", sessionId)
    expect(meanwhile.status).toBe(0)
    expect(agent.readLog(meanwhile.stdout.trim())[0].forkedFrom).toEqual({ sessionId, turn: 3 })
    await editor.cancel(sessionId)
    expect((await running).stopReason).toBe("cancelled")
    expectClean(editor)
  })
})
