/**
 * End to end: cancellation (`session/cancel`, `$/cancel_request`) and queued prompts.
 * A cancelled prompt answers `stopReason: "cancelled"` and the session goes on. What is cut
 * short would run for minutes: a cancel that waited for it would not answer within the test
 * (how soon it answers is measured by `npm run bench`, not asserted here).
 */
import { describe, expect, it } from "vitest"
import { expectClean, message, useAgents } from "../support/AgentProcess.ts"

const agents = useAgents()

const isChunk = (text: string) => (u: { sessionUpdate: string; content?: unknown }) =>
  u.sessionUpdate === "agent_message_chunk" && (u.content as { text?: string } | undefined)?.text === text

const sleeping = { calls: [[{ text: "a" }, { sleep_ms: 600_000 }, { text: "never" }]] }

describe("e2e: cancellation", () => {
  it("session/cancel in flight resolves the prompt as cancelled, cutting the model call short", async () => {
    const agent = await agents.ready({ script: { turns: [sleeping] } })
    const sessionId = await agent.newSession()
    const prompt = agent.prompt(sessionId, "x")
    await agent.waitForUpdate(sessionId, isChunk("a"))
    await agent.cancel(sessionId)
    expect(await prompt).toEqual({ stopReason: "cancelled" })
    expect(agent.updates(sessionId)).toEqual([message("a", "m1.1")])
    // Nothing about the turn follows its response.
    const lines = agent.lines.length
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(agent.lines.length).toBe(lines)
    const log = agent.readLog(sessionId)
    expect(log.at(-1)).toMatchObject({ turn: 1, type: "turn_end", data: { stopReason: "cancelled" } })
    expectClean(agent)
  })

  it("session/cancel of one session leaves a turn of another session running to its end", async () => {
    const agent = await agents.ready({ script: { turns: [{ calls: [[{ text: "a" }, { sleep_ms: 600 }, { text: "b" }]] }] } })
    const [one, two] = await Promise.all([agent.newSession(), agent.newSession()])
    const first = agent.prompt(one!, "x")
    const second = agent.prompt(two!, "x")
    await agent.waitForUpdate(one!, isChunk("a"))
    await agent.waitForUpdate(two!, isChunk("a"))
    await agent.cancel(one!)
    expect(await first).toEqual({ stopReason: "cancelled" })
    expect(await second).toEqual({ stopReason: "end_turn" })
    expect(agent.updates(one!)).toEqual([message("a", "m1.1")])
    expect(agent.updates(two!)).toEqual([message("a", "m1.1"), message("b", "m1.1")])
    expectClean(agent)
  })

  it("a cancel after a tool call finished keeps its result and ends the turn cancelled", async () => {
    const agent = await agents.ready({
      files: { "a.txt": "a\n" },
      script: { turns: [{ calls: [[{ tool: "read", args: { path: "a.txt" } }], [{ text: "thinking it over" }, { sleep_ms: 30_000 }]] }] }
    })
    const sessionId = await agent.newSession()
    const prompt = agent.prompt(sessionId, "x")
    await agent.waitForUpdate(sessionId, isChunk("thinking it over"))
    await agent.cancel(sessionId)
    expect(await prompt).toEqual({ stopReason: "cancelled" })
    expect(agent.updates(sessionId).map((u) => [u.sessionUpdate, "status" in u ? u.status : undefined])).toEqual([
      ["tool_call", "pending"],
      ["tool_call_update", "in_progress"],
      ["tool_call_update", "completed"],
      ["agent_message_chunk", undefined]
    ])
    const events = agent.readLog(sessionId).slice(1).map((e) => e.type)
    expect(events.at(-1)).toBe("turn_end")
    expect(events.filter((t) => t === "tool_result")).toHaveLength(1)
    expectClean(agent)
  })

  it("session/cancel while idle has no effect: the next prompt runs script turn 1", async () => {
    const agent = await agents.ready({ script: { turns: [{ calls: [[{ text: "turn one" }]] }] } })
    const sessionId = await agent.newSession()
    await agent.cancel(sessionId)
    await agent.cancel(sessionId)
    expect(await agent.prompt(sessionId, "x")).toEqual({ stopReason: "end_turn" })
    expect(agent.updates(sessionId)).toEqual([message("turn one", "m1.1")])
    expectClean(agent)
  })

  it("a prompt after a cancelled one works normally and consumes the next script turn", async () => {
    const agent = await agents.ready({ script: { turns: [sleeping, { expect: "^next$", calls: [[{ text: "turn two" }]] }] } })
    const sessionId = await agent.newSession()
    const first = agent.prompt(sessionId, "x")
    await agent.waitForUpdate(sessionId, isChunk("a"))
    await agent.cancel(sessionId)
    expect(await first).toEqual({ stopReason: "cancelled" })
    expect(await agent.prompt(sessionId, "next")).toEqual({ stopReason: "end_turn" })
    expect(agent.updates(sessionId)).toEqual([message("a", "m1.1"), message("turn two", "m2.1")])
    expectClean(agent)
  })

  it("two queued prompts both answer, in order", async () => {
    const agent = await agents.ready({
      script: {
        turns: [
          { expect: "^one$", calls: [[{ text: "first" }, { sleep_ms: 300 }, { text: " done" }]] },
          { expect: "^two$", calls: [[{ text: "second" }]] }
        ]
      }
    })
    const sessionId = await agent.newSession()
    const one = agent.prompt(sessionId, "one")
    await agent.waitForUpdate(sessionId, isChunk("first"))
    const two = agent.prompt(sessionId, "two")
    expect(await Promise.all([one, two])).toEqual([{ stopReason: "end_turn" }, { stopReason: "end_turn" }])
    expect(agent.updates(sessionId)).toEqual([message("first", "m1.1"), message(" done", "m1.1"), message("second", "m2.1")])
    // On the wire: the first prompt is answered before anything of the second turn is written.
    const wire = agent.lines.map((line) => JSON.parse(line))
    const answers = wire.flatMap((m, i) => (m.result?.stopReason !== undefined ? [i] : []))
    const second = wire.findIndex((m) => m.params?.update?.content?.text === "second")
    expect(answers).toHaveLength(2)
    expect(answers[0]).toBeLessThan(second)
    expect(second).toBeLessThan(answers[1]!)
    expectClean(agent)
  })

  it("session/cancel with one prompt running and one queued resolves both as cancelled", async () => {
    const agent = await agents.ready({
      script: { turns: [sleeping, { calls: [[{ text: "queued, never run" }]] }, { calls: [[{ text: "third" }]] }] }
    })
    const sessionId = await agent.newSession()
    const running = agent.prompt(sessionId, "one")
    await agent.waitForUpdate(sessionId, isChunk("a"))
    // Sent after the second prompt, the cancel reaches the agent after it: the prompt is queued.
    const queued = agent.prompt(sessionId, "two")
    await agent.cancel(sessionId)
    expect(await Promise.all([running, queued])).toEqual([{ stopReason: "cancelled" }, { stopReason: "cancelled" }])
    expect(agent.updates(sessionId)).toEqual([message("a", "m1.1")])
    // The session still serves: the cancelled queued prompt took turn 2, so this is turn 3.
    expect(await agent.prompt(sessionId, "three")).toEqual({ stopReason: "end_turn" })
    expect(agent.updates(sessionId)).toEqual([message("a", "m1.1"), message("third", "m3.1")])
    expectClean(agent)
  })

  it("$/cancel_request (raw) on a running prompt makes it answer stopReason cancelled", async () => {
    const agent = await agents.ready({ script: { turns: [sleeping] } })
    const sessionId = await agent.newSession()
    const id = agent.sendRawRequest("session/prompt", { sessionId, prompt: [{ type: "text", text: "x" }] })
    await agent.waitForUpdate(sessionId, isChunk("a"))
    agent.sendRaw(JSON.stringify({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: id } }))
    const response = await agent.rawResponse(id)
    expect(response).toEqual({ jsonrpc: "2.0", id, result: { stopReason: "cancelled" } })
    expect(agent.written.map((n) => n.update).filter((u) => u.sessionUpdate !== "available_commands_update" && u.sessionUpdate !== "session_info_update")).toEqual([message("a", "m1.1")])
    expect(agent.unanswered()).toEqual([])
    expectClean(agent)
  })

  it("the SDK's own request cancellation ($/cancel_request) also answers cancelled", async () => {
    const agent = await agents.ready({ script: { turns: [sleeping] } })
    const sessionId = await agent.newSession()
    const abort = new AbortController()
    const prompt = agent.prompt(sessionId, "x", { cancellationSignal: abort.signal })
    await agent.waitForUpdate(sessionId, isChunk("a"))
    abort.abort()
    expect(await prompt).toEqual({ stopReason: "cancelled" })
    expect(agent.updates(sessionId)).toEqual([message("a", "m1.1")])
    expectClean(agent)
  })
})
