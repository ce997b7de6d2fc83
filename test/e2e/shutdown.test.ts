/**
 * End to end: stdin EOF shuts the agent down cleanly, even mid-turn: the running turn is
 * interrupted and logged as cancelled, and the process exits 0 without waiting for the model
 * call it cut short (which would take ten minutes; how soon it exits is `npm run bench`'s).
 */
import { describe, expect, it } from "vitest"
import { LOG_VERSION } from "../../src/log/Event.ts"
import { expectClean, useAgents } from "../support/AgentProcess.ts"

const agents = useAgents()

describe("e2e: shutdown", () => {
  it("stdin EOF mid-turn exits 0 at once and the log ends with turn_end cancelled", async () => {
    const agent = await agents.ready({ script: { turns: [{ calls: [[{ text: "a" }, { sleep_ms: 600_000 }]] }] } })
    const sessionId = await agent.newSession()
    const prompt = agent.prompt(sessionId, "x").catch((error: unknown) => error)
    await agent.waitForUpdate(sessionId, (u) => u.sessionUpdate === "agent_message_chunk")
    agent.closeStdin()
    const exit = await agent.waitExit(20_000)
    expect(exit).toEqual({ code: 0, signal: null })
    await prompt

    const log = agent.readLog(sessionId)
    expect(log[0]).toMatchObject({ type: "session", v: LOG_VERSION, id: sessionId, cwd: agent.cwd })
    const events = log.slice(1)
    const seqs = events.map((e) => e.seq as number)
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b))
    expect(new Set(seqs).size).toBe(seqs.length)
    expect(events.at(-1)).toMatchObject({ turn: 1, type: "turn_end", data: { stopReason: "cancelled" } })
    expect(agent.stderr).not.toMatch(/Error|defect/i)
    expectClean(agent)
  })

  // When stdin ends, a running prompt is cancelled and given its moment to answer, so it answers
  // `{"stopReason":"cancelled"}`, not a JSON-RPC error -32800 "Request cancelled" (DESIGN.md
  // invariant 3: "a cancelled prompt answers cancelled").
  it("stdin EOF mid-turn still answers the running prompt with stopReason cancelled", async () => {
    const agent = await agents.ready({ script: { turns: [{ calls: [[{ text: "a" }, { sleep_ms: 30_000 }]] }] } })
    const sessionId = await agent.newSession()
    // An error answer would be a rejection in the SDK: keep it as a value to compare.
    const prompt = agent.prompt(sessionId, "x").catch((error: unknown) => error)
    await agent.waitForUpdate(sessionId, (u) => u.sessionUpdate === "agent_message_chunk")
    agent.closeStdin()
    await agent.waitExit(5_000)
    expect(await prompt).toEqual({ stopReason: "cancelled" })
    expectClean(agent)
  })

  it("stdin EOF while idle exits 0", async () => {
    const agent = await agents.ready({ script: { turns: [] } })
    await agent.newSession()
    agent.closeStdin()
    expect(await agent.waitExit(5_000)).toEqual({ code: 0, signal: null })
    expectClean(agent)
  })
})
