/**
 * End to end: the built agent's sessions on a real, tiny file system (a 256 KiB tmpfs mounted
 * on `<home>/sessions`) that fills up in the middle of a turn. The prompt is answered (a JSON-RPC
 * error that says the disk is full), a prompt while it is still full is refused at once, and
 * once space is freed the session goes on with its log whole: the refused turn's end written
 * first, every line readable, the history replayed by `session/load`. At a terminal
 * (`skein run`), the loop says so and goes on. Skipped only where this process may not mount a
 * tmpfs (not root, or no privilege).
 */
import * as acp from "@agentclientprotocol/sdk"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { expectClean, message, NODE, SKEIN, useAgents } from "../support/AgentProcess.ts"
import { ptyAvailable, type Pty, spawnPty } from "../support/Pty.ts"
import { canMount, fill, mount, unmount } from "../support/Tmpfs.ts"

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
      expect(agent.updates(sessionId).at(-1)).toEqual(message("Back.", expect.any(String)))

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

describe.skipIf(!canMount || !ptyAvailable)("e2e: a full disk under skein run at a terminal", () => {
  const mounted: Array<string> = []
  const terms: Array<Pty> = []
  const roots: Array<string> = []
  afterEach(() => {
    for (const dir of mounted.splice(0)) unmount(dir)
    for (const term of terms.splice(0)) term.child.kill("SIGKILL")
    for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true })
  })

  it("the turn the full disk stopped is reported in the loop, which goes on; once space is freed the next prompt runs", async () => {
    const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "skein-full-tty-")))
    roots.push(root)
    const home = path.join(root, "home")
    const sessions = path.join(home, "sessions")
    const cwd = path.join(root, "ws")
    mkdirSync(sessions, { recursive: true, mode: 0o700 })
    mkdirSync(cwd)
    mount(sessions, "256k")
    mounted.push(sessions)
    const script = path.join(root, "script.json")
    writeFileSync(script, JSON.stringify({ turns: [{ calls: [[{ text: long }]] }, { calls: [[{ text: "Back." }]] }] }))
    const env: Record<string, string> = { PATH: process.env["PATH"] ?? "", HOME: root, NO_COLOR: "1", SKEIN_NO_CODE_CACHE: "1" }
    const term = spawnPty([NODE, SKEIN, "run", "--home", home, "--script", script], { cwd, env })
    terms.push(term)
    // The prompt's hint line ends with this.
    const ready = () => term.waitFor("ctrl-d: leave")
    await ready()
    const filler = fill(sessions)
    term.type("go\r")
    await term.waitFor("the disk is full (ENOSPC)")
    await ready()
    rmSync(filler)
    term.type("after\r")
    await term.waitFor("Back.")
    await ready()
    term.type("\x04")
    expect(await term.exit).toBe(0)
  })
})
