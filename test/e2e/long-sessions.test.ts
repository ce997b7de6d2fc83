/**
 * End to end: long sessions through the built binary and the official ACP client. Compaction
 * as `compaction_update` (a client advertising `session.compaction`) or as a `think` tool call
 * (any other), live and after `session/load`; slash commands (built-ins, prompt files, skills);
 * skills (project over user, the `skill` tool, their folders readable without asking);
 * steering (`_session/steering`); the session's title; `/undo`.
 */
import { spawnSync } from "node:child_process"
import { createHash } from "node:crypto"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import * as acp from "@agentclientprotocol/sdk"
import { type AgentProcess, expectClean, type Script, useAgents, waitUntil } from "../support/AgentProcess.ts"

const agents = useAgents()

/** Temporary folders this file made besides the agents' own (user homes). */
const dirs: Array<string> = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})
const tempDir = (prefix: string) => {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), prefix)))
  dirs.push(dir)
  return dir
}

/** A script with the scripted provider's long-session fields (the helper's type knows only turns). */
const scriptOf = (script: Script & { readonly contextWindow?: number; readonly compaction?: ReadonlyArray<ReadonlyArray<unknown>> }) => script as Script

const textOf = (u: acp.SessionUpdate): string | undefined => {
  const content = (u as { content?: unknown }).content
  return content !== null && typeof content === "object" && !Array.isArray(content) ? (content as { text?: string }).text : undefined
}

/** The agent's text in a session's updates, joined. */
const agentText = (agent: AgentProcess, sessionId: string) =>
  agent.updates(sessionId).filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => textOf(u) ?? "").join("")

const setMode = (agent: AgentProcess, sessionId: string, modeId: string) => agent.sdk.request("session/set_mode", { sessionId, modeId })

// ---------------------------------------------------------------------------
// Compaction
// ---------------------------------------------------------------------------

const SUMMARY = "The user asked twice; the notes say hello."

/** Turn 1 ends at 86% of a 1,000-token window, so turn 2 starts with a compaction. */
const compactionScript = scriptOf({
  contextWindow: 1000,
  turns: [
    { expect: "^first$", calls: [[{ text: "First answer." }, { usage: { input: 850, output: 10 } }]] },
    { expect: "^second$", calls: [[{ text: "Second answer." }]] }
  ],
  compaction: [[{ text: SUMMARY }]]
})

/** `initialize` through the SDK, with the `session.compaction` client capability. */
const initializeWithCompaction = (agent: AgentProcess) =>
  agent.sdk.request("initialize", {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false, session: { compaction: {} } },
    clientInfo: { name: "skein-e2e", version: "0.0.0" }
  } as acp.InitializeRequest)

/** Runs the two turns in a first process, which then exits; gives its home and the session. */
const compactedInFirstProcess = async (native: boolean) => {
  const agent = agents.start({ script: compactionScript, unstable: native })
  if (native) await initializeWithCompaction(agent)
  else await agent.initialize()
  const sessionId = await agent.newSession()
  expect((await agent.prompt(sessionId, "first")).stopReason).toBe("end_turn")
  const before = agent.updates(sessionId).length
  expect((await agent.prompt(sessionId, "second")).stopReason).toBe("end_turn")
  const turn2 = agent.updates(sessionId).slice(before).filter((u) => u.sessionUpdate !== "usage_update")
  const compaction = agent.readLog(sessionId).find((e: any) => e.type === "compaction")
  expect(compaction?.data).toMatchObject({ trigger: "threshold", summaryForUser: SUMMARY })
  expectClean(agent)
  agent.closeStdin()
  expect((await agent.waitExit()).code).toBe(0)
  return { agent, sessionId, turn2, id: compaction.data.id as string }
}

/** `session/load` in a new process over the first one's home; the replayed updates. */
const loadInNewProcess = async (first: AgentProcess, sessionId: string, native: boolean) => {
  const second = agents.start({ script: compactionScript, unstable: native, args: ["--home", first.home] })
  if (native) await initializeWithCompaction(second)
  else await second.initialize()
  await second.sdk.request("session/load", { sessionId, cwd: first.cwd, mcpServers: [] })
  await second.settled(sessionId)
  expectClean(second)
  return second.updates(sessionId)
}

/** The `usage_update`s the live session sent (after turn 1's call and after the compaction), which a load sends again where they were. */
const usages = (agent: AgentProcess, sessionId: string) => {
  const all = agent.allUpdates(sessionId).filter((u) => u.sessionUpdate === "usage_update")
  expect(all).toHaveLength(2)
  for (const usage of all) expect(usage).toMatchObject({ sessionUpdate: "usage_update", size: 1000 })
  return all
}

const brief = (u: acp.SessionUpdate) => {
  const any = u as any
  switch (u.sessionUpdate) {
    case "user_message_chunk":
    case "agent_message_chunk":
      return `${u.sessionUpdate}: ${textOf(u)}`
    case "compaction_update" as string:
      return `compaction_update: ${any.compactionId} ${any.status}`
    case "tool_call":
    case "tool_call_update":
      return `${u.sessionUpdate}: ${any.toolCallId} ${any.kind ?? ""} ${any.status ?? ""} ${any.title ?? ""}`.replace(/\s+/g, " ").trim()
    default:
      return u.sessionUpdate
  }
}

describe("e2e: compaction", () => {
  it("a client advertising session.compaction sees compaction_update (in progress, then completed with the summary), live and on load", async () => {
    const { agent, sessionId, turn2, id } = await compactedInFirstProcess(true)
    expect(turn2).toEqual([
      { sessionUpdate: "compaction_update", compactionId: id, status: "in_progress" },
      { sessionUpdate: "compaction_update", compactionId: id, status: "completed", summary: [{ type: "text", text: SUMMARY }] },
      { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Second answer." }, messageId: "m2.1" }
    ])
    expect(turn2.some((u) => u.sessionUpdate === "tool_call")).toBe(false)

    const replayed = await loadInNewProcess(agent, sessionId, true)
    expect(replayed.map(brief)).toEqual([
      "user_message_chunk: first",
      "agent_message_chunk: First answer.",
      // The context meter where the live session showed it: after the call, and after the compaction.
      "usage_update",
      "user_message_chunk: second",
      // As the client saw it live: started, then done with the summary.
      `compaction_update: ${id} in_progress`,
      `compaction_update: ${id} completed`,
      "usage_update",
      "agent_message_chunk: Second answer."
    ])
    expect(replayed.filter((u) => u.sessionUpdate === "usage_update")).toEqual(usages(agent, sessionId))
    expect(replayed[5]).toEqual({ sessionUpdate: "compaction_update", compactionId: id, status: "completed", summary: [{ type: "text", text: SUMMARY }] })
  })

  it("any other client sees a think tool call titled \"Compacted the conversation\" with the summary, live and on load", async () => {
    const { agent, sessionId, turn2, id } = await compactedInFirstProcess(false)
    expect(turn2.some((u) => u.sessionUpdate === ("compaction_update" as string))).toBe(false)
    const toolCallId = `compaction-${id}`
    expect(turn2).toHaveLength(3)
    expect(turn2[0]).toMatchObject({ sessionUpdate: "tool_call", toolCallId, kind: "think", status: "in_progress" })
    expect(turn2[1]).toEqual({
      sessionUpdate: "tool_call_update",
      toolCallId,
      title: "Compacted the conversation",
      kind: "think",
      status: "completed",
      content: [{ type: "content", content: { type: "text", text: SUMMARY } }]
    })
    expect(turn2[2]).toEqual({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Second answer." }, messageId: "m2.1" })

    const replayed = await loadInNewProcess(agent, sessionId, false)
    expect(replayed.map(brief)).toEqual([
      "user_message_chunk: first",
      "agent_message_chunk: First answer.",
      "usage_update",
      "user_message_chunk: second",
      // The card as the client saw it live: started, then done with the summary (never an empty finished card).
      `tool_call: ${toolCallId} think in_progress Compacting the conversation`,
      `tool_call_update: ${toolCallId} think completed Compacted the conversation`,
      "usage_update",
      "agent_message_chunk: Second answer."
    ])
    expect(replayed.filter((u) => u.sessionUpdate === "usage_update")).toEqual(usages(agent, sessionId))
    expect(replayed[5]).toMatchObject({ content: [{ type: "content", content: { type: "text", text: SUMMARY } }] })
  })
})

// ---------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------

describe("e2e: slash commands", () => {
  it("are announced after session/new; a prompt file runs expanded, an unknown /name goes to the model as typed", async () => {
    const agent = await agents.ready({
      // These tests are about commands and skills: the folder is trusted (workspace trust has its own tests).
      args: ["--trust"],
      script: {
        turns: [
          { expect: "^Say hello to world, politely\\.$", calls: [[{ text: "Hello, world." }]] },
          { expect: "^/nope x$", calls: [[{ text: "No such command here." }]] }
        ]
      },
      files: {
        ".skein/commands/hello.md": "---\ndescription: Greets someone\nargument-hint: <name>\n---\nSay hello to $ARGUMENTS, politely.\n",
        ".agents/skills/greet/SKILL.md": "---\ndescription: Greets the team in the changelog\n---\nWrite a greeting.\n"
      }
    })
    const sessionId = await agent.newSession()
    await agent.waitForUpdate(sessionId, (u) => u.sessionUpdate === "available_commands_update")
    await agent.settled(sessionId)
    const announced = agent.allUpdates(sessionId).find((u) => u.sessionUpdate === "available_commands_update") as any
    const names = announced.availableCommands.map((c: any) => c.name)
    expect(names).toEqual(expect.arrayContaining(["compact", "init", "review", "undo", "hello", "greet"]))
    expect(announced.availableCommands.find((c: any) => c.name === "hello")).toEqual({ name: "hello", description: "Greets someone", input: { hint: "<name>" } })
    expect(announced.availableCommands.find((c: any) => c.name === "greet")).toMatchObject({ description: "Greets the team in the changelog" })

    expect((await agent.prompt(sessionId, "/hello world")).stopReason).toBe("end_turn")
    expect(agentText(agent, sessionId)).toBe("Hello, world.")
    expect((await agent.prompt(sessionId, "/nope x")).stopReason).toBe("end_turn")
    expect(agentText(agent, sessionId)).toBe("Hello, world.No such command here.")

    const starts = agent.readLog(sessionId).filter((e: any) => e.type === "turn_start")
    expect(starts[0].data.command).toEqual({ name: "hello", arguments: "world" })
    expect(starts[0].data.content).toEqual([{ type: "text", text: "Say hello to world, politely." }])
    expect(starts[1].data.command).toBeUndefined()
    expect(starts[1].data.content).toEqual([{ type: "text", text: "/nope x" }])
    expectClean(agent)
  })
})

describe("e2e: a command after other text (a client that sends a stopped prompt again in front of the next one)", () => {
  const blocks = (...texts: Array<string>) => texts.map((text) => ({ type: "text" as const, text }))

  it("the last block naming a command runs it: /compact says what it left aside, /hello keeps the text before it; a load shows the blocks as sent", async () => {
    const script = scriptOf({
      turns: [
        { calls: [[{ text: "One." }]] },
        { calls: [[{ text: "Two." }]] },
        { calls: [] },
        { calls: [[{ text: "Hello to you." }]] }
      ],
      compaction: [[{ text: SUMMARY }]]
    })
    const files = { ".skein/commands/hello.md": "Say hello to $ARGUMENTS, politely.\n" }
    const first = await agents.ready({ script, files })
    const sessionId = await first.newSession()
    await first.prompt(sessionId, "one")
    await first.prompt(sessionId, "two")
    const send = async (...texts: Array<string>) => {
      const response = await first.sdk.request("session/prompt", { sessionId, prompt: blocks(...texts) }) as { stopReason: string }
      await first.settled(sessionId)
      return response.stopReason
    }
    expect(await send("What is in the notes?", "/compact")).toBe("end_turn")
    const log = () => first.readLog(sessionId)
    const starts = () => log().filter((e: any) => e.type === "turn_start")
    expect(starts()[2].data).toMatchObject({ command: { name: "compact", arguments: "", local: true, block: 1 }, content: blocks("What is in the notes?", "/compact") })
    expect(log().some((e: any) => e.type === "compaction" && e.turn === 3)).toBe(true)
    const leftAside = "/compact ran on its own: the rest of this prompt (1 more block) was not sent to the model. Send it again if you meant it."
    expect(log().find((e: any) => e.type === "notice" && e.turn === 3)?.data).toEqual({ text: leftAside, source: "command" })
    expect(agentText(first, sessionId)).toContain(leftAside)

    expect(await send("What is in the notes?", "/hello world")).toBe("end_turn")
    expect(starts()[3].data).toMatchObject({
      command: { name: "hello", arguments: "world", block: 1 },
      content: blocks("What is in the notes?", "Say hello to world, politely.")
    })
    expectClean(first)
    first.closeStdin()
    expect((await first.waitExit()).code).toBe(0)

    const second = await agents.ready({ script, args: ["--home", first.home] })
    await second.sdk.request("session/load", { sessionId, cwd: first.cwd, mcpServers: [] })
    await second.settled(sessionId)
    const users = second.updates(sessionId).filter((u) => u.sessionUpdate === "user_message_chunk").map((u: any) => [u.messageId, u.content.text])
    expect(users.slice(2)).toEqual([
      ["u3", "What is in the notes?"],
      ["u3", "/compact"],
      ["u4", "What is in the notes?"],
      ["u4", "/hello world"]
    ])
    expectClean(second)
  })
})

describe("e2e: slash commands change", () => {
  it("a prompt file a turn adds is announced once that turn has ended; an unchanged set is not sent again", async () => {
    const agent = await agents.ready({
      // These tests are about commands and skills: the folder is trusted (workspace trust has its own tests).
      args: ["--trust"],
      script: {
        turns: [
          { calls: [[{ tool: "write", args: { path: ".skein/commands/ship.md", content: "Ship it: $ARGUMENTS\n" }, id: "w1" }], [{ text: "Added." }]] },
          { calls: [[{ text: "Nothing new." }]] }
        ]
      }
    })
    const sessionId = await agent.newSession()
    await setMode(agent, sessionId, "bypassPermissions")
    const lists = () => agent.allUpdates(sessionId).filter((u) => u.sessionUpdate === "available_commands_update") as Array<any>
    // What the client received (the agent may have written it a moment before the client read it).
    await waitUntil(() => lists().length > 0, "the first list of commands")
    expect(lists()[0].availableCommands.map((c: any) => c.name)).not.toContain("ship")
    expect((await agent.prompt(sessionId, "add a command")).stopReason).toBe("end_turn")
    await agent.waitForUpdate(sessionId, (u) => u.sessionUpdate === "available_commands_update" && (u as any).availableCommands.some((c: any) => c.name === "ship"))
    await agent.settled(sessionId)
    expect(lists()).toHaveLength(2)
    expect((await agent.prompt(sessionId, "anything else?")).stopReason).toBe("end_turn")
    await agent.settled(sessionId)
    expect(lists()).toHaveLength(2)
    expectClean(agent)
  })
})

// ---------------------------------------------------------------------------
// Skills
// ---------------------------------------------------------------------------

const skillMd = (description: string, body: string) => `---\ndescription: ${description}\n---\n${body}\n`

describe("e2e: skills", () => {
  it("project over user; the skill tool loads it (logged with body and sha256); /x runs it; a user skill's folder is readable without asking", async () => {
    const userHome = tempDir("skein-e2e-user-")
    const userSkills = path.join(userHome, ".agents", "skills")
    mkdirSync(path.join(userSkills, "x"), { recursive: true })
    writeFileSync(path.join(userSkills, "x", "SKILL.md"), skillMd("User x, shadowed", "USER X BODY"))
    mkdirSync(path.join(userSkills, "y"), { recursive: true })
    writeFileSync(path.join(userSkills, "y", "SKILL.md"), skillMd("User y", "Read reference.md next to me."))
    const reference = path.join(userSkills, "y", "reference.md")
    writeFileSync(reference, "the reference text\n")
    const projectBody = "PROJECT X BODY: format the changelog."

    const agent = agents.start({
      // These tests are about commands and skills: the folder is trusted (workspace trust has its own tests).
      args: ["--trust"],
      script: {
        turns: [
          {
            calls: [
              [{ tool: "skill", args: { name: "x" }, id: "sk1" }],
              [{ tool: "read", args: { path: reference }, id: "rd1" }],
              [{ text: "Loaded and read." }]
            ]
          },
          { expect: "^The user invoked the skill \"x\"[\\s\\S]*PROJECT X BODY[\\s\\S]*Arguments: for 1\\.2$", calls: [[{ text: "Following x." }]] }
        ]
      },
      files: { ".agents/skills/x/SKILL.md": skillMd("Project x", projectBody), "pkg/.keep": "" },
      env: { HOME: userHome }
    })
    // The repository's root is the workspace; the session runs in a folder below it.
    expect(spawnSync("git", ["init", "-q"], { cwd: agent.cwd }).status).toBe(0)
    await agent.initialize()
    const cwd = path.join(agent.cwd, "pkg")
    const sessionId = await agent.newSession(cwd)
    expect((await agent.prompt(sessionId, "use the skill")).stopReason).toBe("end_turn")

    const projectPath = path.join(agent.cwd, ".agents", "skills", "x", "SKILL.md")
    const updates = agent.updates(sessionId) as Array<any>
    const loaded = updates.find((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === "sk1" && (u.status === "completed" || u.status === "failed"))
    expect(loaded.status).toBe("completed")
    expect(JSON.stringify(loaded.content)).toContain(projectBody)
    expect(JSON.stringify(loaded.content)).not.toContain("USER X BODY")
    const read = updates.find((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === "rd1" && (u.status === "completed" || u.status === "failed"))
    expect(read.status).toBe("completed")
    expect(JSON.stringify(read.content)).toContain("the reference text")
    expect(agent.permissionRequests).toEqual([])

    const log = agent.readLog(sessionId)
    const activations = log.filter((e: any) => e.type === "skill_activation")
    expect(activations.map((e: any) => [e.turn, e.data])).toEqual([
      [1, { name: "x", path: projectPath, sha256: createHash("sha256").update(projectBody).digest("hex"), body: projectBody }]
    ])

    // `/x`: the skill as a command (its instructions given to the model, logged as activated).
    expect((await agent.prompt(sessionId, "/x for 1.2")).stopReason).toBe("end_turn")
    expect(agentText(agent, sessionId)).toContain("Following x.")
    const after = agent.readLog(sessionId)
    expect(after.find((e: any) => e.type === "turn_start" && e.turn === 2).data.command).toEqual({ name: "x", arguments: "for 1.2" })
    expect(after.filter((e: any) => e.type === "skill_activation" && e.turn === 2).map((e: any) => e.data.path)).toEqual([projectPath])
    expectClean(agent)
  })
})

// ---------------------------------------------------------------------------
// Steering
// ---------------------------------------------------------------------------

describe("e2e: steering", () => {
  it("is advertised; content sent while a tool runs is injected and logged after its result, before the next model call", async () => {
    const agent = agents.start({
      script: {
        turns: [{ calls: [[{ text: "Working." }, { tool: "bash", args: { command: "sleep 1" }, id: "b1" }], [{ text: "Done, README too." }]] }]
      }
    })
    const init = await agent.initialize()
    expect((init as any)._meta?.steering?.supported).toBe(true)
    const sessionId = await agent.newSession()
    await setMode(agent, sessionId, "bypassPermissions")
    const running = agent.prompt(sessionId, "run it")
    await agent.waitForUpdate(sessionId, (u: any) => u.sessionUpdate === "tool_call_update" && u.toolCallId === "b1" && u.status === "in_progress")
    const steered = await agent.requestRaw("_session/steering", { sessionId, prompt: [{ type: "text", text: "Also check the README." }] })
    expect(steered.error).toBeUndefined()
    expect(steered.result).toEqual({ outcome: "injected" })
    expect((await running).stopReason).toBe("end_turn")

    const types = agent.readLog(sessionId).filter((e: any) => e.turn === 1 && e.type !== "model_partial")
      .map((e: any) => (e.type === "model_response" ? `model_response ${e.data.call}` : e.type === "tool_result" ? `tool_result ${e.data.id}` : e.type))
    // The command may change files: the workspace is checkpointed before it runs and at the turn's end.
    expect(types).toEqual(["turn_start", "model_response 1", "tool_call", "checkpoint", "tool_result b1", "turn_input", "model_response 2", "checkpoint", "turn_end"])
    const input = agent.readLog(sessionId).find((e: any) => e.type === "turn_input")
    expect(input.data.content).toEqual([{ type: "text", text: "Also check the README." }])
    // The client sees it where the model took it.
    const shown = agent.updates(sessionId).map(brief)
    const at = shown.indexOf("user_message_chunk: Also check the README.")
    expect(at).toBeGreaterThan(shown.findIndex((s) => s.startsWith("tool_call_update: b1 completed")))
    expect(shown.slice(at + 1)).toEqual(["agent_message_chunk: Done, README too."])
    expectClean(agent)
  })

  it("with no turn running starts a new turn, whose updates the client receives", async () => {
    const agent = await agents.ready({
      script: { turns: [{ calls: [[{ text: "One." }]] }, { expect: "^steered$", calls: [[{ text: "A turn of its own." }]] }] }
    })
    const sessionId = await agent.newSession()
    expect((await agent.prompt(sessionId, "one")).stopReason).toBe("end_turn")
    const steered = await agent.requestRaw("_session/steering", { sessionId, prompt: [{ type: "text", text: "steered" }] })
    expect(steered.result).toEqual({ outcome: "startedNewTurn" })
    await agent.waitForUpdate(sessionId, (u) => u.sessionUpdate === "agent_message_chunk" && textOf(u) === "A turn of its own.")
    await agent.settled(sessionId)
    expect(agentText(agent, sessionId)).toBe("One.A turn of its own.")
    await expect.poll(() => agent.readLog(sessionId).some((e: any) => e.type === "turn_end" && e.turn === 2)).toBe(true)
    const log = agent.readLog(sessionId)
    expect(log.find((e: any) => e.type === "turn_start" && e.turn === 2).data.content).toEqual([{ type: "text", text: "steered" }])
    // Its updates come outside any session/prompt (that is what the steering request asked for);
    // everything else about the output must be clean.
    expect(agent.problems.filter((p) => !p.includes("while no prompt of it is open"))).toEqual([])
    expect(agent.unanswered()).toEqual([])
  })
})

// ---------------------------------------------------------------------------
// Titles
// ---------------------------------------------------------------------------

describe("e2e: titles", () => {
  it("session_info_update gives the first prompt's title, and session/list shows the same", async () => {
    const agent = await agents.ready({ script: { turns: [{ calls: [[{ text: "Sure." }]] }, { calls: [[{ text: "Again." }]] }] } })
    const sessionId = await agent.newSession()
    await agent.prompt(sessionId, "Fix the   flaky login test\nplease")
    await agent.prompt(sessionId, "And the signup one")
    const infos = agent.allUpdates(sessionId).filter((u) => u.sessionUpdate === "session_info_update") as Array<any>
    expect(infos).toHaveLength(1)
    expect(infos[0].title).toBe("Fix the flaky login test please")
    const listed = await agent.sdk.request("session/list", {})
    expect(listed.sessions.find((s) => s.sessionId === sessionId)?.title).toBe(infos[0].title)
    expectClean(agent)
  })
})

// ---------------------------------------------------------------------------
// Undo
// ---------------------------------------------------------------------------

describe("e2e: /undo", () => {
  it("reverts the last turn's edits and writes, says what it restored and that bash changes stay", async () => {
    const original = "one\ntwo\nthree\n"
    const agent = await agents.ready({
      script: {
        turns: [
          {
            calls: [
              [{ tool: "edit", args: { path: "a.txt", edits: [{ oldText: "one", newText: "ONE" }] }, id: "e1" }],
              [{ tool: "edit", args: { path: "a.txt", edits: [{ oldText: "three", newText: "THREE" }] }, id: "e2" }],
              [{ tool: "write", args: { path: "b.txt", content: "a new file\n" }, id: "w1" }],
              [{ tool: "bash", args: { command: "echo made > c.txt" }, id: "sh1" }],
              [{ text: "Edited." }]
            ]
          },
          { calls: [] }
        ]
      },
      files: { "a.txt": original }
    })
    const sessionId = await agent.newSession()
    await setMode(agent, sessionId, "bypassPermissions")
    expect((await agent.prompt(sessionId, "change things")).stopReason).toBe("end_turn")
    const a = path.join(agent.cwd, "a.txt")
    const b = path.join(agent.cwd, "b.txt")
    const c = path.join(agent.cwd, "c.txt")
    expect(readFileSync(a, "utf8")).toBe("ONE\ntwo\nTHREE\n")
    expect(readFileSync(b, "utf8")).toBe("a new file\n")
    expect(existsSync(c)).toBe(true)

    const before = agent.updates(sessionId).length
    expect((await agent.prompt(sessionId, "/undo")).stopReason).toBe("end_turn")
    expect(readFileSync(a, "utf8")).toBe(original)
    expect(existsSync(b)).toBe(false)
    expect(readFileSync(c, "utf8")).toBe("made\n")

    const undo = agent.readLog(sessionId).filter((e: any) => e.type === "undo")
    expect(undo.map((e: any) => [e.turn, e.data])).toEqual([[2, { turn: 1, restored: [a], removed: [b] }]])
    const said = agent.updates(sessionId).slice(before).filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => textOf(u)).join("")
    expect(said).toContain("restored a.txt")
    expect(said).toContain("removed b.txt")
    expect(said).toMatch(/shell commands.*not undone/)
    expect(agent.readLog(sessionId).find((e: any) => e.type === "turn_start" && e.turn === 2).data.command).toEqual({ name: "undo", arguments: "", local: true })
    expectClean(agent)
  })

  it("refuses when a file was changed after the turn: nothing touched, and it names the file", async () => {
    const agent = await agents.ready({
      script: {
        turns: [
          { calls: [[{ tool: "edit", args: { path: "a.txt", edits: [{ oldText: "one", newText: "ONE" }] }, id: "e1" }], [{ text: "Edited." }]] },
          { calls: [] }
        ]
      },
      files: { "a.txt": "one\n" }
    })
    const sessionId = await agent.newSession()
    await setMode(agent, sessionId, "acceptEdits")
    expect((await agent.prompt(sessionId, "edit it")).stopReason).toBe("end_turn")
    const a = path.join(agent.cwd, "a.txt")
    expect(readFileSync(a, "utf8")).toBe("ONE\n")
    writeFileSync(a, "changed by hand\n")

    const before = agent.updates(sessionId).length
    expect((await agent.prompt(sessionId, "/undo")).stopReason).toBe("end_turn")
    expect(readFileSync(a, "utf8")).toBe("changed by hand\n")
    const [undo] = agent.readLog(sessionId).filter((e: any) => e.type === "undo")
    expect(undo.data).toMatchObject({ turn: 1, restored: [], removed: [] })
    expect(undo.data.refused).toContain("a.txt")
    const said = agent.updates(sessionId).slice(before).filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => textOf(u)).join("")
    expect(said).toContain("a.txt")
    expect(said).toContain("not undone")
    expect(said).not.toContain("shell commands")
    expectClean(agent)
  })
})
