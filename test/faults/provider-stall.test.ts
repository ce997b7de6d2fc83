/**
 * Faults: a provider that stalls. A tiny Server-Sent Events server on 127.0.0.1 speaks the
 * OpenAI-compatible Chat dialect and, depending on the call, goes silent in the middle of the
 * stream, goes silent before answering at all, or answers properly. The agent (a real process,
 * provider from `$SKEIN_HOME/config.json` with `idleTimeoutMs: 500` and one attempt) must end a
 * stalled turn by its idle watchdog: the failure as a message, `end_turn`, the HTTP request
 * abandoned (the server sees the connection close), and the session goes on.
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { afterEach, describe, expect, it } from "vitest"
import { rawAgents, until } from "../fixtures/faults/harness.ts"

const agents = rawAgents()
const servers: Array<http.Server> = []
afterEach(async () => {
  await agents.disposeAll()
  for (const server of servers.splice(0)) {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
})

const IDLE_MS = 500

type Behaviour = "stall-mid-stream" | "stall-before-headers" | "answer"

const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`

/** A Chat Completions SSE server whose n-th call behaves as `plan[n]`; records when each connection closed. */
const startServer = async (plan: ReadonlyArray<Behaviour>) => {
  const calls: Array<{ behaviour: Behaviour; closedAt: number | undefined }> = []
  const server = http.createServer((req, res) => {
    req.resume()
    const behaviour = plan[calls.length] ?? "answer"
    const call = { behaviour, closedAt: undefined as number | undefined }
    calls.push(call)
    res.on("close", () => {
      call.closedAt = Date.now()
    })
    if (behaviour === "stall-before-headers") return // never a byte
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
    if (behaviour === "stall-mid-stream") {
      res.write(chunk({ role: "assistant", content: "Let me th" }))
      return // and then silence, connection open
    }
    res.write(chunk({ role: "assistant", content: "All good." }))
    res.write(chunk({}, "stop"))
    res.end("data: [DONE]\n\n")
  })
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return { calls, port: (server.address() as AddressInfo).port }
}

const configFor = (port: number) =>
  JSON.stringify({
    provider: "stall",
    model: "m",
    providers: {
      stall: { dialect: "openai-chat", baseUrl: `http://127.0.0.1:${port}/v1`, idleTimeoutMs: IDLE_MS, maxAttempts: 1, models: ["m"] }
    }
  })

const texts = (updates: ReadonlyArray<any>) => updates.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text as string)

describe("faults: a provider that stalls", () => {
  it("silence mid-stream, then before any answer: the idle timeout ends each turn, and the session goes on", async () => {
    const { calls, port } = await startServer(["stall-mid-stream", "stall-before-headers", "answer"])
    const agent = agents.start({ homeFiles: { "config.json": configFor(port) } })
    const init = await agent.initialize()
    expect(init.error).toBeUndefined()
    const sessionId = await agent.newSession()

    for (const [turn, behaviour] of [[1, "stall-mid-stream"], [2, "stall-before-headers"]] as const) {
      const started = Date.now()
      const response = await agent.prompt(sessionId, `turn ${turn}`, 10_000)
      const elapsed = Date.now() - started
      expect(response.result).toEqual({ stopReason: "end_turn" })
      // It waited out the idle timeout (not less); the answer below says it gave up then.
      expect(elapsed).toBeGreaterThanOrEqual(IDLE_MS - 50)
      expect(calls.map((c) => c.behaviour)).toHaveLength(turn)
      expect(calls[turn - 1]!.behaviour).toBe(behaviour)
      // The abandoned request is closed, not left hanging on the server.
      await until(() => calls[turn - 1]!.closedAt !== undefined, "the stalled connection to close", 20_000)
      const log = agent.readLog(sessionId)
      const end = log.filter((e: any) => e.type === "turn_end" && e.turn === turn)
      expect(end).toHaveLength(1)
      expect(end[0].data.stopReason).toBe("end_turn")
      expect(String(end[0].data.error)).toMatch(/sent nothing for 0\.5 s/)
    }
    // The failures were told to the user as messages (after what streamed before the stall).
    const said = texts(agent.updates(sessionId))
    expect(said[0]).toBe("Let me th")
    expect(said.filter((t) => /Provider stall sent nothing for 0\.5 s/.test(t))).toHaveLength(2)

    // The provider is back: the session goes on.
    expect((await agent.prompt(sessionId, "turn 3")).result).toEqual({ stopReason: "end_turn" })
    expect(texts(agent.updates(sessionId)).at(-1)).toBe("All good.")
    expect(calls).toHaveLength(3)
    expect(agent.answerProblems()).toEqual([])
    expect(agent.problems).toEqual([])
  })
})
