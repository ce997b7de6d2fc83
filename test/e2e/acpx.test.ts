/**
 * End to end with a third-party ACP client: `acpx` (a headless ACP CLI) spawns Skein as its
 * agent, runs one prompt with `exec`, and prints the whole exchange as JSON lines.
 */
import { spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { makeOutboundChecker } from "../support/AcpSchema.ts"
import { NODE, SKEIN } from "../support/AgentProcess.ts"

/** The acpx CLI's entry file (a pinned devDependency), or undefined when it is not installed. */
const ACPX = (() => {
  try {
    const require = createRequire(import.meta.url)
    const pkg = require("acpx/package.json") as { bin: string | Record<string, string> }
    const bin = typeof pkg.bin === "string" ? pkg.bin : pkg.bin.acpx!
    return path.join(path.dirname(require.resolve("acpx/package.json")), bin)
  } catch {
    return undefined
  }
})()

/** Methods a client calls on an agent: those lines were written by acpx, the rest by Skein. */
const clientToAgent = new Set([
  "initialize", "authenticate", "logout", "session/new", "session/load", "session/resume", "session/list", "session/close",
  "session/delete", "session/prompt", "session/cancel", "session/set_mode", "session/set_config_option"
])

let root: string | undefined
afterEach(() => {
  if (root !== undefined) rmSync(root, { recursive: true, force: true })
  root = undefined
})

const run = (args: ReadonlyArray<string>, options: { cwd: string; env: NodeJS.ProcessEnv }) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(NODE, [ACPX!, ...args], { ...options, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (s: string) => (stdout += s))
    child.stderr.setEncoding("utf8").on("data", (s: string) => (stderr += s))
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`acpx did not finish in time\nstdout:\n${stdout}\nstderr:\n${stderr}`))
    }, 25_000)
    child.on("error", reject)
    child.on("exit", (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })

describe("e2e: acpx", () => {
  // Skipped only when `npm install` has not installed the pinned acpx devDependency.
  it.skipIf(ACPX === undefined)("acpx exec drives Skein through a read tool call to the scripted answer", async () => {
    root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "skein-acpx-")))
    const workspace = path.join(root, "workspace")
    const home = path.join(root, "home")
    const userHome = path.join(root, "user") // acpx keeps its own state under $HOME
    for (const dir of [workspace, home, userHome]) mkdirSync(dir)
    writeFileSync(path.join(workspace, "notes.txt"), "the launch code is 42\n")
    const script = path.join(root, "script.json")
    writeFileSync(script, JSON.stringify({
      turns: [{
        expect: "^What do the notes say\\?$",
        calls: [
          [{ text: "Reading the notes." }, { tool: "read", args: { path: "notes.txt" } }],
          [{ text: "The notes say the launch code is 42." }]
        ]
      }]
    }))

    // The sandbox off: sandboxed commands run in Skein's sandbox, not in a client's terminal.
    const agentCommand = `${NODE} ${SKEIN} acp --home ${home} --script ${script} --sandbox off`
    const result = await run(
      ["--agent", agentCommand, "--approve-all", "--format", "json", "--cwd", workspace, "exec", "What do the notes say?"],
      { cwd: workspace, env: { ...process.env, HOME: userHome, XDG_CONFIG_HOME: path.join(userHome, ".config") } }
    )
    expect(result.code, result.stderr).toBe(0)

    const messages = result.stdout.split("\n").filter((line) => line.trim().length > 0).map((line) => JSON.parse(line))
    const updates = messages.filter((m) => m.method === "session/update").map((m) => m.params.update)
    const text = updates.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text).join("")
    expect(text).toBe("Reading the notes.The notes say the launch code is 42.")
    expect(updates.find((u) => u.sessionUpdate === "tool_call")).toMatchObject({ kind: "read", rawInput: { path: "notes.txt" } })
    expect(updates.find((u) => u.sessionUpdate === "tool_call_update" && u.status === "completed")).toMatchObject({
      content: [{ type: "content", content: { type: "text", text: "1\tthe launch code is 42" } }]
    })
    const promptRequest = messages.find((m) => m.method === "session/prompt")
    expect(messages.find((m) => m.id === promptRequest.id && m.result !== undefined)?.result).toEqual({ stopReason: "end_turn" })

    // What Skein wrote in this exchange is valid ACP too. The output mixes both directions: a
    // message with a client→agent method was written by acpx, any other method by Skein; a
    // response answers an open request of the other side (Skein may call fs/* on acpx).
    const checker = makeOutboundChecker()
    const problems: Array<string> = []
    const openAgentRequests = new Set<unknown>()
    for (const m of messages) {
      if (typeof m.method === "string" && clientToAgent.has(m.method)) {
        checker.sawRequest(m)
      } else if (typeof m.method === "string") {
        problems.push(...checker.check(m))
        if ("id" in m) openAgentRequests.add(m.id)
      } else if (openAgentRequests.has(m.id)) {
        openAgentRequests.delete(m.id) // acpx answering Skein
      } else {
        problems.push(...checker.check(m))
      }
    }
    expect(problems).toEqual([])
    expect(checker.unanswered()).toEqual([])
  })
  // acpx offers fs/* and terminal/*: edits go through its fs/write_text_file and commands run in
  // its terminals (created, waited on and released), with --approve-all answering permissions.
  it.skipIf(ACPX === undefined)("acpx exec: writes and commands go through the client's fs and terminal", async () => {
    root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "skein-acpx-")))
    const workspace = path.join(root, "workspace")
    const home = path.join(root, "home")
    const userHome = path.join(root, "user")
    for (const dir of [workspace, home, userHome]) mkdirSync(dir)
    const script = path.join(root, "script.json")
    writeFileSync(script, JSON.stringify({
      turns: [{
        calls: [
          [{ tool: "write", args: { path: "hello.txt", content: "hi from skein\n" }, id: "w1" }],
          [{ tool: "bash", args: { command: "cat hello.txt && echo ran" }, id: "b1" }],
          [{ text: "Wrote and ran." }]
        ]
      }]
    }))
    // The sandbox off: sandboxed commands run in Skein's sandbox, not in a client's terminal.
    const agentCommand = `${NODE} ${SKEIN} acp --home ${home} --script ${script} --sandbox off`
    const result = await run(
      ["--agent", agentCommand, "--approve-all", "--format", "json", "--cwd", workspace, "exec", "Write and run"],
      { cwd: workspace, env: { ...process.env, HOME: userHome, XDG_CONFIG_HOME: path.join(userHome, ".config") } }
    )
    expect(result.code, result.stderr).toBe(0)
    const messages = result.stdout.split("\n").filter((line) => line.trim().length > 0).map((line) => JSON.parse(line))
    const methods = messages.map((m) => m.method).filter((m) => typeof m === "string")
    expect(methods).toContain("fs/write_text_file")
    expect(methods).toContain("terminal/create")
    expect(methods).toContain("terminal/release")
    expect(readFileSync(path.join(workspace, "hello.txt"), "utf8")).toBe("hi from skein\n")
    const updates = messages.filter((m) => m.method === "session/update").map((m) => m.params.update)
    const bash = updates.filter((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === "b1")
    expect(bash.some((u) => Array.isArray(u.content) && u.content.some((c: any) => c.type === "terminal"))).toBe(true)
    // The finished call keeps its terminal as content (and its title); the output is also in rawOutput.
    const terminalId = bash.find((u) => Array.isArray(u.content) && u.content[0]?.type === "terminal").content[0].terminalId
    expect(bash.at(-1)).toMatchObject({ status: "completed", title: expect.stringContaining("cat hello.txt"), content: [{ type: "terminal", terminalId }] })
    expect(JSON.stringify(bash.at(-1).rawOutput)).toContain("hi from skein")
    const creates = messages.filter((m) => m.method === "terminal/create").length
    const releases = messages.filter((m) => m.method === "terminal/release").length
    expect(releases).toBe(creates)
  })
})
