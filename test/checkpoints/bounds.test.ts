/**
 * The checkpoints' bounds, on real files and real git: a session keeps the checkpoints of its
 * last `keepTurns` turns that changed files (a rewind past them is refused and says so), the
 * shadow repository deletes the objects of the dropped ones when it collects (counted across
 * a reload of the session, and at once over `maxBytes`), and a folder whose new content is over `maxSnapshotBytes` gets no
 * checkpoint: the turn is told, and a rewind says what it could not restore.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { execFileSync } from "node:child_process"
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Shadow from "../../src/checkpoints/Shadow.ts"
import type { Canonical } from "../../src/log/Event.ts"
import { historyOf, text, withSkein } from "../support/Sessions.ts"

const bash = (command: string, id: string) => ({ tool: "bash", args: { command }, id })

const ofType = <T extends Canonical["type"]>(events: ReadonlyArray<Canonical>, type: T) =>
  events.filter((e): e is Extract<Canonical, { type: T }> => e.type === type)

/** Whether the shadow repository still has object `id` (a commit or a blob). */
const hasObject = (gitDir: string, id: string): boolean => {
  try {
    execFileSync("git", ["cat-file", "-e", id], { env: { ...process.env, GIT_DIR: gitDir }, stdio: "ignore" })
    return true
  } catch {
    return false
  }
}

/** The id git gives `content` as a file. */
const blobOf = (content: string): string =>
  execFileSync("git", ["hash-object", "--stdin"], { input: content, encoding: "utf8" }).trim()

/** Turn `n` writes content of its own. */
const writes = (n: number) => ({ calls: [[bash(`echo unique-content-of-turn-${n} > notes.txt`, `w${n}`)], [{ text: `wrote ${n}` }]] })

describe("checkpoints: bounds", () => {
  it.live("a session keeps its last keepTurns turns' checkpoints; collecting deletes the dropped ones' objects, counted across a reload; a rewind past them is refused", () =>
    withSkein({
      mode: "bypassPermissions",
      checkpoints: { keepTurns: 2, collectEvery: 3 },
      script: { turns: [writes(1), writes(2), writes(3), writes(4), { calls: [] }, { calls: [] }] }
    }, ({ cwd, home, runtime, readLog }) =>
      Effect.gen(function*() {
        const first = yield* runtime.newSession({ cwd })
        const id = first.id
        const gitDir = Shadow.dirOf(home, id)
        yield* first.prompt(text("one"))
        yield* first.prompt(text("two"))
        const events = () => Effect.map(readLog(id), (log) => log.events as unknown as ReadonlyArray<Canonical>)
        const turn1 = ofType(yield* events(), "checkpoint").filter((e) => e.data.turn === 1).map((e) => e.data.id)
        assert.strictEqual(turn1.length, 2)
        // The notes as they were before turn 1: only its `before` checkpoint holds them (turn 2's holds turn 1's content).
        const blob1 = blobOf("Hello notes\n")
        assert.isTrue(hasObject(gitDir, blob1))

        // A new process would count from zero: the count is kept in the repository.
        yield* runtime.closeSession(id)
        const { session } = yield* runtime.loadSession({ sessionId: id, cwd })
        yield* session.prompt(text("three"))
        // Three turns took checkpoints: the oldest turn's were dropped and their objects deleted.
        const refs = yield* Shadow.refs(gitDir)
        assert.deepStrictEqual([...refs].sort(), ["refs/skein/t2-after", "refs/skein/t2-before", "refs/skein/t3-after", "refs/skein/t3-before"])
        for (const commit of turn1) assert.isFalse(hasObject(gitDir, commit), `turn 1's checkpoint ${commit} is gone`)
        assert.isFalse(hasObject(gitDir, blob1), "what only turn 1's checkpoints held is gone")
        assert.isTrue(hasObject(gitDir, blobOf("unique-content-of-turn-1\n")), "turn 2's before checkpoint still holds it")

        // What Skein writes itself (trees, commits, refs) is a sound repository to git, packed or not.
        execFileSync("git", ["fsck", "--strict", "--no-dangling"], { env: { ...process.env, GIT_DIR: gitDir }, stdio: "ignore" })
        yield* session.prompt(text("four"))
        execFileSync("git", ["fsck", "--strict", "--no-dangling"], { env: { ...process.env, GIT_DIR: gitDir }, stdio: "ignore" })
        assert.deepStrictEqual([...(yield* Shadow.refs(gitDir))].sort(), ["refs/skein/t3-after", "refs/skein/t3-before", "refs/skein/t4-after", "refs/skein/t4-before"])
        yield* session.prompt(text("/rewind 2"))
        const rewound = ofType(yield* events(), "rewound")
        assert.strictEqual(rewound[0]!.data.refused, "the checkpoint of turn 2 is no longer kept (a session keeps those of its last turns that changed files)")
        assert.strictEqual(readFileSync(join(cwd, "notes.txt"), "utf8"), "unique-content-of-turn-4\n")
        // A kept one still rewinds.
        yield* session.prompt(text("/rewind 4"))
        const again = ofType(yield* events(), "rewound")[1]!.data
        assert.strictEqual(again.refused, undefined)
        assert.strictEqual(readFileSync(join(cwd, "notes.txt"), "utf8"), "unique-content-of-turn-3\n")
      })))

  it.live("over maxBytes on disk, the oldest turns' checkpoints are dropped and collected at once, down to the last turn's", () =>
    withSkein({
      mode: "bypassPermissions",
      checkpoints: { maxBytes: 1 },
      script: { turns: [writes(1), writes(2), writes(3)] }
    }, ({ cwd, home, runtime }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        const gitDir = Shadow.dirOf(home, session.id)
        yield* session.prompt(text("one"))
        assert.deepStrictEqual([...(yield* Shadow.refs(gitDir))].sort(), ["refs/skein/t1-after", "refs/skein/t1-before"])
        yield* session.prompt(text("two"))
        yield* session.prompt(text("three"))
        assert.deepStrictEqual([...(yield* Shadow.refs(gitDir))].sort(), ["refs/skein/t3-after", "refs/skein/t3-before"])
        assert.isFalse(hasObject(gitDir, blobOf("Hello notes\n")))
      })))

  it.live("a folder with more new content than maxSnapshotBytes: the turn is told it has no checkpoint, and the rewind says what it could not restore", () =>
    withSkein({
      mode: "bypassPermissions",
      checkpoints: { maxSnapshotBytes: 4096 },
      script: { turns: [{ calls: [[bash("echo changed > notes.txt && echo new > added.txt", "sh1")], [{ text: "Changed." }]] }, { calls: [] }] }
    }, ({ cwd, home, runtime, readLog }) =>
      Effect.gen(function*() {
        writeFileSync(join(cwd, "data.bin"), "x".repeat(8192))
        const session = yield* runtime.newSession({ cwd })
        yield* session.prompt(text("change"))
        let events = (yield* readLog(session.id)).events as unknown as ReadonlyArray<Canonical>
        assert.deepStrictEqual(ofType(events, "checkpoint"), [])
        const told = ofType(events, "notice").filter((e) => e.data.source === "checkpoint").map((e) => [e.turn, e.data.text])
        assert.deepStrictEqual(told[0], [
          1,
          `No checkpoint could be taken before this turn changed files (the files of ${cwd} that changed add up to more than 4 KiB, too much for a checkpoint): /rewind cannot bring them back to before it.`
        ])
        // Nothing was stored: the shadow repository holds no checkpoint.
        assert.deepStrictEqual(yield* Shadow.refs(Shadow.dirOf(home, session.id)), [])

        yield* session.prompt(text("/rewind 1"))
        events = (yield* readLog(session.id)).events as unknown as ReadonlyArray<Canonical>
        const rewound = ofType(events, "rewound")[0]!.data
        assert.deepStrictEqual({ ...rewound, fromSeq: 0 }, { toTurn: 1, fromSeq: 0, restored: [], removed: [], skipped: [], unrestored: [1] })
        const said = ofType(events, "notice").filter((e) => e.data.source === "rewind").map((e) => e.data.text)
        assert.deepStrictEqual(said, [
          "Rewound to before turn 1: the model no longer sees turn 1 or what followed it. What turn 1 changed was not restored: no checkpoint could be taken before it (see its notice), so those files are left as they are."
        ])
        // The files are left as the turn made them; the conversation went back.
        assert.strictEqual(readFileSync(join(cwd, "notes.txt"), "utf8"), "changed\n")
        assert.strictEqual(readFileSync(join(cwd, "added.txt"), "utf8"), "new\n")
        assert.deepStrictEqual(historyOf(session).messages, [])
      })))
})
