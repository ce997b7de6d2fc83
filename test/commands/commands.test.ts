/**
 * Slash commands: parsing a prompt's `/name args`, template expansion, a skill run as a command,
 * and discovery (built-ins first and protected, prompt files in precedence order, user-invocable
 * skills), in real temporary directories.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Commands from "../../src/commands/Commands.ts"
import type * as Skills from "../../src/skills/Skills.ts"
import * as TempDir from "../support/TempDir.ts"

const write = (path: string, content: string) => {
  mkdirSync(join(path, ".."), { recursive: true })
  writeFileSync(path, content)
}

const skill = (name: string, extra: Partial<Skills.Skill> = {}): Skills.Skill => ({
  name,
  description: `the ${name} skill`,
  dir: `/s/${name}`,
  path: `/s/${name}/SKILL.md`,
  scope: "project",
  root: "/s",
  userInvocable: true,
  modelInvocable: true,
  ...extra
})

describe("Commands.parse", () => {
  it("a prompt that starts with /name, then the end or whitespace; the rest trimmed", () => {
    assert.deepStrictEqual(Commands.parse("/compact"), { name: "compact", arguments: "" })
    assert.deepStrictEqual(Commands.parse("  \n/review   the parser  "), { name: "review", arguments: "the parser" })
    assert.deepStrictEqual(Commands.parse("/fix-bug 42\nand more lines\n"), { name: "fix-bug", arguments: "42\nand more lines" })
    assert.deepStrictEqual(Commands.parse("/a1\tx"), { name: "a1", arguments: "x" })
  })

  it("anything else is not a command", () => {
    for (const text of ["/", "/ foo", "//x", "/usr/bin", "/usr/bin/env node", "compact", "x /compact", "/Compact", "/-x", "/a_b", "/name!", `/${"a".repeat(65)}`, ""]) {
      assert.isUndefined(Commands.parse(text), JSON.stringify(text))
    }
    assert.deepStrictEqual(Commands.parse(`/${"a".repeat(64)}`), { name: "a".repeat(64), arguments: "" })
  })
})

describe("Commands.locate", () => {
  const known = [...Commands.BUILTINS, { name: "hello", description: "Greets", kind: "prompt" as const, source: "hello.md", template: "Hello $ARGUMENTS" }]
  const text = (t: string) => ({ type: "text" as const, text: t })
  const at = (content: ReadonlyArray<Commands.Block>) => {
    const found = Commands.locate(content, known)
    return found === undefined ? undefined : [found.command.name, found.block, found.arguments]
  }

  it("the last text block that starts with a known /name runs it: what was typed last", () => {
    assert.deepStrictEqual(at([text("/compact")]), ["compact", 0, ""])
    // A client sent the stopped prompt again in front of the command.
    assert.deepStrictEqual(at([text("What is in the notes?"), text("/compact")]), ["compact", 1, ""])
    assert.deepStrictEqual(at([text("/review"), text("/compact keep names")]), ["compact", 1, "keep names"])
    // Text after the command (an editor's mention, then more words) keeps the command where it is.
    assert.deepStrictEqual(at([text("/review "), { type: "resource_link" }, text(" please")]), ["review", 0, ""])
    assert.deepStrictEqual(at([text("/hello world"), text("/nope")]), ["hello", 0, "world"])
  })

  it("no command: none of the blocks starts with a known /name", () => {
    assert.isUndefined(at([]))
    assert.isUndefined(at([text("see /etc/hosts")]))
    assert.isUndefined(at([text("/etc/hosts")]))
    assert.isUndefined(at([{ type: "image" }, text("look at this")]))
  })

  it("mayName: any text block that starts with /", () => {
    assert.isTrue(Commands.mayName([text("earlier"), text("  /compact")]))
    assert.isFalse(Commands.mayName([text("earlier /compact"), { type: "resource_link" }]))
  })
})

describe("Commands.expand", () => {
  it("substitutes $ARGUMENTS everywhere and $1..$9 by position, a missing one empty", () => {
    assert.strictEqual(Commands.expand("Fix $ARGUMENTS. Again: $ARGUMENTS", "issue 42"), "Fix issue 42. Again: issue 42")
    assert.strictEqual(Commands.expand("From $1 to $2, $3 ($ARGUMENTS)", " a   b "), "From a to b,  ( a   b )")
    assert.strictEqual(Commands.expand("$ARGUMENTS", ""), "")
  })

  it("substituted text is not substituted again", () => {
    assert.strictEqual(Commands.expand("$1 and $2 / $ARGUMENTS", "$2 $ARGUMENTS"), "$2 and $ARGUMENTS / $2 $ARGUMENTS")
  })

  it("a template that takes no arguments has them (if any) appended", () => {
    assert.strictEqual(Commands.expand("Review this.\n", "the tests"), "Review this.\n\nArguments: the tests")
    assert.strictEqual(Commands.expand("Review this.", ""), "Review this.")
    // One that takes positional arguments has taken them.
    assert.strictEqual(Commands.expand("Rename $1", "old new"), "Rename old")
  })

  it("the built-in /review prompt takes its focus", () => {
    assert.include(Commands.REVIEW_PROMPT, "git status")
    assert.include(Commands.REVIEW_PROMPT, "git diff")
    assert.match(Commands.expand(Commands.REVIEW_PROMPT, "error handling"), /\(otherwise review everything\): error handling$/)
    assert.include(Commands.INIT_PROMPT, "AGENTS.md")
    assert.include(Commands.expand(Commands.INIT_PROMPT, "mention the e2e tests"), "\n\nArguments: mention the e2e tests")
  })
})

describe("Commands.forSkill", () => {
  it("names the skill and its folder, then the body, then the arguments if any", () => {
    const x = skill("x", { dir: "/p/.agents/skills/x" })
    assert.strictEqual(
      Commands.forSkill(x, "\nDo X.\n", " now "),
      "The user invoked the skill \"x\" (its folder: /p/.agents/skills/x; paths in it are relative to that folder). Follow its instructions:\n\nDo X.\n\nArguments: now"
    )
    assert.isFalse(Commands.forSkill(x, "Do X.", "").includes("Arguments"))
  })
})

describe("Commands.discover", () => {
  it.effect("built-ins first, then prompt files and skills by name; the first file of a name wins; built-ins cannot be redefined", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const cwd = join(dir, "project")
      const home = join(dir, "home")
      write(join(cwd, ".skein/commands/fix.md"), "---\ndescription: Fix an issue\nargument-hint: [issue] [priority]\n---\nFix issue $1 with priority $2.\n")
      write(join(cwd, ".claude/commands/fix.md"), "Claude's fix\n")
      write(join(cwd, ".claude/commands/explain.md"), "\n# Explain the code\n\nExplain $ARGUMENTS in detail.\n")
      write(join(cwd, ".claude/commands/compact.md"), "My own compact\n")
      write(join(cwd, ".claude/commands/notes.txt"), "not a command")
      write(join(home, "commands/explain.md"), "The user's explain\n")
      write(join(home, "commands/long.md"), `${"word ".repeat(40)}\n`)
      write(join(home, "commands/Bad_Name.md"), "x\n")
      write(join(home, "commands/empty.md"), "---\ndescription: nothing\n---\n\n")
      write(join(home, "commands/broken.md"), "---\ndescription: x\n")
      const skills = [skill("deploy", { argumentHint: "[env]" }), skill("explain"), skill("undo"), skill("quiet", { userInvocable: false })]
      const out = yield* Commands.discover({ cwd, home, skills })
      assert.deepStrictEqual(out.commands.map((c) => [c.name, c.kind, c.source]), [
        ["compact", "builtin", "built-in"],
        ["init", "builtin", "built-in"],
        ["review", "builtin", "built-in"],
        ["undo", "builtin", "built-in"],
        ["rewind", "builtin", "built-in"],
        ["deploy", "skill", "/s/deploy/SKILL.md"],
        ["explain", "prompt", join(cwd, ".claude/commands/explain.md")],
        ["fix", "prompt", join(cwd, ".skein/commands/fix.md")],
        ["long", "prompt", join(home, "commands/long.md")]
      ])
      const fix = Commands.find(out.commands, "fix")!
      assert.deepStrictEqual([fix.description, fix.argumentHint, fix.template], ["Fix an issue", "[issue] [priority]", "Fix issue $1 with priority $2."])
      assert.strictEqual(Commands.expand(fix.template!, "42 high"), "Fix issue 42 with priority high.")
      const explain = Commands.find(out.commands, "explain")!
      assert.deepStrictEqual([explain.description, explain.template], ["Explain the code", "# Explain the code\n\nExplain $ARGUMENTS in detail."])
      assert.strictEqual(Commands.find(out.commands, "long")!.description.length, 100)
      assert.isTrue(Commands.find(out.commands, "long")!.description.endsWith("…"))
      const deploy = Commands.find(out.commands, "deploy")!
      assert.deepStrictEqual([deploy.description, deploy.argumentHint, deploy.skill?.name], ["the deploy skill", "[env]", "deploy"])
      assert.strictEqual(Commands.find(out.commands, "compact")!.description, "Summarise the conversation so far to free context; optional focus")
      assert.deepStrictEqual(out.problems, [
        { file: join(cwd, ".claude/commands/compact.md"), message: "\"/compact\" is a built-in command, which cannot be redefined; this file is ignored" },
        { file: join(cwd, ".claude/commands/fix.md"), message: `"/fix" is already defined by ${join(cwd, ".skein/commands/fix.md")}; this file is ignored` },
        { file: join(home, "commands/Bad_Name.md"), message: "the name \"Bad_Name\" is not valid for a command: use lowercase letters, digits and \"-\", starting with a letter or digit, at most 64 characters" },
        { file: join(home, "commands/broken.md"), message: "the front matter does not end: no closing \"---\" line" },
        { file: join(home, "commands/empty.md"), message: "the prompt is empty" },
        { file: join(home, "commands/explain.md"), message: `"/explain" is already defined by ${join(cwd, ".claude/commands/explain.md")}; this file is ignored` },
        { file: "/s/explain/SKILL.md", message: `"/explain" is already defined by ${join(cwd, ".claude/commands/explain.md")}; the skill stays available to the model, not as a command` },
        { file: "/s/undo/SKILL.md", message: "\"/undo\" is a built-in command, which cannot be redefined; the skill stays available to the model, not as a command" }
      ])
    }).pipe(Effect.provide(TempDir.platform)))

  it.effect("nothing configured: the built-ins alone, no problems", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const out = yield* Commands.discover({ cwd: join(dir, "p"), home: join(dir, "h"), skills: [] })
      assert.deepStrictEqual(out, { commands: Commands.BUILTINS, problems: [] })
      assert.deepStrictEqual(Commands.BUILTINS.map((c) => c.name), ["compact", "init", "review", "undo", "rewind"])
    }).pipe(Effect.provide(TempDir.platform)))
})
