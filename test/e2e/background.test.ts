/**
 * Background commands end to end: the built agent driven by the official ACP client starts a
 * real HTTP server on loopback with `bash {run_in_background: true}`; it is reachable during
 * the turn (a later command fetches from it), still there after the turn, and gone after
 * `session/close`, and also after `kill -9` of Skein (its watchdog kills what Skein started).
 * Sandbox on (the server in the session's network namespace; nothing asked) and off (asked
 * for like any command; the server on the host's loopback).
 */
import { readFileSync } from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { expectClean, useAgents } from "../support/AgentProcess.ts"
import { getCommand, killTagged, processesWith, serverCommand, uniqueTag, until } from "../support/Background.ts"
import * as Bwrap from "../support/Bwrap.ts"

const agents = useAgents()

const script = (tag: string) => ({
  turns: [{
    calls: [
      [{ tool: "bash", args: { command: serverCommand("port.txt", tag), run_in_background: true }, id: "start" }],
      [{ tool: "bash", args: { command: getCommand("port.txt", "/during-the-turn") }, id: "get" }],
      [{ tool: "bash_output", args: { id: "bg1" }, id: "output" }],
      [{ text: "the server runs" }]
    ]
  }]
})

const results = (agent: { readLog: (id: string) => Array<any> }, sessionId: string) =>
  Object.fromEntries(agent.readLog(sessionId).filter((e: any) => e.type === "tool_result").map((e: any) => [e.data.id, e.data]))

/** Whether something answers on the host's 127.0.0.1:port. */
const answers = (port: number): Promise<string | undefined> =>
  new Promise((resolve) => {
    http.get({ host: "127.0.0.1", port, path: "/from-the-test" }, (response) => {
      let body = ""
      response.on("data", (chunk) => (body += chunk))
      response.on("end", () => resolve(body))
    }).on("error", () => resolve(undefined))
  })

const suite = (sandbox: "auto" | "off") => {
  const args = sandbox === "off" ? ["--sandbox", "off"] : []

  /** Starts an agent whose first turn starts the server and reaches it; the session's id. */
  const started = async (tag: string, env: Record<string, string> = {}) => {
    const agent = await agents.ready({ script: script(tag), args, env })
    const sessionId = await agent.newSession()
    expect((await agent.prompt(sessionId, "start the dev server")).stopReason).toBe("end_turn")
    const byId = results(agent, sessionId)
    expect(byId["start"].ok).toBe(true)
    expect(byId["start"].content).toContain("Started in the background as bg1")
    expect(byId["get"].content).toContain(`hello from ${tag}`)
    expect(byId["output"].content).toContain("served GET /during-the-turn")
    expect(byId["output"].content).toContain("[still running]")
    // Asked for exactly as a foreground command is: not at all in the sandbox, each time without.
    expect(agent.permissionRequests.map((r) => r.toolCall.toolCallId)).toEqual(sandbox === "off" ? ["start", "get"] : [])
    // It outlived the turn.
    expect(processesWith(tag)).toHaveLength(1)
    return { agent, sessionId }
  }

  it("a dev server started in the background is reachable during the turn, and gone after session/close", async () => {
    const tag = uniqueTag()
    try {
      const { agent, sessionId } = await started(tag)
      const port = Number(readFileSync(path.join(agent.cwd, "port.txt"), "utf8"))
      // Without the sandbox it is on the host's loopback; with it, only in the session's network.
      if (sandbox === "off") expect(await answers(port)).toBe(`hello from ${tag}\n`)
      expect(await agent.sdk.request("session/close", { sessionId })).toEqual({})
      await until("the server's end", () => processesWith(tag).length === 0)
      if (sandbox === "off") expect(await answers(port)).toBeUndefined()
      expectClean(agent)
    } finally {
      killTagged(tag)
    }
  })

  it("Skein's exit (the client goes away: stdin closed; or SIGTERM) leaves no process of a background command", async () => {
    for (const stop of [(child: any) => child.stdin.end(), (child: any) => child.kill("SIGTERM")]) {
      const tag = uniqueTag()
      try {
        const { agent } = await started(tag)
        stop(agent.child)
        await until("Skein's exit", () => agent.exitStatus !== undefined)
        await until("the server's end", () => processesWith(tag).length === 0)
      } finally {
        killTagged(tag)
      }
    }
  })

  for (const [how, env] of [["", {}], [" (no cgroup: the environment marker)", { SKEIN_NO_CGROUP: "1" }]] as const) {
    it(`kill -9 of Skein leaves no process of a background command${how}`, async () => {
      const tag = uniqueTag()
      try {
        const { agent } = await started(tag, env)
        agent.child.kill("SIGKILL")
        await until("the server's end", () => processesWith(tag).length === 0)
      } finally {
        killTagged(tag)
      }
    })
  }
}

describe("e2e: background commands (sandbox off)", () => {
  suite("off")
})

Bwrap.describeWithBwrap("e2e: background commands (sandbox on)", () => {
  suite("auto")
})
