/**
 * The permission gate under a session's ceiling: the parent's ceiling is read at every
 * decision (and again once a question is answered), read-only is inherited whatever the
 * agent, an ancestor's rejection holds below it, and a grant the user gave elsewhere only
 * spares a question the gate would ask.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { existsSync, mkdirSync } from "node:fs"
import { join } from "node:path"
import * as History from "../../src/log/History.ts"
import type { PermissionRule } from "../../src/log/Event.ts"
import type * as Ceiling from "../../src/tools/Ceiling.ts"
import * as Gate from "../../src/runtime/Gate.ts"
import * as TurnContract from "../../src/session/TurnContract.ts"
import type { ModeId } from "../../src/Vocabulary.ts"
import { bash } from "../../src/tools/bash.ts"
import type * as Edges from "../../src/tools/Edges.ts"
import type * as Tool from "../../src/tools/Tool.ts"
import { write } from "../../src/tools/write.ts"
import * as TempDir from "../support/TempDir.ts"

interface Setup {
  readonly mode?: ModeId
  readonly readOnly?: boolean
  /** The parent's ceiling, read at each call. */
  readonly above?: () => Ceiling.Ceiling
  /** The user's answer; may change the world first (the parent switching mode while asked). */
  readonly answer?: () => TurnContract.PermissionAnswer | undefined
}

const gate = (cwd: string, setup: Setup) => {
  const asked: Array<string> = []
  const gate = Gate.make({
    cwd,
    mode: () => setup.mode ?? "default",
    history: History.make(),
    timeoutMs: 60_000,
    record: () => Effect.void,
    readOnly: setup.readOnly,
    above: setup.above
  })
  // Whoever presents the turn: records the question, answers as the setup says.
  const questions: TurnContract.Questions["Service"] = {
    ask: (request) => Effect.sync(() => (asked.push(request.toolCall.title), setup.answer?.())),
    canAsk: () => true
  }
  const call = (tool: Tool.Tool<any, Edges.Services>, args: any, prior?: TurnContract.Prior) =>
    Effect.flatMap(gate, ({ permit }) =>
      permit({ id: "c1", name: tool.name, args, title: tool.title(args), kind: tool.kind, locations: tool.locations(args, cwd) }, tool, args, prior)).pipe(
        Effect.provideService(TurnContract.Questions, questions)
      )
  return { asked, call }
}

const ceiling = (mode: ModeId, readOnly = false, rejects: ReadonlyArray<PermissionRule> = []): Ceiling.Ceiling => ({ mode, readOnly, rejects })

const workspace = Effect.map(TempDir.make(), (base) => {
  const cwd = join(base, "ws")
  mkdirSync(cwd)
  return cwd
})

const yes = (): TurnContract.PermissionAnswer => ({ outcome: "selected", optionId: "allow_once" })

describe("Gate: the ceiling", () => {
  it.effect("below a read-only session nothing changes, whatever the mode; read-only commands still run", () =>
    Effect.gen(function*() {
      const cwd = yield* workspace
      const { asked, call } = gate(cwd, { mode: "bypassPermissions", above: () => ceiling("bypassPermissions", true), answer: yes })
      const written = yield* call(write, { path: "x.txt", content: "no" })
      assert.strictEqual(written._tag, "deny")
      assert.include((written as { reason: string }).reason, "read-only")
      assert.strictEqual((yield* call(bash, { command: "touch y.txt" }))._tag, "deny")
      assert.deepStrictEqual(yield* call(bash, { command: "ls" }), { _tag: "allow", readOnly: true })
      assert.deepStrictEqual(asked, [])
    }).pipe(Effect.provide(TempDir.platform)))

  it.effect("the parent's ceiling is read at each call: narrowed to plan, the next call is refused without asking", () =>
    Effect.gen(function*() {
      const cwd = yield* workspace
      let parent: ModeId = "bypassPermissions"
      const { asked, call } = gate(cwd, { mode: "bypassPermissions", above: () => ceiling(parent) })
      assert.strictEqual((yield* call(write, { path: "a.txt", content: "" }))._tag, "allow")
      parent = "plan"
      const refused = yield* call(write, { path: "b.txt", content: "" })
      assert.strictEqual(refused._tag, "deny")
      assert.include((refused as { reason: string }).reason, "Plan mode")
      // Broadened again: no more than the parent allows now (default asks).
      parent = "default"
      assert.strictEqual((yield* call(write, { path: "c.txt", content: "" }))._tag, "deny")
      assert.deepStrictEqual(asked, ["Write c.txt"])
    }).pipe(Effect.provide(TempDir.platform)))

  it.effect("a question answered after the parent narrowed is a denial", () =>
    Effect.gen(function*() {
      const cwd = yield* workspace
      let parent: ModeId = "default"
      const { asked, call } = gate(cwd, {
        above: () => ceiling(parent),
        answer: () => {
          parent = "plan"
          return yes()
        }
      })
      const verdict = yield* call(write, { path: "a.txt", content: "" })
      assert.deepStrictEqual(asked, ["Write a.txt"])
      assert.strictEqual(verdict._tag, "deny")
      assert.include((verdict as { reason: string }).reason, "Plan mode")
    }).pipe(Effect.provide(TempDir.platform)))

  it.effect("an ancestor's \"always reject\", made after the child started, holds for the child", () =>
    Effect.gen(function*() {
      const cwd = yield* workspace
      const rejects: Array<PermissionRule> = []
      const { asked, call } = gate(cwd, { above: () => ceiling("default", false, rejects), answer: yes })
      assert.strictEqual((yield* call(bash, { command: "make all" }))._tag, "allow")
      rejects.push({ decision: "reject", kind: "command", value: "make", label: "`make`" })
      const refused = yield* call(bash, { command: "make all" })
      assert.strictEqual(refused._tag, "deny")
      assert.include((refused as { reason: string }).reason, "always reject `make`")
      assert.strictEqual((yield* call(bash, { command: "npm test" }))._tag, "allow")
      assert.deepStrictEqual(asked, ["`make all`", "`npm test`"])
    }).pipe(Effect.provide(TempDir.platform)))

  it.effect("a grant spares only a question: never a refusal, never a protected file", () =>
    Effect.gen(function*() {
      const cwd = yield* workspace
      const { asked, call } = gate(cwd, { answer: () => ({ outcome: "selected", optionId: "reject_once" }) })
      assert.strictEqual((yield* call(write, { path: "a.txt", content: "" }, { granted: true }))._tag, "allow")
      assert.deepStrictEqual(asked, [])
      mkdirSync(join(cwd, ".git"))
      assert.strictEqual((yield* call(write, { path: ".git/config", content: "" }, { granted: true }))._tag, "deny")
      assert.deepStrictEqual(asked, ["Write .git/config"])
      const planned = gate(cwd, { mode: "plan" })
      assert.strictEqual((yield* planned.call(write, { path: "a.txt", content: "" }, { granted: true }))._tag, "deny")
      assert.isFalse(existsSync(join(cwd, "a.txt")))
    }).pipe(Effect.provide(TempDir.platform)))
})
