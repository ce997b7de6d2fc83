/**
 * Agent definitions: the front matter subset (what it reads, what it refuses and how it says
 * so), the sources' precedence, external agents and limits from config.json, and that nothing
 * wrong in any of them is fatal.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { chmodSync, mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Definitions from "../../src/agents/Definitions.ts"
import * as ProviderConfig from "../../src/providers/ProviderConfig.ts"
import * as TempDir from "../support/TempDir.ts"

const md = (front: string, body = "") => `---\n${front}\n---\n${body}`

const parsed = (content: string) => {
  const result = Definitions.parseMarkdown(content, "/x/a.md")
  if ("problem" in result) throw new Error(`unexpected problem: ${result.problem}`)
  return result
}

const problem = (content: string) => {
  const result = Definitions.parseMarkdown(content, "/x/a.md")
  if (!("problem" in result)) throw new Error(`expected a problem, parsed ${result.name}`)
  return result.problem
}

describe("parseMarkdown", () => {
  it("reads name, description, tools, model and the body as instructions", () => {
    assert.deepStrictEqual(
      parsed(md("name: reviewer\ndescription: Reviews a change: bugs first # a comment\ntools: read, grep,glob\nmodel: openai-chat/qwen", "\nYou review.\n\nBe brief.\n")),
      {
        name: "reviewer",
        description: "Reviews a change: bugs first",
        tools: ["read", "grep", "glob"],
        model: "openai-chat/qwen",
        instructions: "You review.\n\nBe brief.",
        readOnly: false,
        source: "/x/a.md"
      }
    )
  })

  it("reads quoted values, flow lists and block lists; CRLF and a BOM are fine", () => {
    const a = parsed(md(`name: "a-1"\ndescription: 'it''s #1'\ntools: [read, "grep", 'glob']  # three`))
    assert.deepStrictEqual([a.name, a.description, a.tools], ["a-1", "it's #1", ["read", "grep", "glob"]])
    const b = parsed("\uFEFF---\r\nname: b\r\ndescription: \"tab\\there\"\r\ntools:\r\n  - read\r\n  - \"bash\"\r\n# note\r\n---\r\nBody\r\n")
    assert.deepStrictEqual([b.description, b.tools, b.instructions], ["tab\there", ["read", "bash"], "Body"])
    assert.deepStrictEqual(parsed(md("name: c\ndescription: d\ntools: []")).tools, [])
    assert.isUndefined(parsed(md("name: c\ndescription: d\ntools:")).tools)
  })

  it("takes Claude Code's tool names and model aliases as Skein's; other keys are ignored", () => {
    const a = parsed(md("name: c\ndescription: d\ntools: Read, Grep, Glob, Bash, MultiEdit, Edit, mcp__gh__issues\nmodel: sonnet\ncolor: blue"))
    assert.deepStrictEqual(a.tools, ["read", "grep", "glob", "bash", "edit", "mcp__gh__issues"])
    assert.isUndefined(a.model)
    assert.isUndefined(parsed(md("name: c\ndescription: d\nmodel: inherit")).model)
  })

  it("a file named after a built-in keeps its read-only promise", () => {
    assert.isTrue(parsed(md("name: explorer\ndescription: Mine\ntools: read, write")).readOnly)
    assert.isFalse(parsed(md("name: general\ndescription: Mine")).readOnly)
  })

  it("a file replacing a read-only built-in narrows its tools, never adds one", () => {
    // Without a tools line: the built-in's, not the parent's (no spawn_agent, no write, no MCP tool).
    assert.deepStrictEqual(parsed(md("name: explorer\ndescription: Mine")).tools, ["read", "grep", "glob", "bash"])
    assert.deepStrictEqual(parsed(md("name: explorer\ndescription: Mine\ntools: Read, Write, spawn_agent, mcp__gh__issues, grep")).tools, ["read", "grep"])
    // A built-in that is not read-only lends nothing.
    assert.deepStrictEqual(parsed(md("name: general\ndescription: Mine\ntools: read, write")).tools, ["read", "write"])
  })

  it("refuses what is missing or outside the subset, naming the line", () => {
    assert.match(problem("name: a\ndescription: b\n"), /no front matter/)
    assert.match(problem("---\nname: a\ndescription: b\n"), /does not end/)
    assert.match(problem(md("description: b")), /"name" is missing/)
    assert.match(problem(md("name: a")), /"description" is missing/)
    assert.match(problem(md("name: Big Name\ndescription: b")), /"name" "Big Name" is not valid/)
    assert.match(problem(md("name: a\ndescription: |\n  long")), /line 3: "\|" starts YAML/)
    assert.match(problem(md("name: a\ndescription: b\n  continued")), /line 4: an indented line/)
    assert.match(problem(md("name: a\nname: b\ndescription: c")), /line 3: "name" is given twice/)
    assert.match(problem(md("name: a\ndescription: b\ntools: [read, [x]]")), /nested lists/)
    assert.match(problem(md("name: a\ndescription: b\ntools: read,,grep")), /empty name between commas/)
    assert.match(problem(md("name: a\ndescription: b\ntools: [read, \"rm -rf\"]")), /"rm -rf", which is not a tool name/)
    assert.match(problem(md("name: a\ndescription: \"open")), /does not end on its line/)
    assert.match(problem(md("name: a\ndescription: \"x\" y")), /text after a quoted value/)
    assert.match(problem(md("name: a\ndescription: \"\\q\"")), /escape other than JSON's/)
    assert.match(problem(md("name: a\ndescription:\n  - one")), /"description" must be a single value/)
    assert.match(problem(md("- x\nname: a")), /line 2: a list item without a key/)
    assert.match(problem(md("name: a\ndescription: b\njust text")), /line 4: expected "key: value"/)
    assert.match(problem(md("name: a\nfoo: {a: 1}\ndescription: b")), /line 3: "\{" starts YAML/)
  })
})

describe("parseConfig", () => {
  it("reads external ACP agents and the limits", () => {
    const out = Definitions.parseConfig(
      JSON.stringify({
        providers: {},
        agents: { codex: { acp: { command: "codex-acp" } }, gem: { description: "Gemini", acp: { command: "gemini", args: ["--acp"], env: { A: "1" } } } },
        subagents: { maxRunning: 2, maxDepth: 0 }
      }),
      "/h/config.json"
    )
    assert.deepStrictEqual(out.problems, [])
    assert.deepStrictEqual(out.agents.map((a) => [a.name, a.source, a.acp, a.readOnly]), [
      ["codex", "config.json", { command: "codex-acp", args: [], env: {} }, false],
      ["gem", "config.json", { command: "gemini", args: ["--acp"], env: { A: "1" } }, false]
    ])
    assert.strictEqual(out.agents[1]!.description, "Gemini")
    assert.deepStrictEqual(out.limits, { ...Definitions.DEFAULT_LIMITS, maxRunning: 2, maxDepth: 0 })
  })

  it("a malformed entry or limit is a problem; the rest is still read; no value is echoed", () => {
    const out = Definitions.parseConfig(
      JSON.stringify({
        agents: {
          ok: { acp: { command: "x" } },
          nocmd: { acp: { args: [] } },
          badenv: { acp: { command: "x", env: { TOKEN: 123456789 } } },
          "Bad Name": { acp: { command: "x" } },
          extra: { acp: { command: "x", cwd: "/secret-value" }, colour: 1 }
        },
        subagents: { maxRunning: 0, timeoutMs: "soon", maxDepht: 3, maxPerSession: 5 }
      }),
      "/h/config.json"
    )
    assert.deepStrictEqual(out.agents.map((a) => a.name), ["ok", "extra"])
    assert.deepStrictEqual(out.limits, { ...Definitions.DEFAULT_LIMITS, maxPerSession: 5 })
    const messages = out.problems.map((p) => p.message)
    assert.isTrue(out.problems.every((p) => p.file === "/h/config.json"))
    for (const expected of [
      /"agents"\."nocmd"\.acp: "command" must be a non-empty string/,
      /"agents"\."badenv"\.acp: "env" must be an object of strings/,
      /"agents"\."Bad Name": the name is not valid/,
      /"agents"\."extra": unknown key "colour" is ignored/,
      /"agents"\."extra"\.acp: unknown key "cwd" is ignored/,
      /"subagents"\."maxRunning" must be a whole number of at least 1; the default 8 applies/,
      /"subagents"\."timeoutMs" must be a whole number/,
      /"subagents": unknown key "maxDepht"/
    ]) assert.isTrue(messages.some((m) => expected.test(m)), `no problem matches ${expected}: ${messages.join(" | ")}`)
    assert.notInclude(messages.join("\n"), "secret-value")
    assert.notInclude(messages.join("\n"), "123456789")
  })

  it("the provider configuration reads the same file and lets these keys be", () => {
    const text = JSON.stringify({ provider: "p", agents: { codex: { acp: { command: "codex-acp" } } }, subagents: { maxRunning: 2 } })
    assert.deepStrictEqual(ProviderConfig.parse(text, "/h/config.json"), { file: { provider: "p" }, status: { _tag: "ok" } })
  })

  it("invalid JSON is one problem and the defaults", () => {
    const out = Definitions.parseConfig("{nope", "/h/config.json")
    assert.deepStrictEqual(out, { agents: [], limits: Definitions.DEFAULT_LIMITS, problems: [{ file: "/h/config.json", message: "not valid JSON: no agents or limits were read from it" }] })
  })
})

describe("load", () => {
  const write = (path: string, content: string) => {
    mkdirSync(join(path, ".."), { recursive: true })
    writeFileSync(path, content)
  }

  it.effect("the built-ins alone when nothing is configured; missing folders are no problem", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const out = yield* Definitions.load({ cwd: join(dir, "project"), home: join(dir, "home") })
      assert.deepStrictEqual(out, { agents: Definitions.builtins, problems: [], limits: Definitions.DEFAULT_LIMITS })
      const explorer = Definitions.find(out.agents, " Explorer ")
      assert.deepStrictEqual(explorer?.tools, ["read", "grep", "glob", "bash"])
      assert.isTrue(explorer?.readOnly)
      assert.match(explorer!.description, /only reads and searches/)
      assert.isUndefined(Definitions.find(out.agents, "general")?.tools)
    }).pipe(Effect.provide(TempDir.platform)))

  it.effect("first of a name wins: .skein, .claude, home, config.json, built-ins; bad files are problems and skipped", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const cwd = join(dir, "project")
      const home = join(dir, "home")
      write(join(cwd, ".skein/agents/reviewer.md"), md("name: reviewer\ndescription: project reviewer"))
      write(join(cwd, ".claude/agents/reviewer.md"), md("name: reviewer\ndescription: claude reviewer"))
      write(join(cwd, ".claude/agents/tester.md"), md("name: tester\ndescription: claude tester\ntools: Bash"))
      write(join(cwd, ".claude/agents/broken.md"), "no front matter here")
      write(join(cwd, ".claude/agents/notes.txt"), "not an agent")
      write(join(home, "agents/tester.md"), md("name: tester\ndescription: home tester"))
      write(join(home, "agents/explorer.md"), md("name: explorer\ndescription: my explorer", "Look hard."))
      write(join(home, "agents/codex-too.md"), md("name: codex\ndescription: file codex"))
      write(join(home, "agents/twin.md"), md("name: codex\ndescription: second in the same folder"))
      write(join(home, "config.json"), JSON.stringify({ agents: { codex: { acp: { command: "codex-acp" } }, gem: { acp: { command: "gemini" } } }, subagents: { timeoutMs: 60000 } }))
      const out = yield* Definitions.load({ cwd, home })
      assert.deepStrictEqual(out.agents.map((a) => [a.name, a.source, a.description]), [
        ["reviewer", join(cwd, ".skein/agents/reviewer.md"), "project reviewer"],
        ["tester", join(cwd, ".claude/agents/tester.md"), "claude tester"],
        ["codex", join(home, "agents/codex-too.md"), "file codex"],
        ["explorer", join(home, "agents/explorer.md"), "my explorer"],
        ["gem", "config.json", "An external agent (gemini) that Skein talks to over ACP."],
        ["general", "built-in", Definitions.builtins[0]!.description]
      ])
      assert.deepStrictEqual(Definitions.find(out.agents, "tester")?.tools, ["bash"])
      assert.strictEqual(Definitions.find(out.agents, "explorer")?.instructions, "Look hard.")
      assert.isTrue(Definitions.find(out.agents, "explorer")?.readOnly)
      assert.deepStrictEqual(out.problems, [
        { file: join(cwd, ".claude/agents/broken.md"), message: "no front matter: the file must start with a \"---\" line, then name and description, then \"---\"" },
        { file: join(home, "agents/twin.md"), message: `"codex" is already defined by ${join(home, "agents/codex-too.md")}; this file is ignored` }
      ])
      assert.strictEqual(out.limits.timeoutMs, 60000)
    }).pipe(Effect.provide(TempDir.platform)))

  it.effect("an unreadable folder or file, or a config.json that is not JSON, is a problem, never a failure", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const cwd = join(dir, "project")
      const home = join(dir, "home")
      write(join(cwd, ".skein/agents/a.md"), md("name: a\ndescription: b"))
      write(join(home, "agents/locked.md"), md("name: locked\ndescription: b"))
      write(join(home, "config.json"), "{")
      // A file where the folder should be is no folder: nothing to read.
      write(join(cwd, ".claude/agents"), "")
      chmodSync(join(home, "agents/locked.md"), 0o000)
      chmodSync(join(cwd, ".skein/agents"), 0o000)
      const out = yield* Definitions.load({ cwd, home })
      chmodSync(join(cwd, ".skein/agents"), 0o755)
      const root = process.getuid?.() === 0
      assert.deepStrictEqual(out.agents.map((a) => a.name), root ? ["a", "locked", "general", "explorer"] : ["general", "explorer"])
      assert.deepStrictEqual(out.problems, [
        ...(root ? [] : [
          { file: join(cwd, ".skein/agents"), message: "cannot read the folder (EACCES)" },
          { file: join(home, "agents/locked.md"), message: "cannot read the file (EACCES)" }
        ]),
        { file: join(home, "config.json"), message: "not valid JSON: no agents or limits were read from it" }
      ])
    }).pipe(Effect.provide(TempDir.platform)))
})
