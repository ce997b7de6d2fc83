/**
 * `skein doctor` lists the agents a session can delegate to, with their sources and the limits,
 * and each skipped definition as a warning that does not change whether Skein is ready.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Definitions from "../../src/agents/Definitions.ts"
import * as Doctor from "../../src/cli/doctor.ts"
import * as Registry from "../../src/providers/Registry.ts"
import * as TempDir from "../support/TempDir.ts"

describe("skein doctor: agents", () => {
  it.effect("lists agents and sources, the limits, and problems as warnings; readiness is the providers' alone", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const cwd = join(dir, "project")
      const home = join(dir, "home")
      mkdirSync(join(cwd, ".claude/agents"), { recursive: true })
      mkdirSync(home)
      writeFileSync(join(cwd, ".claude/agents/reviewer.md"), "---\nname: reviewer\ndescription: Reviews\nmodel: local/qwen\n---\nReview.\n")
      writeFileSync(join(cwd, ".claude/agents/bad.md"), "---\nname: bad\n---\n")
      writeFileSync(
        join(home, "config.json"),
        JSON.stringify({
          providers: { local: { dialect: "openai-chat", baseUrl: "http://127.0.0.1:1/v1", models: ["qwen"] } },
          agents: { codex: { acp: { command: "codex-acp" } } },
          subagents: { maxRunning: 3, timeoutMs: -1 }
        })
      )
      const setup = yield* Registry.setup({ home, env: {} })
      const agents = yield* Definitions.load({ cwd, home })
      const text = Doctor.report(setup, {}, { home, agents })
      const section = text.slice(text.indexOf("Agents"), text.indexOf("\n\n", text.indexOf("Agents")))
      assert.strictEqual(
        section,
        [
          "Agents (limits: 3 running, depth 2, 64 per session, 15 min per task)",
          `  reviewer            ${join(cwd, ".claude/agents/reviewer.md")} (model local/qwen)`,
          "  codex               config.json (external ACP agent: codex-acp)",
          "  general             built-in",
          "  explorer            built-in (read-only)",
          `  warning: ${join(cwd, ".claude/agents/bad.md")}: "description" is missing: the model needs it to know when to use the agent`,
          `  warning: ${join(home, "config.json")}: "subagents"."timeoutMs" must be a whole number of at least 1; the default 900000 applies`,
          "  (a file or entry with a warning is skipped; a limit with one keeps its default)"
        ].join("\n")
      )
      assert.include(text, "Ready: prompts go to")
      assert.notInclude(text, "Problems")
    }).pipe(Effect.provide(TempDir.platform)))

  it("the built-ins alone, no warnings and no note; a time limit short of a minute in seconds", () => {
    assert.deepStrictEqual(Doctor.agentsReport({ agents: Definitions.builtins, problems: [], limits: { ...Definitions.DEFAULT_LIMITS, timeoutMs: 90_000 } }), [
      "Agents (limits: 8 running, depth 2, 64 per session, 90 s per task)",
      "  general             built-in",
      "  explorer            built-in (read-only)"
    ])
  })
})
