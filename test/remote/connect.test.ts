/**
 * `skein acp --connect`: two ACP agents (two editor windows) on one `skein serve` share its
 * sessions. A turn one of them runs is seen live by the other, and the session the first made
 * is on the server, so either can prompt it.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { type AgentProcess, useAgents, waitUntil } from "../support/AgentProcess.ts"
import { useServers } from "../support/Serve.ts"

const agents = useAgents()
const { serve } = useServers()

const script = {
  turns: [
    { calls: [[{ text: "Hello from " }, { sleep_ms: 50 }, { text: "window A." }]] },
    { calls: [[{ text: "And now B." }]] }
  ]
}

/** The text of the agent message chunks an agent wrote for a session. */
const said = (agent: AgentProcess, sessionId: string) =>
  agent.written.filter((n) => n.sessionId === sessionId && n.update.sessionUpdate === "agent_message_chunk")
    .map((n) => (n.update as { content: { text: string } }).content.text)
    .join("")

describe("skein acp --connect", () => {
  it("two windows on one server: a turn started by one is seen live by the other", async () => {
    const server = await serve(script, undefined)
    const url = `unix:${server.home}/skein.sock`
    const a = await agents.ready({ script: { turns: [] }, args: ["--connect", url] })
    const b = await agents.ready({ script: { turns: [] }, args: ["--connect", url] })

    const sessionId = await a.newSession(server.cwd)
    // B opens the same session (on the server), then A prompts it.
    await b.sdk.request("session/load", { sessionId, cwd: server.cwd, mcpServers: [] })
    expect((await a.prompt(sessionId, "hi from A")).stopReason).toBe("end_turn")
    expect(said(a, sessionId)).toBe("Hello from window A.")

    // B was shown A's turn as it ran: the prompt, then the answer.
    await waitUntil(() => said(b, sessionId) === "Hello from window A.", "window B to show A's turn")
    const shownToB = b.written.filter((n) => n.sessionId === sessionId).map((n) => n.update.sessionUpdate)
    expect(shownToB).toContain("user_message_chunk")
    // (B's own updates of the turn came while B had no prompt open: that is the point here.)
    expect(b.problems.every((p) => p.includes("while no prompt of it is open"))).toBe(true)

    // B prompts the same session; A sees that turn.
    expect((await b.prompt(sessionId, "and B")).stopReason).toBe("end_turn")
    await waitUntil(() => said(a, sessionId).endsWith("And now B."), "window A to show B's turn")
    // The log on the server has both turns.
    expect(server.stderr).not.toMatch(/error/i)
  })

  it("a window on a server is told the slash commands of the session's directory, as the server reads them", async () => {
    // The server trusts every folder (workspace trust has its own tests).
    const server = await serve(script, undefined, { SKEIN_TRUST: "1" })
    mkdirSync(path.join(server.cwd, ".skein", "commands"), { recursive: true })
    writeFileSync(path.join(server.cwd, ".skein", "commands", "ship.md"), "---\ndescription: Ship it\n---\nShip $ARGUMENTS\n")
    const a = await agents.ready({ script: { turns: [] }, args: ["--connect", `unix:${server.home}/skein.sock`] })
    const sessionId = await a.newSession(server.cwd)
    await a.waitForUpdate(sessionId, (u) => u.sessionUpdate === "available_commands_update")
    const announced = a.allUpdates(sessionId).find((u) => u.sessionUpdate === "available_commands_update") as any
    const names = announced.availableCommands.map((c: { name: string }) => c.name)
    expect(names).toContain("compact")
    expect(names).toContain("ship")
    expect(announced.availableCommands.find((c: { name: string }) => c.name === "ship").description).toBe("Ship it")
  })
})
