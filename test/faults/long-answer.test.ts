/**
 * A very long answer (10 MB of text in 100,000 deltas) streams to the end, its checkpoints
 * hold it once, and the agent's memory stays far below the heap limit: checkpoints used to
 * cut each one's text out of the whole answer so far, which grew without bound (the agent ran
 * out of memory on this turn).
 */
import { describe, expect, it } from "vitest"
import { useAgents } from "../support/AgentProcess.ts"

const agents = useAgents()

describe("faults: a very long answer", () => {
  it("100,000 deltas of 100 characters stream to the end; the checkpoints add up to the answer", async () => {
    const delta = "z".repeat(99) + "\n"
    const agent = await agents.ready({ script: { turns: [{ calls: [[{ text: delta, repeat: 100_000 }]] }] } })
    const sessionId = await agent.newSession()
    expect((await agent.prompt(sessionId, "write a lot")).stopReason).toBe("end_turn")
    const log = agent.readLog(sessionId)
    const checkpointed = log.filter((e: any) => e.type === "model_partial").flatMap((e: any) => e.data.parts.map((p: any) => p.text)).join("")
    const answer = log.find((e: any) => e.type === "model_response").data.parts[0].text
    expect(answer.length).toBe(10_000_000)
    expect(answer.startsWith(checkpointed)).toBe(true)
    const streamed = agent.written.filter((n) => n.sessionId === sessionId && n.update.sessionUpdate === "agent_message_chunk")
      .reduce((sum, n) => sum + (n.update as { content: { text: string } }).content.text.length, 0)
    expect(streamed).toBe(10_000_000)
  })
})
