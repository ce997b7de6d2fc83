/**
 * Workspace trust and hooks are decided per session, not per turn: the trust question is
 * settled at the session's first presented prompt (a folder the model starts shipping things
 * in afterwards is asked about in the next session, and loads nothing meanwhile), and trusting
 * the folder in the session's own question loads its hooks from that prompt on, even when the
 * session had read its hooks already.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import type { SessionEvent } from "../../src/log/Event.ts"
import * as Trust from "../../src/trust/Trust.ts"
import type { Answer } from "../../src/Vocabulary.ts"
import { text, withSkein } from "../support/Sessions.ts"

const HOOK = JSON.stringify({ hooks: { PreToolUse: [{ matcher: "", hooks: [{ type: "command", command: "echo ran >> hook-runs" }] }] } })

const tool = (name: string, args: unknown, id: string) => ({ tool: name, args, id })


/** What a presented turn needs of a session. */
interface Presented {
  readonly turn: (content: ReturnType<typeof text>) => Stream.Stream<SessionEvent, unknown>
  readonly answer: (requestId: string, answer: Answer) => Effect.Effect<void, unknown>
}
/** One presented turn; every question is answered `answer`. */
const turn = (session: Presented, prompt: string, answer: string) =>
  Effect.gen(function*() {
    const seen: Array<SessionEvent> = []
    yield* session.turn(text(prompt)).pipe(
      Stream.runForEach((event) => {
        seen.push(event)
        return event.type === "permission_asked" ? Effect.ignore(session.answer(event.data.requestId, { outcome: "selected", optionId: answer })) : Effect.void
      })
    )
    return seen
  })

const trustAsked = (events: ReadonlyArray<SessionEvent>) =>
  events.flatMap((e) => (e.type === "permission_asked" && e.data.toolCall.title.startsWith("Trust this folder?") ? [e.data.toolCall.title] : []))
const hooksRan = (events: ReadonlyArray<SessionEvent>) => events.flatMap((e) => (e.type === "hook" ? [[e.data.event, e.data.toolCallId]] : []))
const runs = (cwd: string) => (existsSync(join(cwd, "hook-runs")) ? readFileSync(join(cwd, "hook-runs"), "utf8").split("\n").filter(Boolean).length : 0)

describe("workspace trust, per session", () => {
  it.live("a folder that shipped nothing at the session's first prompt is not asked about when the model adds settings; the next session asks", () =>
    withSkein({
      script: {
        turns: [
          { calls: [[tool("write", { path: ".claude/settings.json", content: HOOK }, "w1")], [{ text: "written" }]] },
          { calls: [[tool("read", { path: "notes.txt" }, "r1")], [{ text: "read" }]] }
        ]
      },
      mode: "acceptEdits",
      trust: "ask"
    }, ({ cwd, runtime }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        const first = yield* turn(session, "write the settings", "allow_always")
        assert.deepStrictEqual(trustAsked(first), [])
        assert.isTrue(existsSync(join(cwd, ".claude", "settings.json")))
        // The folder ships settings now: nobody is asked in this session, and nothing of it loads.
        const second = yield* turn(session, "read the notes", "allow_always")
        assert.deepStrictEqual(trustAsked(second), [])
        assert.deepStrictEqual(hooksRan(second), [])
        assert.strictEqual(runs(cwd), 0)
        // The next session asks; trusted, the hook runs from that prompt on.
        const next = yield* runtime.newSession({ cwd })
        const events = yield* turn(next, "write the settings again", "allow_always")
        assert.strictEqual(trustAsked(events).length, 1)
        assert.include(trustAsked(events)[0], ".claude/settings.json")
        assert.deepStrictEqual(hooksRan(events), [["PreToolUse", "w1"]])
        assert.strictEqual(runs(cwd), 1)
      })))

  it.live("trusting the folder in a session that read its hooks already loads the folder's hooks from that prompt on", () =>
    withSkein({
      script: {
        turns: [
          { calls: [[tool("read", { path: "notes.txt" }, "r1")], [{ text: "one" }]] },
          { calls: [[tool("read", { path: "notes.txt" }, "r2")], [{ text: "two" }]] }
        ]
      },
      trust: "ask"
    }, ({ cwd, runtime }) =>
      Effect.gen(function*() {
        mkdirSync(join(cwd, ".claude"))
        writeFileSync(join(cwd, ".claude", "settings.json"), HOOK)
        const session = yield* runtime.newSession({ cwd })
        // Nobody presents this turn: nobody is asked, and the untrusted folder's hook does not run.
        assert.deepStrictEqual(yield* session.prompt(text("unattended")), { stopReason: "end_turn" })
        assert.strictEqual(runs(cwd), 0)
        const events = yield* turn(session, "presented", "allow_always")
        assert.strictEqual(trustAsked(events).length, 1)
        assert.deepStrictEqual(hooksRan(events), [["PreToolUse", "r2"]])
        assert.strictEqual(runs(cwd), 1)
        const trust = JSON.parse(readFileSync(join(session.cwd, "..", "home", "trust.json"), "utf8"))
        assert.isTrue(Object.values(trust.folders as Record<string, { trusted: boolean }>).every((entry) => entry.trusted))
      })))
})

describe("an answer trust.json cannot take", () => {
  it.live("holds for the sessions this process opens there later, instead of being asked again", () =>
    withSkein({
      script: {
        turns: [
          { calls: [[tool("read", { path: "notes.txt" }, "r1")], [{ text: "one" }]] }
        ]
      },
      trust: "ask"
    }, ({ cwd, runtime }) =>
      Effect.gen(function*() {
        mkdirSync(join(cwd, ".claude"))
        writeFileSync(join(cwd, ".claude", "settings.json"), HOOK)
        // The save writes a temporary file beside trust.json first: a directory in its place makes it fail.
        const home = join(cwd, "..", "home")
        mkdirSync(join(home, `trust.json.${process.pid}.tmp`), { recursive: true })
        const session = yield* runtime.newSession({ cwd })
        const first = yield* turn(session, "first", "allow_always")
        assert.strictEqual(trustAsked(first).length, 1)
        assert.deepStrictEqual(hooksRan(first), [["PreToolUse", "r1"]])
        assert.isFalse(existsSync(join(home, "trust.json")))
        // A new session (its script starts again) reads trust.json again, which does not hold the
        // answer: the answer still counts, and nobody is asked.
        const next = yield* runtime.newSession({ cwd })
        const second = yield* turn(next, "second", "reject_always")
        assert.deepStrictEqual(trustAsked(second), [])
        assert.deepStrictEqual(hooksRan(second), [["PreToolUse", "r1"]])
        assert.strictEqual(runs(cwd), 2)
      })))
})

describe("where a folder stands is read once per session open", () => {
  it.live("one read of trust.json and the folder per session: its skills, commands, MCP servers, hooks and the question share it; an answer counts at once", () =>
    withSkein({
      script: {
        turns: [
          { calls: [[{ text: "one" }]] },
          { calls: [[{ text: "two" }]] },
          { calls: [[{ text: "three" }]] }
        ]
      },
      trust: "ask"
    }, ({ cwd, runtime }) =>
      Effect.gen(function*() {
        mkdirSync(join(cwd, ".skein", "commands"), { recursive: true })
        writeFileSync(join(cwd, ".skein", "commands", "ship.md"), "Ship $ARGUMENTS\n")
        mkdirSync(join(cwd, ".claude", "skills", "deploy"), { recursive: true })
        writeFileSync(join(cwd, ".claude", "skills", "deploy", "SKILL.md"), "---\nname: deploy\ndescription: Deploys\n---\nDeploy it.\n")
        writeFileSync(join(cwd, ".claude", "settings.json"), HOOK)
        const names = Effect.map(runtime.commands!(cwd), (listed) => listed.map((c) => c.name))
        const before = Trust.scanCount()
        const session = yield* runtime.newSession({ cwd })
        // The client's command list, as after session/new: untrusted, the folder's own are left out.
        assert.notInclude(yield* names, "ship")
        assert.strictEqual(Trust.scanCount() - before, 1)
        // Trusted in the session's question: its command and skill load from that prompt on, with no new read.
        const events = yield* turn(session, "presented", "allow_always")
        assert.strictEqual(trustAsked(events).length, 1)
        assert.include(yield* names, "ship")
        assert.include(yield* names, "deploy")
        yield* turn(session, "/ship it", "allow_always")
        assert.strictEqual(Trust.scanCount() - before, 1)
        // A new session reads it again, once: trusted now, nobody is asked.
        const next = yield* runtime.newSession({ cwd })
        const again = yield* turn(next, "hello", "allow_always")
        assert.deepStrictEqual(trustAsked(again), [])
        assert.strictEqual(Trust.scanCount() - before, 2)
      })))
})
