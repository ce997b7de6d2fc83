/**
 * `session/load` shows what the live session showed. A scripted session with every kind of
 * update a turn sends (text, thinking, tool calls with diffs, a command, a plan, a child that
 * edits a file after asking and delegates in turn, a compaction, the title, steering, a failed
 * turn) runs live in one
 * process; a second process loads it. Folded the way a client folds them (chunks joined by
 * message id, each card's fields as its last update left them, the last plan, the title), the
 * replayed updates equal the live ones, session by session (a child's own, when the client
 * shows children as sessions), except for what a replay leaves out by design:
 * - the prompts, which the client sent itself live, are replayed as user messages (`u<turn>`);
 * - `usage_update` is not part of the history: the load sends the last one the live session
 *   showed, once, after it (compared on its own); the command list is sent after the load answers;
 * - the order in which a child's cards and its parent's interleave (they ran in parallel).
 * `skein replay --acp` prints the same bytes the load sends, but for that last `usage_update`
 * (the model's window and price are the configuration's, which a replay does not read).
 */
import { spawnSync } from "node:child_process"
import { describe, expect, it } from "vitest"
import { type AgentProcess, expectClean, NODE, type Script, SKEIN, useAgents } from "../support/AgentProcess.ts"

const agents = useAgents()

const call = (tool: string, args: unknown, id: string) => ({ tool, args, id })
const SUMMARY = "The notes were fixed; a child wrote b.txt."

const script = {
  contextWindow: 1000,
  turns: [
    {
      calls: [
        [{ think: "Let me look." }, { text: "Reading." }, call("read", { path: "notes.txt" }, "r1")],
        [
          { text: "Changing it." },
          call("write", { path: "a.txt", content: "new\n" }, "w1"),
          call("edit", { path: "notes.txt", edits: [{ oldText: "hi", newText: "hello" }] }, "e1"),
          call("bash", { command: "echo hi" }, "b1"),
          call("update_plan", { entries: [{ content: "Fix the notes", status: "completed", priority: "high" }] }, "p1")
        ],
        [call("spawn_agent", { task: "Write b.txt" }, "s1")],
        [call("wait_agent", {}, "w2")],
        // 85% of the window: the next turn starts with a compaction.
        [{ text: "All done." }, { usage: { input: 850, output: 10 } }]
      ]
    },
    { calls: [[{ text: "Working." }, call("bash", { command: "sleep 1" }, "b2")], [{ think: "They said more." }, { text: "Steered answer." }]] },
    { calls: [[{ text: "Partial " }, { fail: "the model is down" }]] }
  ],
  compaction: [[{ text: SUMMARY }]],
  agents: {
    // The child writes after asking, then has a grandchild check its work.
    general: {
      turns: [{
        calls: [
          [{ text: "Child writes." }, call("write", { path: "b.txt", content: "child\n" }, "cw")],
          [call("spawn_agent", { task: "Check b.txt", agent: "explorer" }, "gs")],
          [call("wait_agent", {}, "gw")],
          [{ text: "Wrote b.txt." }]
        ]
      }]
    },
    explorer: { turns: [{ calls: [[call("read", { path: "b.txt" }, "gr")], [{ text: "b.txt says child." }]] }] }
  }
} as unknown as Script

const PROMPTS = ["Fix the notes", "Go on", "And now?"]
const STEERING = "Also mention the README."

/** A session's updates as a client ends up showing them. */
const fold = (updates: ReadonlyArray<any>) => {
  const messages = new Map<string, { kind: string; text: string }>()
  const cards = new Map<string, Record<string, unknown>>()
  const children = new Map<string, Record<string, unknown>>()
  const sessionMessages = new Map<string, unknown>()
  const plans: Array<unknown> = []
  const titles: Array<string> = []
  let usage: unknown
  for (const u of updates) {
    switch (u.sessionUpdate) {
      case "agent_message_chunk":
      case "agent_thought_chunk":
      case "user_message_chunk": {
        const known = messages.get(u.messageId)
        if (known !== undefined) {
          expect(known.kind).toBe(u.sessionUpdate)
          known.text += u.content.text
        } else messages.set(u.messageId, { kind: u.sessionUpdate, text: u.content.text })
        break
      }
      case "tool_call":
      case "tool_call_update": {
        const { sessionUpdate: _, ...fields } = u
        cards.set(u.toolCallId, { ...cards.get(u.toolCallId), ...fields })
        break
      }
      case "subagent_update": {
        const { sessionUpdate: _, ...fields } = u
        children.set(u.sessionId, { ...children.get(u.sessionId), ...fields })
        break
      }
      case "session_message":
        sessionMessages.set(u.messageId, u)
        break
      case "plan":
        plans.push(u.entries)
        break
      case "session_info_update":
        titles.push(u.title)
        break
      case "usage_update":
        usage = u
        break
      case "available_commands_update":
        break
      default:
        throw new Error(`an update this test does not know: ${u.sessionUpdate}`)
    }
  }
  // A child's cards on its parent: its own calls (`<child>/<call>`) and a grandchild's card.
  const own = (id: string) => !id.includes("/") && !id.startsWith("subagent-")
  return {
    messages: [...messages].map(([id, m]) => [id, m.kind, m.text]),
    cards: Object.fromEntries(cards),
    /** The session's own cards in order (a child's may interleave differently: it ran in parallel). */
    order: [...cards.keys()].filter(own),
    children: Object.fromEntries(children),
    sessionMessages: Object.fromEntries(sessionMessages),
    plan: plans.at(-1),
    titles,
    /** The last usage update (compared for the loaded session only: a child's is not replayed). */
    usage
  }
}

const withoutPrompts = ({ usage: _, ...shown }: ReturnType<typeof fold>) => ({ ...shown, messages: shown.messages.filter(([id]) => !/^u\d+$/.test(id as string)) })

const runLive = async (native: boolean) => {
  const first = await agents.ready({ script, files: { "notes.txt": "hi\n" }, clientCapabilities: native ? { subagents: true } : {} })
  const sessionId = await first.newSession()
  expect((await first.prompt(sessionId, PROMPTS[0]!)).stopReason).toBe("end_turn")
  const second = first.prompt(sessionId, PROMPTS[1]!)
  await first.waitForUpdate(sessionId, (u: any) => u.sessionUpdate === "tool_call_update" && u.toolCallId === "b2" && u.status === "in_progress")
  expect((await first.requestRaw("_session/steering", { sessionId, prompt: [{ type: "text", text: STEERING }] })).result).toEqual({ outcome: "injected" })
  expect((await second).stopReason).toBe("end_turn")
  expect((await first.prompt(sessionId, PROMPTS[2]!)).stopReason).toBe("end_turn")
  expectClean(first)
  const log = first.readLog(sessionId)
  // The session did what this test is about.
  for (const type of ["compaction", "turn_input", "plan", "subagent"]) expect(log.some((e: any) => e.type === type), type).toBe(true)
  expect(log.filter((e: any) => e.type === "turn_end").at(-1).data.error).toContain("the model is down")
  // Its children, then theirs.
  const spawned = (id: string): Array<string> =>
    first.readLog(id).filter((e: any) => e.type === "subagent" && e.data.event === "spawned").map((e: any) => e.data.id as string)
  const childIds = spawned(sessionId)
  const grandchildIds = childIds.flatMap(spawned)
  expect(grandchildIds).toHaveLength(1)
  first.closeStdin()
  expect((await first.waitExit()).code).toBe(0)
  return { first, sessionId, childIds, grandchildIds }
}

const loadInNewProcess = async (first: AgentProcess, sessionId: string, native: boolean) => {
  const second = agents.start({ script, args: ["--home", first.home], clientCapabilities: native ? { subagents: true } : {} })
  await second.initialize()
  await second.sdk.request("session/load", { sessionId, cwd: first.cwd, mcpServers: [] })
  await second.settled(sessionId)
  expectClean(second)
  return second
}

describe("e2e: session/load shows what the live session showed", () => {
  for (const native of [false, true]) {
    it(native ? "a client that shows children as sessions" : "any other client (each child one card of its parent)", async () => {
      const { first, sessionId, childIds, grandchildIds } = await runLive(native)
      const second = await loadInNewProcess(first, sessionId, native)
      const sessions = [sessionId, ...(native ? [...childIds, ...grandchildIds] : [])]
      for (const id of sessions) {
        const live = fold(first.allUpdates(id))
        const replayed = fold(second.allUpdates(id))
        expect(withoutPrompts(replayed)).toEqual(withoutPrompts(live))
        // What the replay adds: the prompts the client sent, as user messages.
        if (id === sessionId) {
          expect(replayed.messages.filter(([messageId]) => /^u\d+$/.test(messageId as string))).toEqual(
            PROMPTS.map((text, i) => [`u${i + 1}`, "user_message_chunk", text])
          )
        }
      }
      // What is compared is what the brief of this test lists (so that an empty fold cannot pass).
      const live = fold(first.allUpdates(sessionId))
      // The context meter as the compaction left it (the window is the script's), and every one
      // before it, shown again where the live session showed them.
      expect(live.usage).toMatchObject({ sessionUpdate: "usage_update", size: 1000 })
      const usages = (agent: AgentProcess) => agent.allUpdates(sessionId).filter((u) => u.sessionUpdate === "usage_update")
      expect(usages(first).length).toBeGreaterThan(1)
      expect(usages(second)).toEqual(usages(first))
      expect(live.titles).toEqual([PROMPTS[0]])
      expect(live.plan).toEqual([{ content: "Fix the notes", status: "completed", priority: "high" }])
      expect(live.messages).toContainEqual([expect.stringMatching(/^e\d+$/), "user_message_chunk", STEERING])
      expect(live.messages).toContainEqual([expect.stringMatching(/^e\d+$/), "agent_message_chunk", "The model call failed: the model is down"])
      expect(live.messages).toContainEqual(["m1.1", "agent_thought_chunk", "Let me look."])
      expect(live.messages).toContainEqual(["m2.2", "agent_thought_chunk", "They said more."])
      expect(live.cards["w1"]).toMatchObject({ status: "completed", content: [{ type: "diff", newText: "new\n" }, expect.anything()] })
      expect(Object.values(live.cards).some((c) => c.title === "Compacted the conversation" && JSON.stringify(c.content).includes(SUMMARY))).toBe(true)
      const child = childIds[0]!
      const edit = native ? fold(first.allUpdates(child)).cards["cw"] : live.cards[`${child}/cw`]
      expect(edit).toMatchObject({ status: "completed", kind: "edit", content: [{ type: "diff", newText: "child\n" }, expect.anything()] })
      // The grandchild: a session of its own announced on its parent's, or a card named after both.
      const grandchild = grandchildIds[0]!
      if (native) {
        expect(fold(first.allUpdates(child)).children[grandchild]).toMatchObject({ title: "explorer — Check b.txt", state: { state: "idle" } })
        expect(fold(first.allUpdates(grandchild)).messages).toContainEqual(["m1.1", "agent_message_chunk", "b.txt says child."])
      } else {
        expect(live.cards[`subagent-${grandchild}`]).toMatchObject({
          title: "general › explorer — Check b.txt",
          status: "completed",
          content: [{ type: "content", content: { type: "text", text: "✓ Read b.txt\n\nb.txt says child." } }]
        })
        expect(live.cards["s1"]).toMatchObject({ title: "general — Write b.txt", status: "completed" })
      }
      if (!native) {
        // `skein replay --acp` prints the bytes the load sent (its command list aside), its usage
        // updates too with the window the script gives (as a `skein acp --script` loads it).
        const printed = spawnSync(NODE, [SKEIN, "replay", sessionId, "--acp", "--home", first.home, "--script", first.scriptPath], { encoding: "utf8" })
        expect(printed.status).toBe(0)
        const sent = second.lines.filter((l) => l.includes('"session/update"') && !l.includes('"available_commands_update"'))
        expect(sent.filter((l) => l.includes('"usage_update"')).length).toBeGreaterThan(1)
        expect(printed.stdout.trimEnd().split("\n")).toEqual(sent)
      }
    })
  }
})
