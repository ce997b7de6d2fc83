/**
 * End to end: a CPU-bound tool call in one session does not stall the others. Session A's model
 * greps with a catastrophically backtracking pattern, `(a+)+$`, over lines of `a`s ending in `b`
 * (each line takes seconds, the file minutes, on the thread that runs it); meanwhile session B
 * runs whole turns, and `session/cancel` of A answers at once.
 */
import type * as acp from "@agentclientprotocol/sdk"
import { mkdirSync } from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { expectClean, message, useAgents } from "../support/AgentProcess.ts"

const agents = useAgents()

/** 40 lines on which `(a+)+$` backtracks through 2^26 ways of splitting the `a`s before failing. */
const PATHOLOGICAL = `${"a".repeat(26)}b\n`.repeat(40)

const isToolUpdate = (status: string) => (u: acp.SessionUpdate) => u.sessionUpdate === "tool_call_update" && "status" in u && u.status === status

describe("e2e: CPU-bound tool work runs off the protocol thread", () => {
  it("one session's runaway grep neither delays another session's turns nor its own cancel", async () => {
    const agent = await agents.ready({
      files: { "big.txt": PATHOLOGICAL, "b/big.txt": "nothing to see\n" },
      script: {
        turns: [
          {
            calls: [
              [{ tool: "grep", args: { pattern: "(a+)+$", path: "big.txt" } }],
              [{ text: "b1" }, { sleep_ms: 20 }, { text: "b2" }, { sleep_ms: 20 }, { text: "b3" }]
            ]
          },
          { calls: [[{ tool: "grep", args: { pattern: "noth(in)+g", path: "big.txt" } }], [{ text: "found" }]] }
        ]
      }
    })
    const a = await agent.newSession()
    // B's big.txt is harmless: its grep answers at once and its turn goes on to stream text.
    const bCwd = path.join(agent.cwd, "b")
    mkdirSync(bCwd, { recursive: true })
    const b = await agent.newSession(bCwd)

    const promptA = agent.prompt(a, "search")
    promptA.catch(() => {}) // awaited below; should B's turn hang, the agent is killed first
    await agent.waitForUpdate(a, isToolUpdate("in_progress"))

    // B's whole turn (a grep of its own, then streamed text) runs while A's grep is still running.
    expect(await agent.prompt(b, "stream")).toEqual({ stopReason: "end_turn" })
    const bUpdates = agent.updates(b)
    expect(bUpdates.map((u) => [u.sessionUpdate, "status" in u ? u.status : undefined])).toEqual([
      ["tool_call", "pending"],
      ["tool_call_update", "in_progress"],
      ["tool_call_update", "completed"],
      ["agent_message_chunk", undefined],
      ["agent_message_chunk", undefined],
      ["agent_message_chunk", undefined]
    ])
    expect(bUpdates.slice(3)).toEqual([message("b1", "m1.1"), message("b2", "m1.1"), message("b3", "m1.1")])
    // A's grep has not ended: nothing of A came after its tool call started.
    expect(agent.updates(a).map((u) => u.sessionUpdate)).toEqual(["tool_call", "tool_call_update"])

    // Cancelling A stops its search: the turn ends cancelled and the search did not complete (it
    // would run for minutes, then stop at its own limit and complete, and the turn go on).
    await agent.cancel(a)
    expect(await promptA).toEqual({ stopReason: "cancelled" })
    const aLast = agent.updates(a).at(-1)
    expect(aLast).toMatchObject({ sessionUpdate: "tool_call_update" })
    expect(aLast && "status" in aLast ? aLast.status : undefined).not.toBe("completed")

    // Searching still works afterwards, in a fresh worker.
    expect(await agent.prompt(b, "again")).toEqual({ stopReason: "end_turn" })
    const results = agent.readLog(b).filter((e) => e.type === "tool_result").map((e) => e.data.content)
    expect(results).toEqual([expect.stringMatching(/^No matches/), "big.txt:1: nothing to see\n\n[1 match in big.txt]"])
    expectClean(agent)
  })
})
