/**
 * Faults around tools: a permission request the client never answers, and a command that
 * prints without end.
 */
import { existsSync, readFileSync, statSync } from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import * as OutputBuffer from "../../src/tools/process/OutputBuffer.ts"
import { expectClean, message, useAgents } from "../support/AgentProcess.ts"
import { groupMembers, killGroup, MB, rssBytes, until } from "../fixtures/faults/harness.ts"

const agents = useAgents()

const toolUpdates = (updates: ReadonlyArray<any>, id: string) =>
  updates.filter((u) => (u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update") && u.toolCallId === id)

const contentText = (u: any): string =>
  (u.content ?? []).map((c: any) => (c.type === "content" ? c.content?.text ?? "" : "")).join("")

describe("faults: a permission request that is never answered", () => {
  it("is denied after --permission-timeout-ms, withdrawn with $/cancel_request, and the turn ends end_turn", async () => {
    const agent = await agents.ready({
      script: { turns: [{ calls: [[{ tool: "bash", args: { command: "touch made-it" }, id: "b1" }], [{ text: "done" }]] }] },
      // The sandbox off: the command is asked for.
      args: ["--permission-timeout-ms", "500", "--sandbox", "off"],
      // The client shows the question and never answers it.
      permission: () => new Promise(() => {})
    })
    const sessionId = await agent.newSession()
    const started = Date.now()
    expect(await agent.prompt(sessionId, "make it")).toEqual({ stopReason: "end_turn" })
    // It waited for the answer as long as it was told to (and then, the content below says, gave up).
    expect(Date.now() - started).toBeGreaterThanOrEqual(450)

    expect(agent.permissionRequests.map((r) => r.toolCall.toolCallId)).toEqual(["b1"])
    expect(existsSync(path.join(agent.cwd, "made-it"))).toBe(false)
    const last = toolUpdates(agent.updates(sessionId), "b1").at(-1)
    expect(last.status).toBe("failed")
    expect(contentText(last)).toMatch(/No answer to the permission request .* in time; it was not run/)
    expect(agent.updates(sessionId).at(-1)).toEqual(message("done", "m1.1"))

    // The question is withdrawn: $/cancel_request names the agent's request.
    const asked = agent.messages().find((m) => m.method === "session/request_permission")!
    const withdrawn = agent.messages().filter((m) => m.method === "$/cancel_request")
    expect(withdrawn.map((m) => m.params)).toEqual([{ requestId: asked.id }])

    const log = agent.readLog(sessionId)
    expect(log.filter((e: any) => e.type === "permission").map((e: any) => e.data)).toEqual([{ toolCallId: "b1", outcome: "timeout" }])
    expect(log.at(-1)).toMatchObject({ type: "turn_end", data: { stopReason: "end_turn" } })
    expectClean(agent)
  })
})

describe("faults: a command that prints without end", () => {
  it("`yes` with timeout_ms 2000: the turn completes, output is bounded everywhere, the agent's memory stays bounded", async () => {
    const agent = await agents.ready({
      script: {
        turns: [{ calls: [[{ tool: "bash", args: { command: "echo $$ > pid; yes", timeout_ms: 2_000 }, id: "y1" }], [{ text: "done" }]] }]
      },
      args: ["--mode", "bypassPermissions"]
    })
    const sessionId = await agent.newSession()
    const pid = agent.child.pid!
    const baseline = rssBytes(pid)
    let peak = baseline
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssBytes(pid))
    }, 25)
    const pidFile = path.join(agent.cwd, "pid")
    let pgid = 0
    try {
      const prompt = agent.prompt(sessionId, "say yes")
      await until(() => existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() !== "", "the command's pid file")
      pgid = Number(readFileSync(pidFile, "utf8").trim())
      expect(await prompt).toEqual({ stopReason: "end_turn" })
    } finally {
      clearInterval(sampler)
      if (pgid > 0) killGroup(pgid)
    }
    expect(groupMembers(pgid)).toEqual([])

    // Head and tail kept, the middle counted: no update carries more than that (the final one
    // carries it twice: as content for the user and, with the status line, as rawOutput).
    const bound = OutputBuffer.DEFAULT_HEAD_BYTES + OutputBuffer.DEFAULT_TAIL_BYTES + 200
    const updates = toolUpdates(agent.updates(sessionId), "y1")
    expect(updates.length).toBeGreaterThan(2)
    for (const u of updates) {
      expect(Buffer.byteLength(contentText(u))).toBeLessThanOrEqual(bound)
      expect(Buffer.byteLength(String(u.rawOutput?.content ?? ""))).toBeLessThanOrEqual(bound + 200)
    }
    const last = updates.at(-1)
    expect(last.status).toBe("failed")
    const shown = contentText(last)
    expect(shown).toMatch(/^y\ny\n/)
    expect(shown).toMatch(/… \d+ bytes omitted …/)
    expect(last.rawOutput).toMatchObject({ ok: false, exitCode: null, truncated: true })
    expect(last.rawOutput.content).toContain("[killed by SIGTERM after timeout of 2000 ms]")
    expect(agent.updates(sessionId).at(-1)).toEqual(message("done", "m1.1"))
    // The whole of stdout and the log stay small (progress is pushed at most every 150 ms).
    const stdoutBytes = agent.lines.reduce((n, l) => n + Buffer.byteLength(l) + 1, 0)
    expect(stdoutBytes).toBeLessThan(4 * MB)
    expect(statSync(path.join(agent.home, "sessions", `${sessionId}.ndjson`)).size).toBeLessThan(1 * MB)
    // Gigabytes went through the pipe; the agent's resident memory stays bounded (about 80 MB
    // above its start on the reference machine, the same after 2 s or 6 s of output: Node's
    // pipe buffers churn until collected, nothing accumulates).
    expect(peak - baseline).toBeLessThan(150 * MB)
    expectClean(agent)
  })
})
