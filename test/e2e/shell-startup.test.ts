/**
 * A user's `~/.bashrc` stays out of the processes Skein starts. bash sources it for `bash -c`
 * when it guesses it was run by sshd: its stdin is a socket (Node's pipes are) or `SSH_CLIENT`
 * is set, and `SHLVL` says it is a top-level shell (absent, empty, 0). Skein is started here the
 * way an editor started from a desktop starts it: no `SHLVL` in its environment. An MCP stdio
 * server, an external agent and a hook, each started through `bash -c` with a pipe as stdin,
 * must work and see nothing of a `~/.bashrc` that prints on stdout and leaves a mark.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { expectClean, NODE, REPO_ROOT, SKEIN, useAgents, waitUntil } from "../support/AgentProcess.ts"
import { bundled } from "../support/FixtureBundle.ts"

const agents = useAgents()
/** The fixture MCP server, bundled once per checkout (test/support/FixtureBundle.ts). */
const MCP_SERVER = bundled(path.join(REPO_ROOT, "test/fixtures/mcp/server.ts"))

/** Prints on stdout (what corrupts a stdio protocol) and records each command it ran for. */
const BASHRC = "echo 'hello from .bashrc'\nprintf '%s\\n' \"$BASH_EXECUTION_STRING\" >> \"$HOME/bashrc-ran\"\n"

/** `bash -c 'exec "$0" "$@"' program args…`: a program started through bash, as users configure them. */
const throughBash = (program: string, ...args: ReadonlyArray<string>) => ({ command: "/bin/bash", args: ["-c", "exec \"$0\" \"$@\"", program, ...args] })

const temps: Array<string> = []
afterEach(() => {
  for (const dir of temps.splice(0)) rmSync(dir, { recursive: true, force: true })
})

describe("e2e: ~/.bashrc stays out of what Skein starts", () => {
  // Sandboxed (`auto`, where bubblewrap runs) the hook runs in the sandbox; `off`, as Skein runs.
  it.each(["auto", "off"])("an MCP server, an external agent and a hook started through bash -c (sandbox %s)", async (sandbox) => {
    const innerHome = mkdtempSync(path.join(os.tmpdir(), "skein-inner-"))
    temps.push(innerHome)
    const innerScript = path.join(innerHome, "script.json")
    writeFileSync(innerScript, JSON.stringify({ turns: [{ calls: [[{ text: "inner agent says hi" }]] }] }))
    const agent = agents.start({
      script: {
        turns: [{
          calls: [
            [{ tool: "probe__echo", args: { text: "ping" }, id: "m1" }],
            [{ tool: "spawn_agent", args: { task: "say hi", agent: "inner" }, id: "s1" }],
            [{ tool: "wait_agent", args: {}, id: "w1" }],
            [{ text: "done" }]
          ]
        }]
      },
      files: {
        // The user's home: inside the workspace, so that a sandboxed hook sees it too.
        "user/.bashrc": BASHRC,
        ".claude/settings.json": JSON.stringify({
          hooks: { PreToolUse: [{ matcher: "", hooks: [{ type: "command", command: "cat > \"$CLAUDE_PROJECT_DIR/hook-input.json\"; exit 0" }] }] }
        })
      },
      // Started without SHLVL, as from a desktop launcher.
      command: ({ home, script }) => [
        "/usr/bin/env", "-u", "SHLVL", `HOME=${path.join(path.dirname(home), "workspace", "user")}`,
        NODE, SKEIN, "acp", "--home", home, "--script", script!, "--trust", "--mode", "bypassPermissions", "--sandbox", sandbox
      ]
    })
    writeFileSync(path.join(agent.home, "config.json"), JSON.stringify({
      mcpServers: { probe: throughBash(NODE, MCP_SERVER) },
      agents: { inner: { acp: throughBash(NODE, SKEIN, "acp", "--home", innerHome, "--script", innerScript) } }
    }))
    await agent.initialize()
    const sessionId = await agent.newSession()
    await waitUntil(() => agent.stderr.includes(`MCP server "probe" is ready`), "the MCP server to be ready", 15_000)
    expect((await agent.prompt(sessionId, "go")).stopReason).toBe("end_turn")

    const log = agent.readLog(sessionId)
    const result = (id: string) => log.find((e: any) => e.type === "tool_result" && e.data.id === id)?.data
    expect(result("m1")).toMatchObject({ ok: true, content: "echo: ping" })
    expect(result("w1")?.content).toContain("inner agent says hi")
    // The hook ran, read its event whole from stdin, and was allowed to.
    expect(JSON.parse(readFileSync(path.join(agent.cwd, "hook-input.json"), "utf8"))).toMatchObject({ hook_event_name: "PreToolUse" })
    expect(log.filter((e: any) => e.type === "hook").length).toBeGreaterThan(0)
    // Nothing sourced the user's ~/.bashrc.
    const marks = path.join(agent.cwd, "user", "bashrc-ran")
    expect(existsSync(marks) ? readFileSync(marks, "utf8") : "").toBe("")
    expect(agent.stderr).not.toContain("hello from .bashrc")
    expectClean(agent)
  })
})
