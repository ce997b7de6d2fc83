/**
 * Faults: the client goes away (stdin EOF) or the agent is told to stop (SIGTERM, SIGINT) in
 * the middle of a turn whose bash tool runs a foreground and a background `sleep 600`.
 *
 * DESIGN "Supervision": closing the application scope interrupts every turn, kills every child
 * process group, flushes and closes every log, then exits 0. So, for each of the three: exit 0
 * without waiting for the command (it would run ten minutes), nothing left of the command's
 * process group, the log consistent (seq strictly increasing, every tool call closed by a
 * result) and ending with `turn_end` cancelled, and the running prompt answered `cancelled`
 * (invariant 3), all on valid ACP. How soon it exits is measured by `npm run bench`.
 */
import { existsSync, readFileSync } from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { LOG_VERSION } from "../../src/log/Event.ts"
import { type AgentProcess, expectClean, useAgents } from "../support/AgentProcess.ts"
import { descendants, groupMembers, killGroup, until } from "../fixtures/faults/harness.ts"

const agents = useAgents()

/** The shell writes its pid (= its process group: bash runs as a group leader) before sleeping. */
const COMMAND = "echo $$ > pid; sleep 600 & sleep 600"

const script = {
  turns: [{ calls: [[{ text: "Running it." }, { tool: "bash", args: { command: COMMAND }, id: "b1" }], [{ text: "never" }]] }]
}

/** Starts the turn and waits until both sleeps of the command's group run; returns the group id. */
const startTurn = async (agent: AgentProcess, sessionId: string) => {
  const prompt = agent.prompt(sessionId, "run it").then((r) => r, (error: unknown) => ({ error: String(error) }))
  const pidFile = path.join(agent.cwd, "pid")
  await until(() => existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() !== "", "the command's pid file")
  const pgid = Number(readFileSync(pidFile, "utf8").trim())
  // Both sleeps (and perhaps the shell) are in the group.
  await until(() => groupMembers(pgid).length >= 2, "both sleeps to run")
  return { prompt, pgid }
}

/** Seq strictly increasing, every tool call closed by a result, last line turn_end cancelled. */
const expectConsistentLog = (agent: AgentProcess, sessionId: string) => {
  const log = agent.readLog(sessionId)
  expect(log[0]).toMatchObject({ type: "session", v: LOG_VERSION, id: sessionId })
  const events = log.slice(1)
  const seqs = events.map((e) => e.seq as number)
  for (let i = 1; i < seqs.length; i++) expect(seqs[i]).toBeGreaterThan(seqs[i - 1]!)
  const calls = events.filter((e) => e.type === "tool_call").map((e) => e.data.id ?? e.data.toolCallId)
  const results = events.filter((e) => e.type === "tool_result").map((e) => e.data.id ?? e.data.toolCallId)
  expect(results).toEqual(calls)
  expect(calls).toEqual(["b1"])
  expect(events.at(-1)).toMatchObject({ turn: 1, type: "turn_end", data: { stopReason: "cancelled" } })
}

const cases: Array<{ readonly name: string; readonly stop: (agent: AgentProcess) => void }> = [
  { name: "stdin closed", stop: (agent) => agent.closeStdin() },
  { name: "SIGTERM", stop: (agent) => agent.child.kill("SIGTERM") },
  { name: "SIGINT", stop: (agent) => agent.child.kill("SIGINT") }
]

describe("faults: shutdown mid-turn with a running bash tool", () => {
  for (const { name, stop } of cases) {
    it(`${name}: exit 0 without waiting for the command, no process of it left, log ends turn_end cancelled`, async () => {
      // The sandbox off: the command's pid is the machine's (a sandboxed one has a PID namespace of
      // its own; the sandbox's clean-up is tested in test/e2e/sandbox.test.ts).
      const agent = await agents.ready({ script, args: ["--mode", "bypassPermissions", "--sandbox", "off"] })
      const sessionId = await agent.newSession()
      const { prompt, pgid } = await startTurn(agent, sessionId)
      try {
        stop(agent)
        const exit = await agent.waitExit(20_000)
        expect(exit).toEqual({ code: 0, signal: null })
        // No orphan: the whole group is gone, and nothing else the agent started either.
        expect(groupMembers(pgid)).toEqual([])
        expect(descendants(agent.child.pid!)).toEqual([])
        expect(await prompt).toEqual({ stopReason: "cancelled" })
        expectConsistentLog(agent, sessionId)
        expect(agent.stderr).not.toMatch(/defect|Unhandled|EPIPE/i)
        expectClean(agent)
      } finally {
        killGroup(pgid)
      }
    })
  }
})
