/**
 * `/undo` on real files: which turn it picks from the log, what it plans per file, and applying
 * it all or nothing (restored, removed, refused when a file changed since or lies outside the
 * roots), with the text the user is shown.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync, chmodSync } from "node:fs"
import { join } from "node:path"
import type { Canonical, CanonicalBody } from "../../src/log/Event.ts"
import * as Undo from "../../src/session/Undo.ts"
import * as SafeFs from "../../src/fs/SafeFs.ts"
import { edit } from "../../src/tools/edit.ts"
import * as Tool from "../../src/tools/Tool.ts"
import { write } from "../../src/tools/write.ts"
import * as TempDir from "../support/TempDir.ts"
import * as ToolServices from "../support/ToolServices.ts"

// ---------------------------------------------------------------------------
// Building a log by hand
// ---------------------------------------------------------------------------

type Diff = { readonly path: string; readonly oldText: string | null; readonly newText: string }

/** A log under construction: each helper appends events of one turn, numbered in order. */
const makeLog = () => {
  const events: Array<Canonical> = []
  let calls = 0
  const push = (turn: number | null, body: CanonicalBody) =>
    events.push({ ...body, sessionId: "s-1", seq: events.length + 1, ts: 1000 + events.length, turn } as Canonical)
  const call = (turn: number, name: string, result: { ok: boolean; diff?: ReadonlyArray<Diff> }) => {
    const id = `call-${++calls}`
    push(turn, { type: "tool_call", data: { id, name, args: {}, title: name, kind: name === "bash" ? "execute" : "edit" } })
    push(turn, {
      type: "tool_result",
      data: { id, ok: result.ok, status: result.ok ? "done" : "failed", content: result.ok ? "done" : "failed", ...(result.diff ? { details: { diff: result.diff } } : {}) }
    })
  }
  return {
    events,
    turn: (turn: number, body: (t: { call: typeof call }) => void, command?: string) => {
      push(turn, {
        type: "turn_start",
        data: { content: [{ type: "text", text: command ?? "do it" }], ...(command ? { command: { name: command.slice(1), arguments: "", local: true } } : {}) }
      })
      body({ call: (_, name, result) => call(turn, name, result) })
      push(turn, { type: "turn_end", data: { stopReason: "end_turn" } })
    },
    undo: (turn: number, undone: number, result: Undo.Result) => {
      push(turn, { type: "turn_start", data: { content: [{ type: "text", text: "/undo" }], command: { name: "undo", arguments: "", local: true } } })
      push(turn, { type: "undo", data: { turn: undone, ...("refused" in result ? { restored: [], removed: [], refused: result.refused } : result) } })
      push(turn, { type: "turn_end", data: { stopReason: "end_turn" } })
    }
  }
}

const workspace = Effect.gen(function*() {
  const base = yield* TempDir.make()
  const cwd = join(base, "ws")
  mkdirSync(cwd)
  const put = (name: string, content: string) => {
    writeFileSync(join(cwd, name), content)
    return join(cwd, name)
  }
  const read = (name: string) => readFileSync(join(cwd, name), "utf8")
  const apply = (plan: Undo.Plan) => Undo.apply(plan, { roots: [cwd], cwd }).pipe(Effect.provide(TempDir.platform))
  return { base, cwd, put, read, apply }
})

const v0 = "function a() {\n  return 1\n}\n"
const v1 = "function a() {\n  return 2\n}\n"
const v2 = "function a() {\n  return 3\n}\n"

// ---------------------------------------------------------------------------

describe("Undo.lastChangingTurn and Undo.plan", () => {
  it("picks the last turn whose ok write/edit results carry a diff; failed calls and other tools do not count", () => {
    const log = makeLog()
    log.turn(1, ({ call }) => call(1, "edit", { ok: true, diff: [{ path: "/w/a.ts", oldText: v0, newText: v1 }] }))
    log.turn(2, ({ call }) => {
      call(2, "edit", { ok: false })
      call(2, "bash", { ok: true })
      call(2, "read", { ok: true, diff: [{ path: "/w/a.ts", oldText: v1, newText: v2 }] })
    })
    assert.strictEqual(Undo.lastChangingTurn(log.events), 1)
    assert.strictEqual(Undo.lastChangingTurn([]), undefined)
  })

  it("a file's before is its content ahead of the turn's first change, after what its last change left; created files have before null", () => {
    const log = makeLog()
    log.turn(1, ({ call }) => {
      call(1, "edit", { ok: true, diff: [{ path: "/w/a.ts", oldText: v0, newText: v1 }] })
      call(1, "write", { ok: true, diff: [{ path: "/w/b.ts", oldText: null, newText: "b" }] })
      call(1, "edit", { ok: true, diff: [{ path: "/w/a.ts", oldText: v1, newText: v2 }] })
      call(1, "edit", { ok: true, diff: [{ path: "/w/c.ts", oldText: "c", newText: "c2" }] })
      call(1, "edit", { ok: true, diff: [{ path: "/w/c.ts", oldText: "c2", newText: "c" }] })
    })
    log.turn(2, ({ call }) => call(2, "edit", { ok: true, diff: [{ path: "/w/a.ts", oldText: v2, newText: v0 }] }))
    assert.deepStrictEqual(Undo.plan(log.events, 1), {
      turn: 1,
      // c.ts was changed and changed back: nothing to revert there.
      files: [{ path: "/w/a.ts", before: v0, after: v2 }, { path: "/w/b.ts", before: null, after: "b" }],
      bash: false
    })
  })

  it("skips turns already undone and /undo turns, so a second /undo reaches the turn before; a refused undo skips nothing", () => {
    const log = makeLog()
    log.turn(1, ({ call }) => call(1, "write", { ok: true, diff: [{ path: "/w/a.ts", oldText: null, newText: v0 }] }))
    log.turn(2, ({ call }) => call(2, "edit", { ok: true, diff: [{ path: "/w/a.ts", oldText: v0, newText: v1 }] }))
    assert.strictEqual(Undo.lastChangingTurn(log.events), 2)
    log.undo(3, 2, { refused: "Turn 2 was not undone: a.ts changed." })
    assert.strictEqual(Undo.lastChangingTurn(log.events), 2)
    log.undo(4, 2, { restored: ["/w/a.ts"], removed: [] })
    assert.strictEqual(Undo.lastChangingTurn(log.events), 1)
    log.undo(5, 1, { restored: [], removed: ["/w/a.ts"] })
    assert.strictEqual(Undo.lastChangingTurn(log.events), undefined)
  })

  it("notes bash commands of the turn, and only of that turn", () => {
    const log = makeLog()
    log.turn(1, ({ call }) => call(1, "bash", { ok: false }))
    log.turn(2, ({ call }) => call(2, "edit", { ok: true, diff: [{ path: "/w/a.ts", oldText: v0, newText: v1 }] }))
    log.turn(3, ({ call }) => {
      call(3, "bash", { ok: true })
      call(3, "edit", { ok: true, diff: [{ path: "/w/a.ts", oldText: v1, newText: v2 }] })
    })
    assert.isFalse(Undo.plan(log.events, 2).bash)
    const plan = Undo.plan(log.events, 3)
    assert.isTrue(plan.bash)
    assert.strictEqual(
      Undo.message({ restored: ["/w/a.ts"], removed: [] }, plan, "/w"),
      "Undid the file changes of turn 3: restored a.ts.\nTurn 3 also ran shell commands: changes they made are not tracked and were not undone."
    )
    assert.strictEqual(
      Undo.message({ restored: ["/w/a.ts"], removed: [] }, Undo.plan(log.events, 2), "/w"),
      "Undid the file changes of turn 2: restored a.ts."
    )
  })
})

describe("Undo.apply", () => {
  it.effect("two edits of one file and a write creating another: restores the first, removes the second", () =>
    Effect.gen(function*() {
      const { cwd, put, read, apply } = yield* workspace
      const a = put("a.ts", v2)
      chmodSync(a, 0o640)
      mkdirSync(join(cwd, "src"))
      const b = join(cwd, "src", "b.ts")
      writeFileSync(b, "new file\n")
      const log = makeLog()
      log.turn(1, ({ call }) => {
        call(1, "edit", { ok: true, diff: [{ path: a, oldText: v0, newText: v1 }] })
        call(1, "write", { ok: true, diff: [{ path: b, oldText: null, newText: "new file\n" }] })
        call(1, "edit", { ok: true, diff: [{ path: a, oldText: v1, newText: v2 }] })
      })
      const turn = Undo.lastChangingTurn(log.events)
      assert.strictEqual(turn, 1)
      const plan = Undo.plan(log.events, turn!)
      const result = yield* apply(plan)
      assert.deepStrictEqual(result, { restored: [a], removed: [b] })
      assert.strictEqual(read("a.ts"), v0)
      assert.strictEqual(statSync(a).mode & 0o777, 0o640)
      assert.isFalse(existsSync(b))
      // No temp file left behind; the directory the write made stays.
      assert.deepStrictEqual(readdirSync(cwd).sort(), ["a.ts", "src"])
      assert.deepStrictEqual(readdirSync(join(cwd, "src")), [])
      assert.strictEqual(Undo.message(result, plan, cwd), "Undid the file changes of turn 1: restored a.ts; removed src/b.ts (created in that turn).")
    }))

  it.effect("refuses when a file changed after the turn, naming it, and touches nothing", () =>
    Effect.gen(function*() {
      const { cwd, put, read, apply } = yield* workspace
      const a = put("a.ts", v1)
      const b = put("b.ts", "created\n")
      const c = join(cwd, "c.ts")
      const log = makeLog()
      log.turn(1, ({ call }) => {
        call(1, "write", { ok: true, diff: [{ path: b, oldText: null, newText: "created\n" }] })
        call(1, "edit", { ok: true, diff: [{ path: a, oldText: v0, newText: v1 }] })
        call(1, "write", { ok: true, diff: [{ path: c, oldText: null, newText: "gone\n" }] })
      })
      // The user changed a.ts since, and deleted c.ts.
      put("a.ts", v1 + "// mine\n")
      const plan = Undo.plan(log.events, 1)
      const result = yield* apply(plan)
      assert.deepStrictEqual(result, {
        refused: "Turn 1 was not undone: these files have changed since that turn: a.ts and c.ts (deleted). No file was changed."
      })
      assert.strictEqual(read("a.ts"), v1 + "// mine\n")
      assert.strictEqual(read("b.ts"), "created\n")
      assert.deepStrictEqual(readdirSync(cwd).sort(), ["a.ts", "b.ts"])
      assert.strictEqual(Undo.message(result, plan, cwd), (result as { refused: string }).refused)
    }))

  it.effect("a second undo goes one turn further back", () =>
    Effect.gen(function*() {
      const { put, read, apply } = yield* workspace
      const a = put("a.ts", v2)
      const log = makeLog()
      log.turn(1, ({ call }) => call(1, "edit", { ok: true, diff: [{ path: a, oldText: v0, newText: v1 }] }))
      log.turn(2, ({ call }) => call(2, "edit", { ok: true, diff: [{ path: a, oldText: v1, newText: v2 }] }))

      const first = Undo.lastChangingTurn(log.events)!
      assert.strictEqual(first, 2)
      const undone = yield* apply(Undo.plan(log.events, first))
      assert.deepStrictEqual(undone, { restored: [a], removed: [] })
      assert.strictEqual(read("a.ts"), v1)
      log.undo(3, first, undone)

      const second = Undo.lastChangingTurn(log.events)!
      assert.strictEqual(second, 1)
      assert.deepStrictEqual(yield* apply(Undo.plan(log.events, second)), { restored: [a], removed: [] })
      assert.strictEqual(read("a.ts"), v0)
    }))

  it.effect("refuses a path outside the session's roots, and one now reached through a symbolic link, touching neither", () =>
    Effect.gen(function*() {
      const { base, cwd, put, apply } = yield* workspace
      const elsewhere = join(base, "elsewhere")
      mkdirSync(elsewhere)
      const outside = join(elsewhere, "x.ts")
      writeFileSync(outside, v1)
      const log = makeLog()
      log.turn(1, ({ call }) => call(1, "edit", { ok: true, diff: [{ path: outside, oldText: v0, newText: v1 }] }))
      const result = yield* apply(Undo.plan(log.events, 1))
      assert.deepStrictEqual(result, {
        refused: `Turn 1 was not undone: ${outside} is outside the session's directories or now reached through a symbolic link. No file was changed.`
      })
      assert.strictEqual(readFileSync(outside, "utf8"), v1)

      // The logged file inside the workspace is now a link to the outside one (same content).
      const inside = join(cwd, "y.ts")
      symlinkSync(outside, inside)
      const ok = put("z.ts", v1)
      const linked = makeLog()
      linked.turn(1, ({ call }) => {
        call(1, "edit", { ok: true, diff: [{ path: ok, oldText: v0, newText: v1 }] })
        call(1, "edit", { ok: true, diff: [{ path: inside, oldText: v0, newText: v1 }] })
      })
      const refused = yield* apply(Undo.plan(linked.events, 1))
      assert.deepStrictEqual(refused, {
        refused: "Turn 1 was not undone: y.ts is outside the session's directories or now reached through a symbolic link. No file was changed."
      })
      assert.strictEqual(readFileSync(outside, "utf8"), v1)
      assert.strictEqual(readFileSync(ok, "utf8"), v1)

      // A directory on the logged path is now a link, even to one inside the workspace.
      mkdirSync(join(cwd, "real"))
      writeFileSync(join(cwd, "real", "f.ts"), v1)
      symlinkSync(join(cwd, "real"), join(cwd, "sub"))
      const moved = makeLog()
      moved.turn(1, ({ call }) => call(1, "edit", { ok: true, diff: [{ path: join(cwd, "sub", "f.ts"), oldText: v0, newText: v1 }] }))
      assert.deepStrictEqual(yield* apply(Undo.plan(moved.events, 1)), {
        refused: "Turn 1 was not undone: sub/f.ts is outside the session's directories or now reached through a symbolic link. No file was changed."
      })
      assert.strictEqual(readFileSync(join(cwd, "real", "f.ts"), "utf8"), v1)
    }))

  it.effect("a file changed while the undo runs: what was already reverted is put back, and the undo is refused", () =>
    Effect.gen(function*() {
      const { cwd, put, read } = yield* workspace
      const a = put("a.ts", v1)
      const b = put("b.ts", v1)
      const c = put("c.ts", "created\n")
      const log = makeLog()
      log.turn(1, ({ call }) => {
        call(1, "edit", { ok: true, diff: [{ path: a, oldText: v0, newText: v1 }] })
        call(1, "write", { ok: true, diff: [{ path: c, oldText: null, newText: "created\n" }] })
        call(1, "edit", { ok: true, diff: [{ path: b, oldText: v0, newText: v1 }] })
      })
      // Just before b.ts is replaced, someone else writes it.
      let meddled = false
      const hooks: SafeFs.Hooks = {
        before: (_step, target) => {
          if (target === b && !meddled) {
            meddled = true
            writeFileSync(b, "theirs\n")
          }
        }
      }
      const result = yield* Undo.apply(Undo.plan(log.events, 1), { roots: [cwd], cwd }).pipe(
        Effect.provide(TempDir.platform),
        Effect.provideService(SafeFs.Hooks, hooks)
      )
      assert.deepStrictEqual(result, { refused: "Turn 1 was not undone: b.ts changed while the undo ran. No file was changed." })
      assert.strictEqual(read("a.ts"), v1)
      assert.strictEqual(read("c.ts"), "created\n")
      assert.strictEqual(read("b.ts"), "theirs\n")
      assert.deepStrictEqual(readdirSync(cwd).sort(), ["a.ts", "b.ts", "c.ts"])
    }))

  it.effect("refuses a file whose earlier content the log holds only lossily (not UTF-8)", () =>
    Effect.gen(function*() {
      const { put, read, apply } = yield* workspace
      const a = put("a.bin", "text")
      const log = makeLog()
      log.turn(1, ({ call }) => call(1, "write", { ok: true, diff: [{ path: a, oldText: "\uFFFD\uFFFDPNG", newText: "text" }] }))
      const result = yield* apply(Undo.plan(log.events, 1))
      assert.deepStrictEqual(result, {
        refused: "Turn 1 was not undone: the log does not hold the exact earlier content of a.bin (it was not valid UTF-8 text). No file was changed."
      })
      assert.strictEqual(read("a.bin"), "text")
    }))

  it.effect("reverts what the real write and edit tools logged", () =>
    Effect.gen(function*() {
      const { cwd, put, read, apply } = yield* workspace
      put("a.ts", v0)
      const ctx: Tool.ToolContext = { sessionId: "s-1", toolCallId: "call-x", cwd, roots: [cwd] }
      const log = makeLog()
      const outputs: Array<{ name: string; out: Tool.ToolOutput }> = []
      for (const [tool, args] of [
        [edit, { path: "a.ts", edits: [{ oldText: "return 1", newText: "return 2" }] }],
        [write, { path: "deep/new.ts", content: "created\n" }],
        [edit, { path: "a.ts", edits: [{ oldText: "return 2", newText: "return 3" }] }]
      ] as const) {
        outputs.push({ name: tool.name, out: yield* Tool.run(tool, args, ctx).pipe(ToolServices.provide(), Effect.provide(TempDir.platform)) })
      }
      log.turn(1, ({ call }) => {
        for (const { name, out } of outputs) call(1, name, { ok: out.ok, ...(out.details?.diff ? { diff: out.details.diff } : {}) })
      })
      assert.strictEqual(read("a.ts"), v2)
      const plan = Undo.plan(log.events, 1)
      assert.deepStrictEqual(plan.files.map((file) => file.before), [v0, null])
      const result = yield* apply(plan)
      assert.deepStrictEqual(result, { restored: [join(cwd, "a.ts")], removed: [join(cwd, "deep", "new.ts")] })
      assert.strictEqual(read("a.ts"), v0)
      assert.isFalse(existsSync(join(cwd, "deep", "new.ts")))
    }))

  it.effect("a plan with no file left to revert changes nothing and says so", () =>
    Effect.gen(function*() {
      const { cwd, apply } = yield* workspace
      const plan: Undo.Plan = { turn: 4, files: [], bash: true }
      const result = yield* apply(plan)
      assert.deepStrictEqual(result, { restored: [], removed: [] })
      assert.strictEqual(
        Undo.message(result, plan, cwd),
        "Turn 4 left every file it changed as it found it; there was nothing to revert.\nTurn 4 also ran shell commands: changes they made are not tracked and were not undone."
      )
    }))
})
