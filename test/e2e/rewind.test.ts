/**
 * End to end: edit-and-resubmit over ACP through the built binary and the official ACP client
 * (`_session/rewind` then `session/prompt`: the next model call has no trace of the rewound
 * turn, and the shell's changes are gone), the rewind shown again by `session/load` and by
 * `skein replay`, repeated by `skein replay --rerun`, and `skein sessions rm` deleting the
 * session's checkpoints; a file changed by someone else asked about as ACP asks (the question's
 * wire shape), and overwritten when so answered.
 */
import { spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { expectClean, NODE, SKEIN, useAgents } from "../support/AgentProcess.ts"

const agents = useAgents()
const dirs: Array<string> = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

const script = {
  turns: [
    {
      calls: [
        [{ tool: "bash", args: { command: "sed -i 's/Hello/Draft/' notes.txt && echo draft > draft.txt && rm old.txt" }, id: "sh1" }],
        [{ text: "FIRST-ANSWER" }]
      ]
    },
    // The rewind's own turn (it never calls the model).
    { calls: [] },
    // Edit-and-resubmit: the resubmitted prompt, and nothing of turn 1 anywhere in what the model is sent.
    { expect: "^second try$", absent: "first try|FIRST-ANSWER|sed -i|Draft", calls: [[{ text: "SECOND-ANSWER" }]] }
  ]
}

const agentText = (updates: ReadonlyArray<any>) =>
  updates.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content?.text ?? "").join("")

describe("e2e: rewind", () => {
  it("_session/rewind then session/prompt: the files and the conversation are as before the turn; load, replay and --rerun show it", async () => {
    const agent = agents.start({ script, files: { "notes.txt": "Hello notes\n", "old.txt": "old\n" } })
    const init = (await agent.initialize()) as any
    expect(init._meta?.rewind).toEqual({ supported: true })
    const sessionId = await agent.newSession()
    await agent.sdk.request("session/set_mode", { sessionId, modeId: "bypassPermissions" })
    expect((await agent.prompt(sessionId, "first try")).stopReason).toBe("end_turn")
    const notes = path.join(agent.cwd, "notes.txt")
    expect(readFileSync(notes, "utf8")).toBe("Draft notes\n")

    const rewound = (await agent.sdk.request("_session/rewind", { sessionId, turn: 1 })) as any
    expect(rewound).toEqual({
      stopReason: "end_turn",
      rewound: true,
      toTurn: 1,
      restored: [notes, path.join(agent.cwd, "old.txt")].sort(),
      removed: [path.join(agent.cwd, "draft.txt")],
      skipped: []
    })
    expect(readFileSync(notes, "utf8")).toBe("Hello notes\n")
    expect(readFileSync(path.join(agent.cwd, "old.txt"), "utf8")).toBe("old\n")
    expect(existsSync(path.join(agent.cwd, "draft.txt"))).toBe(false)

    const before = agent.updates(sessionId).length
    expect((await agent.prompt(sessionId, "second try")).stopReason).toBe("end_turn")
    expect(agentText(agent.updates(sessionId).slice(before))).toBe("SECOND-ANSWER")
    // A bad turn number is a result that says why, not a crash.
    const refused = (await agent.sdk.request("_session/rewind", { sessionId, turn: 9 })) as any
    expect(refused).toMatchObject({ rewound: false, refused: "there is no turn 9 before this one" })
    expectClean(agent)
    agent.closeStdin()
    expect((await agent.waitExit()).code).toBe(0)

    // session/load in a new process shows the rewind where it happened.
    const second = agents.start({ script, args: ["--home", agent.home] })
    await second.initialize()
    await second.sdk.request("session/load", { sessionId, cwd: agent.cwd, mcpServers: [] })
    await second.settled(sessionId)
    expect(agentText(second.updates(sessionId))).toMatch(/FIRST-ANSWER[\s\S]*Rewound to before turn 1: the model no longer sees turn 1[\s\S]*SECOND-ANSWER/)
    expectClean(second)
    second.closeStdin()
    await second.waitExit()

    const replay = spawnSync(NODE, [SKEIN, "replay", sessionId, "--home", agent.home], { encoding: "utf8" })
    expect(replay.status).toBe(0)
    expect(replay.stdout).toContain("[rewound to before turn 1: the model no longer sees turns 1–2; restored ")
    expect(replay.stdout).toMatch(/\[checkpoint before turn 1: [0-9a-f]{12}\]/)

    // --rerun runs turn 1's command again and rewinds it again, in its own session.
    const rerunHome = realpathSync(mkdtempSync(path.join(os.tmpdir(), "skein-rerun-home-")))
    dirs.push(rerunHome)
    const rerun = spawnSync(NODE, [SKEIN, "replay", sessionId, "--rerun", "--json", "--home", agent.home, "--rerun-home", rerunHome], { encoding: "utf8" })
    expect(rerun.stderr).toBe("")
    expect(rerun.status, rerun.stdout).toBe(0)
    const report = JSON.parse(rerun.stdout)
    const rerunEvents = readFileSync(report.rerunLog, "utf8").trim().split("\n").slice(1).map((line) => JSON.parse(line))
    const again = rerunEvents.filter((e: any) => e.type === "rewound")
    expect(again.map((e: any) => [e.turn, e.data.toTurn, e.data.refused, e.data.removed])).toEqual([
      [2, 1, undefined, [path.join(agent.cwd, "draft.txt")]],
      [4, 9, "there is no turn 9 before this one", []]
    ])
    expect(readFileSync(notes, "utf8")).toBe("Hello notes\n")
    expect(existsSync(path.join(agent.cwd, "draft.txt"))).toBe(false)

    // Removing the session removes its checkpoints.
    const shadow = path.join(agent.home, "checkpoints", `${sessionId}.git`)
    expect(existsSync(shadow)).toBe(true)
    const rm = spawnSync(NODE, [SKEIN, "sessions", "rm", sessionId, "--yes", "--home", agent.home], { encoding: "utf8" })
    expect(rm.status).toBe(0)
    expect(existsSync(shadow)).toBe(false)
  })

  it("a file someone else changed since: the client is asked (session/request_permission, the files as locations) and \"overwrite\" writes it back too", async () => {
    const agent = agents.start({
      script: {
        turns: [
          { calls: [[{ tool: "bash", args: { command: "sed -i 's/Hello/Draft/' notes.txt && echo draft > draft.txt" }, id: "sh1" }], [{ text: "Drafted." }]] },
          { calls: [] }
        ]
      },
      files: { "notes.txt": "Hello notes\n" }
    })
    await agent.initialize()
    const sessionId = await agent.newSession()
    await agent.sdk.request("session/set_mode", { sessionId, modeId: "bypassPermissions" })
    expect((await agent.prompt(sessionId, "draft")).stopReason).toBe("end_turn")
    // Someone else, after the turn: edits the file the turn changed, and creates one.
    const notes = path.join(agent.cwd, "notes.txt")
    const mine = path.join(agent.cwd, "mine.txt")
    writeFileSync(notes, "edited by hand\n")
    writeFileSync(mine, "mine\n")

    // The client's default answer is allow_once: "Overwrite them too".
    const rewound = (await agent.sdk.request("_session/rewind", { sessionId, turn: 1 })) as any
    expect(agent.permissionRequests).toHaveLength(1)
    const question = agent.permissionRequests[0]!
    expect(question.toolCall.toolCallId).toBe("rewind-2")
    expect(question.toolCall.locations).toEqual([{ path: mine }, { path: notes }])
    expect(question.options.map((o) => [o.optionId, o.kind, o.name])).toEqual([
      ["allow_once", "allow_once", "Overwrite them too"],
      ["reject_once", "reject_once", "Keep them as they are, rewind the rest"]
    ])
    expect(rewound).toEqual({
      stopReason: "end_turn",
      rewound: true,
      toTurn: 1,
      restored: [notes],
      removed: [path.join(agent.cwd, "draft.txt"), mine].sort(),
      skipped: []
    })
    expect(readFileSync(notes, "utf8")).toBe("Hello notes\n")
    expect(existsSync(mine)).toBe(false)
    expectClean(agent)
    agent.closeStdin()
    expect((await agent.waitExit()).code).toBe(0)
  })
})
