/**
 * What editors see of the agent's requests to them, byte by byte: a permission question, a
 * file read or a terminal arrives only after every update that led to it, even from a client
 * that sends nothing while the question is open; permission requests for edits carry the
 * change; `session/cancel` works as a request; an answer naming an option that was not
 * offered is reported; a finished call repeats its title and keeps its terminal.
 */
import { spawnSync } from "node:child_process"
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { expectClean, type JsonRpcMessage, useAgents, waitUntil } from "../support/AgentProcess.ts"

const agents = useAgents()

const parse = (line: string): JsonRpcMessage => JSON.parse(line) as JsonRpcMessage

/** Index of the first stdout line matching `predicate`, or -1. */
const lineIndex = (lines: ReadonlyArray<string>, predicate: (m: JsonRpcMessage) => boolean): number =>
  lines.findIndex((line) => predicate(parse(line)))

const isUpdate = (kind: string, extra: (u: any) => boolean = () => true) => (m: JsonRpcMessage) =>
  m.method === "session/update" && m.params?.update?.sessionUpdate === kind && extra(m.params.update)

const never = <A>() => new Promise<A>(() => {})

/** The stderr line (with the annotations the logger prints after it) of the warning that says `what`. */
const warningAbout = (stderr: string, what: string): string => {
  const lines = stderr.split("\n")
  const at = lines.findIndex((line) => line.includes(what))
  expect(at).toBeGreaterThanOrEqual(0)
  return lines.slice(at, at + 2).join("\n")
}

describe("e2e: requests to the client come after the updates that lead to them", () => {
  it("a permission request is written after the text and the tool_call before it, while the client stays silent", async () => {
    const agent = await agents.ready({
      script: { turns: [{ calls: [[{ text: "I will write the file." }, { tool: "write", args: { path: "a.txt", content: "hi\n" }, id: "w1" }], [{ text: "done" }]] }] },
      // The client answers nothing while the question is open, and sends nothing else either.
      permission: () => never()
    })
    const sessionId = await agent.newSession()
    void agent.prompt(sessionId, "go").catch(() => {})
    await waitUntil(() => lineIndex(agent.lines, (m) => m.method === "session/request_permission") >= 0, "the permission request")
    const lines = [...agent.lines]
    const asked = lineIndex(lines, (m) => m.method === "session/request_permission")
    const text = lineIndex(lines, isUpdate("agent_message_chunk", (u) => u.content.text === "I will write the file."))
    const call = lineIndex(lines, isUpdate("tool_call", (u) => u.toolCallId === "w1"))
    expect(text).toBeGreaterThanOrEqual(0)
    expect(call).toBeGreaterThan(text)
    expect(asked).toBeGreaterThan(call)
    expect(parse(lines[asked]!).params.toolCall.toolCallId).toBe("w1")
    await agent.cancel(sessionId)
    await waitUntil(() => agent.lines.some((line) => parse(line).result?.stopReason === "cancelled"), "the cancelled prompt")
    // The withdrawn question is cancelled on the wire, and the call is closed like any other.
    expect(agent.messages().some((m) => m.method === "$/cancel_request" && m.params?.requestId === parse(lines[asked]!).id)).toBe(true)
    expect(agent.written.filter((n) => n.update.sessionUpdate === "tool_call_update").at(-1)!.update).toMatchObject({ toolCallId: "w1", status: "failed" })
  })

  it("fs/read_text_file and terminal/* requests are written after the tool call and its in_progress update", async () => {
    const created: Array<{ command: string; args: ReadonlyArray<string> }> = []
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    const agent = await agents.ready({
      // The sandbox off: sandboxed commands run in Skein's sandbox, not in a client's terminal.
      args: ["--mode", "bypassPermissions", "--sandbox", "off"],
      files: { "notes.txt": "disk\n" },
      clientCapabilities: { readTextFile: true, writeTextFile: false, terminal: true },
      clientMethods: {
        "fs/read_text_file": async () => {
          await held
          return { content: "from the editor\n" }
        },
        "terminal/create": (params: { command: string; args: ReadonlyArray<string> }) => {
          created.push(params)
          return { terminalId: "term-7" }
        },
        "terminal/wait_for_exit": () => ({ exitCode: 0 }),
        "terminal/output": () => ({ output: "built\n", truncated: false, exitStatus: { exitCode: 0 } }),
        "terminal/release": () => ({})
      },
      script: {
        turns: [{
          calls: [
            [{ text: "Reading." }, { tool: "read", args: { path: "notes.txt" }, id: "r1" }],
            [{ tool: "bash", args: { command: "make build" }, id: "b1" }],
            [{ text: "done" }]
          ]
        }]
      }
    })
    const sessionId = await agent.newSession()
    const answer = agent.prompt(sessionId, "go")
    await waitUntil(() => lineIndex(agent.lines, (m) => m.method === "fs/read_text_file") >= 0, "the read request")
    const lines = [...agent.lines]
    const read = lineIndex(lines, (m) => m.method === "fs/read_text_file")
    expect(lineIndex(lines, isUpdate("tool_call", (u) => u.toolCallId === "r1"))).toBeLessThan(read)
    expect(lineIndex(lines, isUpdate("tool_call_update", (u) => u.toolCallId === "r1" && u.status === "in_progress"))).toBeLessThan(read)
    release()
    expect((await answer).stopReason).toBe("end_turn")

    const all = agent.lines
    const create = lineIndex(all, (m) => m.method === "terminal/create")
    expect(lineIndex(all, isUpdate("tool_call_update", (u) => u.toolCallId === "b1" && u.status === "in_progress"))).toBeLessThan(create)
    // The read's result came from the editor, not the disk.
    const readResult = agent.updates(sessionId).find((u: any) => u.toolCallId === "r1" && u.status === "completed") as any
    expect(JSON.stringify(readResult.content)).toContain("from the editor")
    // The finished command keeps its terminal as content, and repeats its title.
    const bashUpdates = agent.updates(sessionId).filter((u: any) => u.sessionUpdate === "tool_call_update" && u.toolCallId === "b1") as Array<any>
    expect(bashUpdates.some((u) => u.content?.[0]?.type === "terminal" && u.status === undefined)).toBe(true)
    expect(bashUpdates.at(-1)).toMatchObject({ status: "completed", title: "`make build`", content: [{ type: "terminal", terminalId: "term-7" }] })
    expect(bashUpdates.at(-1).rawOutput.content).toContain("built")
    expect(agent.messages().filter((m) => m.method === "terminal/release")).toHaveLength(1)
    // Run as a client over ssh runs it (SSH_CLIENT set, no SHLVL, a pipe as stdin), the command
    // line reads no ~/.bashrc.
    expect(created).toHaveLength(1)
    const home = path.join(agent.root, "user")
    mkdirSync(home)
    writeFileSync(path.join(home, ".bashrc"), "echo 'hello from .bashrc'\n")
    const ran = spawnSync(created[0]!.command, created[0]!.args.map((arg) => (arg === "make build" ? "echo built" : arg)), {
      env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: home, SSH_CLIENT: "10.0.0.1 5000 22" },
      input: "",
      encoding: "utf8"
    })
    expect(ran.stdout).toBe("built\n")
    expectClean(agent)
  })
})

describe("e2e: permission requests show the change", () => {
  it("write and edit requests carry the proposed diff and the location", async () => {
    const agent = await agents.ready({
      files: { "src/app.ts": "const a = 1\nconst b = 2\n" },
      script: {
        turns: [{
          calls: [
            [{ tool: "write", args: { path: "new.txt", content: "fresh\n" }, id: "w1" }],
            [{ tool: "edit", args: { path: "src/app.ts", edits: [{ oldText: "const b = 2", newText: "const b = 3" }] }, id: "e1" }],
            [{ tool: "edit", args: { path: "src/app.ts", edits: [{ oldText: "not there", newText: "x" }] }, id: "e2" }],
            [{ text: "done" }]
          ]
        }]
      }
    })
    const sessionId = await agent.newSession()
    expect((await agent.prompt(sessionId, "go")).stopReason).toBe("end_turn")
    const [write, edit, failing] = agent.permissionRequests
    const file = path.join(agent.cwd, "src/app.ts")
    expect(write!.toolCall).toMatchObject({
      toolCallId: "w1",
      locations: [{ path: path.join(agent.cwd, "new.txt") }],
      content: [{ type: "diff", path: path.join(agent.cwd, "new.txt"), oldText: null, newText: "fresh\n" }]
    })
    expect(edit!.toolCall).toMatchObject({
      toolCallId: "e1",
      locations: [{ path: file }],
      content: [{ type: "diff", path: file, oldText: "const a = 1\nconst b = 2\n", newText: "const a = 1\nconst b = 3\n" }]
    })
    // An edit that cannot apply has nothing to show; it is still asked, and fails when it runs.
    expect(failing!.toolCall.toolCallId).toBe("e2")
    expect(failing!.toolCall.content ?? []).toEqual([])
    expect(readFileSync(file, "utf8")).toBe("const a = 1\nconst b = 3\n")
    expectClean(agent)
  })
})

describe("e2e: what some clients send", () => {
  it("session/cancel sent as a request cancels the turn and is answered null", async () => {
    const agent = await agents.ready({ script: { turns: [{ calls: [[{ text: "thinking…" }, { sleep_ms: 30_000 }, { text: "never" }]] }] } })
    const sessionId = await agent.newSession()
    const answer = agent.prompt(sessionId, "go")
    await agent.waitForUpdate(sessionId, (u) => u.sessionUpdate === "agent_message_chunk")
    const response = await agent.requestRaw("session/cancel", { sessionId })
    expect(response).toEqual({ jsonrpc: "2.0", id: response.id, result: null })
    expect((await answer).stopReason).toBe("cancelled")
    expectClean(agent)
  })

  it("an answer choosing an option that was not offered is a denial, with a warning naming that request and the offered options", async () => {
    const agent = await agents.ready({
      script: { turns: [{ calls: [[{ tool: "write", args: { path: "a.txt", content: "x" }, id: "w1" }], [{ text: "done" }]] }] },
      permission: () => ({ outcome: { outcome: "selected", optionId: "yes-please" } })
    })
    const sessionId = await agent.newSession()
    expect((await agent.prompt(sessionId, "go")).stopReason).toBe("end_turn")
    expect(agent.readLog(sessionId).find((e: any) => e.type === "permission").data).toEqual({ toolCallId: "w1", outcome: "cancelled" })
    const asked = agent.messages().find((m) => m.method === "session/request_permission")!
    const warning = warningAbout(agent.stderr, "was not offered")
    expect(warning).toContain(`session/request_permission #${asked.id} (tool call "w1" of session ${sessionId})`)
    expect(warning).toContain(`"yes-please"`)
    expect(warning).toContain("allow_once, allow_always, reject_once, reject_always")
    // Annotated with that request, not with the one that opened the session (its id may be the same number).
    expect(warning).toContain("rpcMethod: 'session/request_permission'")
    expect(warning).not.toContain("session/new")
    expect(agent.stderr.split("was not offered")).toHaveLength(2)
    expectClean(agent)
  })

  it("the warning for a child's question names the request the client saw: on the parent, about the child's card", async () => {
    const agent = await agents.ready({
      script: {
        turns: [{ calls: [[{ tool: "spawn_agent", args: { task: "Write a.txt" }, id: "s1" }], [{ tool: "wait_agent", args: {}, id: "w1" }], [{ text: "done" }]] }],
        agents: { general: { turns: [{ calls: [[{ tool: "write", args: { path: "a.txt", content: "x" }, id: "cw" }], [{ text: "wrote it" }]] }] } }
      },
      permission: () => ({ outcome: { outcome: "selected", optionId: "yes-please" } })
    })
    const sessionId = await agent.newSession()
    expect((await agent.prompt(sessionId, "delegate")).stopReason).toBe("end_turn")
    const childId = agent.readLog(sessionId).find((e: any) => e.type === "subagent").data.id
    const asked = agent.messages().find((m) => m.method === "session/request_permission")!
    const warning = warningAbout(agent.stderr, "was not offered")
    expect(warning).toContain(`session/request_permission #${asked.id} (tool call "${childId}/cw" of session ${sessionId})`)
    expect(warning).not.toContain("session/new")
    expect(agent.readLog(childId).find((e: any) => e.type === "permission").data).toEqual({ toolCallId: "cw", outcome: "cancelled" })
    expectClean(agent)
  })
})
