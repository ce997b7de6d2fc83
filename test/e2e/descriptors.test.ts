/**
 * What the built agent was started with beyond its stdio reaches nothing it starts. The
 * editor's side here opens, without close-on-exec, fd 40 on a directory outside the workspace
 * (a directory's descriptor reaches every file below it, whatever a sandbox's mount namespace
 * shows) and fd 41 on a secret file. A sandboxed command, an unsandboxed one, a hook and an
 * MCP stdio server each list their descriptors and try to read through both.
 *
 * Not fds 9 and 10: Node marks close-on-exec what it inherits at 3 to 15 (and on, up to the
 * first closed one) when it starts (libuv's `uv_disable_stdio_inheritance`); what lies beyond
 * a gap it leaves alone.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as path from "node:path"
import { afterEach, expect, it } from "vitest"
import { useAgents } from "../support/AgentProcess.ts"
import * as Bwrap from "../support/Bwrap.ts"
import * as Visible from "../support/Visible.ts"

const agents = useAgents()

const scratch: Array<string> = []
afterEach(() => {
  for (const dir of scratch.splice(0)) rmSync(dir, { recursive: true, force: true })
})

const SECRET = "fd-secret-4a1c9e"
const MARKER = "fd-marker-7b2d.txt"

/** A directory outside every workspace holding a marker file, and a secret file beside it. */
const outside = () => {
  const dir = Visible.makeDir("skein-e2e-fds-")
  scratch.push(dir)
  writeFileSync(path.join(dir, MARKER), "")
  const secret = path.join(dir, "secret.txt")
  writeFileSync(secret, `${SECRET}\n`)
  return { dir, secret }
}

/** Skein starts with fd 40 on `dir` and fd 41 on `secret`, both inherited (bash opens them without close-on-exec). */
const wrapper = (where: { readonly dir: string; readonly secret: string }) => ["/bin/bash", "-c", "exec 40<\"$0\" 41<\"$1\"; shift; exec \"$@\"", where.dir, where.secret]

/** Lists the shell's descriptors, then tries both. */
const PROBE = "ls -l /proc/$$/fd; cat <&41; ls /proc/self/fd/40/; true"

/** The same, into `file`. */
const probeInto = (file: string) => `ls -l /proc/$$/fd > ${file} 2>&1; cat <&41 >> ${file} 2>&1; ls /proc/self/fd/40/ >> ${file} 2>&1; true`

const expectNothingThrough = (text: string, where: { readonly dir: string; readonly secret: string }) => {
  expect(text).toMatch(/ 0 -> /)
  expect(text).not.toMatch(/ (40|41) -> /)
  expect(text).not.toContain(SECRET)
  expect(text).not.toContain(MARKER)
  expect(text).not.toContain(where.dir)
}

const results = (agent: { readLog: (id: string) => Array<any> }, sessionId: string) =>
  agent.readLog(sessionId).filter((e: any) => e.type === "tool_result").map((e: any) => e.data)

it("an unsandboxed command, a hook and an MCP server get none of Skein's inherited descriptors", async () => {
  const where = outside()
  const agent = await agents.ready({
    script: { turns: [{ calls: [[{ tool: "bash", args: { command: PROBE }, id: "b1" }], [{ text: "done" }]] }] },
    files: { ".claude/settings.json": JSON.stringify({ hooks: { UserPromptSubmit: [{ matcher: "", hooks: [{ type: "command", command: probeInto("hook-fds.txt") }] }] } }) },
    args: ["--sandbox", "off", "--mode", "bypassPermissions", "--trust"],
    wrapper: wrapper(where)
  })
  const mcpOut = path.join(agent.cwd, "mcp-fds.txt")
  const created = await agent.sdk.request("session/new", {
    cwd: agent.cwd,
    mcpServers: [{ name: "probe", command: "/bin/bash", args: ["-c", probeInto("\"$0\""), mcpOut], env: [] }]
  })
  await agent.prompt(created.sessionId, "go")
  const [result] = results(agent, created.sessionId)
  expect(result.ok).toBe(true)
  expectNothingThrough(result.content, where)
  expectNothingThrough(readFileSync(path.join(agent.cwd, "hook-fds.txt"), "utf8"), where)
  expect(existsSync(mcpOut)).toBe(true)
  expectNothingThrough(readFileSync(mcpOut, "utf8"), where)
})

Bwrap.describeWithBwrap("e2e: descriptors and the sandbox", () => {
  it("a sandboxed command cannot read through a directory or a file Skein was started with", async () => {
    const where = outside()
    const agent = await agents.ready({
      script: { turns: [{ calls: [[{ tool: "bash", args: { command: PROBE }, id: "b1" }], [{ text: "done" }]] }] },
      wrapper: wrapper(where)
    })
    const sessionId = await agent.newSession()
    await agent.prompt(sessionId, "go")
    const [result] = results(agent, sessionId)
    expect(result.ok).toBe(true)
    expectNothingThrough(result.content, where)
    expect(result.content).not.toMatch(/user:\[|net:\[/)
  })
})
