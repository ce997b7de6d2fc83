/**
 * End to end: the built agent's sessions on a real, tiny file system (a 256 KiB tmpfs mounted
 * on `<home>/sessions`) that fills up in the middle of a turn. The prompt is answered (a JSON-RPC
 * error that says the disk is full), a prompt while it is still full is refused at once, and
 * once space is freed the session goes on with its log whole: the refused turn's end written
 * first, every line readable, the history replayed by `session/load`. Skipped only where this
 * process may not mount a tmpfs (not root, or no privilege).
 */
import * as acp from "@agentclientprotocol/sdk"
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, rmdirSync, rmSync, statfsSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { expectClean, message, useAgents } from "../support/AgentProcess.ts"

const mount = (dir: string, size: string) => execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size},mode=0700`, "tmpfs", dir], { stdio: "ignore" })
const unmount = (dir: string) => execFileSync("umount", ["-l", dir], { stdio: "ignore" })

/** Whether this process can mount a tmpfs (root with the privilege to). */
const canMount = (() => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "skein-mount-probe-"))
  try {
    mount(dir, "64k")
    unmount(dir)
    return true
  } catch {
    return false
  } finally {
    rmdirSync(dir)
  }
})()

/** Fills a file system with one file until it refuses more (whatever page slack its files keep). */
const fill = (dir: string): string => {
  const filler = path.join(dir, "filler")
  const { bavail, bsize } = statfsSync(dir)
  try {
    writeFileSync(filler, Buffer.alloc(Number(bavail) * Number(bsize)))
  } catch {
    // ENOSPC: it holds what fit
  }
  return filler
}

/** The JSON-RPC error a request was answered with (the test fails if it succeeded). */
const refusal = (request: Promise<unknown>): Promise<acp.RequestError> =>
  request.then(
    (result) => {
      throw new Error(`expected an error, got ${JSON.stringify(result)}`)
    },
    (error: unknown) => {
      if (error instanceof acp.RequestError) return error
      throw error
    }
  )

const agents = useAgents()
const long = "word ".repeat(6_000)

describe.skipIf(!canMount)("e2e: a full disk under the session logs", () => {
  it("a turn the full disk cuts short is answered with why; the session refuses prompts while full, then goes on once space is freed, its log whole", async () => {
    const agent = await agents.ready({ script: { turns: [{ calls: [[{ text: long }]] }, { calls: [[{ text: "Back." }]] }] } })
    const sessions = path.join(agent.home, "sessions")
    mkdirSync(sessions, { recursive: true, mode: 0o700 })
    mount(sessions, "256k")
    try {
      const sessionId = await agent.newSession()
      const filler = fill(sessions)

      // The answer is too long for what is left: the turn stops, and its prompt is answered.
      const first = await refusal(agent.prompt(sessionId, "go"))
      expect(first?.code).toBe(-32603)
      expect(first?.message).toContain("the disk is full (ENOSPC)")
      expect(first?.message).toContain("its end is not saved yet")

      // Still full: the next prompt is refused at once, and says why.
      const second = await refusal(agent.prompt(sessionId, "again"))
      expect(second?.message).toMatch(/^The prompt was not run: the session's log cannot be written \(.*the disk is full \(ENOSPC\)/)

      // Space freed: the next prompt runs, after the first turn's end is written.
      rmSync(filler)
      expect(await agent.prompt(sessionId, "after")).toEqual({ stopReason: "end_turn" })
      expect(agent.updates(sessionId).at(-1)).toEqual(message("Back."))

      const log = agent.readLog(sessionId)
      const events = log.slice(1)
      expect(events.map((e) => e.seq)).toEqual(events.map((_: unknown, i: number) => i + 1))
      expect(events.filter((e) => e.type === "turn_start").map((e) => e.turn)).toEqual([1, 2])
      expect(events.filter((e) => e.type === "turn_end").map((e) => [e.turn, e.data.stopReason])).toEqual([[1, "end_turn"], [2, "end_turn"]])
      expect(events.find((e) => e.type === "turn_end" && e.turn === 1).data.error).toContain("ENOSPC")
      // What the model streamed before the disk filled is kept as the call's answer.
      expect(events.find((e) => e.type === "model_response" && e.turn === 1).data.parts[0].text).toBe(long)

      // A client that loads the session (once this agent let it go) sees both turns.
      await agent.sdk.request("session/close", { sessionId })
      const editor = await agents.ready({ script: { turns: [] }, args: ["--home", agent.home] })
      await editor.sdk.request("session/load", { sessionId, cwd: agent.cwd, mcpServers: [] })
      expect(editor.updates(sessionId).filter((u: any) => u.sessionUpdate === "user_message_chunk").map((u: any) => u.content.text)).toEqual(["go", "after"])
      expectClean(agent)
      expectClean(editor)
    } finally {
      unmount(sessions)
    }
  })
})
