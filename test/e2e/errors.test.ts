/**
 * End to end: JSON-RPC errors. Unknown session → -32002, unknown method → -32601,
 * malformed JSON → -32700 with id null (and the agent keeps serving), invalid params → -32602.
 */
import { describe, expect, it } from "vitest"
import { errorCode, expectClean, useAgents } from "../support/AgentProcess.ts"

const agents = useAgents()

const script = { turns: [{ calls: [[{ text: "ok" }]] }] }

describe("e2e: protocol errors", () => {
  it("session/prompt on an unknown session id is -32002", async () => {
    const agent = await agents.ready({ script })
    const prompt = agent.sdk.request("session/prompt", {
      sessionId: "00000000-0000-4000-8000-000000000000",
      prompt: [{ type: "text", text: "hi" }]
    })
    expect(await errorCode(prompt)).toBe(-32002)
    // A session/cancel for an unknown session is a notification: nothing is answered.
    await agent.cancel("no-such-session")
    const sessionId = await agent.newSession()
    expect(await agent.prompt(sessionId, "hi")).toEqual({ stopReason: "end_turn" })
    expect(agent.unanswered()).toEqual([])
    expectClean(agent)
  })

  it("an unknown method is -32601 and answers the request's id", async () => {
    const agent = await agents.ready({ script })
    const response = await agent.requestRaw("session/frobnicate", { sessionId: "x" })
    expect(response.id).toMatch(/^raw-/)
    expect(response.error?.code).toBe(-32601)
    expect(response.result).toBeUndefined()
    expectClean(agent)
  })

  it("a malformed JSON line is -32700 with id null, and the agent keeps serving", async () => {
    const agent = await agents.ready({ script })
    agent.sendRaw(`{"jsonrpc":"2.0","id":"raw-broken","method":"session/new","params":{`)
    await new Promise((resolve) => setTimeout(resolve, 50))
    agent.sendRaw("this is not json at all")
    const sessionId = await agent.newSession()
    expect(agent.nullIdErrors.map((m) => [m.id, m.error?.code])).toEqual([[null, -32700], [null, -32700]])
    expect(await agent.prompt(sessionId, "still there?")).toEqual({ stopReason: "end_turn" })
    expectClean(agent)
  })

  it("session/new without cwd is -32602", async () => {
    const agent = await agents.ready({ script })
    const response = await agent.requestRaw("session/new", { mcpServers: [] })
    expect(response.error?.code).toBe(-32602)
    expectClean(agent)
  })

  it("session/new with a relative cwd is -32602", async () => {
    const agent = await agents.ready({ script })
    const response = await agent.requestRaw("session/new", { cwd: "relative/dir", mcpServers: [] })
    expect(response.error?.code).toBe(-32602)
    expectClean(agent)
  })

  it("session/new with a cwd that does not exist is -32602", async () => {
    const agent = await agents.ready({ script })
    expect(await errorCode(agent.newSession(`${agent.root}/missing`))).toBe(-32602)
    expectClean(agent)
  })

  it("session/prompt with params of the wrong shape is -32602", async () => {
    const agent = await agents.ready({ script })
    const sessionId = await agent.newSession()
    const response = await agent.requestRaw("session/prompt", { sessionId, prompt: "not an array" })
    expect(response.error?.code).toBe(-32602)
    expect(await agent.prompt(sessionId, "fine")).toEqual({ stopReason: "end_turn" })
    expectClean(agent)
  })

  it("messages that are JSON but not JSON-RPC requests are -32600, and the agent keeps serving", async () => {
    const agent = await agents.ready({ script })
    agent.sendRaw("[]")
    agent.sendRaw("null")
    agent.sendRaw("42")
    const id = agent.nextRawId()
    agent.sendRaw(JSON.stringify({ id, method: "session/new", params: { cwd: agent.cwd, mcpServers: [] } })) // no "jsonrpc"
    expect((await agent.rawResponse(id)).error?.code).toBe(-32600)
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(agent.nullIdErrors.map((m) => m.error?.code)).toEqual([-32600, -32600, -32600])
    const sessionId = await agent.newSession()
    expect(await agent.prompt(sessionId, "hi")).toEqual({ stopReason: "end_turn" })
    expectClean(agent)
  })

  it("prompt content the agent did not advertise (audio) is -32602", async () => {
    const agent = await agents.ready({ script })
    const sessionId = await agent.newSession()
    const prompt = agent.sdk.request("session/prompt", {
      sessionId,
      prompt: [{ type: "audio", data: "UklGRg==", mimeType: "audio/wav" }]
    })
    expect(await errorCode(prompt)).toBe(-32602)
    expect(agent.updates(sessionId)).toEqual([])
    expectClean(agent)
  })
})
