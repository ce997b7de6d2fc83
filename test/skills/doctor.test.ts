/**
 * `skein doctor` lists the skills (name, scope, file) and the slash commands (name, kind,
 * source) a session started in the cwd would have, each problem as a warning that does not
 * change whether Skein is ready.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Doctor from "../../src/cli/doctor.ts"
import * as Registry from "../../src/providers/Registry.ts"
import * as TempDir from "../support/TempDir.ts"

const write = (path: string, content: string) => {
  mkdirSync(join(path, ".."), { recursive: true })
  writeFileSync(path, content)
}

const section = (text: string, title: string) => {
  const start = text.indexOf(`\n${title}\n`) + 1
  return text.slice(start, text.indexOf("\n\n", start))
}

describe("skein doctor: skills and commands", () => {
  it.effect("lists skills and commands with their sources, and problems as warnings", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const cwd = join(dir, "project")
      const home = join(dir, "home")
      const userHome = join(dir, "user")
      mkdirSync(join(cwd, ".git"), { recursive: true })
      write(join(home, "config.json"), JSON.stringify({ providers: { local: { dialect: "openai-chat", baseUrl: "http://127.0.0.1:1/v1", models: ["qwen"] } } }))
      write(join(cwd, ".agents/skills/pdf/SKILL.md"), "---\nname: pdf\ndescription: Fills PDF forms\n---\nUse the scripts.\n")
      write(join(userHome, ".claude/skills/pdf/SKILL.md"), "---\nname: pdf\ndescription: The user's\n---\n")
      write(join(userHome, ".claude/skills/notes/SKILL.md"), "---\ndescription: Keeps notes\ndisable-model-invocation: true\n---\n")
      write(join(cwd, ".claude/commands/ship.md"), "Ship it: $ARGUMENTS\n")
      write(join(cwd, ".claude/commands/init.md"), "Mine\n")
      const setup = yield* Registry.setup({ home, env: {} })
      const found = yield* Doctor.project({ cwd, home, userHome, trust: "all" })
      const text = Doctor.report(setup, {}, { home, ...found })
      assert.strictEqual(
        section(text, "Skills"),
        [
          "Skills",
          `  notes               user     ${join(userHome, ".claude/skills/notes/SKILL.md")} (not offered to the model)`,
          `  pdf                 project  ${join(cwd, ".agents/skills/pdf/SKILL.md")}`,
          `  warning: ${join(userHome, ".claude/skills/pdf/SKILL.md")}: the skill "pdf" is shadowed by ${join(cwd, ".agents/skills/pdf/SKILL.md")} (project over user); this one is ignored`
        ].join("\n")
      )
      assert.strictEqual(
        section(text, "Commands"),
        [
          "Commands",
          "  /compact            builtin  built-in",
          "  /init               builtin  built-in",
          "  /review             builtin  built-in",
          "  /undo               builtin  built-in",
          "  /rewind             builtin  built-in",
          `  /notes              skill    ${join(userHome, ".claude/skills/notes/SKILL.md")}`,
          `  /pdf                skill    ${join(cwd, ".agents/skills/pdf/SKILL.md")}`,
          `  /ship               prompt   ${join(cwd, ".claude/commands/ship.md")}`,
          `  warning: ${join(cwd, ".claude/commands/init.md")}: "/init" is a built-in command, which cannot be redefined; this file is ignored`
        ].join("\n")
      )
      assert.include(text, "Ready: prompts go to")
    }).pipe(Effect.provide(TempDir.platform)))

  it("no skills: said so", () => {
    assert.deepStrictEqual(Doctor.skillsReport({ skills: [], problems: [] }), ["Skills", "  (none)"])
  })
})
