/**
 * Checkpoints and `/rewind` on real files with real git and real shell commands: what a
 * shell command changed (`sed -i`, `rm`, a new file) goes back, ignored files and the user's
 * own repository are left alone, a file someone else changed after the turn is named (refused
 * unattended, kept or overwritten as answered), a child's change in the shared workspace is
 * covered, the model's view drops the rewound turns, and deleting the session deletes its
 * checkpoints.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, readFileSync, truncateSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Shadow from "../../src/checkpoints/Shadow.ts"
import type { Canonical, SessionEvent } from "../../src/log/Event.ts"
import { historyOf, text, withSkein } from "../support/Sessions.ts"

const bash = (command: string, id: string) => ({ tool: "bash", args: { command }, id })

const gitIn = (cwd: string) => (...args: Array<string>) =>
  execFileSync("git", args, { cwd, encoding: "utf8", env: { ...process.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@t", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@t" } })

const ofType = <T extends Canonical["type"]>(events: ReadonlyArray<Canonical>, type: T) =>
  events.filter((e): e is Extract<Canonical, { type: T }> => e.type === type)

const noticesOf = (events: ReadonlyArray<Canonical>) => ofType(events, "notice").map((e) => e.data.text).join("\n")

/** The text of every message of the model's view. */
const viewText = (session: { readonly id: string }) => JSON.stringify(historyOf(session).messages)

const SHELL_CHANGES = "sed -i 's/Hello/Bye/' notes.txt && rm gone.txt && echo new > added.txt && mkdir -p deep/er && echo x > deep/er/f.txt && echo noise > build.log"

describe("/rewind", () => {
  it.live("undoes what a shell command changed (sed -i, rm, new files and folders); leaves ignored files and the user's repository alone", () =>
    withSkein({
      mode: "bypassPermissions",
      script: { turns: [{ calls: [[bash(SHELL_CHANGES, "sh1")], [{ text: "Changed the notes." }]] }, { calls: [] }] }
    }, ({ cwd, home, runtime, readLog }) =>
      Effect.gen(function*() {
        writeFileSync(join(cwd, "gone.txt"), "keep me\n")
        writeFileSync(join(cwd, ".gitignore"), "*.log\n")
        writeFileSync(join(cwd, "old.log"), "ignored before\n")
        const git = gitIn(cwd)
        git("init", "-q")
        git("add", ".")
        git("commit", "-qm", "start")
        const refsBefore = git("for-each-ref")
        const session = yield* runtime.newSession({ cwd })
        yield* session.prompt(text("change the notes"))
        assert.strictEqual(readFileSync(join(cwd, "notes.txt"), "utf8"), "Bye notes\n")
        assert.isFalse(existsSync(join(cwd, "gone.txt")))
        assert.include(viewText(session), "change the notes")

        yield* session.prompt(text("/rewind"))
        assert.strictEqual(readFileSync(join(cwd, "notes.txt"), "utf8"), "Hello notes\n")
        assert.strictEqual(readFileSync(join(cwd, "gone.txt"), "utf8"), "keep me\n")
        assert.isFalse(existsSync(join(cwd, "added.txt")))
        assert.isFalse(existsSync(join(cwd, "deep")), "the folders made since are gone too")
        // Ignored files are not in a checkpoint: neither removed nor restored.
        assert.strictEqual(readFileSync(join(cwd, "build.log"), "utf8"), "noise\n")
        assert.strictEqual(readFileSync(join(cwd, "old.log"), "utf8"), "ignored before\n")
        // The user's repository: no ref, no index change, nothing staged.
        assert.strictEqual(git("for-each-ref"), refsBefore)
        assert.strictEqual(git("status", "--porcelain", "--untracked-files=all"), "")

        const events = (yield* readLog(session.id)).events as unknown as ReadonlyArray<Canonical>
        const checkpoints = ofType(events, "checkpoint")
        assert.deepStrictEqual(checkpoints.map((e) => [e.turn, e.data.turn, e.data.at, e.data.roots]), [
          [1, 1, "before", [cwd]],
          [1, 1, "after", [cwd]],
          [2, 2, "before", [cwd]],
          [2, 2, "after", [cwd]]
        ])
        // Taken before the command ran: after its tool_call, before its result.
        const seqOf = (pred: (e: Canonical) => boolean) => events.find(pred)!.seq
        assert.isTrue(seqOf((e) => e.type === "tool_call") < checkpoints[0]!.seq && checkpoints[0]!.seq < seqOf((e) => e.type === "tool_result"))
        const rewound = ofType(events, "rewound")
        assert.strictEqual(rewound.length, 1)
        assert.deepStrictEqual(
          { ...rewound[0]!.data, restored: [...rewound[0]!.data.restored].sort(), removed: [...rewound[0]!.data.removed].sort() },
          {
            toTurn: 1,
            fromSeq: events.find((e) => e.type === "turn_start" && e.turn === 1)!.seq,
            checkpoint: checkpoints[0]!.data.id,
            restored: [join(cwd, "gone.txt"), join(cwd, "notes.txt")],
            removed: [join(cwd, "added.txt"), join(cwd, "deep/er/f.txt")],
            skipped: []
          }
        )
        assert.include(noticesOf(events), "Rewound to before turn 1")
        // The model's view: nothing of turn 1 (the rewind itself is a command it never sees).
        assert.deepStrictEqual(historyOf(session).messages, [])
        assert.isTrue(existsSync(Shadow.dirOf(home, session.id)))
        assert.isFalse(existsSync(join(cwd, ".git", "refs", "skein")))
      })))

  it.live("a file someone else changed after the turn is named: refused when nobody can answer; kept or overwritten as answered", () =>
    withSkein({
      mode: "bypassPermissions",
      script: {
        turns: [
          { calls: [[bash("sed -i 's/Hello/Bye/' notes.txt && echo new > added.txt && echo v1 > shared.txt", "sh1")], [{ text: "Done." }]] },
          { calls: [] },
          { calls: [] },
          { calls: [] }
        ]
      }
    }, ({ cwd, runtime, readLog }) =>
      Effect.gen(function*() {
        writeFileSync(join(cwd, "shared.txt"), "v0\n")
        const session = yield* runtime.newSession({ cwd })
        yield* session.prompt(text("change"))
        // Someone else, after the turn: edits a file the turn changed, and creates one.
        writeFileSync(join(cwd, "shared.txt"), "edited by hand\n")
        writeFileSync(join(cwd, "mine.txt"), "my own new file\n")

        // Unattended: refused, nothing changed (files nor conversation).
        yield* session.prompt(text("/rewind 1"))
        let events = (yield* readLog(session.id)).events as unknown as ReadonlyArray<Canonical>
        const refused = ofType(events, "rewound")[0]!.data
        assert.match(refused.refused ?? "", /mine\.txt and shared\.txt were changed since by something other than this session/)
        assert.strictEqual(readFileSync(join(cwd, "shared.txt"), "utf8"), "edited by hand\n")
        assert.strictEqual(readFileSync(join(cwd, "notes.txt"), "utf8"), "Bye notes\n")
        assert.include(viewText(session), "Done.")

        // Asked: "keep them" rewinds the rest.
        const asked: Array<SessionEvent> = []
        yield* session.turn(text("/rewind 1")).pipe(Stream.runForEach((event) => {
          if (event.type !== "permission_asked") return Effect.void
          asked.push(event)
          return session.answer(event.data.requestId, { outcome: "selected", optionId: "reject_once" })
        }))
        assert.strictEqual(asked.length, 1)
        const question = (asked[0] as Extract<SessionEvent, { type: "permission_asked" }>).data
        assert.deepStrictEqual(question.toolCall.locations, [{ path: join(cwd, "mine.txt") }, { path: join(cwd, "shared.txt") }])
        assert.deepStrictEqual(question.options.map((o) => o.optionId), ["allow_once", "reject_once"])
        assert.strictEqual(readFileSync(join(cwd, "shared.txt"), "utf8"), "edited by hand\n")
        assert.strictEqual(readFileSync(join(cwd, "mine.txt"), "utf8"), "my own new file\n")
        assert.strictEqual(readFileSync(join(cwd, "notes.txt"), "utf8"), "Hello notes\n")
        assert.isFalse(existsSync(join(cwd, "added.txt")))
        events = (yield* readLog(session.id)).events as unknown as ReadonlyArray<Canonical>
        const kept = ofType(events, "rewound")[1]!.data
        assert.deepStrictEqual([...kept.skipped].sort(), [join(cwd, "mine.txt"), join(cwd, "shared.txt")])
        assert.deepStrictEqual(ofType(events, "permission").map((e) => [e.turn, e.data]), [[3, { toolCallId: "rewind-3", outcome: "reject_once" }]])
        assert.notInclude(viewText(session), "Done.")

        // Turn 1 is rewound now: rewinding to it again is refused.
        yield* session.prompt(text("/rewind 1"))
        events = (yield* readLog(session.id)).events as unknown as ReadonlyArray<Canonical>
        assert.match(ofType(events, "rewound")[2]!.data.refused ?? "", /turn 1 was rewound already/)
      })))

  it.live("asked and answered \"overwrite\": someone else's edit is written back and their new file removed, as the checkpoint holds them", () =>
    withSkein({
      mode: "bypassPermissions",
      script: {
        turns: [
          { calls: [[bash("sed -i 's/Hello/Bye/' notes.txt && echo new > added.txt && echo v1 > shared.txt", "sh1")], [{ text: "Done." }]] },
          { calls: [] }
        ]
      }
    }, ({ cwd, runtime, readLog }) =>
      Effect.gen(function*() {
        writeFileSync(join(cwd, "shared.txt"), "v0\n")
        const session = yield* runtime.newSession({ cwd })
        yield* session.prompt(text("change"))
        // Someone else, after the turn: edits a file the turn changed, and creates one.
        writeFileSync(join(cwd, "shared.txt"), "edited by hand\n")
        writeFileSync(join(cwd, "mine.txt"), "my own new file\n")

        const asked: Array<Extract<SessionEvent, { type: "permission_asked" }>> = []
        yield* session.turn(text("/rewind 1")).pipe(Stream.runForEach((event) => {
          if (event.type !== "permission_asked") return Effect.void
          asked.push(event)
          return session.answer(event.data.requestId, { outcome: "selected", optionId: "allow_once" })
        }))
        assert.strictEqual(asked.length, 1)
        assert.deepStrictEqual(asked[0]!.data.toolCall.locations, [{ path: join(cwd, "mine.txt") }, { path: join(cwd, "shared.txt") }])
        assert.deepStrictEqual(asked[0]!.data.options.map((o) => [o.optionId, o.name]), [
          ["allow_once", "Overwrite them too"],
          ["reject_once", "Keep them as they are, rewind the rest"]
        ])
        // Everything as the checkpoint before turn 1 holds it: the hand edit is overwritten, the new file gone.
        assert.strictEqual(readFileSync(join(cwd, "shared.txt"), "utf8"), "v0\n")
        assert.isFalse(existsSync(join(cwd, "mine.txt")))
        assert.strictEqual(readFileSync(join(cwd, "notes.txt"), "utf8"), "Hello notes\n")
        assert.isFalse(existsSync(join(cwd, "added.txt")))
        const events = (yield* readLog(session.id)).events as unknown as ReadonlyArray<Canonical>
        const rewound = ofType(events, "rewound")
        assert.strictEqual(rewound.length, 1)
        const data = rewound[0]!.data
        assert.strictEqual(data.refused, undefined)
        assert.deepStrictEqual([...data.restored].sort(), [join(cwd, "notes.txt"), join(cwd, "shared.txt")])
        assert.deepStrictEqual([...data.removed].sort(), [join(cwd, "added.txt"), join(cwd, "mine.txt")])
        assert.deepStrictEqual(data.skipped, [])
        assert.deepStrictEqual(ofType(events, "permission").map((e) => [e.turn, e.data]), [[2, { toolCallId: "rewind-2", outcome: "allow_once" }]])
        assert.notInclude(viewText(session), "Done.")
      })))

  it.live("a child's change in the shared workspace is covered by the parent's checkpoint", () =>
    withSkein({
      mode: "bypassPermissions",
      script: {
        turns: [
          { calls: [[{ tool: "spawn_agent", args: { task: "edit the notes", agent: "general" }, id: "s1" }], [{ tool: "wait_agent", args: {}, id: "w1" }], [{ text: "The child did it." }]] },
          { calls: [] }
        ],
        agents: { general: { turns: [{ calls: [[bash("sed -i 's/Hello/Child/' notes.txt && echo child > child.txt", "c1")], [{ text: "edited" }]] }] } }
      }
    }, ({ cwd, home, runtime, readLog }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        yield* session.prompt(text("delegate"))
        assert.strictEqual(readFileSync(join(cwd, "notes.txt"), "utf8"), "Child notes\n")
        let events = (yield* readLog(session.id)).events as unknown as ReadonlyArray<Canonical>
        assert.deepStrictEqual(ofType(events, "checkpoint").map((e) => [e.data.turn, e.data.at]), [[1, "before"], [1, "after"]])
        const child = ofType(events, "subagent").find((e) => e.data.event === "spawned")!.data.id
        // The child keeps no checkpoints of its own: the workspace is its parent's.
        assert.deepStrictEqual(ofType((yield* readLog(child)).events as unknown as ReadonlyArray<Canonical>, "checkpoint"), [])
        assert.isFalse(existsSync(Shadow.dirOf(home, child)))

        yield* session.prompt(text("/rewind"))
        assert.strictEqual(readFileSync(join(cwd, "notes.txt"), "utf8"), "Hello notes\n")
        assert.isFalse(existsSync(join(cwd, "child.txt")))
        events = (yield* readLog(session.id)).events as unknown as ReadonlyArray<Canonical>
        assert.strictEqual(ofType(events, "rewound")[0]!.data.refused, undefined)
      })))

  it.live("a file too large for a checkpoint is left out, named, and never removed; deleting the session deletes its checkpoints", () =>
    withSkein({
      mode: "bypassPermissions",
      script: { turns: [{ calls: [[bash("echo changed > notes.txt && echo more >> big.bin", "sh1")], [{ text: "ok" }]] }, { calls: [] }] }
    }, ({ cwd, home, runtime, readLog }) =>
      Effect.gen(function*() {
        const big = join(cwd, "big.bin")
        writeFileSync(big, "")
        truncateSync(big, Shadow.MAX_FILE_BYTES + 1)
        const session = yield* runtime.newSession({ cwd })
        yield* session.prompt(text("go"))
        const events = (yield* readLog(session.id)).events as unknown as ReadonlyArray<Canonical>
        assert.deepStrictEqual(ofType(events, "checkpoint")[0]!.data.skipped, [big])
        yield* session.prompt(text("/rewind"))
        assert.strictEqual(readFileSync(join(cwd, "notes.txt"), "utf8"), "Hello notes\n")
        assert.isTrue(existsSync(big))
        const gitDir = Shadow.dirOf(home, session.id)
        assert.isTrue(existsSync(gitDir))
        yield* runtime.deleteSession(session.id)
        assert.isFalse(existsSync(gitDir))
      })))

  it.live("a turn that changed nothing takes no checkpoint; rewinding it goes back in the conversation only", () =>
    withSkein({
      mode: "bypassPermissions",
      script: { turns: [{ calls: [[{ tool: "read", args: { path: "notes.txt" }, id: "r1" }], [{ text: "Read it." }]] }, { calls: [] }] }
    }, ({ cwd, home, runtime, readLog }) =>
      Effect.gen(function*() {
        mkdirSync(join(cwd, "sub"))
        const session = yield* runtime.newSession({ cwd })
        yield* session.prompt(text("read"))
        yield* session.prompt(text("/rewind 1"))
        const events = (yield* readLog(session.id)).events as unknown as ReadonlyArray<Canonical>
        assert.deepStrictEqual(ofType(events, "checkpoint"), [])
        assert.isFalse(existsSync(Shadow.dirOf(home, session.id)))
        assert.deepStrictEqual(ofType(events, "rewound").map((e) => e.data.restored.length + e.data.removed.length), [0])
        assert.deepStrictEqual(historyOf(session).messages, [])
      })))
})
