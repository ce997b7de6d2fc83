/**
 * Faults: SIGHUP, what an editor that exits (Emacs) or a terminal that closes sends. Its
 * default action kills a process on the spot: no log synced, the session's lock left behind.
 * Skein handles it like SIGTERM, in every command: the running turn is closed in the log
 * (`turn_end` cancelled), the lock is removed, child processes are killed, and it exits
 * (`acp`: 0, a clean shutdown; `run` and `replay --rerun`: 129, 128 + SIGHUP).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { type AgentProcess, NODE, SKEIN, useAgents } from "../support/AgentProcess.ts"
import { descendants, groupMembers, killGroup, until } from "../fixtures/faults/harness.ts"

const agents = useAgents()

const COMMAND = "echo $$ > pid; sleep 30"
const script = {
  turns: [{ calls: [[{ text: "Running it." }, { tool: "bash", args: { command: COMMAND }, id: "b1" }], [{ text: "never" }]] }]
}

const exited = (child: ChildProcess) =>
  new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve({ code: child.exitCode, signal: child.signalCode })
    else child.once("exit", (code, signal) => resolve({ code, signal }))
  })

const lines = (file: string) => readFileSync(file, "utf8").trimEnd().split("\n").map((l) => JSON.parse(l))

/** The log's last turn is closed as cancelled, every tool call has its result, and no lock is left. */
const expectClosed = (sessions: string, sessionId: string) => {
  const log = lines(path.join(sessions, `${sessionId}.ndjson`))
  const events = log.slice(1)
  const calls = events.filter((e) => e.type === "tool_call").map((e) => e.data.id)
  const results = events.filter((e) => e.type === "tool_result").map((e) => e.data.id)
  expect(results).toEqual(calls)
  expect(events.at(-1)).toMatchObject({ type: "turn_end", data: { stopReason: "cancelled" } })
  expect(existsSync(path.join(sessions, `${sessionId}.lock`))).toBe(false)
}

const pgidIn = async (cwd: string) => {
  const pidFile = path.join(cwd, "pid")
  await until(() => existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() !== "", "the command's pid file")
  const pgid = Number(readFileSync(pidFile, "utf8").trim())
  await until(() => groupMembers(pgid).length >= 1, "the command to run")
  return pgid
}

const startTurn = async (agent: AgentProcess) => {
  const sessionId = await agent.newSession()
  const prompt = agent.prompt(sessionId, "run it").then((r) => r, (error: unknown) => ({ error: String(error) }))
  return { sessionId, prompt, pgid: await pgidIn(agent.cwd) }
}

/**
 * The command writes its pid (`echo $$`) for the test to find its group: outside the sandbox,
 * where that is the machine's pid (a sandboxed command has a PID namespace of its own; the
 * sandbox's own clean-up is tested in test/e2e/sandbox.test.ts).
 */
const UNSANDBOXED = ["--sandbox", "off"]

const temps: Array<string> = []
afterEach(() => {
  for (const dir of temps.splice(0)) rmSync(dir, { recursive: true, force: true })
})
const tempDir = () => {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), "skein-hup-")))
  temps.push(dir)
  return dir
}

describe("faults: SIGHUP shuts down cleanly", () => {
  it("acp, mid-turn: exit 0, the turn closed in the log, the lock gone, no process left", async () => {
    const agent = await agents.ready({ script, args: ["--mode", "bypassPermissions", ...UNSANDBOXED] })
    const { sessionId, prompt, pgid } = await startTurn(agent)
    try {
      expect(existsSync(path.join(agent.home, "sessions", `${sessionId}.lock`))).toBe(true)
      agent.child.kill("SIGHUP")
      expect(await agent.waitExit(10_000)).toEqual({ code: 0, signal: null })
      expect(await prompt).toEqual({ stopReason: "cancelled" })
      expectClosed(path.join(agent.home, "sessions"), sessionId)
      expect(groupMembers(pgid)).toEqual([])
      expect(descendants(agent.child.pid!)).toEqual([])
    } finally {
      killGroup(pgid)
    }
  })

  it("acp, after the editor closed its ends of the pipes, and hung up twice: the same clean shutdown", async () => {
    const agent = await agents.ready({ script, args: ["--mode", "bypassPermissions", ...UNSANDBOXED] })
    const { sessionId, pgid } = await startTurn(agent)
    try {
      // An editor that exits closes its pipes and its pty sends SIGHUP, sometimes twice.
      agent.child.stdout.destroy()
      agent.child.stderr.destroy()
      agent.child.kill("SIGHUP")
      agent.child.kill("SIGHUP")
      expect(await agent.waitExit(10_000)).toEqual({ code: 0, signal: null })
      expectClosed(path.join(agent.home, "sessions"), sessionId)
      expect(groupMembers(pgid)).toEqual([])
    } finally {
      killGroup(pgid)
    }
  })

  it("run, mid-turn: exit 129, the turn closed in the log, the lock gone, no process left", async () => {
    const root = tempDir()
    const home = path.join(root, "home")
    const cwd = path.join(root, "ws")
    mkdirSync(cwd)
    writeFileSync(path.join(root, "script.json"), JSON.stringify(script))
    const child = spawn(NODE, [SKEIN, "run", "--home", home, "--script", path.join(root, "script.json"), "--mode", "bypassPermissions", ...UNSANDBOXED, "run it"], {
      cwd,
      stdio: ["ignore", "pipe", "pipe"]
    })
    const exit = exited(child)
    let pgid = 0
    try {
      pgid = await pgidIn(cwd)
      const [log] = readdirSync(path.join(home, "sessions")).filter((n) => n.endsWith(".ndjson"))
      child.kill("SIGHUP")
      expect(await exit).toEqual({ code: 129, signal: null })
      expectClosed(path.join(home, "sessions"), log!.slice(0, -".ndjson".length))
      expect(groupMembers(pgid)).toEqual([])
    } finally {
      child.kill("SIGKILL")
      if (pgid > 0) killGroup(pgid)
    }
  })

  it("replay --rerun, mid-tool: exit 129, the re-run's turn closed in its log, its lock gone, no process left", async () => {
    // A finished session whose bash call ran a while; the re-run runs it again, for real.
    const agent = await agents.ready({
      script: { turns: [{ calls: [[{ tool: "bash", args: { command: "echo $$ > pid; sleep 0.2" }, id: "b1" }], [{ text: "done" }]] }] },
      args: ["--mode", "bypassPermissions", ...UNSANDBOXED]
    })
    const sessionId = await agent.newSession()
    expect(await agent.prompt(sessionId, "go")).toEqual({ stopReason: "end_turn" })
    const file = path.join(agent.home, "sessions", `${sessionId}.ndjson`)
    const logged = readFileSync(file, "utf8")
    // The re-run's command: the same call, but long.
    writeFileSync(file, logged.replace("sleep 0.2", "sleep 30"))
    rmSync(path.join(agent.cwd, "pid"))
    const rerunHome = path.join(tempDir(), "rerun-home")
    const child = spawn(NODE, [SKEIN, "replay", file, "--rerun", "--cwd", agent.cwd, "--rerun-home", rerunHome, ...UNSANDBOXED], {
      stdio: ["ignore", "pipe", "pipe"]
    })
    const exit = exited(child)
    let pgid = 0
    try {
      pgid = await pgidIn(agent.cwd)
      const [rerunLog] = readdirSync(path.join(rerunHome, "sessions")).filter((n) => n.endsWith(".ndjson"))
      child.kill("SIGHUP")
      expect(await exit).toEqual({ code: 129, signal: null })
      expectClosed(path.join(rerunHome, "sessions"), rerunLog!.slice(0, -".ndjson".length))
      expect(groupMembers(pgid)).toEqual([])
    } finally {
      child.kill("SIGKILL")
      if (pgid > 0) killGroup(pgid)
    }
  })
})
