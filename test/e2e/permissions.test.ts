/**
 * Permissions end to end: a real ACP client answers `session/request_permission` and the
 * agent's behaviour follows each answer, each mode and each remembered rule.
 */
import { execFileSync } from "node:child_process"
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { afterEach } from "vitest"
import { expectClean, message, useAgents, waitUntil } from "../support/AgentProcess.ts"

const agents = useAgents()

const select = (optionId: string) => () => ({ outcome: { outcome: "selected" as const, optionId } })

/** A turn that writes `file` with `content`, then says "done". */
const writeTurn = (file: string, content = "hello\n", id = "w1") => ({
  calls: [[{ tool: "write", args: { path: file, content }, id }], [{ text: "done" }]]
})

const toolUpdates = (updates: ReadonlyArray<any>, id: string) =>
  updates.filter((u) => (u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update") && u.toolCallId === id)

describe("e2e: permissions in default mode", () => {
  it("asks with the live tool call and four scoped options; allow once runs the edit", async () => {
    const agent = await agents.ready({ script: { turns: [writeTurn("a.txt")] }, permission: select("allow_once") })
    const sessionId = await agent.newSession()
    expect((await agent.prompt(sessionId, "write it")).stopReason).toBe("end_turn")

    expect(agent.permissionRequests).toHaveLength(1)
    const request = agent.permissionRequests[0]!
    const call = agent.updates(sessionId).find((u) => u.sessionUpdate === "tool_call")!
    expect(request.toolCall).toMatchObject({ toolCallId: "w1", title: "Write a.txt", kind: "edit" })
    expect(call).toMatchObject({ toolCallId: "w1", title: request.toolCall.title, kind: request.toolCall.kind })
    expect(request.options.map((o) => [o.optionId, o.kind, o.name])).toEqual([
      ["allow_once", "allow_once", "Allow once"],
      ["allow_always", "allow_always", "Always allow edits in this project"],
      ["reject_once", "reject_once", "Reject"],
      ["reject_always", "reject_always", "Always reject edits in this project"]
    ])
    expect(readFileSync(path.join(agent.cwd, "a.txt"), "utf8")).toBe("hello\n")
    const last = toolUpdates(agent.updates(sessionId), "w1").at(-1) as any
    expect(last.status).toBe("completed")
    // A new file: no `oldText` (absent, as ACP's Schema writes an absent optional).
    expect(last.content[0]).toEqual({ type: "diff", path: path.join(agent.cwd, "a.txt"), newText: "hello\n" })
    const logged = agent.readLog(sessionId).filter((e: any) => e.type === "permission")
    expect(logged.map((e: any) => e.data)).toEqual([{ toolCallId: "w1", outcome: "allow_once" }])
    expectClean(agent)
  })

  it("reject once refuses the call, tells the model, and the turn goes on", async () => {
    const agent = await agents.ready({ script: { turns: [writeTurn("a.txt")] }, permission: select("reject_once") })
    const sessionId = await agent.newSession()
    expect((await agent.prompt(sessionId, "write it")).stopReason).toBe("end_turn")
    expect(existsSync(path.join(agent.cwd, "a.txt"))).toBe(false)
    const last = toolUpdates(agent.updates(sessionId), "w1").at(-1) as any
    expect(last.status).toBe("failed")
    expect(JSON.stringify(last.content)).toContain("denied")
    expect(agent.updates(sessionId).at(-1)).toEqual(message("done", "m1.1"))
    expectClean(agent)
  })

  it("allow always is remembered for its scope: the second edit is not asked, and the rule is logged", async () => {
    const agent = await agents.ready({
      script: {
        turns: [
          { calls: [[{ tool: "write", args: { path: "src/a.txt", content: "a" }, id: "w1" }], [{ tool: "write", args: { path: "src/deep/b.txt", content: "b" }, id: "w2" }], [{ tool: "write", args: { path: "c.txt", content: "c" }, id: "w3" }], [{ text: "done" }]] }
        ]
      },
      files: { "src/.keep": "" },
      permission: (request) => ({
        outcome: { outcome: "selected", optionId: request.toolCall.toolCallId === "w1" ? "allow_always" : "reject_once" }
      })
    })
    const sessionId = await agent.newSession()
    await agent.prompt(sessionId, "go")
    // w1 asked and allowed always ("edits in src/"); w2 is inside src/: not asked; w3 is outside: asked.
    expect(agent.permissionRequests.map((r) => r.toolCall.toolCallId)).toEqual(["w1", "w3"])
    expect(agent.permissionRequests[0]!.options.find((o) => o.kind === "allow_always")!.name).toBe("Always allow edits in src/")
    expect(readFileSync(path.join(agent.cwd, "src/deep/b.txt"), "utf8")).toBe("b")
    expect(existsSync(path.join(agent.cwd, "c.txt"))).toBe(false)
    const rule = agent.readLog(sessionId).find((e: any) => e.type === "permission" && e.data.rule !== undefined)
    expect(rule.data).toEqual({
      toolCallId: "w1",
      outcome: "allow_always",
      rule: { decision: "allow", kind: "path", value: path.join(agent.cwd, "src"), label: "edits in src/" }
    })
    expectClean(agent)
  })

  it("reject always refuses later calls in its scope without asking", async () => {
    const agent = await agents.ready({
      script: {
        turns: [{ calls: [[{ tool: "bash", args: { command: "touch one" }, id: "b1" }], [{ tool: "bash", args: { command: "touch two" }, id: "b2" }], [{ text: "done" }]] }]
      },
      // Without the sandbox, commands are asked for (with it they run: e2e/sandbox.test.ts).
      args: ["--sandbox", "off"],
      permission: select("reject_always")
    })
    const sessionId = await agent.newSession()
    await agent.prompt(sessionId, "go")
    expect(agent.permissionRequests).toHaveLength(1)
    expect(agent.permissionRequests[0]!.options.find((o) => o.kind === "reject_always")!.name).toBe("Always reject `touch`")
    const second = toolUpdates(agent.updates(sessionId), "b2").at(-1) as any
    expect(second.status).toBe("failed")
    expect(JSON.stringify(second.content)).toContain("always reject")
    expect(existsSync(path.join(agent.cwd, "one"))).toBe(false)
    expect(existsSync(path.join(agent.cwd, "two"))).toBe(false)
    expectClean(agent)
  })

  it("read-only tools and read-only commands never ask", async () => {
    const agent = await agents.ready({
      script: {
        turns: [{ calls: [[{ tool: "read", args: { path: "n.txt" } }, { tool: "grep", args: { pattern: "x" } }, { tool: "bash", args: { command: "ls" } }], [{ text: "done" }]] }]
      },
      files: { "n.txt": "x\n" }
    })
    const sessionId = await agent.newSession()
    await agent.prompt(sessionId, "go")
    expect(agent.permissionRequests).toEqual([])
    const statuses = agent.updates(sessionId).filter((u: any) => u.sessionUpdate === "tool_call_update" && u.status !== "in_progress")
    expect(statuses.map((u: any) => u.status)).toEqual(["completed", "completed", "completed"])
    expectClean(agent)
  })

  it("a session/cancel while a request is pending withdraws it and the prompt answers cancelled", async () => {
    const agent = await agents.ready({
      script: { turns: [writeTurn("a.txt")] },
      permission: () => new Promise(() => {})
    })
    const sessionId = await agent.newSession()
    const prompt = agent.prompt(sessionId, "write it")
    await waitUntil(() => agent.permissionRequests.length === 1, "the permission request")
    await agent.cancel(sessionId)
    expect((await prompt).stopReason).toBe("cancelled")
    const requestLine = agent.messages().find((m) => m.method === "session/request_permission")!
    const withdrawn = agent.messages().find((m) => m.method === "$/cancel_request")
    expect(withdrawn?.params).toEqual({ requestId: requestLine.id })
    expect(existsSync(path.join(agent.cwd, "a.txt"))).toBe(false)
    expect(agent.readLog(sessionId).at(-1)).toMatchObject({ type: "turn_end", data: { stopReason: "cancelled" } })
  })
})

describe("e2e: modes", () => {
  it("plan mode refuses mutations without asking and tells the client about the switch", async () => {
    const agent = await agents.ready({ script: { turns: [writeTurn("a.txt")] } })
    const sessionId = await agent.newSession()
    await agent.sdk.request("session/set_mode", { sessionId, modeId: "plan" })
    await waitUntil(() => agent.updates(sessionId).length >= 2, "the mode updates")
    expect(agent.updates(sessionId).slice(0, 2)).toMatchObject([
      { sessionUpdate: "current_mode_update", currentModeId: "plan" },
      { sessionUpdate: "config_option_update", configOptions: [{ id: "mode", currentValue: "plan" }] }
    ])
    await agent.prompt(sessionId, "write it")
    expect(agent.permissionRequests).toEqual([])
    expect(existsSync(path.join(agent.cwd, "a.txt"))).toBe(false)
    const last = toolUpdates(agent.updates(sessionId), "w1").at(-1) as any
    expect(last.status).toBe("failed")
    expect(JSON.stringify(last.content)).toContain("Plan mode is read-only")
    expect(agent.readLog(sessionId).find((e: any) => e.type === "mode_changed")).toMatchObject({ turn: null, data: { mode: "plan" } })
    expectClean(agent)
  })

  it("bypassPermissions (set through the mode config option) asks nothing", async () => {
    const agent = await agents.ready({ script: { turns: [{ calls: [[{ tool: "write", args: { path: "a.txt", content: "x" } }, { tool: "bash", args: { command: "touch b" } }], [{ text: "done" }]] }] } })
    const sessionId = await agent.newSession()
    const response = await agent.sdk.request("session/set_config_option", { sessionId, configId: "mode", value: "bypassPermissions" })
    expect(response.configOptions.find((o: any) => o.id === "mode")).toMatchObject({ currentValue: "bypassPermissions", category: "mode" })
    await agent.prompt(sessionId, "go")
    expect(agent.permissionRequests).toEqual([])
    expect(existsSync(path.join(agent.cwd, "a.txt"))).toBe(true)
    expect(existsSync(path.join(agent.cwd, "b"))).toBe(true)
    expectClean(agent)
  })

  it("acceptEdits allows edits but still asks for commands", async () => {
    const agent = await agents.ready({
      script: { turns: [{ calls: [[{ tool: "write", args: { path: "a.txt", content: "x" } }, { tool: "bash", args: { command: "touch b" }, id: "b1" }], [{ text: "done" }]] }] },
      args: ["--mode", "acceptEdits", "--sandbox", "off"],
      permission: select("reject_once")
    })
    const sessionId = await agent.newSession()
    await agent.prompt(sessionId, "go")
    expect(agent.permissionRequests.map((r) => r.toolCall.toolCallId)).toEqual(["b1"])
    expect(existsSync(path.join(agent.cwd, "a.txt"))).toBe(true)
    expect(existsSync(path.join(agent.cwd, "b"))).toBe(false)
    expectClean(agent)
  })
})

describe("e2e: what runs without asking stays read-only", () => {
  const scratch: Array<string> = []
  afterEach(() => {
    for (const dir of scratch.splice(0)) rmSync(dir, { recursive: true, force: true })
  })

  /** A repository in `cwd` whose configuration runs a script that leaves a marker outside it. */
  const hostileRepo = (cwd: string, config: ReadonlyArray<[string, string]>) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "skein-marker-"))
    scratch.push(dir)
    const marker = path.join(dir, "marker")
    const script = path.join(dir, "evil.sh")
    writeFileSync(script, `#!/bin/sh\necho ran >> ${JSON.stringify(marker)}\ncat\n`)
    chmodSync(script, 0o755)
    writeFileSync(path.join(dir, "post-index-change"), `#!/bin/sh\necho hook >> ${JSON.stringify(marker)}\n`)
    chmodSync(path.join(dir, "post-index-change"), 0o755)
    const git = (...args: Array<string>) => execFileSync("git", ["-c", "core.hooksPath=/dev/null", ...args], { cwd, encoding: "utf8" })
    git("init", "-q")
    git("config", "user.email", "a@example.com")
    git("config", "user.name", "a")
    writeFileSync(path.join(cwd, ".gitattributes"), "*.txt diff=drv\n")
    git("add", ".")
    git("commit", "-qm", "one")
    writeFileSync(path.join(cwd, "a.txt"), "two\n")
    git("commit", "-qam", "two")
    for (const [key, value] of config) git("config", key, value === "SCRIPT" ? script : value === "HOOKS" ? dir : value)
    return { marker }
  }

  const bashTurn = (...commands: Array<string>) => ({
    turns: [{ calls: [...commands.map((command, i) => [{ tool: "bash", args: { command }, id: `b${i + 1}` }]), [{ text: "done" }]] }]
  })

  it("default mode runs git status without asking, with the repository's fsmonitor and hooks off", async () => {
    const agent = await agents.ready({ script: bashTurn("git status --short", "git log -p -1"), files: { "a.txt": "one\n" }, permission: select("reject_once") })
    const { marker } = hostileRepo(agent.cwd, [["core.fsmonitor", "SCRIPT"], ["core.hooksPath", "HOOKS"]])
    const sessionId = await agent.newSession()
    await agent.prompt(sessionId, "go")
    expect(agent.permissionRequests).toEqual([])
    expect((toolUpdates(agent.updates(sessionId), "b1").at(-1) as any).status).toBe("completed")
    expect((toolUpdates(agent.updates(sessionId), "b2").at(-1) as any).status).toBe("completed")
    expect(existsSync(marker)).toBe(false)
    expectClean(agent)
  })

  it("a diff driver the repository configures, a read outside, a write: each is asked, none runs", async () => {
    const agent = await agents.ready({
      script: bashTurn("git log -p", "cat /etc/hostname", "sort -o out.txt a.txt", "grep -r x ~"),
      files: { "a.txt": "one\n" },
      args: ["--sandbox", "off"],
      permission: select("reject_once")
    })
    const { marker } = hostileRepo(agent.cwd, [["diff.drv.textconv", "SCRIPT"]])
    const sessionId = await agent.newSession()
    await agent.prompt(sessionId, "go")
    expect(agent.permissionRequests.map((r) => r.toolCall.toolCallId)).toEqual(["b1", "b2", "b3", "b4"])
    expect(existsSync(marker)).toBe(false)
    expect(existsSync(path.join(agent.cwd, "out.txt"))).toBe(false)
    expectClean(agent)
  })

  it("a redirection target is read whole, quotes and all: a read outside and a write beside /dev/null ask", async () => {
    const agent = await agents.ready({
      script: bashTurn("tr -d <.'/../outside/secret.txt' Z", "cat a.txt >/dev/null\"x\"", "tr -d <'a'.txt Z"),
      files: { "a.txt": "one\n" },
      // Without the sandbox: which commands are asked for (sandboxed, none is).
      args: ["--sandbox", "off"],
      permission: select("reject_once")
    })
    mkdirSync(path.join(agent.root, "outside"))
    writeFileSync(path.join(agent.root, "outside", "secret.txt"), "SECRET\n")
    const sessionId = await agent.newSession()
    await agent.prompt(sessionId, "go")
    expect(agent.permissionRequests.map((r) => r.toolCall.toolCallId)).toEqual(["b1", "b2"])
    expect(JSON.stringify(agent.updates(sessionId))).not.toContain("SECRET")
    expect((toolUpdates(agent.updates(sessionId), "b3").at(-1) as any).status).toBe("completed")
    expectClean(agent)
  })

  it("acceptEdits asks before an edit of .git/config, offering to remember that file alone", async () => {
    const agent = await agents.ready({
      script: {
        turns: [{
          calls: [
            [{ tool: "write", args: { path: "b.txt", content: "b" }, id: "w1" }],
            [{ tool: "write", args: { path: ".git/config", content: "[core]\n\tfsmonitor = sh\n" }, id: "w2" }],
            [{ text: "done" }]
          ]
        }]
      },
      files: { "a.txt": "one\n" },
      args: ["--mode", "acceptEdits"],
      permission: select("reject_once")
    })
    hostileRepo(agent.cwd, [])
    const before = readFileSync(path.join(agent.cwd, ".git", "config"), "utf8")
    const sessionId = await agent.newSession()
    await agent.prompt(sessionId, "go")
    expect(agent.permissionRequests.map((r) => r.toolCall.toolCallId)).toEqual(["w2"])
    expect(agent.permissionRequests[0]!.options.find((o) => o.kind === "allow_always")!.name).toBe("Always allow edits of .git/config")
    expect(readFileSync(path.join(agent.cwd, "b.txt"), "utf8")).toBe("b")
    expect(readFileSync(path.join(agent.cwd, ".git", "config"), "utf8")).toBe(before)
    expectClean(agent)
  })
})
