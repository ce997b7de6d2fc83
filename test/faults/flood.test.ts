/**
 * Faults: floods. Tens of thousands of small messages written as fast as a pipe takes them,
 * and a client that writes and never reads. Every request is answered exactly once, the
 * agent's memory stays bounded, and a client that stopped reading cannot keep the agent alive
 * after it is told to stop.
 */
import { afterEach, describe, expect, it } from "vitest"
import { SHUTDOWN_FLUSH_MS, SHUTDOWN_GRACE_MS } from "../../src/jsonrpc/Peer.ts"
import { MB, quickTurns, type RawAgent, rawAgents, sleep, until } from "../fixtures/faults/harness.ts"

const agents = rawAgents()
afterEach(() => agents.disposeAll())

const initializeParams = { protocolVersion: 1, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false } }

/** Samples the agent's resident memory until stopped; `peak()` is the highest seen. */
const sampleRss = (agent: RawAgent) => {
  let peak = agent.rss()
  const timer = setInterval(() => {
    peak = Math.max(peak, agent.rss())
  }, 20)
  return {
    peak: () => peak,
    stop: () => clearInterval(timer)
  }
}

/** Writes lines in batches, honouring the pipe: stops when `stop()` says so or the pipe stays full. */
const writeUntilBlocked = async (agent: RawAgent, makeLine: (i: number) => string, max: number) => {
  let sent = 0
  let blocked = 0
  while (sent < max && blocked < 3) {
    let batch = ""
    for (let k = 0; k < 500 && sent < max; k++) {
      const line = makeLine(sent++)
      agent.saw(line)
      batch += `${line}\n`
    }
    if (!agent.write(batch)) {
      const drained = await Promise.race([
        new Promise<boolean>((resolve) => agent.child.stdin.once("drain", () => resolve(true))),
        sleep(300).then(() => false)
      ])
      blocked = drained ? 0 : blocked + 1
    }
  }
  return sent
}

describe("faults: floods", () => {
  it("20,000 small messages at once: every request answered exactly once, memory bounded", async () => {
    const agent = agents.start({ script: quickTurns(1) })
    await agent.initialize()
    const sessionId = await agent.newSession()
    const baseline = agent.rss()
    const N = 20_000
    let requests = 0
    let text = ""
    for (let i = 0; i < N; i++) {
      let line: string
      switch (i % 5) {
        case 0:
          line = JSON.stringify({ jsonrpc: "2.0", id: `f${i}`, method: "flood/unknown", params: { i } })
          break
        case 1:
          line = JSON.stringify({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId } })
          break
        case 2:
          line = JSON.stringify({ jsonrpc: "2.0", id: `f${i}`, method: "initialize", params: initializeParams })
          break
        case 3:
          line = JSON.stringify({ jsonrpc: "2.0", id: `f${i}`, method: "session/set_mode", params: { sessionId, modeId: i % 2 === 0 ? "plan" : "default" } })
          break
        default:
          // A response to a request the agent never made, and a cancel of one that does not run.
          line = i % 2 === 0
            ? JSON.stringify({ jsonrpc: "2.0", id: 100_000 + i, result: {} })
            : JSON.stringify({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: `nope${i}` } })
      }
      if (line.includes(`"id":"f`)) requests++
      agent.saw(line)
      text += `${line}\n`
    }
    const rss = sampleRss(agent)
    agent.write(text)
    try {
      await until(() => agent.responseCount() >= requests + 2, `${requests} responses`, 30_000, 20)
    } finally {
      rss.stop()
    }
    await sleep(100)
    expect(agent.answerProblems()).toEqual([])
    expect(agent.nullIdErrors).toEqual([])
    expect(rss.peak() - baseline).toBeLessThan(150 * MB)
    // Still serving, and the session is intact.
    expect((await agent.prompt(sessionId, "after the flood")).result).toEqual({ stopReason: "end_turn" })
    expect(agent.problems).toEqual([])
  })

  it("a client that writes and never reads is held back by its own pipe; once it reads, each request has its one answer", async () => {
    const agent = agents.start({ script: quickTurns(1) })
    await agent.initialize()
    const baseline = agent.rss()
    agent.child.stdout.pause()
    const rss = sampleRss(agent)
    const sent = await writeUntilBlocked(
      agent,
      (i) => JSON.stringify({ jsonrpc: "2.0", id: `w${i}`, method: "initialize", params: initializeParams }),
      30_000
    )
    // Let the agent take in whatever it will take while nobody reads.
    await sleep(500)
    const stalled = rss.peak()
    expect(stalled - baseline).toBeLessThan(120 * MB)
    agent.child.stdout.resume()
    try {
      await until(() => agent.responseCount() >= sent + 1, `${sent} responses`, 30_000, 20)
    } finally {
      rss.stop()
    }
    await sleep(100)
    expect(agent.answerProblems()).toEqual([])
    // Each answer is the result, or -32800 when too many requests were in flight at once.
    const codes = new Set<string>()
    for (const list of agent.responses.values()) {
      for (const m of list) codes.add(m.error === undefined ? "result" : `${m.error.code} ${m.error.message}`)
    }
    for (const code of codes) expect(["result", "-32800 Too many requests in flight"]).toContain(code)
    expect(codes.has("result")).toBe(true)
    expect(rss.peak() - baseline).toBeLessThan(150 * MB)
    expect(agent.problems).toEqual([])
  })

  it("a client that stopped reading cannot keep the agent alive: stdin EOF and SIGTERM still exit 0, dropping what it cannot write after the shutdown bound", async () => {
    // Both at once: each waits out the same deadline.
    await Promise.all((["stdin EOF", "SIGTERM"] as const).map(async (stop) => {
      const agent = agents.start({ script: quickTurns(1) })
      await agent.initialize()
      agent.child.stdout.pause()
      // Far more output than a pipe holds.
      await writeUntilBlocked(agent, (i) => JSON.stringify({ jsonrpc: "2.0", id: `s${i}`, method: "initialize", params: initializeParams }), 5_000)
      await sleep(300)
      if (stop === "stdin EOF") agent.closeStdin()
      else agent.child.kill("SIGTERM")
      // It exits although nobody reads: the output it could not write is dropped after the bound.
      const exit = await agent.waitExit(SHUTDOWN_GRACE_MS + SHUTDOWN_FLUSH_MS + 20_000)
      expect([stop, exit]).toEqual([stop, { code: 0, signal: null }])
      expect(agent.stderr).toContain("output not written in time at shutdown; dropped")
    }))
  })
})
