/**
 * End to end: a failed turn is reported as an `agent_message_chunk` and resolves with
 * `end_turn`, never as a JSON-RPC error; the session keeps working afterwards.
 */
import { describe, expect, it } from "vitest"
import { expectClean, message, useAgents } from "../support/AgentProcess.ts"

const agents = useAgents()

describe("e2e: failed turns", () => {
  it("a provider failure becomes a message chunk naming it, then end_turn; the next turn works", async () => {
    const agent = await agents.ready({
      script: { turns: [{ calls: [[{ text: "Starting" }, { fail: "boom" }]] }, { calls: [[{ text: "recovered" }]] }] }
    })
    const sessionId = await agent.newSession()
    expect(await agent.prompt(sessionId, "go")).toEqual({ stopReason: "end_turn" })
    const updates = agent.updates(sessionId)
    expect(updates).toEqual([message("Starting", "m1.1"), message("The model call failed: boom", "e3")])
    expect(JSON.stringify(updates[1])).toContain("boom")
    expect(await agent.prompt(sessionId, "again")).toEqual({ stopReason: "end_turn" })
    expect(agent.updates(sessionId).slice(2)).toEqual([message("recovered", "m2.1")])
    expectClean(agent)
  })

  it("running out of script turns is a clear message and end_turn", async () => {
    const agent = await agents.ready({ script: { turns: [{ calls: [[{ text: "only" }]] }] } })
    const sessionId = await agent.newSession()
    expect(await agent.prompt(sessionId, "one")).toEqual({ stopReason: "end_turn" })
    expect(await agent.prompt(sessionId, "two")).toEqual({ stopReason: "end_turn" })
    expect(agent.updates(sessionId)).toEqual([
      message("only", "m1.1"),
      message("The model call failed: The script has no turn 2 (it has 1)", "e6")
    ])
    expectClean(agent)
  })

  it("running out of model calls inside a turn is a clear message and end_turn", async () => {
    const agent = await agents.ready({
      files: { "a.txt": "a\n" },
      script: { turns: [{ calls: [[{ tool: "read", args: { path: "a.txt" } }]] }] }
    })
    const sessionId = await agent.newSession()
    expect(await agent.prompt(sessionId, "read")).toEqual({ stopReason: "end_turn" })
    const updates = agent.updates(sessionId)
    expect(updates.map((u) => u.sessionUpdate)).toEqual(["tool_call", "tool_call_update", "tool_call_update", "agent_message_chunk"])
    expect(updates[3]).toEqual(message("The model call failed: The script's turn 1 has no model call 2 (it has 1)", "e6"))
    expectClean(agent)
  })

  it("a prompt that does not match the turn's expect is a clear message and end_turn", async () => {
    const agent = await agents.ready({ script: { turns: [{ expect: "^deploy", calls: [[{ text: "never shown" }]] }] } })
    const sessionId = await agent.newSession()
    expect(await agent.prompt(sessionId, "hello")).toEqual({ stopReason: "end_turn" })
    expect(agent.updates(sessionId)).toEqual([
      message("The model call failed: Turn 1 of the script expects a prompt matching /^deploy/", "e3")
    ])
    expectClean(agent)
  })
})
