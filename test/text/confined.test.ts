/**
 * The files Skein reads on its own from a repository or a user folder — prompt-file commands,
 * agent definitions, skills, project instructions — are read only from inside their root, as
 * the `read` tool reads: a link out of it (a file or a folder, at any level) is never read and
 * `skein doctor` says why; a FIFO does not hang discovery; a huge file is not read whole.
 * Real temporary directories, real links and a real FIFO.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { execFileSync } from "node:child_process"
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Definitions from "../../src/agents/Definitions.ts"
import * as Doctor from "../../src/cli/doctor.ts"
import * as Commands from "../../src/commands/Commands.ts"
import * as Prompt from "../../src/providers/Prompt.ts"
import * as Skills from "../../src/skills/Skills.ts"
import * as Confined from "../../src/text/Confined.ts"
import * as TempDir from "../support/TempDir.ts"

const write = (path: string, content: string) => {
  mkdirSync(join(path, ".."), { recursive: true })
  writeFileSync(path, content)
}

const SECRET = "machine example.com login ann password hunter2-secret"

/** A repository (the cwd), a secret outside it, a user home and a $SKEIN_HOME. */
const layout = Effect.gen(function*() {
  const dir = yield* TempDir.make()
  const repo = join(dir, "repo")
  const userHome = join(dir, "user")
  const home = join(dir, "skein-home")
  mkdirSync(join(repo, ".git"), { recursive: true })
  const secret = join(userHome, ".netrc")
  write(secret, `${SECRET}\n`)
  // A folder of the user's outside the repository, holding a file that would parse as anything.
  const elsewhere = join(dir, "elsewhere")
  write(join(elsewhere, "SKILL.md"), `---\ndescription: ${SECRET}\n---\nsteal\n`)
  write(join(elsewhere, "agent.md"), `---\nname: thief\ndescription: ${SECRET}\n---\nsteal\n`)
  write(join(elsewhere, "cmd.md"), `${SECRET}\n`)
  return { dir, repo, userHome, home, secret, elsewhere }
})

const mkfifo = (path: string) => {
  mkdirSync(join(path, ".."), { recursive: true })
  execFileSync("mkfifo", [path])
}

const outside = (root: string) => Confined.outsideMessage(root)

describe("definitions are read only from inside their roots", () => {
  it.effect("commands: a file or a folder linking out of the project or $SKEIN_HOME/commands is skipped and reported; a link inside is read", () =>
    Effect.gen(function*() {
      const { repo, home, secret, elsewhere } = yield* layout
      symlinkSync(secret, join(mkdirs(join(repo, ".claude/commands")), "x.md"))
      write(join(repo, "docs/deploy.md"), "---\ndescription: Deploy it\n---\nDeploy $ARGUMENTS\n")
      symlinkSync(join(repo, "docs/deploy.md"), join(repo, ".claude/commands/deploy.md"))
      // A folder of commands that is a link out of the project.
      mkdirSync(join(repo, ".skein"), { recursive: true })
      symlinkSync(elsewhere, join(repo, ".skein/commands"))
      symlinkSync(secret, join(mkdirs(join(home, "commands")), "mine.md"))
      const out = yield* Commands.discover({ cwd: repo, home, skills: [] })
      assert.deepStrictEqual(out.commands.filter((c) => c.kind === "prompt").map((c) => [c.name, c.description]), [["deploy", "Deploy it"]])
      assert.notInclude(JSON.stringify(out), "hunter2")
      assert.deepStrictEqual(out.problems, [
        { file: join(repo, ".skein/commands"), message: outside(repo) },
        { file: join(repo, ".claude/commands/x.md"), message: outside(repo) },
        { file: join(home, "commands/mine.md"), message: outside(join(home, "commands")) }
      ])
    }).pipe(Effect.provide(TempDir.platform)))

  it.effect("agents: a definition linking out of its folder is skipped and reported", () =>
    Effect.gen(function*() {
      const { repo, home, elsewhere } = yield* layout
      symlinkSync(join(elsewhere, "agent.md"), join(mkdirs(join(repo, ".claude/agents")), "thief.md"))
      symlinkSync(join(elsewhere, "agent.md"), join(mkdirs(join(home, "agents")), "thief.md"))
      symlinkSync(elsewhere, join(mkdirs(join(repo, ".skein")), "agents"))
      const out = yield* Definitions.load({ cwd: repo, home })
      assert.deepStrictEqual(out.agents.map((a) => a.name), ["general", "explorer"])
      assert.deepStrictEqual(out.problems, [
        { file: join(repo, ".skein/agents"), message: outside(repo) },
        { file: join(repo, ".claude/agents/thief.md"), message: outside(repo) },
        { file: join(home, "agents/thief.md"), message: outside(join(home, "agents")) }
      ])
    }).pipe(Effect.provide(TempDir.platform)))

  it.effect("skills: a skill folder or SKILL.md linking out of its root is skipped; one moved out later is neither loaded nor opened up", () =>
    Effect.gen(function*() {
      const { repo, userHome, home, elsewhere } = yield* layout
      const project = join(repo, ".agents/skills")
      symlinkSync(elsewhere, join(mkdirs(project), "folder-out"))
      symlinkSync(join(elsewhere, "SKILL.md"), join(mkdirs(join(project, "file-out")), "SKILL.md"))
      symlinkSync(join(elsewhere, "SKILL.md"), join(mkdirs(join(userHome, ".claude/skills/user-out")), "SKILL.md"))
      write(join(repo, "shared/SKILL.md"), "---\ndescription: shared inside the repository\n---\nbody\n")
      symlinkSync(join(repo, "shared"), join(project, "inside"))
      write(join(project, "later/SKILL.md"), "---\ndescription: fine for now\n---\nbody\n")
      const out = yield* Skills.discover({ cwd: repo, home, userHome })
      assert.deepStrictEqual(out.skills.map((s) => [s.name, s.description]), [["inside", "shared inside the repository"], ["later", "fine for now"]])
      assert.deepStrictEqual(out.problems, [
        { file: join(project, "file-out/SKILL.md"), message: outside(repo) },
        { file: join(project, "folder-out"), message: outside(repo) },
        { file: join(userHome, ".claude/skills/user-out/SKILL.md"), message: outside(join(userHome, ".claude/skills")) }
      ])
      assert.notInclude(JSON.stringify(out), "hunter2")

      // Found inside; then its SKILL.md becomes a link out: activation refuses it.
      const later = out.skills.find((s) => s.name === "later")!
      assert.deepStrictEqual(Skills.readableFolders([later], userHome), [join(project, "later")])
      rmSync(later.path)
      symlinkSync(join(elsewhere, "SKILL.md"), later.path)
      const refused = yield* Effect.flip(Skills.activate(later))
      assert.strictEqual(refused.reason, "unreadable")
      assert.include(refused.message, "leads outside")
      assert.notInclude(refused.message, "hunter2")
      // Then the folder itself becomes a link out: it is not opened up to the reading tools.
      rmSync(join(project, "later"), { recursive: true })
      symlinkSync(elsewhere, join(project, "later"))
      assert.deepStrictEqual(Skills.readableFolders([later], userHome), [])
    }).pipe(Effect.provide(TempDir.platform)))

  it.effect("project instructions: a link out of the repository is not read; a link inside is; doctor says which and why", () =>
    Effect.gen(function*() {
      const { repo, userHome, home, secret } = yield* layout
      const cwd = mkdirs(join(repo, "packages/app"))
      write(join(repo, "AGENTS.md"), "Root rules.\n")
      symlinkSync(join(repo, "AGENTS.md"), join(cwd, "AGENTS.md"))
      symlinkSync(secret, join(repo, "CLAUDE.md"))
      mkdirSync(join(repo, "packages/docs"), { recursive: true })
      write(join(repo, "packages/docs/rules.md"), "Package rules.\n")
      symlinkSync(join(repo, "packages/docs/rules.md"), join(repo, "packages/AGENTS.md"))
      const project = yield* Prompt.load(cwd, { platform: "linux" })
      assert.deepStrictEqual(project.instructions.map((i) => i.text), ["Root rules.", "Package rules."])
      assert.notInclude(Prompt.render(project, { mode: "default", tools: [] }), "hunter2")
      const found = yield* Doctor.project({ cwd, home, userHome })
      assert.deepStrictEqual(Doctor.instructionsReport(found.instructions), [
        "Project instructions",
        `  ${join(repo, "AGENTS.md")}`,
        `  ${join(repo, "packages/AGENTS.md")}`,
        `  warning: ${join(repo, "CLAUDE.md")}: ${outside(repo)}`
      ])
    }).pipe(Effect.provide(TempDir.platform)))

  it.effect("a FIFO does not hang discovery; a huge instructions file is cut, a huge definition is not read", () =>
    Effect.gen(function*() {
      const { repo, userHome, home } = yield* layout
      mkfifo(join(repo, "AGENTS.md"))
      mkfifo(join(repo, ".claude/commands/pipe.md"))
      mkfifo(join(repo, ".claude/agents/pipe.md"))
      mkfifo(join(repo, ".agents/skills/pipe/SKILL.md"))
      const special = "it is not a regular file (a FIFO, socket or device), so it is not read"
      const commands = yield* Commands.discover({ cwd: repo, home, skills: [] })
      assert.deepStrictEqual(commands.problems, [{ file: join(repo, ".claude/commands/pipe.md"), message: special }])
      const agents = yield* Definitions.load({ cwd: repo, home })
      assert.deepStrictEqual(agents.problems, [{ file: join(repo, ".claude/agents/pipe.md"), message: special }])
      const skills = yield* Skills.discover({ cwd: repo, home, userHome })
      assert.deepStrictEqual(skills.problems, [{ file: join(repo, ".agents/skills/pipe/SKILL.md"), message: special }])
      const fifo = yield* Prompt.instructions(repo)
      assert.deepStrictEqual(fifo.problems, [{ file: join(repo, "AGENTS.md"), message: special }])

      rmSync(join(repo, "AGENTS.md"))
      write(join(repo, "AGENTS.md"), "a".repeat(4 * Prompt.MAX_FILE_CHARS + 10_000))
      const huge = yield* Prompt.instructions(repo)
      assert.strictEqual(huge.instructions.length, 1)
      assert.strictEqual(huge.instructions[0]!.text, `${"a".repeat(Prompt.MAX_FILE_CHARS)}\n[… ${join(repo, "AGENTS.md")} is longer; the rest was left out]`)

      const bounded = yield* Confined.readText(join(repo, "AGENTS.md"), repo, { maxBytes: 1000 })
      assert.deepStrictEqual(bounded, { _tag: "refused", reason: "too_large", message: "it is larger than 1000 bytes, so it is not read" })
      const cut = yield* Confined.readText(join(repo, "AGENTS.md"), repo, { maxBytes: 1000, truncate: true })
      assert.deepStrictEqual(cut, { _tag: "text", text: "a".repeat(1000), truncated: true })
    }).pipe(Effect.provide(TempDir.platform)))
})

function mkdirs(path: string): string {
  mkdirSync(path, { recursive: true })
  return path
}
