/**
 * A loaded session shows the usage the live session showed: each `usage_update` (the context
 * used of the model's window and the session's cost so far; not logged, derived from the log)
 * where the live session sent it, after the model call it follows, on `session/load` and in
 * `skein replay --acp` alike; and the cost goes on from there at the next call rather than
 * starting again at 0.
 *
 * A provider on the loopback interface answers the first call with a tool call (`read`) and
 * every later one with the same streamed reply (each 120 input tokens, 100 of them cached, 12
 * output); the model has a window of 8000 tokens and a price of 3 USD per million input tokens
 * and 15 per million output: 540 µUSD a call.
 */
import { spawnSync } from "node:child_process"
import { readFileSync, writeFileSync } from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { expectClean, NODE, REPO_ROOT, SKEIN, useAgents } from "../support/AgentProcess.ts"

const agents = useAgents()
const SSE = readFileSync(path.join(REPO_ROOT, "test/fixtures/sse/openai-chat/text.sse"), "utf8")
const TOOL_SSE = readFileSync(path.join(REPO_ROOT, "test/fixtures/sse/openai-chat/tool.sse"), "utf8")
const PER_CALL = (20 * 3 + 100 * 3 + 12 * 15) / 1_000_000

const servers: Array<http.Server> = []
afterEach(() => {
  for (const server of servers.splice(0)) server.close()
})

const provider = async () => {
  let calls = 0
  const server = http.createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.end(calls++ === 0 ? TOOL_SSE : SSE)
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

/** What a client shows of updates, in order: deltas of one message as one, without the user's own prompt (a live client typed it). */
const shape = (updates: ReadonlyArray<any>) =>
  updates
    .filter((u) => u.sessionUpdate !== "available_commands_update" && u.sessionUpdate !== "user_message_chunk")
    .map((u) => (u.sessionUpdate === "usage_update" ? u : u.sessionUpdate === "tool_call_update" ? `${u.sessionUpdate} ${u.status}` : u.sessionUpdate))
    .filter((u, i, all) => !(u === "agent_message_chunk" && all[i - 1] === u) && u !== "tool_call_update in_progress")

describe("e2e: a loaded session shows the usage the live one showed", () => {
  it("replays every usage_update where the live session sent it, in session/load and skein replay --acp, and the cost goes on from it", async () => {
    const prepareHome = await provider()
    const first = await agents.ready({ script: undefined, prepareHome, files: { "notes.txt": "hi\n" }, args: ["--mode", "bypassPermissions"] })
    const sessionId = await first.newSession()
    expect((await first.prompt(sessionId, "one")).stopReason).toBe("end_turn")
    expect((await first.prompt(sessionId, "two")).stopReason).toBe("end_turn")
    expectClean(first)
    const live = usages(first.allUpdates(sessionId))
    // Two calls in the first turn (the read, then the answer), one in the second.
    expect(live).toHaveLength(3)
    expect(live.map((u) => u.cost.amount / PER_CALL).map(Math.round)).toEqual([1, 2, 3])
    expect(live[2].used).toBe(132)
    expect(live[2].size).toBe(8000)
    expect(live[2].cost.amount).toBeCloseTo(3 * PER_CALL, 12)
    first.closeStdin()
    expect((await first.waitExit()).code).toBe(0)

    const second = agents.start({ script: undefined, args: ["--home", first.home] })
    await second.initialize()
    await second.sdk.request("session/load", { sessionId, cwd: first.cwd, mcpServers: [] })
    await second.settled(sessionId)
    const replayed = second.allUpdates(sessionId).filter((u) => u.sessionUpdate !== "available_commands_update")
    // Each where the live session showed it: after its call's text, before the tools it asked for.
    expect(usages(replayed)).toEqual(live)
    expect(shape(replayed)).toEqual(shape(first.allUpdates(sessionId)))
    expect(replayed.at(-1)).toEqual(live[2])

    // `skein replay --acp` prints what session/load sent.
    const printed = spawnSync(NODE, [SKEIN, "replay", sessionId, "--acp", "--home", first.home], {
      encoding: "utf8",
      env: { ...process.env, SKEIN_HOME: "", SKEIN_PROVIDER: "", SKEIN_MODEL: "", SKEIN_SCRIPT: "" }
    })
    expect(printed.status).toBe(0)
    const lines = printed.stdout.split("\n").filter(Boolean).map((line) => JSON.parse(line))
    expect(lines.map((l) => l.params.update)).toEqual(replayed)

    // The next call's cost adds to what was spent before the load.
    const before = second.allUpdates(sessionId).length
    expect((await second.prompt(sessionId, "three")).stopReason).toBe("end_turn")
    const next = usages(second.allUpdates(sessionId).slice(before))
    expect(next).toHaveLength(1)
    expect(next[0].cost.amount).toBeCloseTo(4 * PER_CALL, 12)
    expectClean(second)
  })
})
