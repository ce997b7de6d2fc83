/**
 * Child sessions (subagents) end to end: the built agent driven by the official ACP client, in
 * both presentations — the fallback every client understands (a child is a tool call of its
 * parent, its questions asked on the parent) and the native one of the unstable schema
 * (`clientCapabilities.subagents`: children are sessions announced by `subagent_update`). Every
 * line the agent writes is checked against the schema (the unstable one for the native form).
 */
import { spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { errorCode, expectClean, NODE, type Script, SKEIN, useAgents, waitUntil } from "../support/AgentProcess.ts"

const agents = useAgents()

const call = (tool: string, args: unknown, id?: string) => ({ tool, args, ...(id !== undefined ? { id } : {}) })

/** A parent that starts two explorers, waits for them and sums up. */
const twoExplorers: Script = {
  turns: [{
    calls: [
      [call("spawn_agent", { task: "Read the notes", agent: "explorer" }, "s1"), call("spawn_agent", { task: "Read the notes again", agent: "explorer" }, "s2")],
      [call("wait_agent", {}, "w1")],
      [{ text: "Both explorers reported." }]
    ]
  }],
  agents: { explorer: { turns: [{ calls: [[call("read", { path: "notes.txt" })], [{ text: "The notes say hi." }]] }] } }
}

/** A parent whose general child writes a file (which asks in default mode). */
const childWrites: Script = {
  turns: [{ calls: [[call("spawn_agent", { task: "Write a.txt" }, "s1")], [call("wait_agent", {}, "w1")], [{ text: "done" }]] }],
  agents: { general: { turns: [{ calls: [[call("write", { path: "a.txt", content: "from the child\n" }, "cw")], [{ text: "wrote it" }]] }] } }
}

const spawnedEvents = (log: ReadonlyArray<any>) => log.filter((e) => e.type === "subagent" && e.data.event === "spawned")
const spawnedIds = (log: ReadonlyArray<any>) => spawnedEvents(log).map((e) => e.data.id as string)
/** Each card's fields as its updates left them (what a client shows in the end), by tool call id. */
const finalCards = (updates: ReadonlyArray<any>) => {
  const cards: Record<string, Record<string, unknown>> = {}
  for (const u of updates) {
    if (u.sessionUpdate !== "tool_call" && u.sessionUpdate !== "tool_call_update") continue
    const { sessionUpdate: _, ...fields } = u
    cards[u.toolCallId] = { ...cards[u.toolCallId], ...fields }
  }
  return cards
}
/** The parent's card of a child (fallback): the spawn_agent call that started it, or one of its own. */
const cardOf = (spawned: any, updates: ReadonlyArray<any>) =>
  updates.some((u) => u.sessionUpdate === "tool_call" && u.toolCallId === spawned.data.toolCallId && u.title.startsWith("Spawn "))
    ? spawned.data.toolCallId as string
    : `subagent-${spawned.data.id}`

describe("e2e: subagents, fallback presentation", () => {
  it("each child is one card: the spawn_agent call that started it ('<agent> — <task>'), ending with what it did and its answer", async () => {
    const agent = await agents.ready({ script: twoExplorers, files: { "notes.txt": "hi\n" } })
    const sessionId = await agent.newSession()
    expect((await agent.prompt(sessionId, "look around")).stopReason).toBe("end_turn")
    const spawned = spawnedEvents(agent.readLog(sessionId))
    expect(spawned.map((e) => e.data.toolCallId)).toEqual(["s1", "s2"])
    const updates = agent.updates(sessionId) as Array<any>
    for (const [i, e] of spawned.entries()) {
      const card = updates.filter((u) => u.toolCallId === e.data.toolCallId)
      expect(card[0]).toMatchObject({ sessionUpdate: "tool_call", kind: "think" })
      // Named after the child once it runs: never "name: task" (some clients cut a title at its colon).
      const title = `explorer — Read the notes${i === 1 ? " again" : ""}`
      const named = card.findIndex((u) => u.title === title)
      expect(named).toBeGreaterThan(0)
      expect(card.slice(named).every((u) => u.title === title && u.kind === "think")).toBe(true)
      expect(card.some((u) => u.status === "completed" && u !== card.at(-1))).toBe(false)
      const last = card.at(-1)
      expect(last.status).toBe("completed")
      expect(last.content).toEqual([{ type: "content", content: { type: "text", text: "✓ Read notes.txt\n\nThe notes say hi." } }])
    }
    // One card per child: the parent's own calls, nothing else.
    const cards = updates.filter((u) => u.sessionUpdate === "tool_call").map((u) => u.toolCallId)
    expect(cards).toEqual(["s1", "s2", "w1"])
    // The wait card reads as text: what became of each child, not the model's JSON.
    const waited = updates.filter((u) => u.toolCallId === "w1").at(-1)
    const shown = waited.content[0].content.text as string
    expect(shown.trimStart().startsWith("{")).toBe(false)
    expect(shown.split("\n")).toEqual(spawned.map((e) => `✓ explorer ${e.data.id.slice(0, 8)} done — The notes say hi.`))
    // Nothing is shown under a session id the client does not know.
    expect(agent.messages().filter((m) => m.method === "session/update" && m.params.sessionId !== sessionId)).toEqual([])
    expectClean(agent)
  })

  it("a child's permission question is about a card announced first on the parent, with its change; the card ends with its diff", async () => {
    const agent = await agents.ready({ script: childWrites })
    const sessionId = await agent.newSession()
    expect((await agent.prompt(sessionId, "delegate")).stopReason).toBe("end_turn")
    const [childId] = spawnedIds(agent.readLog(sessionId))
    const callId = `${childId}/cw`
    const target = path.join(agent.cwd, "a.txt")
    expect(agent.permissionRequests).toHaveLength(1)
    const request = agent.permissionRequests[0]!
    expect(request.sessionId).toBe(sessionId)
    expect(request.toolCall).toMatchObject({ toolCallId: callId, title: "general — Write a.txt" })
    // Before the question, the client was told of the call: its kind, title and locations, then what it would change.
    const lines = agent.messages()
    const asked = lines.findIndex((m) => m.method === "session/request_permission")
    const before = lines.slice(0, asked).filter((m) => m.method === "session/update" && m.params.update.toolCallId === callId).map((m) => m.params.update)
    expect(before[0]).toMatchObject({ sessionUpdate: "tool_call", title: "general — Write a.txt", kind: "edit", locations: [{ path: target }] })
    expect(before.flatMap((u) => u.content ?? [])).toContainEqual({ type: "diff", path: target, newText: "from the child\n" })
    expect(readFileSync(target, "utf8")).toBe("from the child\n")
    const card = (agent.updates(sessionId) as Array<any>).filter((u) => u.toolCallId === callId)
    expect(card.at(-1)).toMatchObject({ status: "completed", title: "general — Write a.txt", kind: "edit" })
    expect(card.at(-1).content[0]).toEqual({ type: "diff", path: target, newText: "from the child\n" })
    // The child's own log has the answer.
    expect(agent.readLog(childId!).filter((e: any) => e.type === "permission").map((e: any) => e.data.outcome)).toEqual(["allow_once"])
    expectClean(agent)
  })

  it("a child's edit that needs no question still shows as a card of its own, with its diff", async () => {
    const agent = await agents.ready({ script: childWrites, args: ["--mode", "acceptEdits"] })
    const sessionId = await agent.newSession()
    expect((await agent.prompt(sessionId, "delegate")).stopReason).toBe("end_turn")
    expect(agent.permissionRequests).toEqual([])
    const [childId] = spawnedIds(agent.readLog(sessionId))
    const card = (agent.updates(sessionId) as Array<any>).filter((u) => u.toolCallId === `${childId}/cw`)
    expect(card[0]).toMatchObject({ sessionUpdate: "tool_call", title: "general — Write a.txt", kind: "edit" })
    expect(card.at(-1)).toMatchObject({ status: "completed", content: [{ type: "diff", path: path.join(agent.cwd, "a.txt"), newText: "from the child\n" }, expect.anything()] })
    expectClean(agent)
  })

  it("a question left unanswered is withdrawn when the parent is cancelled; every child ends cancelled", async () => {
    const agent = await agents.ready({ script: childWrites, permission: () => new Promise(() => {}) })
    const sessionId = await agent.newSession()
    const prompt = agent.prompt(sessionId, "delegate")
    await waitUntil(() => agent.permissionRequests.length === 1, "the child's question")
    await agent.cancel(sessionId)
    expect((await prompt).stopReason).toBe("cancelled")
    const [childId] = spawnedIds(agent.readLog(sessionId))
    expect(existsSync(path.join(agent.cwd, "a.txt"))).toBe(false)
    expect(agent.readLog(childId!).at(-1)).toMatchObject({ type: "turn_end", data: { stopReason: "cancelled" } })
    // The request was withdrawn ($/cancel_request) and no card stays pending.
    expect(agent.messages().some((m) => m.method === "$/cancel_request")).toBe(true)
    const updates = agent.updates(sessionId) as Array<any>
    expect(updates.filter((u) => u.toolCallId === "s1").at(-1).status).toBe("failed")
    expect(updates.filter((u) => u.toolCallId === `${childId}/cw`).at(-1).status).toBe("failed")
    expectClean(agent)
  })

  it("cancelling the parent during three running children stops them all before the prompt answers", async () => {
    const script: Script = {
      turns: [{ calls: [[call("spawn_agent", { task: "a" }), call("spawn_agent", { task: "b" }), call("spawn_agent", { task: "c" })], [call("wait_agent", {}, "w1")], [{ text: "never" }]] }],
      agents: { general: { turns: [{ calls: [[{ text: "working" }, { sleep_ms: 60_000 }]] }] } }
    }
    const agent = await agents.ready({ script })
    const sessionId = await agent.newSession()
    const prompt = agent.prompt(sessionId, "go")
    await agent.waitForUpdate(sessionId, (u: any) => u.sessionUpdate === "tool_call_update" && u.toolCallId === "w1" && u.status === "in_progress")
    await agent.cancel(sessionId)
    expect((await prompt).stopReason).toBe("cancelled")
    const log = agent.readLog(sessionId)
    const ids = spawnedIds(log)
    expect(ids).toHaveLength(3)
    for (const id of ids) expect(agent.readLog(id).at(-1)).toMatchObject({ type: "turn_end", data: { stopReason: "cancelled" } })
    expect(log.at(-1)).toMatchObject({ type: "turn_end", data: { stopReason: "cancelled" } })
    // The sessions list shows only the parent.
    const listed = await agent.sdk.request("session/list", {})
    expect(listed.sessions.map((s) => s.sessionId)).toEqual([sessionId])
    expectClean(agent)
  })

  it("a failing child, a timed-out child and a workflow with a failed step: cards fail, the workflow is partial", async () => {
    const script: Script = {
      turns: [{
        calls: [
          [call("spawn_agent", { task: "fail", agent: "breaker" }, "s1"), call("spawn_agent", { task: "sleep", agent: "sleeper", timeout_ms: 200 }, "s2")],
          [call("wait_agent", {}, "w1")],
          [call("run_workflow", { steps: [{ id: "scan", task: "scan", agent: "explorer" }, { id: "break", task: "break", agent: "breaker" }, { id: "report", task: "report", agent: "explorer", depends_on: ["scan"] }, { id: "after", task: "after", depends_on: ["break"] }] }, "wf")],
          [{ text: "done" }]
        ]
      }],
      agents: {
        breaker: { turns: [{ calls: [[{ fail: "the model is down" }]] }] },
        sleeper: { turns: [{ calls: [[{ text: "zz" }, { sleep_ms: 60_000 }]] }] },
        explorer: { turns: [{ calls: [[{ text: "explored" }]] }] }
      }
    }
    const agent = await agents.ready({
      script,
      files: {
        ".skein/agents/breaker.md": "---\nname: breaker\ndescription: fails\n---\n",
        ".skein/agents/sleeper.md": "---\nname: sleeper\ndescription: sleeps\n---\n"
      }
    })
    const sessionId = await agent.newSession()
    expect((await agent.prompt(sessionId, "go")).stopReason).toBe("end_turn")
    const log = agent.readLog(sessionId)
    const results = log.filter((e: any) => e.type === "subagent" && e.data.event === "result")
    const states = results.map((e: any) => e.data.state)
    expect(states.slice(0, 2).sort()).toEqual(["failed", "timed_out"])
    const waited = JSON.parse(log.find((e: any) => e.type === "tool_result" && e.data.id === "w1").data.content)
    expect(waited.children.map((c: any) => c.state).sort()).toEqual(["failed", "timed_out"])
    const workflow = JSON.parse(log.find((e: any) => e.type === "tool_result" && e.data.id === "wf").data.content)
    expect(workflow.outcome).toBe("partial")
    expect(Object.fromEntries(workflow.steps.map((s: any) => [s.step, s.outcome]))).toEqual({ scan: "succeeded", break: "failed", report: "succeeded", after: "skipped" })
    // The failed and timed-out children's cards (their spawn_agent calls) end failed; each
    // workflow step's child has a card of its own, and the workflow's card reads as text.
    const updates = agent.updates(sessionId) as Array<any>
    const spawned = spawnedEvents(log)
    expect(spawned.slice(0, 2).map((e) => cardOf(e, updates)).sort()).toEqual(["s1", "s2"])
    for (const e of spawned.slice(0, 2)) expect(updates.filter((u) => u.toolCallId === cardOf(e, updates)).at(-1).status).toBe("failed")
    for (const e of spawned.slice(2)) {
      expect(cardOf(e, updates)).toBe(`subagent-${e.data.id}`)
      expect(updates.filter((u) => u.toolCallId === cardOf(e, updates)).at(-1).status).toMatch(/^(completed|failed)$/)
    }
    const wf = updates.filter((u) => u.toolCallId === "wf").at(-1)
    expect(wf.title).toBe("Workflow scan, break, report, after")
    expect(wf.content[0].content.text.split("\n")[0]).toBe("Workflow partial: 2 of 4 steps succeeded.")
    expectClean(agent)
  })

  it("session/load of a parent replays its children's cards as they ended, the child's edit with its diff", async () => {
    const first = await agents.ready({ script: childWrites })
    const sessionId = await first.newSession()
    await first.prompt(sessionId, "delegate")
    const live = finalCards(first.updates(sessionId))
    first.closeStdin()
    await first.waitExit()
    const second = agents.start({ script: childWrites, args: ["--home", first.home] })
    await second.initialize()
    await second.sdk.request("session/load", { sessionId, cwd: first.cwd, mcpServers: [] })
    await second.settled(sessionId)
    const replayed = finalCards(second.updates(sessionId))
    const [childId] = spawnedIds(first.readLog(sessionId))
    expect(Object.keys(live).sort()).toEqual(["s1", `${childId}/cw`, "w1"].sort())
    expect(replayed).toEqual(live)
    expectClean(second)
  })
})

describe("e2e: subagents, native presentation (clientCapabilities.subagents)", () => {
  it("children are sessions: announced first, their own updates, task and answer as session messages", async () => {
    const agent = await agents.ready({ script: twoExplorers, files: { "notes.txt": "hi\n" }, clientCapabilities: { subagents: true } })
    const sessionId = await agent.newSession()
    expect((await agent.prompt(sessionId, "look around")).stopReason).toBe("end_turn")
    const ids = spawnedIds(agent.readLog(sessionId))
    const written = agent.messages().filter((m) => m.method === "session/update").map((m) => m.params)
    for (const id of ids) {
      const announced = written.findIndex((n) => n.update.sessionUpdate === "subagent_update" && n.update.sessionId === id)
      const firstOwn = written.findIndex((n) => n.sessionId === id)
      expect(announced).toBeGreaterThanOrEqual(0)
      expect(written[announced]!.sessionId).toBe(sessionId)
      expect(written[announced]!.update).toMatchObject({ title: "explorer — Read the notes" + (id === ids[1] ? " again" : ""), capabilities: { cancel: {} }, state: { state: "running" } })
      expect(announced).toBeLessThan(firstOwn)
      const own = written.filter((n) => n.sessionId === id).map((n) => n.update)
      expect(own[0]).toMatchObject({ sessionUpdate: "session_message", senderSessionId: sessionId, recipientSessionId: id })
      expect(own.some((u: any) => u.sessionUpdate === "tool_call" && u.kind === "read")).toBe(true)
      const states = written.filter((n) => n.update.sessionUpdate === "subagent_update" && n.update.sessionId === id).map((n) => n.update.state?.state)
      expect(states.at(-1)).toBe("idle")
      const answers = written.filter((n) => n.update.sessionUpdate === "session_message" && n.update.senderSessionId === id)
      expect(answers.map((n) => n.sessionId).sort()).toEqual([id, sessionId].sort())
      expect(JSON.stringify(answers[0]!.update.content)).toContain("The notes say hi.")
    }
    expectClean(agent)
  })

  it("a child's question carries its own session id; prompt, load and mode changes of a child are refused", async () => {
    const agent = await agents.ready({ script: childWrites, clientCapabilities: { subagents: true } })
    const sessionId = await agent.newSession()
    expect((await agent.prompt(sessionId, "delegate")).stopReason).toBe("end_turn")
    const [childId] = spawnedIds(agent.readLog(sessionId))
    expect(agent.permissionRequests[0]!.sessionId).toBe(childId)
    expect(agent.permissionRequests[0]!.toolCall.toolCallId).toBe("cw")
    const states = agent.messages()
      .filter((m) => m.method === "session/update" && m.params.update.sessionUpdate === "subagent_update")
      .map((m) => m.params.update.state?.state)
    expect(states).toContain("requires_action")
    expect(await errorCode(agent.sdk.request("session/prompt", { sessionId: childId!, prompt: [{ type: "text", text: "hi" }] }))).toBe(-32602)
    expect(await errorCode(agent.sdk.request("session/load", { sessionId: childId!, cwd: agent.cwd, mcpServers: [] }))).toBe(-32602)
    expectClean(agent)
  })

  it("session/cancel with a child's id cancels only that child", async () => {
    const script: Script = {
      turns: [{ calls: [[call("spawn_agent", { task: "slow", agent: "slow" }, "s1"), call("spawn_agent", { task: "quick", agent: "quick" }, "s2")], [call("wait_agent", {}, "w1")], [{ text: "one was cancelled" }]] }],
      agents: {
        slow: { turns: [{ calls: [[{ text: "thinking" }, { sleep_ms: 60_000 }]] }] },
        quick: { turns: [{ calls: [[{ sleep_ms: 300 }, { text: "quick answer" }]] }] }
      }
    }
    const agent = await agents.ready({
      script,
      clientCapabilities: { subagents: true },
      files: {
        ".skein/agents/slow.md": "---\nname: slow\ndescription: slow\n---\n",
        ".skein/agents/quick.md": "---\nname: quick\ndescription: quick\n---\n"
      }
    })
    const sessionId = await agent.newSession()
    const prompt = agent.prompt(sessionId, "go")
    await waitUntil(() => spawnedIds(agent.readLog(sessionId)).length === 2, "both children")
    const [slowId, quickId] = spawnedIds(agent.readLog(sessionId))
    await agent.waitForUpdate(slowId!, (u: any) => u.sessionUpdate === "agent_message_chunk")
    await agent.cancel(slowId!)
    expect((await prompt).stopReason).toBe("end_turn")
    const results = agent.readLog(sessionId).filter((e: any) => e.type === "subagent" && e.data.event === "result")
    expect(Object.fromEntries(results.map((e: any) => [e.data.id, e.data.state]))).toEqual({ [slowId!]: "cancelled", [quickId!]: "idle" })
    expectClean(agent)
  })

  it("session/load of a parent replays each child as a session, from its log", async () => {
    const first = await agents.ready({ script: twoExplorers, files: { "notes.txt": "hi\n" }, clientCapabilities: { subagents: true } })
    const sessionId = await first.newSession()
    await first.prompt(sessionId, "look around")
    const ids = spawnedIds(first.readLog(sessionId))
    first.closeStdin()
    await first.waitExit()
    const second = agents.start({ script: twoExplorers, args: ["--home", first.home], clientCapabilities: { subagents: true } })
    await second.initialize()
    await second.sdk.request("session/load", { sessionId, cwd: first.cwd, mcpServers: [] })
    for (const id of ids) {
      await second.settled(id)
      const own = second.updates(id) as Array<any>
      expect(own[0]).toMatchObject({ sessionUpdate: "session_message", recipientSessionId: id })
      expect(own.some((u) => u.sessionUpdate === "agent_message_chunk" && u.content.text === "The notes say hi.")).toBe(true)
    }
    expectClean(second)
  })
})

describe("e2e: subagents in the log", () => {
  it("skein replay --rerun re-runs the children from their logs and reports their divergences under the parent's turn", async () => {
    const agent = await agents.ready({ script: twoExplorers, files: { "notes.txt": "hi\n" } })
    const sessionId = await agent.newSession()
    await agent.prompt(sessionId, "look around")
    agent.closeStdin()
    await agent.waitExit()
    const same = spawnSync(NODE, [SKEIN, "replay", sessionId, "--rerun", "--home", agent.home], { encoding: "utf8" })
    expect(same.stderr).toBe("")
    expect(same.status).toBe(0)
    expect(same.stdout).toMatch(/turn 1 › subagent .* \(explorer\)  ✓ same/)
    expect(same.stdout).toContain("and so do their 2 subagents")
    // The file the explorers read changed: their reads differ, and the report says where.
    writeFileSync(path.join(agent.cwd, "notes.txt"), "changed\n")
    const changed = spawnSync(NODE, [SKEIN, "replay", sessionId, "--rerun", "--home", agent.home], { encoding: "utf8" })
    expect(changed.status).toBe(1)
    expect(changed.stdout).toMatch(/turn 1 › subagent .* \(explorer\)  ✗ differs/)
    expect(changed.stdout).toContain("2 subagents differ")
  })

  it("an isolated workspace is asked for on the parent, on the spawn call the client was shown; allowed, the child works in it", async () => {
    const script: Script = {
      turns: [{ calls: [[call("spawn_agent", { task: "Edit apart", workspace: "isolated" }, "s1")], [call("wait_agent", {}, "w1")], [{ text: "done" }]] }],
      agents: { general: { turns: [{ calls: [[{ text: "nothing to change" }]] }] } }
    }
    const agent = await agents.ready({ script, files: { "notes.txt": "hi\n" } })
    const git = (...args: Array<string>) =>
      spawnSync("git", args, { cwd: agent.cwd, encoding: "utf8", env: { ...process.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@t", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@t" } })
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "start")
    const sessionId = await agent.newSession()
    expect((await agent.prompt(sessionId, "delegate")).stopReason).toBe("end_turn")
    expect(agent.permissionRequests).toHaveLength(1)
    const request = agent.permissionRequests[0]!
    expect(request.sessionId).toBe(sessionId)
    expect(request.toolCall.toolCallId).toBe("s1")
    expect(request.toolCall.title).toMatch(/^Create the git branch skein\/\S+ and its worktree/)
    expect(request.options.map((o) => o.name)).toContain("Always allow isolated workspaces (a git branch and worktree each)")
    // The client was told of that call before the question.
    const messages = agent.messages()
    const asked = messages.findIndex((m) => m.method === "session/request_permission")
    const shown = messages.findIndex((m) => m.method === "session/update" && m.params.update.toolCallId === "s1")
    expect(shown).toBeGreaterThanOrEqual(0)
    expect(shown).toBeLessThan(asked)
    const [childId] = spawnedIds(agent.readLog(sessionId))
    expect(agent.readLog(childId!)[0].cwd).toContain(path.join(agent.home, "worktrees", childId!))
    expectClean(agent)
  })

  it("a kill -9 mid-workflow leaves every log loadable and the interrupted children closed as after a crash", async () => {
    const script: Script = {
      turns: [
        { calls: [[call("run_workflow", { steps: [{ id: "a", task: "first" }, { id: "b", task: "second" }, { id: "c", task: "third", depends_on: ["a"] }] }, "wf")], [{ text: "never" }]] },
        { calls: [[{ text: "back again" }]] }
      ],
      agents: { general: { turns: [{ calls: [[{ text: "working on it" }, { sleep_ms: 60_000 }]] }] } }
    }
    const first = await agents.ready({ script })
    const sessionId = await first.newSession()
    void first.prompt(sessionId, "run it").catch(() => {})
    await waitUntil(() => spawnedIds(first.readLog(sessionId)).length === 2, "two running steps")
    const ids = spawnedIds(first.readLog(sessionId))
    const started = (id: string) => {
      try {
        return first.readLog(id).some((e: any) => e.type === "turn_start")
      } catch {
        return false // not written yet
      }
    }
    await waitUntil(() => ids.every(started), "both children working")
    first.child.kill("SIGKILL")
    expect(await first.waitExit()).toEqual({ code: null, signal: "SIGKILL" })
    const second = await agents.ready({ script, args: ["--home", first.home] })
    await second.sdk.request("session/load", { sessionId, cwd: first.cwd, mcpServers: [] })
    for (const id of ids) {
      const log = first.readLog(id)
      expect(log.at(-1)).toMatchObject({ type: "turn_end", data: { stopReason: "cancelled" } })
      // A child stays a child: it is not loaded on its own.
      expect(await errorCode(second.sdk.request("session/load", { sessionId: id, cwd: first.cwd, mcpServers: [] }))).toBe(-32602)
    }
    expect((await second.prompt(sessionId, "again")).stopReason).toBe("end_turn")
    const shown = spawnSync(NODE, [SKEIN, "sessions", "show", sessionId, "--home", first.home], { encoding: "utf8" })
    expect(shown.status).toBe(0)
    for (const id of ids) expect(shown.stdout).toContain(id)
    expectClean(second)
  })
})

describe("e2e: external ACP agents", () => {
  it("an agent from config.json runs as an ACP agent process (Skein itself), its work folded into the child's log", async () => {
    const innerHome = mkdtempSync(path.join(os.tmpdir(), "skein-inner-"))
    const innerScript = path.join(innerHome, "inner-script.json")
    writeFileSync(innerScript, JSON.stringify({ turns: [{ calls: [[call("read", { path: "notes.txt" }, "r1")], [{ text: "Inner Skein read: hi" }]] }] }))
    const script: Script = {
      turns: [{ calls: [[call("spawn_agent", { task: "Read the notes", agent: "inner" }, "s1")], [call("wait_agent", {}, "w1")], [{ text: "done" }]] }]
    }
    const agent = agents.start({ script, files: { "notes.txt": "hi\n" } })
    writeFileSync(path.join(agent.home, "config.json"), JSON.stringify({
      agents: { inner: { acp: { command: NODE, args: [SKEIN, "acp", "--home", innerHome, "--script", innerScript] } } }
    }))
    await agent.initialize()
    const sessionId = await agent.newSession()
    expect((await agent.prompt(sessionId, "delegate")).stopReason).toBe("end_turn")
    const [childId] = spawnedIds(agent.readLog(sessionId))
    const child = agent.readLog(childId!)
    expect(child[0]).toMatchObject({ agent: "inner", parent: { sessionId, toolCallId: "s1", depth: 1 } })
    const said = child.filter((e: any) => e.type === "model_response").flatMap((e: any) => e.data.parts.filter((p: any) => p.type === "text").map((p: any) => p.text))
    expect(said.join("")).toContain("Inner Skein read: hi")
    expect(child.some((e: any) => e.type === "tool_call" && e.data.kind === "read")).toBe(true)
    const waited = agent.readLog(sessionId).find((e: any) => e.type === "tool_result" && e.data.id === "w1")
    expect(waited.data.content).toContain("Inner Skein read: hi")
    // The inner agent's process is gone with the child.
    await waitUntil(() => spawnSync("pgrep", ["-f", innerScript]).status === 1, "the external agent to exit")
    expectClean(agent)
    rmSync(innerHome, { recursive: true, force: true })
  })
})
