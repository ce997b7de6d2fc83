/**
 * Faults: `kill -9` (no finalizer runs) in the middle of a streamed answer, at a random
 * moment, three times over the same session, each time followed by a new process that
 * `session/load`s it; and `kill -9` in the middle of a bash tool call.
 *
 * After each crash: every event the log held before it is still there, byte for byte (minus a
 * torn last line, which is cut and reported on stderr), the interrupted turn reads as
 * interrupted, every completed turn replays, and the session goes on in the new process.
 */
import { appendFileSync, existsSync, readFileSync } from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { INTERRUPTED_TOOL, INTERRUPTED_TURN } from "../../src/log/Recovery.ts"
import { type AgentProcess, expectClean, useAgents } from "../support/AgentProcess.ts"
import { groupMembers, killGroup, until } from "../fixtures/faults/harness.ts"

const agents = useAgents()

const CYCLES = 3

/** Many small deltas with pauses between them: about 2 s of streaming, never finished in time. */
const streaming = (turn: number) => ({
  calls: [Array.from({ length: 100 }, () => [{ text: `t${turn} `, repeat: 20 }, { sleep_ms: 20 }]).flat()]
})
/** Odd turns answer at once; even turns stream until the crash. */
const script = {
  turns: Array.from({ length: 2 * CYCLES + 1 }, (_, i) => (i % 2 === 0 ? { calls: [[{ text: `done ${i + 1}` }]] } : streaming(i + 1)))
}

const crash = async (agent: AgentProcess) => {
  agent.child.kill("SIGKILL")
  expect(await agent.waitExit()).toEqual({ code: null, signal: "SIGKILL" })
}

const text = (u: any): string | undefined => u.content?.text

const loadIn = async (home: string, sessionId: string, cwd: string) => {
  const agent = await agents.ready({ script, args: ["--home", home] })
  const response = await agent.sdk.request("session/load", { sessionId, cwd, mcpServers: [] })
  await agent.settled(sessionId)
  expect(response.modes?.currentModeId).toBe("default")
  return agent
}

describe("faults: kill -9 and session/load", () => {
  it(`mid-stream at a random moment, ${CYCLES} times: nothing completed is lost, torn tails are cut and reported`, async () => {
    let agent = await agents.ready({ script })
    const home = agent.home
    const cwd = agent.cwd
    const sessionId = await agent.newSession()
    let loaded = false
    /** What each interrupted turn had checkpointed. */
    const shown = new Map<number, string>()

    for (let cycle = 0; cycle < CYCLES; cycle++) {
      const quick = 2 * cycle + 1
      const streamed = quick + 1
      expect(await agent.prompt(sessionId, `quick ${quick}`)).toEqual({ stopReason: "end_turn" })
      void agent.prompt(sessionId, `stream ${streamed}`).catch(() => undefined)
      // A random moment inside the stream: after 1 to 300 of its 2,000 deltas.
      const wanted = 1 + Math.floor(Math.random() * 300)
      // (Deltas that arrive together may be sent as one chunk: count the text, not the chunks.)
      const delta = `t${streamed} `
      await until(
        () => agent.written.filter((n) => n.sessionId === sessionId).reduce((sum, n) => sum + (text(n.update) ?? "").split(delta).length - 1, 0) >= wanted,
        `${wanted} deltas of turn ${streamed}`
      )
      await crash(agent)
      // (The killed prompt is, of course, never answered: only the lines written are checked.)
      expect(agent.problems).toEqual([])

      const file = path.join(home, "sessions", `${sessionId}.ndjson`)
      let before = readFileSync(file, "utf8")
      // A crash in the middle of an append leaves part of a line; make sure one cycle has one.
      if (cycle === 1 && before.endsWith("\n")) {
        appendFileSync(file, `{"seq":999,"ts":1,"turn":${streamed},"type":"model_respo`)
        before = readFileSync(file, "utf8")
      }
      const torn = !before.endsWith("\n")
      const intact = before.slice(0, before.lastIndexOf("\n") + 1)
      const events = intact.trimEnd().split("\n").slice(1).map((l) => JSON.parse(l))
      // The turn that streamed was started and logged, and never ended; what it streamed may
      // have been checkpointed (every 500 ms): that text, and nothing else, is its answer.
      const turnEvents = events.filter((e) => e.turn === streamed)
      expect(turnEvents.map((e) => e.type).filter((t) => t !== "model_partial")).toEqual(["turn_start"])
      const checkpointed = turnEvents.filter((e) => e.type === "model_partial").flatMap((e) => e.data.parts.map((p: { text: string }) => p.text)).join("")
      expect(`t${streamed} `.repeat(2000).startsWith(checkpointed)).toBe(true)

      agent = await loadIn(home, sessionId, cwd)
      loaded = true
      if (torn) expect(agent.stderr).toMatch(/cut a torn last line/)
      else expect(agent.stderr).not.toMatch(/torn/)
      expect(agent.stderr).not.toMatch(/lock/i)

      // Every intact byte is still there; what follows closes the interrupted turn.
      const after = readFileSync(file, "utf8")
      expect(after.startsWith(intact)).toBe(true)
      const closing = checkpointed === ""
        ? []
        : [{ seq: events.at(-1)!.seq + 1, ts: expect.any(Number), turn: streamed, type: "model_response", data: { call: 1, parts: [{ type: "text", text: checkpointed }], stop: "cancelled" } }]
      expect(after.slice(intact.length).trimEnd().split("\n").map((l) => JSON.parse(l))).toEqual([
        ...closing,
        { seq: events.at(-1)!.seq + 1 + closing.length, ts: expect.any(Number), turn: streamed, type: "turn_end", data: { stopReason: "cancelled", error: INTERRUPTED_TURN } }
      ])

      // The replay: every prompt, every completed answer, and each interrupted turn as interrupted,
      // after the text it had checkpointed, once.
      shown.set(streamed, checkpointed)
      const replay = agent.updates(sessionId).map((u) => [u.sessionUpdate, text(u)])
      const expected: Array<[string, string | undefined]> = []
      for (let t = 1; t <= streamed; t++) {
        if (t % 2 === 1) expected.push(["user_message_chunk", `quick ${t}`], ["agent_message_chunk", `done ${t}`])
        else {
          expected.push(["user_message_chunk", `stream ${t}`])
          if (shown.get(t) !== "") expected.push(["agent_message_chunk", shown.get(t)])
          expected.push(["agent_message_chunk", INTERRUPTED_TURN])
        }
      }
      expect(replay).toEqual(expected)
    }
    expect(loaded).toBe(true)
    // And the session goes on.
    expect(await agent.prompt(sessionId, `quick ${2 * CYCLES + 1}`)).toEqual({ stopReason: "end_turn" })
    expect(agent.updates(sessionId).at(-1)).toEqual({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: `done ${2 * CYCLES + 1}` }, messageId: `m${2 * CYCLES + 1}.1` })
    expectClean(agent)
  })

  it("mid-tool: the running call reads as not finished, the turn as interrupted, and the session goes on", async () => {
    const toolScript = {
      turns: [
        { calls: [[{ text: "Waiting." }, { tool: "bash", args: { command: "echo $$ > pid; sleep 30" }, id: "b1" }], [{ text: "never" }]] },
        { calls: [[{ text: "Recovered." }]] }
      ]
    }
    const first = await agents.ready({ script: toolScript, args: ["--mode", "bypassPermissions"] })
    const sessionId = await first.newSession()
    void first.prompt(sessionId, "wait").catch(() => undefined)
    const pidFile = path.join(first.cwd, "pid")
    await until(() => existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() !== "", "the command's pid file")
    const pgid = Number(readFileSync(pidFile, "utf8").trim())
    try {
      await crash(first)
      const file = path.join(first.home, "sessions", `${sessionId}.ndjson`)
      const before = readFileSync(file, "utf8")
      // The command's checkpoint (the turn's first change) is logged before it runs.
      expect(before.trimEnd().split("\n").slice(1).map((l) => JSON.parse(l).type)).toEqual(["turn_start", "model_response", "tool_call", "checkpoint"])

      const second = await agents.ready({ script: toolScript, args: ["--home", first.home, "--mode", "bypassPermissions"] })
      await second.sdk.request("session/load", { sessionId, cwd: first.cwd, mcpServers: [] })
      await second.settled(sessionId)
      const updates = second.updates(sessionId)
      expect(updates.at(-2)).toMatchObject({
        sessionUpdate: "tool_call_update",
        toolCallId: "b1",
        status: "failed",
        content: [{ type: "content", content: { type: "text", text: INTERRUPTED_TOOL } }]
      })
      // The text of the turn_end that loading logged (turn_start, model_response, tool_call, checkpoint, tool_result, turn_end).
      expect(updates.at(-1)).toEqual({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: INTERRUPTED_TURN }, messageId: "e6" })
      const after = readFileSync(file, "utf8")
      expect(after.startsWith(before)).toBe(true)
      expect(after.slice(before.length).trimEnd().split("\n").map((l) => JSON.parse(l).type)).toEqual(["tool_result", "turn_end"])
      expect(await second.prompt(sessionId, "again")).toEqual({ stopReason: "end_turn" })
      expect(second.updates(sessionId).at(-1)).toEqual({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Recovered." }, messageId: "m2.1" })
      expectClean(second)
    } finally {
      killGroup(pgid)
    }
  })

  // DESIGN invariant 4, "no orphan process after exit": SIGKILL runs no finalizer, so the bash
  // tool's process group (its own session and group) would outlive the agent. The agent's
  // watchdog (src/tools/process/Watchdog.ts) sees its pipe from the agent close and kills the
  // group. (test/faults/escape.test.ts covers processes that leave the group.)
  it("mid-tool: after kill -9 and a reload, no process of the command is left", async () => {
    // The command would run for ten minutes on its own: that it is gone is the watchdog's doing.
    const toolScript = { turns: [{ calls: [[{ tool: "bash", args: { command: "echo $$ > pid; sleep 600" }, id: "b1" }]] }] }
    const first = await agents.ready({ script: toolScript, args: ["--mode", "bypassPermissions"] })
    const sessionId = await first.newSession()
    void first.prompt(sessionId, "wait").catch(() => undefined)
    const pidFile = path.join(first.cwd, "pid")
    await until(() => existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() !== "", "the command's pid file")
    const pgid = Number(readFileSync(pidFile, "utf8").trim())
    try {
      await crash(first)
      const second = await agents.ready({ script: toolScript, args: ["--home", first.home] })
      await second.sdk.request("session/load", { sessionId, cwd: first.cwd, mcpServers: [] })
      await until(() => groupMembers(pgid).length === 0, "the crashed agent's command to be killed", 20_000)
      expect(groupMembers(pgid)).toEqual([])
    } finally {
      killGroup(pgid)
    }
  })
})
