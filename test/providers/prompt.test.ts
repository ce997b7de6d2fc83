/**
 * The system prompt: project instructions from the repository root down to the
 * cwd, the date from the Clock (day resolution), and a prefix that stays the
 * same when only the mode changes.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { TestClock } from "effect/testing"
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Prompt from "../../src/providers/Prompt.ts"
import * as TempDir from "../support/TempDir.ts"

const tools = [{ name: "read" }, { name: "bash" }]

describe("Prompt", () => {
  it.effect("reads AGENTS.md and CLAUDE.md from the repository root down to the cwd, once each", () =>
    Effect.gen(function*() {
      const base = yield* TempDir.make()
      const repo = join(base, "repo")
      const cwd = join(repo, "packages", "app")
      mkdirSync(join(repo, ".git"), { recursive: true })
      mkdirSync(cwd, { recursive: true })
      writeFileSync(join(base, "AGENTS.md"), "Outside the repository: never read.")
      writeFileSync(join(repo, "AGENTS.md"), "Root rules.\n")
      symlinkSync(join(repo, "AGENTS.md"), join(repo, "CLAUDE.md"))
      writeFileSync(join(repo, "packages", "CLAUDE.md"), "Packages rules.")
      writeFileSync(join(cwd, "AGENTS.md"), "App rules.")
      const project = yield* Prompt.load(cwd, { platform: "linux" })
      assert.strictEqual(project.root, repo)
      assert.deepStrictEqual(project.instructions, [
        { path: join(repo, "AGENTS.md"), text: "Root rules." },
        { path: join(repo, "packages", "CLAUDE.md"), text: "Packages rules." },
        { path: join(cwd, "AGENTS.md"), text: "App rules." }
      ])
      const system = Prompt.render(project, { mode: "default", tools })
      assert.include(system, `Working directory: ${cwd}`)
      assert.include(system, `Repository root: ${repo}`)
      assert.include(system, "Platform: linux")
      assert.include(system, "Available tools: read, bash")
      assert.isTrue(system.indexOf("Root rules.") < system.indexOf("App rules."))
      assert.notInclude(system, "never read")
    }).pipe(Effect.provide(TempDir.platform)))

  it.effect("outside a repository, only the cwd's own files", () =>
    Effect.gen(function*() {
      const base = yield* TempDir.make()
      const cwd = join(base, "work")
      mkdirSync(cwd)
      writeFileSync(join(base, "AGENTS.md"), "Parent rules.")
      writeFileSync(join(cwd, "CLAUDE.md"), "Work rules.")
      const project = yield* Prompt.load(cwd)
      assert.strictEqual(project.root, undefined)
      assert.deepStrictEqual(project.instructions.map((i) => i.text), ["Work rules."])
    }).pipe(Effect.provide(TempDir.platform)))

  it.effect("the date comes from the Clock, by the day, and is taken once per session", () =>
    Effect.gen(function*() {
      const cwd = yield* TempDir.make()
      yield* TestClock.setTime(new Date(2030, 4, 17, 23, 59).getTime())
      const cached = yield* Effect.cached(Prompt.load(cwd))
      const before = Prompt.render(yield* cached, { mode: "default", tools })
      assert.include(before, "Date: 2030-05-17")
      yield* TestClock.adjust("2 hours")
      const after = Prompt.render(yield* cached, { mode: "default", tools })
      assert.strictEqual(after, before)
      assert.include(Prompt.render(yield* Prompt.load(cwd), { mode: "default", tools }), "Date: 2030-05-18")
    }).pipe(Effect.provide(TempDir.platform)))

  it.effect("a mode change only touches the end: the prefix before it is byte-identical", () =>
    Effect.gen(function*() {
      const cwd = yield* TempDir.make()
      writeFileSync(join(cwd, "AGENTS.md"), "Rules.")
      const project = yield* Prompt.load(cwd)
      const a = Prompt.render(project, { mode: "default", tools })
      const b = Prompt.render(project, { mode: "plan", tools })
      const cut = a.indexOf("# Mode")
      assert.isAbove(cut, 0)
      assert.strictEqual(b.slice(0, cut), a.slice(0, cut))
      assert.include(b.slice(cut), "Mode: plan")
    }).pipe(Effect.provide(TempDir.platform)))

  it.effect("very long instruction files are cut, with a note", () =>
    Effect.gen(function*() {
      const cwd = yield* TempDir.make()
      writeFileSync(join(cwd, "AGENTS.md"), "x".repeat(Prompt.MAX_FILE_CHARS + 100))
      const project = yield* Prompt.load(cwd)
      assert.include(project.instructions[0]!.text, "is longer; the rest was left out")
      assert.isBelow(project.instructions[0]!.text.length, Prompt.MAX_FILE_CHARS + 200)
    }).pipe(Effect.provide(TempDir.platform)))
})
