/**
 * Faults: input that could exhaust memory or the stack. A line longer than the limit (default
 * 16 MiB) is refused with -32600 without being held whole; JSON nested 100,000 deep, wherever
 * it appears, is an error or is ignored, never a crash; after each, the agent keeps serving.
 */
import { Effect, Fiber, Logger } from "effect"
import { mkdtempSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { Scripted, Skein } from "../../src/index.ts"
import { serve } from "../../src/server/AcpServer.ts"
import * as MemoryTransport from "../support/MemoryTransport.ts"
import { MB, quickTurns, type RawAgent, rawAgents, sleep, until } from "../fixtures/faults/harness.ts"

const agents = rawAgents()
afterEach(() => agents.disposeAll())

const DEPTH = 100_000
const deepArray = `${"[".repeat(DEPTH)}${"]".repeat(DEPTH)}`
const deepObject = `${"{\"a\":".repeat(DEPTH)}1${"}".repeat(DEPTH)}`

/** The agent still does real work: a new session, a prompt, its answer (the script's first turn). */
const expectServing = async (agent: RawAgent) => {
  const sessionId = await agent.newSession()
  const response = await agent.prompt(sessionId, "still there?")
  expect(response.result).toEqual({ stopReason: "end_turn" })
  expect(agent.updates(sessionId).at(-1)).toEqual({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "answer 1" }, messageId: "m1.1" })
}

/** Writes a line of `megabytes` MiB (a request whose one string is that long) in 1 MiB pieces. */
const writeHugeLine = async (agent: RawAgent, megabytes: number) => {
  const piece = Buffer.alloc(MB, 0x78)
  agent.write(`{"jsonrpc":"2.0","id":"huge","method":"initialize","params":{"pad":"`)
  for (let i = 0; i < megabytes; i++) {
    if (!agent.write(piece)) await new Promise((resolve) => agent.child.stdin.once("drain", resolve))
  }
  agent.write(`"}}\n`)
}

describe("faults: bounded input", () => {
  it("a 20 MB line is refused with -32600 (id null), and a normal request works after it", async () => {
    const agent = agents.start({ script: quickTurns(1) })
    await agent.initialize()
    await writeHugeLine(agent, 20)
    await until(() => agent.nullIdErrors.length > 0, "the refusal")
    expect(agent.nullIdErrors).toEqual([{ jsonrpc: "2.0", id: null, error: { code: -32600, message: "Message too long" } }])
    // The request inside the huge line is never answered: its id could not be read.
    expect(agent.responses.has("string:huge")).toBe(false)
    await expectServing(agent)
    expect(agent.problems).toEqual([])
  })

  it("a 160 MB line is not held whole: the agent's memory grows by far less than the line", async () => {
    const agent = agents.start({ script: quickTurns(1) })
    await agent.initialize()
    const baseline = agent.rss()
    let peak = baseline
    const sampler = setInterval(() => {
      peak = Math.max(peak, agent.rss())
    }, 10)
    try {
      await writeHugeLine(agent, 160)
      await until(() => agent.nullIdErrors.length > 0, "the refusal", 20_000)
    } finally {
      clearInterval(sampler)
    }
    expect(agent.nullIdErrors.map((m) => m.error?.code)).toEqual([-32600])
    // At most the limit (16 MiB) is buffered before the line is known to be too long.
    expect(peak - baseline).toBeLessThan(80 * MB)
    await expectServing(agent)
    expect(agent.problems).toEqual([])
  })

  it("AcpServer honours its maxLineBytes option (what --max-line-bytes is to set), in process", async () => {
    const home = realpathSync(mkdtempSync(join(tmpdir(), "skein-faults-")))
    try {
      const lines = await Effect.runPromise(Effect.gen(function*() {
        const script = yield* Scripted.parse(JSON.stringify(quickTurns(1)))
        const mt = yield* MemoryTransport.make
        const server = yield* Effect.forkChild(
          serve(mt.transport, { version: "test", maxLineBytes: 4096 }).pipe(Effect.provide(Skein.layer({ home, script })))
        )
        yield* mt.send(
          { jsonrpc: "2.0", id: 1, method: "session/list", params: { _meta: { pad: "x".repeat(3_000) } } },
          { jsonrpc: "2.0", id: 2, method: "session/list", params: { _meta: { pad: "x".repeat(5_000) } } },
          { jsonrpc: "2.0", id: 3, method: "session/list", params: {} }
        )
        const out = [yield* mt.next, yield* mt.next, yield* mt.next] as Array<{ id: unknown; result?: unknown; error?: unknown }>
        yield* mt.end
        yield* Fiber.join(server)
        return out
      }).pipe(Effect.provide(Logger.layer([]))))
      // (In any order: the refusal is written by the reader, the answers by their handlers.)
      const answers = lines.map((m) => [m.id, m.result !== undefined ? "result" : m.error])
      expect(answers.sort((a, b) => String(a[0]).localeCompare(String(b[0])))).toEqual([
        [1, "result"],
        [3, "result"],
        [null, { code: -32600, message: "Message too long" }]
      ])
    } finally {
      rmSync(home, { recursive: true, force: true })
    }
  })

  it("the limit is configurable: SKEIN_MAX_LINE_BYTES and --max-line-bytes", async () => {
    for (const how of [{ env: { SKEIN_MAX_LINE_BYTES: "4096" } }, { args: ["--max-line-bytes", "4096"] }]) {
      const agent = agents.start({ script: quickTurns(1), ...how })
      await agent.initialize()
      const within = agent.requestLine("session/list", { _meta: { pad: "x".repeat(3_000) } })
      const beyond = agent.requestLine("session/list", { _meta: { pad: "x".repeat(5_000) } })
      agent.writeLine(within.line)
      agent.write(`${beyond.line}\n`)
      expect((await agent.response(within.id)).result).toBeDefined()
      await until(() => agent.nullIdErrors.length > 0, "the refusal")
      expect(agent.nullIdErrors.map((m) => [m.error?.code, m.error?.message])).toEqual([[-32600, "Message too long"]])
      await expectServing(agent)
      expect(agent.problems).toEqual([])
    }
  })

  it("JSON nested 100,000 deep, anywhere in a message, is an error or ignored, never a crash", async () => {
    const agent = agents.start({ script: quickTurns(2) })
    await agent.initialize()
    const sessionId = await agent.newSession()
    // As the whole message, complete or cut short.
    agent.write(`${deepArray}\n`)
    agent.write(`${"[".repeat(DEPTH)}\n`)
    agent.write(`${deepObject}\n`)
    // As the id, the method, the params of a notification.
    agent.write(`{"jsonrpc":"2.0","id":${deepArray},"method":"session/list"}\n`)
    agent.writeLine(`{"jsonrpc":"2.0","id":"m","method":${deepArray}}`)
    agent.write(`{"jsonrpc":"2.0","method":"session/cancel","params":${deepArray}}\n`)
    agent.write(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"${sessionId}","_meta":${deepObject}}}\n`)
    // As params, and deep inside params, of requests (their ids are counted for "answered once").
    const asParams = agent.requestLine("initialize", undefined)
    const inMeta = agent.requestLine("session/list", undefined)
    const inPrompt = agent.requestLine("session/prompt", undefined)
    const inServers = agent.requestLine("session/new", undefined)
    const lines = [
      `{"jsonrpc":"2.0","id":${JSON.stringify(asParams.id)},"method":"initialize","params":${deepArray}}`,
      `{"jsonrpc":"2.0","id":${JSON.stringify(inMeta.id)},"method":"session/list","params":{"_meta":${deepObject}}}`,
      `{"jsonrpc":"2.0","id":${JSON.stringify(inPrompt.id)},"method":"session/prompt","params":{"sessionId":"${sessionId}","prompt":[{"type":"text","text":"deep","_meta":${deepObject}}]}}`,
      `{"jsonrpc":"2.0","id":${JSON.stringify(inServers.id)},"method":"session/new","params":{"cwd":"${agent.cwd}","mcpServers":${deepArray}}}`
    ]
    for (const line of lines) agent.writeLine(line)
    // And as a response to one of the agent's requests nobody asked for.
    agent.write(`{"jsonrpc":"2.0","id":12345,"result":${deepObject}}\n`)

    expect((await agent.response(asParams.id)).error?.code).toBe(-32602)
    expect((await agent.response(inMeta.id)).result).toBeDefined()
    expect((await agent.response(inPrompt.id)).result).toEqual({ stopReason: "end_turn" })
    expect((await agent.response(inServers.id)).error?.code).toBe(-32602)
    // A request whose method is not a string is answered with its (readable) id.
    expect((await agent.response("m")).error?.code).toBe(-32600)
    // The four messages whose id cannot be read are answered with id null.
    await until(() => agent.nullIdErrors.length >= 4, "an error for each unreadable message")
    await sleep(100)
    const codes = agent.nullIdErrors.map((m) => m.error?.code)
    expect(codes).toHaveLength(4)
    for (const code of codes) expect([-32700, -32600]).toContain(code)
    expect(agent.exitStatus).toBeUndefined()
    await expectServing(agent)
    expect(agent.answerProblems()).toEqual([])
    expect(agent.problems).toEqual([])
  })

  it("a permission answer nested 100,000 deep is an unreadable answer: a denial, and the turn goes on", async () => {
    const agent = agents.start({
      script: { turns: [{ calls: [[{ tool: "bash", args: { command: "touch made-it" }, id: "b1" }], [{ text: "done" }]] }] },
      // The sandbox off: the command is asked for.
      args: ["--sandbox", "off"],
      onRequest: () => "never"
    })
    await agent.initialize()
    const sessionId = await agent.newSession()
    const prompt = agent.prompt(sessionId, "make it")
    await until(() => agent.agentRequests.length > 0, "the permission request")
    const asked = agent.agentRequests[0]!
    expect(asked.method).toBe("session/request_permission")
    agent.write(`{"jsonrpc":"2.0","id":${JSON.stringify(asked.id)},"result":{"outcome":${deepObject}}}\n`)
    expect((await prompt).result).toEqual({ stopReason: "end_turn" })
    const last = agent.updates(sessionId).filter((u) => u.toolCallId === "b1").at(-1)
    expect(last.status).toBe("failed")
    expect(agent.updates(sessionId).at(-1)).toEqual({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "done" }, messageId: "m1.1" })
    expect(agent.problems).toEqual([])
  })
})
