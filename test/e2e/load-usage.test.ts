/**
 * `session/load` shows the usage the live session showed last: the context used of the model's
 * window and the session's cost so far (`usage_update`, not logged: derived from the log), and
 * the cost goes on from there at the next call rather than starting again at 0.
 *
 * A provider on the loopback interface answers every call with the same streamed reply (120
 * input tokens, 100 of them cached, 12 output); the model has a window of 8000 tokens and a
 * price of 3 USD per million input tokens and 15 per million output: 540 µUSD a call.
 */
import { readFileSync, writeFileSync } from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { expectClean, REPO_ROOT, useAgents } from "../support/AgentProcess.ts"

const agents = useAgents()
const SSE = readFileSync(path.join(REPO_ROOT, "test/fixtures/sse/openai-chat/text.sse"), "utf8")
const PER_CALL = (20 * 3 + 100 * 3 + 12 * 15) / 1_000_000

const servers: Array<http.Server> = []
afterEach(() => {
  for (const server of servers.splice(0)) server.close()
})

const provider = async () => {
  const server = http.createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.end(SSE)
    })
  })
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as AddressInfo).port
  return (home: string) =>
    writeFileSync(path.join(home, "config.json"), JSON.stringify({
      provider: "local",
      model: "llama3",
      providers: {
        local: { dialect: "openai-chat", baseUrl: `http://127.0.0.1:${port}/v1`, models: [{ id: "llama3", contextWindow: 8000, price: { input: 3, output: 15 } }] }
      }
    }))
}

const usages = (updates: ReadonlyArray<any>) => updates.filter((u) => u.sessionUpdate === "usage_update")

describe("e2e: session/load shows the last usage", () => {
  it("replays the live session's last usage_update after its history, and the cost goes on from it", async () => {
    const prepareHome = await provider()
    const first = await agents.ready({ script: undefined, prepareHome })
    const sessionId = await first.newSession()
    expect((await first.prompt(sessionId, "one")).stopReason).toBe("end_turn")
    expect((await first.prompt(sessionId, "two")).stopReason).toBe("end_turn")
    expectClean(first)
    const live = usages(first.allUpdates(sessionId))
    expect(live).toHaveLength(2)
    expect(live[1].used).toBe(132)
    expect(live[1].size).toBe(8000)
    expect(live[1].cost.amount).toBeCloseTo(2 * PER_CALL, 12)
    first.closeStdin()
    expect((await first.waitExit()).code).toBe(0)

    const second = agents.start({ script: undefined, args: ["--home", first.home] })
    await second.initialize()
    await second.sdk.request("session/load", { sessionId, cwd: first.cwd, mcpServers: [] })
    await second.settled(sessionId)
    const replayed = second.allUpdates(sessionId).filter((u) => u.sessionUpdate !== "available_commands_update")
    // Once, after the whole history: what the live session showed last.
    expect(usages(replayed)).toEqual([live[1]])
    expect(replayed.at(-1)).toEqual(live[1])

    // The next call's cost adds to what was spent before the load.
    const before = second.allUpdates(sessionId).length
    expect((await second.prompt(sessionId, "three")).stopReason).toBe("end_turn")
    const next = usages(second.allUpdates(sessionId).slice(before))
    expect(next).toHaveLength(1)
    expect(next[0].cost.amount).toBeCloseTo(3 * PER_CALL, 12)
    expectClean(second)
  })
})
