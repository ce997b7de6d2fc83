/**
 * End to end: many sessions in one agent process, prompted at the same time. Each session gets
 * its own updates only, and each prompt ends with end_turn.
 */
import { describe, expect, it } from "vitest"
import { expectClean, message, useAgents } from "../support/AgentProcess.ts"

const agents = useAgents()

describe("e2e: parallel sessions", () => {
  it("20 sessions created and prompted in parallel each get their own updates and end_turn", async () => {
    const agent = await agents.ready({
      script: { turns: [{ calls: [[{ text: "a" }, { sleep_ms: 50 }, { text: "b" }]] }] }
    })
    const ids = await Promise.all(Array.from({ length: 20 }, () => agent.newSession()))
    expect(new Set(ids).size).toBe(20)
    const responses = await Promise.all(ids.map((id) => agent.prompt(id, `prompt for ${id}`)))
    expect(responses).toEqual(ids.map(() => ({ stopReason: "end_turn" })))
    for (const id of ids) expect(agent.updates(id)).toEqual([message("a", "m1.1"), message("b", "m1.1")])
    // Nothing went to a session that was not created, and nothing went astray.
    // Each session also got its title and its command list.
    expect(agent.written.length).toBe(80)
    expect(agent.written.every((n) => ids.includes(n.sessionId))).toBe(true)
    // The turns really overlapped: more than one session had streamed "a" before the first "b".
    const firstB = agent.written.findIndex((n) => (n.update as { content?: { text?: string } }).content?.text === "b")
    expect(firstB).toBeGreaterThan(1)
    expect(agent.unanswered()).toEqual([])
    expectClean(agent)
  })
})
