/**
 * End to end: framing is LF-only NDJSON. U+2028 and U+2029 are legal, unescaped, inside a JSON
 * string; a line that contains them is one message, and its text reaches the model intact.
 */
import { describe, expect, it } from "vitest"
import { expectClean, message, useAgents } from "../support/AgentProcess.ts"

const agents = useAgents()

const text = "first\u2028second\u2029third"

describe("e2e: framing", () => {
  it("a prompt line containing raw U+2028/U+2029 is one message and reaches the model", async () => {
    const agent = await agents.ready({
      script: { turns: [{ expect: `^${text}$`, calls: [[{ text: "matched" }]] }] }
    })
    const sessionId = await agent.newSession()
    const id = agent.nextRawId()
    const line = JSON.stringify({ jsonrpc: "2.0", id, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text }] } })
    // JSON.stringify leaves both separators unescaped: the raw bytes are on the line.
    expect(line).toContain("\u2028")
    expect(line).toContain("\u2029")
    agent.sendRaw(line)
    expect(await agent.rawResponse(id)).toEqual({ jsonrpc: "2.0", id, result: { stopReason: "end_turn" } })
    expect(agent.updates(sessionId)).toEqual([message("matched", "m1.1")])
    expect(agent.nullIdErrors).toEqual([])
    expectClean(agent)
  })

  it("the same prompt sent through the SDK client matches too", async () => {
    const agent = await agents.ready({
      script: { turns: [{ expect: `^${text}$`, calls: [[{ text: `echo: ${text}` }]] }] }
    })
    const sessionId = await agent.newSession()
    expect(await agent.prompt(sessionId, text)).toEqual({ stopReason: "end_turn" })
    expect(agent.updates(sessionId)).toEqual([message(`echo: ${text}`, "m1.1")])
    expectClean(agent)
  })
})
