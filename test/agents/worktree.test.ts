/**
 * Isolated workspaces on real git repositories: a worktree holds the parent's working state
 * (staged, unstaged, untracked, binary, deleted, modes, links; ignored files left out) without
 * touching the parent's index; the child's changes are summarized against that start; an
 * unchanged worktree is removed with its branch and a changed one kept; outside a repository,
 * without a commit, or where the repository's own configuration would run programs, the
 * answer is a message; hooks and signing never run; no process is left behind.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { execFileSync } from "node:child_process"
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Worktree from "../../src/agents/Worktree.ts"
import * as ProcessGroup from "../../src/tools/process/ProcessGroup.ts"
import * as TempDir from "../support/TempDir.ts"

const IDENTITY = { GIT_AUTHOR_NAME: "T", GIT_AUTHOR_EMAIL: "t@t", GIT_COMMITTER_NAME: "T", GIT_COMMITTER_EMAIL: "t@t" }

const git = (cwd: string, ...args: Array<string>): string =>
  execFileSync("git", ["-c", "commit.gpgSign=false", ...args], { cwd, encoding: "utf8", env: { ...process.env, ...IDENTITY } })

const put = (path: string, content: string | Uint8Array) => {
  mkdirSync(join(path, ".."), { recursive: true })
  writeFileSync(path, content)
}

/** A repository with one commit: a.txt, sub/b.txt, run.sh, gone.txt, logo.bin, and a .gitignore. */
const repository = Effect.gen(function*() {
  const dir = yield* TempDir.make("skein-worktree-")
  const repo = join(dir, "repo")
  const home = join(dir, "home")
  mkdirSync(repo)
  git(repo, "init", "-q", "-b", "main")
  put(join(repo, "a.txt"), "one\ntwo\nthree\n")
  put(join(repo, "sub/b.txt"), "b\n")
  put(join(repo, "run.sh"), "echo hi\n")
  put(join(repo, "gone.txt"), "to be deleted\n")
  put(join(repo, "logo.bin"), new Uint8Array([0, 1, 2, 255, 254, 0]))
  put(join(repo, ".gitignore"), "*.log\nbuild/\n")
  git(repo, "add", "-A")
  git(repo, "commit", "-q", "-m", "first")
  return { dir, repo, home, head: git(repo, "rev-parse", "HEAD").trim() }
})

const failure = <A>(effect: Effect.Effect<A, Worktree.WorktreeError>) =>
  Effect.map(Effect.exit(effect), (exit) => {
    if (Exit.isSuccess(exit)) throw new Error("expected a WorktreeError")
    const error = exit.cause.reasons[0]
    if (error?._tag !== "Fail") throw new Error(`expected a failure, got ${String(exit.cause)}`)
    return error.error
  })

const branches = (repo: string) => git(repo, "branch", "--format=%(refname:short)").split("\n").filter((b) => b !== "")

describe("Worktree", () => {
  it.effect("a clean repository: the worktree is HEAD on skein/<id>; unchanged, it is removed with its branch", () =>
    Effect.gen(function*() {
      const { repo, home, head } = yield* repository
      const wt = yield* Worktree.create({ cwd: repo, id: "c1", home })
      assert.deepStrictEqual(wt, { path: join(home, "worktrees", "c1"), branch: "skein/c1", base: head, cwd: join(home, "worktrees", "c1"), repository: repo })
      assert.strictEqual(readFileSync(join(wt.path, "a.txt"), "utf8"), "one\ntwo\nthree\n")
      assert.strictEqual(git(wt.path, "rev-parse", "--abbrev-ref", "HEAD").trim(), "skein/c1")
      // The scratch index is gone.
      assert.deepStrictEqual(readdirSync(join(home, "worktrees")), ["c1"])
      const summary = yield* Worktree.summarize(wt)
      assert.deepStrictEqual(summary, { branch: "skein/c1", path: wt.path, changed: false, files: [], text: `No changes (branch skein/c1, worktree ${wt.path}).` })
      // Build output is ignored: it does not keep the worktree.
      put(join(wt.path, "build/out.js"), "x")
      assert.deepStrictEqual(yield* Worktree.remove(wt), { kept: false })
      assert.isFalse(existsSync(wt.path))
      assert.deepStrictEqual(branches(repo), ["main"])
      assert.strictEqual(git(repo, "worktree", "list", "--porcelain").match(/^worktree /gm)?.length, 1)
      assert.deepStrictEqual([...ProcessGroup.liveGroups()], [])
    }))

  it.effect("carries the parent's uncommitted state over exactly, from a subdirectory, leaving the parent's index alone", () =>
    Effect.gen(function*() {
      const { repo, home, head } = yield* repository
      put(join(repo, "a.txt"), "one\nTWO\nthree\n") // unstaged
      put(join(repo, "sub/b.txt"), "b staged\n")
      git(repo, "add", "sub/b.txt") // staged
      put(join(repo, "sub/b.txt"), "b staged then changed\n") // and changed again
      put(join(repo, "new-staged.txt"), "new\n")
      git(repo, "add", "new-staged.txt")
      rmSync(join(repo, "gone.txt"))
      put(join(repo, "sub/untracked.txt"), "untracked\n")
      put(join(repo, "logo.bin"), new Uint8Array([0, 9, 9, 255, 0]))
      put(join(repo, "debug.log"), "ignored\n")
      chmodSync(join(repo, "run.sh"), 0o755)
      symlinkSync("a.txt", join(repo, "link"))
      const status = git(repo, "status", "--porcelain=v1", "-z")
      const staged = git(repo, "diff", "--cached", "--binary")

      const wt = yield* Worktree.create({ cwd: join(repo, "sub"), id: "c2", home })
      assert.strictEqual(wt.cwd, join(wt.path, "sub"))
      assert.notStrictEqual(wt.base, head)
      assert.strictEqual(git(repo, "rev-parse", `${wt.base}^`).trim(), head)
      assert.strictEqual(git(repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>", wt.base).trim(), "Skein <skein@localhost>|Skein <skein@localhost>")
      assert.strictEqual(git(repo, "rev-parse", "skein/c2").trim(), wt.base)
      // The worktree's files are the parent's working files.
      for (const file of ["a.txt", "sub/b.txt", "new-staged.txt", "sub/untracked.txt", "logo.bin", "run.sh"]) {
        assert.isTrue(readFileSync(join(wt.path, file)).equals(readFileSync(join(repo, file))), file)
      }
      assert.isFalse(existsSync(join(wt.path, "gone.txt")))
      assert.isFalse(existsSync(join(wt.path, "debug.log")))
      assert.strictEqual(statSync(join(wt.path, "run.sh")).mode & 0o111, 0o111)
      assert.strictEqual(readlinkSync(join(wt.path, "link")), "a.txt")
      // The parent is as it was: same status, same staged changes, nothing new staged.
      assert.strictEqual(git(repo, "status", "--porcelain=v1", "-z"), status)
      assert.strictEqual(git(repo, "diff", "--cached", "--binary"), staged)
      // The worktree starts clean against its base.
      assert.isFalse((yield* Worktree.summarize(wt)).changed)
      assert.strictEqual(git(wt.path, "status", "--porcelain"), "")
    }))

  it.effect("summarizes the child's changes (untracked and binary too) against the start; a changed worktree is kept", () =>
    Effect.gen(function*() {
      const { repo, home } = yield* repository
      put(join(repo, "a.txt"), "one\ntwo\nthree\nfour\n") // the parent's own change is part of the start
      const wt = yield* Worktree.create({ cwd: repo, id: "c3", home })
      put(join(wt.path, "a.txt"), "one\n2\nthree\nfour\nfive\n")
      put(join(wt.path, "sub/new.ts"), "export {}\n")
      rmSync(join(wt.path, "gone.txt"))
      put(join(wt.path, "logo.bin"), new Uint8Array([7, 0, 7]))
      put(join(wt.path, "trace.log"), "ignored\n")
      const summary = yield* Worktree.summarize(wt)
      assert.isTrue(summary.changed)
      assert.deepStrictEqual(summary.files, [
        { path: "a.txt", added: 2, removed: 1, status: "M" },
        { path: "gone.txt", added: 0, removed: 1, status: "D" },
        { path: "logo.bin", added: 0, removed: 0, status: "M" },
        { path: "sub/new.ts", added: 1, removed: 0, status: "A" }
      ])
      assert.strictEqual(
        summary.text,
        [
          `4 files changed, 3 insertions(+), 2 deletions(-) (branch skein/c3, worktree ${wt.path}):`,
          " M a.txt | +2 -1",
          " D gone.txt | +0 -1",
          " M logo.bin | binary",
          " A sub/new.ts | +1 -0"
        ].join("\n")
      )
      // Summarizing staged nothing in the child's own index, and left no scratch index.
      assert.strictEqual(git(wt.path, "diff", "--cached", "--name-only"), "")
      assert.deepStrictEqual(readdirSync(join(repo, ".git/worktrees/c3")).filter((name) => name.includes("skein")), [])
      assert.deepStrictEqual(yield* Worktree.remove(wt), { kept: true })
      assert.isTrue(existsSync(join(wt.path, "sub/new.ts")))
      assert.include(branches(repo), "skein/c3")
    }))

  it.effect("a commit on the branch keeps it; a worktree whose directory vanished unchanged is cleaned up", () =>
    Effect.gen(function*() {
      const { repo, home } = yield* repository
      const committed = yield* Worktree.create({ cwd: repo, id: "c4", home })
      put(join(committed.path, "a.txt"), "x\n")
      git(committed.path, "commit", "-q", "-am", "child")
      put(join(committed.path, "a.txt"), "one\ntwo\nthree\n")
      git(committed.path, "commit", "-q", "-am", "back")
      const summary = yield* Worktree.summarize(committed)
      assert.deepStrictEqual([summary.changed, summary.files], [true, []])
      assert.match(summary.text, /^No file differs from the start, but the branch has moved/)
      assert.deepStrictEqual(yield* Worktree.remove(committed), { kept: true })

      const vanished = yield* Worktree.create({ cwd: repo, id: "c5", home })
      rmSync(vanished.path, { recursive: true, force: true })
      assert.deepStrictEqual(yield* Worktree.remove(vanished), { kept: false })
      assert.notInclude(branches(repo), "skein/c5")
      assert.notInclude(git(repo, "worktree", "list"), vanished.path)
    }))

  it.effect("outside a repository, without a commit, with a bad id or a taken one: a message for the model", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make("skein-worktree-")
      const home = join(dir, "home")
      const plain = join(dir, "plain")
      mkdirSync(plain)
      const outside = yield* failure(Worktree.create({ cwd: plain, id: "x", home }))
      assert.strictEqual(outside._tag, "WorktreeError")
      assert.include(outside.message, "needs a git repository")
      assert.include(outside.message, `Use workspace "shared"`)
      const empty = join(dir, "empty")
      mkdirSync(empty)
      git(empty, "init", "-q")
      assert.match((yield* failure(Worktree.create({ cwd: empty, id: "x", home }))).message, /has no commit yet\. Commit once, or use workspace "shared"/)
      const { repo } = yield* repository
      assert.match((yield* failure(Worktree.create({ cwd: repo, id: "../x", home }))).message, /cannot name a worktree/)
      yield* Worktree.create({ cwd: repo, id: "same", home })
      assert.match((yield* failure(Worktree.create({ cwd: repo, id: "same", home }))).message, /already exists/)
      rmSync(join(home, "worktrees", "same"), { recursive: true })
      assert.match((yield* failure(Worktree.create({ cwd: repo, id: "same", home }))).message, /^Creating the worktree failed: .*skein\/same/)
      assert.deepStrictEqual([...ProcessGroup.liveGroups()], [])
    }))

  it.effect("the repository's hooks and signing settings never run; its own filter drivers are refused", () =>
    Effect.gen(function*() {
      const { dir, repo, home } = yield* repository
      const marker = join(dir, "hook-ran")
      for (const hook of ["post-checkout", "pre-commit", "post-commit", "reference-transaction"]) {
        put(join(repo, ".git/hooks", hook), `#!/bin/sh\necho ${hook} >> ${marker}\n`)
        chmodSync(join(repo, ".git/hooks", hook), 0o755)
      }
      git(repo, "config", "commit.gpgSign", "true")
      git(repo, "config", "gpg.program", "/bin/false")
      put(join(repo, "a.txt"), "changed\n")
      const wt = yield* Worktree.create({ cwd: repo, id: "h1", home })
      assert.notStrictEqual(wt.base, git(repo, "rev-parse", "HEAD").trim())
      assert.isFalse(existsSync(marker))
      assert.deepStrictEqual(yield* Worktree.remove(wt), { kept: false })
      assert.isFalse(existsSync(marker))

      git(repo, "config", "filter.evil.clean", `sh -c 'echo ran >> ${marker}; cat'`)
      put(join(repo, ".gitattributes"), "*.txt filter=evil\n")
      const refused = yield* failure(Worktree.create({ cwd: repo, id: "h2", home }))
      assert.include(refused.message, "filter.evil.clean")
      assert.include(refused.message, `Use workspace "shared"`)
      assert.isFalse(existsSync(marker))
      assert.isFalse(existsSync(join(home, "worktrees", "h2")))
    }))

  it.effect("creating one is approved first: refused, nothing is written (no branch, no objects, no directory)", () =>
    Effect.gen(function*() {
      const { repo, home } = yield* repository
      put(join(repo, "a.txt"), "changed\n")
      const objects = () => git(repo, "count-objects", "-v")
      const before = objects()
      const asked: Array<Worktree.Plan> = []
      const refused = yield* failure(Worktree.create({
        cwd: repo,
        id: "w1",
        home,
        approve: (plan) => Effect.sync(() => void asked.push(plan)).pipe(Effect.andThen(Effect.fail("The user denied permission")))
      }))
      assert.strictEqual(refused.message, "The user denied permission")
      assert.deepStrictEqual(asked, [{ repository: repo, branch: "skein/w1", path: join(home, "worktrees", "w1") }])
      assert.deepStrictEqual(branches(repo), ["main"])
      assert.strictEqual(objects(), before)
      assert.isFalse(existsSync(join(home, "worktrees")))
      // Approved, it is made.
      const made = yield* Worktree.create({ cwd: repo, id: "w2", home, approve: () => Effect.void })
      assert.strictEqual(readFileSync(join(made.cwd, "a.txt"), "utf8"), "changed\n")
    }))
})
