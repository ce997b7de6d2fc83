/**
 * End to end: one `skein acp` process per test, driven by the official ACP client over stdio.
 * Basics: initialize, text turns, thoughts, the read tool.
 */
import { writeFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { expectClean, message, thought, useAgents } from "../support/AgentProcess.ts"

const agents = useAgents()

describe("e2e: basics", () => {
  it("initialize answers protocol v1, the sign-in method and logout, agentInfo skein, loadSession true", async () => {
    const agent = agents.start({ script: { turns: [] } })
    const result = await agent.initialize()
    expect(result.protocolVersion).toBe(1)
    // Sign-in (test/e2e/sign-in.test.ts): the agent method; the terminal one only for a client that runs those.
    expect(result.authMethods?.map((m) => m.id)).toEqual(["skein-config"])
    expect(result.agentCapabilities?.auth).toEqual({ logout: {} })
    expect(result.agentInfo?.name).toBe("skein")
    expect(result.agentCapabilities?.loadSession).toBe(true)
    expect(agent.unanswered()).toEqual([])
    expectClean(agent)
  })

  it("initialize with a protocol version the agent does not speak answers the one it does (1)", async () => {
    const agent = agents.start({ script: { turns: [] } })
    const result = await agent.sdk.request("initialize", { protocolVersion: 2, clientCapabilities: {} })
    expect(result.protocolVersion).toBe(1)
    expectClean(agent)
  })

  it("streams a single text turn as deltas and ends it with end_turn", async () => {
    const agent = await agents.ready({ script: { turns: [{ calls: [[{ text: "Hello" }, { text: ", world." }]] }] } })
    const sessionId = await agent.newSession()
    const response = await agent.prompt(sessionId, "hi")
    expect(response).toEqual({ stopReason: "end_turn" })
    expect(agent.updates(sessionId)).toEqual([message("Hello", "m1.1"), message(", world.", "m1.1")])
    expect(agent.unanswered()).toEqual([])
    expectClean(agent)
  })

  it("two prompts in sequence consume script turns 1 and 2", async () => {
    const agent = await agents.ready({
      script: {
        turns: [
          { expect: "^first$", calls: [[{ text: "one" }]] },
          { expect: "^second$", calls: [[{ text: "two" }, { text: "!", repeat: 2 }]] }
        ]
      }
    })
    const sessionId = await agent.newSession()
    expect(await agent.prompt(sessionId, "first")).toEqual({ stopReason: "end_turn" })
    expect(agent.updates(sessionId)).toEqual([message("one", "m1.1")])
    expect(await agent.prompt(sessionId, "second")).toEqual({ stopReason: "end_turn" })
    // Deltas that arrive together may be sent as one chunk: the text is what counts.
    const chunks = agent.updates(sessionId).map((u: any) => (u.sessionUpdate === "agent_message_chunk" ? u.content.text : `<${u.sessionUpdate}>`))
    expect(chunks[0]).toBe("one")
    expect(chunks.slice(1).join("")).toBe("two!!")
    expectClean(agent)
  })

  it("reasoning deltas become agent_thought_chunk updates", async () => {
    const agent = await agents.ready({
      script: { turns: [{ calls: [[{ think: "Let me " }, { think: "think." }, { text: "Answer." }]] }] }
    })
    const sessionId = await agent.newSession()
    expect(await agent.prompt(sessionId, "why?")).toEqual({ stopReason: "end_turn" })
    expect(agent.updates(sessionId)).toEqual([thought("Let me ", "m1.1"), thought("think.", "m1.1"), message("Answer.", "m1.2")])
    expectClean(agent)
  })

  it("a read tool call is announced, run and completed with the file's content", async () => {
    const agent = await agents.ready({
      files: { "notes.txt": "alpha\nbeta\n" },
      script: {
        turns: [{
          calls: [
            [{ text: "Reading it." }, { tool: "read", args: { path: "notes.txt" } }],
            [{ text: "Done." }]
          ]
        }]
      }
    })
    const sessionId = await agent.newSession()
    expect(await agent.prompt(sessionId, "read notes")).toEqual({ stopReason: "end_turn" })
    const content = "1\talpha\n2\tbeta"
    expect(agent.updates(sessionId)).toEqual([
      message("Reading it.", "m1.1"),
      {
        sessionUpdate: "tool_call",
        toolCallId: "call_1_1_1",
        title: "Read notes.txt",
        kind: "read",
        status: "pending",
        rawInput: { path: "notes.txt" },
        locations: [{ path: `${agent.cwd}/notes.txt` }]
      },
      // Every update of a call repeats its title and kind (some clients keep only the last one's).
      { sessionUpdate: "tool_call_update", toolCallId: "call_1_1_1", title: "Read notes.txt", kind: "read", status: "in_progress" },
      {
        sessionUpdate: "tool_call_update",
        toolCallId: "call_1_1_1",
        title: "Read notes.txt",
        kind: "read",
        status: "completed",
        content: [{ type: "content", content: { type: "text", text: content } }],
        rawOutput: { ok: true, content }
      },
      message("Done.", "m1.2")
    ])
    expectClean(agent)
  })

  it("a read outside the cwd fails and the turn goes on", async () => {
    const agent = await agents.ready({
      files: { "inside.txt": "in\n" },
      script: {
        turns: [{
          calls: [
            [{ tool: "read", args: { path: "../outside.txt" } }],
            [{ text: "I may not read that." }]
          ]
        }]
      }
    })
    // A real file next to the workspace: refused because of where it is, not because it is missing.
    writeFileSync(`${agent.root}/outside.txt`, "secret\n")
    const sessionId = await agent.newSession()
    expect(await agent.prompt(sessionId, "read it")).toEqual({ stopReason: "end_turn" })
    const updates = agent.updates(sessionId)
    expect(updates.map((u) => [u.sessionUpdate, "status" in u ? u.status : undefined])).toEqual([
      ["tool_call", "pending"],
      ["tool_call_update", "in_progress"],
      ["tool_call_update", "failed"],
      ["agent_message_chunk", undefined]
    ])
    expect(updates[0]).toMatchObject({ toolCallId: "call_1_1_1", kind: "read", rawInput: { path: "../outside.txt" } })
    const failed = updates[2] as { content: Array<{ content: { text: string } }>; rawOutput: { ok: boolean; content: string } }
    expect(failed.rawOutput.ok).toBe(false)
    expect(failed.rawOutput.content).toMatch(/outside the workspace/)
    expect(failed.rawOutput.content).not.toContain("secret")
    expect(failed.content).toEqual([{ type: "content", content: { type: "text", text: failed.rawOutput.content } }])
    expect(updates[3]).toEqual(message("I may not read that.", "m1.1"))
    expectClean(agent)
  })
})
