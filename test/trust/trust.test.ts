/**
 * Workspace trust: what a folder ships, the store of answers (nearest entry wins, an
 * unreadable file trusts nothing), where a folder stands, and the one check every loader
 * asks — an untrusted folder's agents, commands, skills and hooks are not loaded, the user's are.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import * as Definitions from "../../src/agents/Definitions.ts"
import * as Commands from "../../src/commands/Commands.ts"
import * as HookSettings from "../../src/hooks/Settings.ts"
import * as Skills from "../../src/skills/Skills.ts"
import * as Trust from "../../src/trust/Trust.ts"
import * as Doctor from "../../src/cli/doctor.ts"
import * as TempDir from "../support/TempDir.ts"
import { platform } from "../../src/Local.ts"

const write = (file: string, text: string) => {
  mkdirSync(dirname(file), { recursive: true })
  writeFileSync(file, text)
}

/** A repository with a sub-folder, shipping a bit of everything; a user home with its own. */
const layout = Effect.gen(function*() {
  const base = yield* TempDir.make()
  const repo = join(base, "repo")
  const pkg = join(repo, "pkg")
  const home = join(base, "skein-home")
  const user = join(base, "user")
  mkdirSync(join(repo, ".git"), { recursive: true })
  mkdirSync(pkg, { recursive: true })
  write(join(repo, ".claude/settings.json"), JSON.stringify({ hooks: { Stop: [{ hooks: [{ type: "command", command: "project-hook" }] }] } }))
  write(join(repo, ".agents/skills/deploy/SKILL.md"), "---\ndescription: Deploys\n---\nDeploy.\n")
  write(join(pkg, ".skein/commands/ship.md"), "Ship $ARGUMENTS\n")
  write(join(pkg, ".claude/agents/reviewer.md"), "---\nname: reviewer\ndescription: reviews\n---\nReview.\n")
  write(join(home, "settings.json"), JSON.stringify({ hooks: { Stop: [{ hooks: [{ type: "command", command: "user-hook" }] }] } }))
  write(join(home, "commands/mine.md"), "Mine\n")
  write(join(user, ".agents/skills/notes/SKILL.md"), "---\ndescription: Notes\n---\nNotes.\n")
  return { base, repo, pkg, home, user }
})

describe("workspace trust", () => {
  it.effect("a folder ships what is in it and above it up to its repository's root, and is remembered as that root", () =>
    Effect.gen(function*() {
      const { repo, pkg, user } = yield* layout
      assert.strictEqual(Trust.projectOf(pkg), repo)
      assert.deepStrictEqual([...Trust.ships(pkg, user)].sort(), [
        join(pkg, ".claude/agents"),
        join(pkg, ".skein/commands"),
        join(repo, ".agents/skills"),
        join(repo, ".claude/settings.json")
      ].sort())
      // Outside a repository: the folder alone.
      const lone = join(yield* TempDir.make(), "lone")
      mkdirSync(lone)
      assert.strictEqual(Trust.projectOf(lone), lone)
      assert.deepStrictEqual(Trust.ships(lone), [])
    }))

  it("the nearest answer decides; an unreadable store trusts nothing", () => {
    const store: Trust.Store = new Map([["/a", { trusted: true, at: 1 }], ["/a/b", { trusted: false, at: 2 }]])
    assert.deepStrictEqual(Trust.lookup(store, "/a/c"), { _tag: "trusted", folder: "/a", at: 1 })
    assert.deepStrictEqual(Trust.lookup(store, "/a/b/c"), { _tag: "denied", folder: "/a/b", at: 2 })
    assert.deepStrictEqual(Trust.lookup(store, "/x"), { _tag: "unknown" })
    assert.strictEqual(Trust.parse("{oops").problem, "it is not valid JSON")
    assert.strictEqual(Trust.parse("{\"folders\": {\"relative\": {\"trusted\": true}}}").store.size, 0)
  })

  it.effect("an answer is remembered in trust.json (0600); an unreadable one is kept aside and replaced", () =>
    Effect.gen(function*() {
      const { repo, pkg, home, user } = yield* layout
      const before = yield* Trust.status({ cwd: pkg, home, userHome: user, policy: "ask" })
      assert.strictEqual(before.loads, false)
      assert.strictEqual(before.state._tag, "unknown")
      write(join(home, "trust.json"), "not json")
      const broken = yield* Trust.status({ cwd: pkg, home, userHome: user, policy: "ask" })
      assert.include(broken.problem ?? "", "not valid JSON")
      yield* Trust.remember(home, repo, true, 1_700_000_000_000)
      assert.strictEqual(readFileSync(join(home, "trust.json.bad"), "utf8"), "not json")
      assert.strictEqual(statSync(join(home, "trust.json")).mode & 0o777, 0o600)
      const after = yield* Trust.status({ cwd: pkg, home, userHome: user, policy: "ask" })
      assert.strictEqual(after.loads, true)
      assert.include(after.why, "was trusted on 2023-11-14")
      // `all` trusts without an answer; without a policy (an embedding program) everything loads.
      yield* Trust.remember(home, repo, false, 1)
      assert.strictEqual((yield* Trust.status({ cwd: pkg, home, policy: "ask" })).loads, false)
      assert.strictEqual((yield* Trust.status({ cwd: pkg, home, policy: "all" })).loads, true)
      assert.strictEqual((yield* Trust.status({ cwd: pkg, home, policy: undefined })).loads, true)
    }))

  it.effect("until trusted, the folder's agents, commands, skills and hooks are not loaded; the user's are", () =>
    Effect.gen(function*() {
      const { pkg, home, user } = yield* layout
      const loaded = (project: boolean) =>
        Effect.gen(function*() {
          const agents = (yield* Definitions.load({ cwd: pkg, home, project })).agents.map((a) => a.name)
          const skills = (yield* Skills.discover({ cwd: pkg, home, userHome: user, project })).skills
          const commands = (yield* Commands.discover({ cwd: pkg, home, skills, project })).commands.map((c) => c.name)
          const hooks = (yield* HookSettings.read({ cwd: pkg, home, project, root: Trust.projectOf(pkg) })).hooks.map((h) => h.command)
          return { agents, skills: skills.map((s) => s.name), commands, hooks }
        }).pipe(Effect.provide(platform))
      const untrusted = yield* loaded(false)
      assert.notInclude(untrusted.agents, "reviewer")
      assert.deepStrictEqual(untrusted.skills, ["notes"])
      assert.notInclude(untrusted.commands, "ship")
      assert.include(untrusted.commands, "mine")
      assert.deepStrictEqual(untrusted.hooks, ["user-hook"])
      const trusted = yield* loaded(true)
      assert.include(trusted.agents, "reviewer")
      assert.deepStrictEqual(trusted.skills, ["deploy", "notes"])
      assert.include(trusted.commands, "ship")
      // Hooks from the repository's root too (the session runs in a folder below it).
      assert.deepStrictEqual(trusted.hooks, ["user-hook", "project-hook"])
      // Doctor asks the same check, and says why.
      const report = yield* Doctor.project({ cwd: pkg, home, userHome: user, trust: "ask" }).pipe(Effect.provide(platform))
      assert.strictEqual(report.trust.loads, false)
      assert.notInclude(report.skills.skills.map((s) => s.name), "deploy")
    }))
})
