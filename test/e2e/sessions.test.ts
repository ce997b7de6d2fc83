/**
 * End to end: durable sessions over ACP, driven by the official SDK client against the built
 * agent. A session written by one process is loaded (replayed before the response), resumed,
 * listed (pages, cwd filter), closed and deleted by the next; two processes never hold one
 * session.
 */
import { spawnSync } from "node:child_process"
import { existsSync, mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { type AgentProcess, errorCode, expectClean, NODE, SKEIN, useAgents } from "../support/AgentProcess.ts"

const agents = useAgents()

/** Updates about the session itself (its title, its command list), which a replay does not hold. */
const METADATA: ReadonlySet<string> = new Set(["available_commands_update", "session_info_update"])
/** The command list, sent after a load: not part of the replay (the title is: it is the history's). */
const isMetadata = (line: string) => /"sessionUpdate":"available_commands_update"/.test(line)

const readScript = {
  turns: [
    {
      calls: [
        [{ think: "Look first." }, { text: "Reading." }, { tool: "read", args: { path: "notes.txt" } }],
        [{ text: "It says hello." }]
      ]
    },
    { calls: [[{ text: "Second answer." }]] },
    { calls: [[{ text: "Third answer, after the reload." }]] }
  ]
}

/** Runs a first agent through two turns and a mode change, then lets it exit cleanly. */
const recordSession = async (): Promise<{ first: AgentProcess; sessionId: string }> => {
  const first = await agents.ready({ script: readScript, files: { "notes.txt": "hello\n" } })
  const sessionId = await first.newSession()
  await first.prompt(sessionId, "Read the notes")
  await first.prompt(sessionId, "And then?")
  await first.sdk.request("session/set_mode", { sessionId, modeId: "acceptEdits" })
  first.closeStdin()
  expect(await first.waitExit()).toEqual({ code: 0, signal: null })
  expectClean(first)
  return { first, sessionId }
}

/** A second agent over the first one's home (a later process). */
const nextProcess = (first: AgentProcess) =>
  agents.ready({ script: readScript, args: ["--home", first.home] })

const textOf = (u: { sessionUpdate: string; content?: unknown }) =>
  (u.content as { text?: string } | undefined)?.text

describe("e2e: durable sessions", () => {
  it("initialize advertises loadSession and list, resume, close and delete", async () => {
    const agent = agents.start({ script: { turns: [] } })
    const result = await agent.initialize()
    expect(result.agentCapabilities?.loadSession).toBe(true)
    expect(result.agentCapabilities?.sessionCapabilities).toEqual({ additionalDirectories: {}, list: {}, resume: {}, close: {}, delete: {}, fork: {} })
    expectClean(agent)
  })

  it("session/load in a new process replays the whole history, then responds with the restored mode", async () => {
    const { first, sessionId } = await recordSession()
    const second = await nextProcess(first)
    const response = await second.sdk.request("session/load", { sessionId, cwd: first.cwd, mcpServers: [] })
    await second.settled(sessionId)
    expect(response.modes?.currentModeId).toBe("acceptEdits")
    expect(response.configOptions?.find((o) => o.id === "mode")?.currentValue).toBe("acceptEdits")
    // The title the live session showed, where it showed it: before the first prompt's updates.
    const all = second.allUpdates(sessionId)
    expect(all.filter((u) => u.sessionUpdate === "session_info_update")).toEqual([{ sessionUpdate: "session_info_update", title: "Read the notes" }])
    expect(all.findIndex((u) => u.sessionUpdate === "session_info_update")).toBeLessThan(all.findIndex((u) => u.sessionUpdate === "user_message_chunk"))

    const updates = second.updates(sessionId)
    expect(updates.map((u) => [u.sessionUpdate, textOf(u) ?? ("status" in u ? u.status : undefined)])).toEqual([
      ["user_message_chunk", "Read the notes"],
      ["agent_thought_chunk", "Look first."],
      ["agent_message_chunk", "Reading."],
      ["tool_call", "in_progress"],
      ["tool_call_update", "completed"],
      ["agent_message_chunk", "It says hello."],
      ["user_message_chunk", "And then?"],
      ["agent_message_chunk", "Second answer."],
      ["current_mode_update", undefined],
      ["config_option_update", undefined]
    ])
    expect(updates[4]).toMatchObject({ toolCallId: "call_1_1_1", content: [{ type: "content", content: { type: "text", text: "1\thello" } }] })

    // Every replayed update was written before the response.
    const responseLine = second.lines.findIndex((line) => line.includes('"result":{"modes"'))
    expect(responseLine).toBeGreaterThan(0)
    // (The session's command list follows the response: it is about the session, not its history.)
    const lastUpdateLine = second.lines.map((l) => l.includes('"session/update"') && !isMetadata(l)).lastIndexOf(true)
    expect(responseLine).toBeGreaterThan(lastUpdateLine)

    // The session goes on in the new process: turn 3, numbering continued in the same log.
    expect(await second.prompt(sessionId, "Once more")).toEqual({ stopReason: "end_turn" })
    const log = first.readLog(sessionId)
    expect(log.filter((e) => e.type === "turn_start").map((e) => e.turn)).toEqual([1, 2, 3])
    const seqs = log.slice(1).map((e) => e.seq as number)
    expect(seqs).toEqual(seqs.map((_, i) => i + 1))
    expectClean(second)
  })

  it("`skein replay --acp` prints exactly the updates session/load sends", async () => {
    const { first, sessionId } = await recordSession()
    const printed = spawnSync(NODE, [SKEIN, "replay", sessionId, "--acp", "--home", first.home], { encoding: "utf8" })
    expect(printed.status).toBe(0)
    const second = await nextProcess(first)
    await second.sdk.request("session/load", { sessionId, cwd: first.cwd, mcpServers: [] })
    await second.settled(sessionId)
    const sent = second.lines.filter((l) => l.includes('"session/update"') && !isMetadata(l))
    expect(printed.stdout.trimEnd().split("\n")).toEqual(sent)
    expectClean(second)
  })

  it("`skein replay --acp` and session/load write the same bytes for text with U+2028, U+2029 and a non-BMP character", async () => {
    const odd = "one\u2028two\u2029three 😀"
    const script = {
      turns: [{ calls: [[{ think: `Thinking ${odd}` }, { text: `Reading ${odd}` }, { tool: "read", args: { path: "notes.txt" } }], [{ text: `It says ${odd}` }]] }]
    }
    const first = await agents.ready({ script, files: { "notes.txt": `hello ${odd}\n` } })
    const sessionId = await first.newSession()
    await first.prompt(sessionId, `Read ${odd}`)
    first.closeStdin()
    expect(await first.waitExit()).toEqual({ code: 0, signal: null })

    const printed = spawnSync(NODE, [SKEIN, "replay", sessionId, "--acp", "--home", first.home])
    expect(printed.status).toBe(0)
    const second = await agents.ready({ script, args: ["--home", first.home] })
    await second.sdk.request("session/load", { sessionId, cwd: first.cwd, mcpServers: [] })
    await second.settled(sessionId)
    const sent = second.lines.filter((l) => l.includes('"session/update"') && !isMetadata(l))
    expect(printed.stdout.equals(Buffer.from(sent.map((l) => `${l}\n`).join(""), "utf8"))).toBe(true)
    // Both are escaped the same way: no raw separator (readline would split there), the emoji as is.
    const text = printed.stdout.toString("utf8")
    expect(/[\u2028\u2029]/.test(text)).toBe(false)
    expect(text).toContain("one\\u2028two\\u2029three 😀")
    // And they carry the texts unchanged: the prompt, the thought, the replies and the tool's output.
    expect(second.updates(sessionId).map((u) => [u.sessionUpdate, textOf(u)])).toEqual([
      ["user_message_chunk", `Read ${odd}`],
      ["agent_thought_chunk", `Thinking ${odd}`],
      ["agent_message_chunk", `Reading ${odd}`],
      ["tool_call", undefined],
      ["tool_call_update", undefined],
      ["agent_message_chunk", `It says ${odd}`]
    ])
    expect(second.updates(sessionId)[4]).toMatchObject({ content: [{ type: "content", content: { type: "text", text: `1\thello ${odd}` } }] })
    expectClean(second)
  })

  it("session/resume restores the session without replaying it", async () => {
    const { first, sessionId } = await recordSession()
    const second = await nextProcess(first)
    const response = await second.sdk.request("session/resume", { sessionId, cwd: first.cwd, mcpServers: [] })
    expect(response.modes?.currentModeId).toBe("acceptEdits")
    expect(second.written.filter((n) => n.sessionId === sessionId && !METADATA.has(n.update.sessionUpdate))).toEqual([])
    expect(await second.prompt(sessionId, "Once more")).toEqual({ stopReason: "end_turn" })
    expect(second.updates(sessionId).map(textOf)).toEqual(["Third answer, after the reload."])
    expectClean(second)
  })

  it("load and resume refuse a wrong cwd and an unknown session", async () => {
    const { first, sessionId } = await recordSession()
    const second = await nextProcess(first)
    expect(await errorCode(second.sdk.request("session/load", { sessionId, cwd: second.cwd, mcpServers: [] }))).toBe(-32602)
    expect(await errorCode(second.sdk.request("session/resume", { sessionId: "no-such-session", cwd: first.cwd, mcpServers: [] }))).toBe(-32002)
    expect(await errorCode(second.sdk.request("session/load", { sessionId: "../../etc/passwd", cwd: first.cwd, mcpServers: [] }))).toBe(-32002)
    expectClean(second)
  })

  it("session/list pages through sessions newest first, with titles, and filters by cwd", async () => {
    const agent = await agents.ready({ script: { turns: [{ calls: [[{ text: "ok" }]] }] } })
    // 60 logged sessions, every third in another directory, written at known times.
    const other = join(agent.root, "other")
    mkdirSync(other)
    mkdirSync(join(agent.home, "sessions"), { recursive: true })
    const ids: Array<string> = []
    const { utimesSync } = await import("node:fs")
    for (let i = 0; i < 60; i++) {
      const id = `listed-${String(i).padStart(2, "0")}`
      ids.push(id)
      const cwd = i % 3 === 0 ? other : agent.cwd
      const file = join(agent.home, "sessions", `${id}.ndjson`)
      writeFileSync(
        file,
        JSON.stringify({ type: "session", v: 1, id, cwd, created: 1 }) + "\n" +
          JSON.stringify({ seq: 1, ts: 1, turn: 1, type: "turn_start", data: { content: [{ type: "text", text: `Task ${i}` }] } }) + "\n"
      )
      utimesSync(file, 1_000_000 + i, 1_000_000 + i)
    }
    const live = await agent.newSession()
    await agent.prompt(live, "The newest one")

    const first = await agent.sdk.request("session/list", {})
    expect(first.sessions.length).toBe(50)
    expect(first.sessions[0]).toMatchObject({ sessionId: live, cwd: agent.cwd, title: "The newest one" })
    expect(first.sessions[1]).toEqual({ sessionId: "listed-59", cwd: agent.cwd, title: "Task 59", updatedAt: new Date((1_000_000 + 59) * 1000).toISOString() })
    expect(first.nextCursor).toEqual(expect.any(String))
    const second = await agent.sdk.request("session/list", { cursor: first.nextCursor! })
    expect(second.sessions.map((s) => s.sessionId)).toEqual(ids.slice(0, 11).reverse())
    expect(second.nextCursor ?? undefined).toBeUndefined()

    const filtered = await agent.sdk.request("session/list", { cwd: other })
    expect(filtered.sessions.map((s) => s.sessionId)).toEqual(ids.filter((_, i) => i % 3 === 0).reverse())
    expect(await errorCode(agent.sdk.request("session/list", { cursor: "garbage" }))).toBe(-32602)
    expectClean(agent)
  })

  it("session/close cancels the running turn, frees the session and releases its lock; it loads again", async () => {
    const agent = await agents.ready({ script: { turns: [{ calls: [[{ text: "a" }, { sleep_ms: 30_000 }]] }] } })
    const sessionId = await agent.newSession()
    const lock = join(agent.home, "sessions", `${sessionId}.lock`)
    expect(existsSync(lock)).toBe(true)
    const prompt = agent.prompt(sessionId, "go")
    await agent.waitForUpdate(sessionId, (u) => u.sessionUpdate === "agent_message_chunk")
    expect(await agent.sdk.request("session/close", { sessionId })).toEqual({})
    expect(await prompt).toEqual({ stopReason: "cancelled" })
    expect(existsSync(lock)).toBe(false)
    expect(await errorCode(agent.prompt(sessionId, "again"))).toBe(-32002)
    expect(agent.readLog(sessionId).at(-1)).toMatchObject({ type: "turn_end", data: { stopReason: "cancelled" } })
    await agent.sdk.request("session/load", { sessionId, cwd: agent.cwd, mcpServers: [] })
    expectClean(agent)
  })

  it("session/delete removes a live session's log; an unknown id succeeds", async () => {
    const agent = await agents.ready({ script: { turns: [{ calls: [[{ text: "ok" }]] }] } })
    const sessionId = await agent.newSession()
    await agent.prompt(sessionId, "hi")
    expect(await agent.sdk.request("session/delete", { sessionId })).toEqual({})
    expect(existsSync(join(agent.home, "sessions", `${sessionId}.ndjson`))).toBe(false)
    expect((await agent.sdk.request("session/list", {})).sessions).toEqual([])
    expect(await errorCode(agent.prompt(sessionId, "again"))).toBe(-32002)
    expect(await agent.sdk.request("session/delete", { sessionId })).toEqual({})
    expect(await agent.sdk.request("session/delete", { sessionId: "never-was" })).toEqual({})
    expectClean(agent)
  })

  it("a second process cannot load or delete a session the first has open, but lists it", async () => {
    const first = await agents.ready({ script: readScript, files: { "notes.txt": "hello\n" } })
    const sessionId = await first.newSession()
    await first.prompt(sessionId, "Read the notes")
    const second = await nextProcess(first)
    const failure = await second.sdk.request("session/load", { sessionId, cwd: first.cwd, mcpServers: [] }).catch((e: unknown) => e)
    expect(failure).toMatchObject({ code: -32603 })
    expect(String((failure as Error).message)).toContain(`another Skein process (pid ${first.child.pid}`)
    expect(await errorCode(second.sdk.request("session/delete", { sessionId }))).toBe(-32603)
    const listed = await second.sdk.request("session/list", {})
    expect(listed.sessions.map((s) => s.sessionId)).toEqual([sessionId])
    // The first process still owns it and goes on.
    expect(await first.prompt(sessionId, "And then?")).toEqual({ stopReason: "end_turn" })
    expectClean(first)
    expectClean(second)
  })
})
