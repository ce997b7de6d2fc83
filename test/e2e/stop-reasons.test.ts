/**
 * End to end: every ACP stop reason a turn can end with.
 */
import { describe, expect, it } from "vitest"
import { expectClean, message, useAgents } from "../support/AgentProcess.ts"

const agents = useAgents()

describe("e2e: stop reasons", () => {
  it("end_turn when the model stops by itself", async () => {
    const agent = await agents.ready({ script: { turns: [{ calls: [[{ text: "done" }, { stop: "end_turn" }]] }] } })
    const sessionId = await agent.newSession()
    expect(await agent.prompt(sessionId, "x")).toEqual({ stopReason: "end_turn" })
    expect(agent.updates(sessionId)).toEqual([message("done", "m1.1")])
    expectClean(agent)
  })

  it("max_tokens when the response is cut by the token limit", async () => {
    const agent = await agents.ready({ script: { turns: [{ calls: [[{ text: "partial" }, { stop: "max_tokens" }]] }] } })
    const sessionId = await agent.newSession()
    expect(await agent.prompt(sessionId, "x")).toEqual({ stopReason: "max_tokens" })
    expect(agent.updates(sessionId)).toEqual([message("partial", "m1.1")])
    expectClean(agent)
  })

  it("refusal when the model refuses", async () => {
    const agent = await agents.ready({ script: { turns: [{ calls: [[{ text: "I can't" }, { stop: "refusal" }]] }] } })
    const sessionId = await agent.newSession()
    expect(await agent.prompt(sessionId, "x")).toEqual({ stopReason: "refusal" })
    expect(agent.updates(sessionId)).toEqual([message("I can't", "m1.1")])
    expectClean(agent)
  })

  it("max_turn_requests when --max-turn-requests model calls all asked for tools", async () => {
    const readCall = [{ tool: "read", args: { path: "a.txt" } }]
    const agent = await agents.ready({
      args: ["--max-turn-requests", "2"],
      files: { "a.txt": "a\n" },
      script: { turns: [{ calls: [readCall, readCall, readCall, [{ text: "never" }]] }] }
    })
    const sessionId = await agent.newSession()
    expect(await agent.prompt(sessionId, "loop")).toEqual({ stopReason: "max_turn_requests" })
    const updates = agent.updates(sessionId)
    expect(updates.map((u) => [u.sessionUpdate, "toolCallId" in u ? u.toolCallId : undefined, "status" in u ? u.status : undefined]))
      .toEqual([
        ["tool_call", "call_1_1_1", "pending"],
        ["tool_call_update", "call_1_1_1", "in_progress"],
        ["tool_call_update", "call_1_1_1", "completed"],
        ["tool_call", "call_1_2_1", "pending"],
        ["tool_call_update", "call_1_2_1", "in_progress"],
        ["tool_call_update", "call_1_2_1", "completed"],
        ["agent_message_chunk", undefined, undefined]
      ])
    expect(updates[6]).toEqual(message("Stopped after 2 model calls in one turn (the maxTurnRequests limit).", "e8"))
    expectClean(agent)
  })

  it("cancelled when the client cancels the turn", async () => {
    const agent = await agents.ready({ script: { turns: [{ calls: [[{ text: "a" }, { sleep_ms: 30_000 }]] }] } })
    const sessionId = await agent.newSession()
    const prompt = agent.prompt(sessionId, "x")
    await agent.waitForUpdate(sessionId, (u) => u.sessionUpdate === "agent_message_chunk")
    await agent.cancel(sessionId)
    expect(await prompt).toEqual({ stopReason: "cancelled" })
    expect(agent.updates(sessionId)).toEqual([message("a", "m1.1")])
    expectClean(agent)
  })
})
