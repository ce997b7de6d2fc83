/**
 * Skills: where they are found and which wins, the lenient reading of SKILL.md (and what is
 * still a problem), the catalog within its budget, and activation (body and sha256). Real
 * temporary directories: a repository with `.git`, a user home, a $SKEIN_HOME.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { createHash } from "node:crypto"
import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Skills from "../../src/skills/Skills.ts"
import * as TempDir from "../support/TempDir.ts"

const write = (path: string, content: string) => {
  mkdirSync(join(path, ".."), { recursive: true })
  writeFileSync(path, content)
}

const skillMd = (front: string, body = "Do the thing.\n") => `---\n${front}\n---\n${body}`

/** A repository at `<dir>/repo` (with `.git`), a cwd two levels inside it, a user home and a $SKEIN_HOME. */
const layout = Effect.gen(function*() {
  const dir = yield* TempDir.make()
  const repo = join(dir, "repo")
  const cwd = join(repo, "packages", "app")
  const userHome = join(dir, "user")
  const home = join(dir, "skein-home")
  mkdirSync(join(repo, ".git"), { recursive: true })
  mkdirSync(cwd, { recursive: true })
  return { dir, repo, cwd, userHome, home }
})

const skill = (name: string, description: string, extra: Partial<Skills.Skill> = {}): Skills.Skill => ({
  name,
  description,
  dir: `/skills/${name}`,
  path: `/skills/${name}/SKILL.md`,
  scope: "project",
  root: "/skills",
  userInvocable: true,
  modelInvocable: true,
  ...extra
})

describe("Skills.discover", () => {
  it.effect("a project skill wins over the user's of the same name, with a warning naming both files", () =>
    Effect.gen(function*() {
      const { repo, cwd, userHome, home } = yield* layout
      write(join(repo, ".agents/skills/x/SKILL.md"), skillMd("name: x\ndescription: the project's x"))
      write(join(userHome, ".agents/skills/x/SKILL.md"), skillMd("name: x\ndescription: the user's x"))
      write(join(userHome, ".claude/skills/y/SKILL.md"), skillMd("description: the user's y\nuser-invocable: false"))
      write(join(home, "skills/z/SKILL.md"), skillMd("name: z\ndescription: from SKEIN_HOME\ndisable-model-invocation: true\nargument-hint: [file] [line]"))
      const out = yield* Skills.discover({ cwd, home, userHome })
      assert.deepStrictEqual(out.skills, [
        {
          name: "x",
          description: "the project's x",
          dir: join(repo, ".agents/skills/x"),
          path: join(repo, ".agents/skills/x/SKILL.md"),
          scope: "project",
          root: repo,
          userInvocable: true,
          modelInvocable: true,
          argumentHint: undefined
        },
        {
          name: "y",
          description: "the user's y",
          dir: join(userHome, ".claude/skills/y"),
          path: join(userHome, ".claude/skills/y/SKILL.md"),
          scope: "user",
          root: join(userHome, ".claude/skills"),
          userInvocable: false,
          modelInvocable: true,
          argumentHint: undefined
        },
        {
          name: "z",
          description: "from SKEIN_HOME",
          dir: join(home, "skills/z"),
          path: join(home, "skills/z/SKILL.md"),
          scope: "user",
          root: join(home, "skills"),
          userInvocable: true,
          modelInvocable: false,
          argumentHint: "[file] [line]"
        }
      ])
      assert.deepStrictEqual(out.problems, [
        {
          file: join(userHome, ".agents/skills/x/SKILL.md"),
          message: `the skill "x" is shadowed by ${join(repo, ".agents/skills/x/SKILL.md")} (project over user); this one is ignored`
        }
      ])
    }).pipe(Effect.provide(TempDir.platform)))

  it.effect("nearest directory first: the cwd's skill over the repository root's; .agents before .claude; nothing above the root", () =>
    Effect.gen(function*() {
      const { dir, repo, cwd, userHome, home } = yield* layout
      write(join(repo, ".agents/skills/near/SKILL.md"), skillMd("description: root's near"))
      write(join(cwd, ".claude/skills/near/SKILL.md"), skillMd("description: cwd's near"))
      write(join(repo, "packages/.agents/skills/mid/SKILL.md"), skillMd("description: between"))
      write(join(repo, ".agents/skills/both/SKILL.md"), skillMd("description: agents folder"))
      write(join(repo, ".claude/skills/both/SKILL.md"), skillMd("description: claude folder"))
      // Above the repository root: not searched.
      write(join(dir, ".agents/skills/outside/SKILL.md"), skillMd("description: outside the repository"))
      const out = yield* Skills.discover({ cwd, home, userHome })
      assert.deepStrictEqual(out.skills.map((s) => [s.name, s.description, s.scope]), [
        ["both", "agents folder", "project"],
        ["mid", "between", "project"],
        ["near", "cwd's near", "project"]
      ])
      assert.deepStrictEqual(out.problems.map((p) => [p.file, p.message]), [
        [join(repo, ".agents/skills/near/SKILL.md"), `the skill "near" is shadowed by ${join(cwd, ".claude/skills/near/SKILL.md")} (nearer); this one is ignored`],
        [join(repo, ".claude/skills/both/SKILL.md"), `the skill "both" is shadowed by ${join(repo, ".agents/skills/both/SKILL.md")} (nearer); this one is ignored`]
      ])
    }).pipe(Effect.provide(TempDir.platform)))

  it.effect("outside a repository only the cwd is searched", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const cwd = join(dir, "a", "b")
      mkdirSync(cwd, { recursive: true })
      write(join(dir, "a/.agents/skills/up/SKILL.md"), skillMd("description: one level up"))
      write(join(cwd, ".agents/skills/here/SKILL.md"), skillMd("description: in the cwd"))
      const out = yield* Skills.discover({ cwd, home: join(dir, "h"), userHome: join(dir, "u") })
      assert.deepStrictEqual(out.skills.map((s) => s.name), ["here"])
      assert.deepStrictEqual(out.problems, [])
    }).pipe(Effect.provide(TempDir.platform)))

  it.effect("lenient: the folder's name, block scalars, unknown and unreadable keys; what is still a problem and skipped", () =>
    Effect.gen(function*() {
      const { cwd, userHome, home } = yield* layout
      const root = join(cwd, ".agents/skills")
      write(join(root, "from-folder/SKILL.md"), skillMd("description: >\n  A long description\n  on two lines\nlicense: MIT\nallowed-tools: Bash(git diff:*), Read\nmetadata:\n  author: someone\n  version: \"1.0\""))
      write(join(root, "no-description/SKILL.md"), skillMd("name: no-description"))
      write(join(root, "Bad_Folder/SKILL.md"), skillMd("description: no name, and the folder's is not one"))
      write(join(root, "bad-name/SKILL.md"), skillMd("name: Bad Name\ndescription: d"))
      write(join(root, "no-front/SKILL.md"), "# Just Markdown\n")
      write(join(root, "bad-flag/SKILL.md"), skillMd("description: d\nuser-invocable: maybe"))
      write(join(root, "unended/SKILL.md"), "---\ndescription: d\n")
      write(join(root, "big/SKILL.md"), skillMd("description: d", "x".repeat(Skills.MAX_FILE_BYTES + 1)))
      mkdirSync(join(root, "empty-folder"))
      write(join(root, "loose-file.md"), "not a skill folder")
      mkdirSync(join(root, ".hidden"))
      const out = yield* Skills.discover({ cwd, home, userHome })
      assert.deepStrictEqual(out.skills.map((s) => [s.name, s.description, s.userInvocable]), [
        ["bad-flag", "d", true],
        ["from-folder", "A long description on two lines", true]
      ])
      assert.deepStrictEqual(out.problems, [
        { file: join(root, "Bad_Folder/SKILL.md"), message: "the folder's name \"Bad_Folder\" (there is no \"name\") is not valid: use lowercase letters, digits and \"-\", starting with a letter or digit, at most 64 characters" },
        { file: join(root, "bad-flag/SKILL.md"), message: "front matter: \"user-invocable\" must be true or false; the default (true) applies" },
        { file: join(root, "bad-name/SKILL.md"), message: "\"name\" \"Bad Name\" is not valid: use lowercase letters, digits and \"-\", starting with a letter or digit, at most 64 characters" },
        { file: join(root, "big/SKILL.md"), message: "larger than 256 KiB; not read as a skill" },
        { file: join(root, "empty-folder"), message: "no SKILL.md in the folder, so it is not a skill" },
        { file: join(root, "no-description/SKILL.md"), message: "\"description\" is missing: the model needs it to know when to use the skill" },
        { file: join(root, "no-front/SKILL.md"), message: "no front matter: SKILL.md must start with a \"---\" line, then at least a description, then \"---\"" },
        { file: join(root, "unended/SKILL.md"), message: "the front matter does not end: no closing \"---\" line" }
      ])
    }).pipe(Effect.provide(TempDir.platform)))

  it.effect("an unreadable folder is a problem, a missing one is not; discovery never fails", () =>
    Effect.gen(function*() {
      const { cwd, userHome, home } = yield* layout
      write(join(home, "skills/ok/SKILL.md"), skillMd("description: fine"))
      mkdirSync(join(userHome, ".agents/skills"), { recursive: true })
      // A file where the folder should be is no folder: nothing to read.
      write(join(userHome, ".claude/skills"), "")
      chmodSync(join(userHome, ".agents/skills"), 0o000)
      const out = yield* Skills.discover({ cwd, home, userHome })
      chmodSync(join(userHome, ".agents/skills"), 0o755)
      assert.deepStrictEqual(out.skills.map((s) => s.name), ["ok"])
      const root = process.getuid?.() === 0
      assert.deepStrictEqual(out.problems, root ? [] : [{ file: join(userHome, ".agents/skills"), message: "cannot read the folder (EACCES)" }])
    }).pipe(Effect.provide(TempDir.platform)))

  it.effect("the user's home as the repository root is read once, as the project's", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      mkdirSync(join(dir, ".git"))
      write(join(dir, ".agents/skills/mine/SKILL.md"), skillMd("description: d"))
      const out = yield* Skills.discover({ cwd: dir, home: join(dir, ".skein"), userHome: dir })
      assert.deepStrictEqual(out.skills.map((s) => [s.name, s.scope]), [["mine", "project"]])
      assert.deepStrictEqual(out.problems, [])
    }).pipe(Effect.provide(TempDir.platform)))
})

describe("Skills.catalog", () => {
  it("lists the model's skills in name order with their paths; none: empty", () => {
    assert.deepStrictEqual(Skills.catalog([], 8000), { text: "", omitted: 0 })
    assert.deepStrictEqual(Skills.catalog([skill("hidden", "d", { modelInvocable: false })], 8000), { text: "", omitted: 0 })
    const out = Skills.catalog([skill("b", "Second\n  skill"), skill("a", "First"), skill("c", "hidden", { modelInvocable: false })], 8000)
    assert.strictEqual(out.omitted, 0)
    const lines = out.text.split("\n")
    assert.strictEqual(lines[0], "# Skills")
    assert.match(lines[1]!, /call the `skill` tool with its name/)
    assert.deepStrictEqual(lines.slice(2), ["- a: First (/skills/a/SKILL.md)", "- b: Second skill (/skills/b/SKILL.md)"])
  })

  it("over budget: descriptions are shortened first, then skills are left out and counted", () => {
    const skills = Array.from({ length: 30 }, (_, i) => skill(`skill-${String(i).padStart(2, "0")}`, `Description ${i} `.repeat(20).trim()))
    const full = Skills.catalog(skills, 1_000_000)
    assert.strictEqual(full.omitted, 0)

    // Room for every skill with shorter descriptions.
    const shortened = Skills.catalog(skills, Math.floor(full.text.length * 0.6))
    assert.strictEqual(shortened.omitted, 0)
    assert.isAtMost(shortened.text.length, Math.floor(full.text.length * 0.6))
    assert.strictEqual(shortened.text.split("\n").filter((l) => l.startsWith("- ")).length, 30)
    assert.include(shortened.text, "…")

    // Room for a few only: the last ones in name order are left out, and a last line says how many.
    const few = Skills.catalog(skills, 2_000)
    assert.isAtMost(few.text.length, 2_000)
    const listed = few.text.split("\n").filter((l) => l.startsWith("- "))
    assert.isAbove(listed.length, 0)
    assert.strictEqual(few.omitted, 30 - listed.length)
    assert.match(listed[0]!, /^- skill-00: /)
    assert.match(few.text.split("\n").at(-1)!, new RegExp(`^\\(${few.omitted} more skills are not listed here`))

    // No room even for the header: nothing, all omitted.
    assert.deepStrictEqual(Skills.catalog(skills, 50), { text: "", omitted: 30 })
  })

  it("budget: 8,000 characters unknown, else 2% of the window at 4 characters a token, at least 2,000", () => {
    assert.deepStrictEqual([Skills.budget(undefined), Skills.budget(200_000), Skills.budget(1_000_000), Skills.budget(8_000)], [8_000, 16_000, 80_000, 2_000])
  })
})

describe("Skills.activate", () => {
  it.effect("the body without the front matter and its sha256; a file gone is a SkillError", () =>
    Effect.gen(function*() {
      const { cwd, userHome, home } = yield* layout
      write(join(cwd, ".agents/skills/x/SKILL.md"), skillMd("name: x\ndescription: d", "\n# X\n\nRun `./scripts/go.sh`.\n"))
      const [x] = (yield* Skills.discover({ cwd, home, userHome })).skills
      const out = yield* Skills.activate(x!)
      assert.strictEqual(out.body, "# X\n\nRun `./scripts/go.sh`.")
      assert.strictEqual(out.sha256, createHash("sha256").update("# X\n\nRun `./scripts/go.sh`.").digest("hex"))
      assert.match(out.sha256, /^[0-9a-f]{64}$/)
      rmSync(x!.path)
      const gone = yield* Effect.exit(Skills.activate(x!))
      assert.isTrue(Exit.isFailure(gone))
      const error = yield* Effect.flip(Skills.activate(x!))
      assert.strictEqual(error._tag, "SkillError")
      assert.strictEqual(error.reason, "not_found")
      assert.include(error.message, x!.path)
    }).pipe(Effect.provide(TempDir.platform)))
})
