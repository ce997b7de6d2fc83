/**
 * The objects and refs a checkpoint writes itself (`Objects.ts`) are git's: the folders' tree is
 * the one `git mktree` makes (in git's order: 10 after 1), the commit and the ref read back
 * through git, and `git fsck --strict` finds nothing wrong.
 */
import { assert, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { execFileSync } from "node:child_process"
import { join } from "node:path"
import * as Objects from "../../src/checkpoints/Objects.ts"
import * as TempDir from "../support/TempDir.ts"

it.live("the folders' tree, the commit and the ref are git's own", () =>
  Effect.gen(function*() {
    const gitDir = join(yield* TempDir.make(), "shadow.git")
    execFileSync("git", ["init", "-q", "--bare", gitDir])
    const git = (args: Array<string>, input = "") => execFileSync("git", args, { env: { ...process.env, GIT_DIR: gitDir }, input }).toString().trim()
    const empty = git(["mktree"])
    const trees = Array.from({ length: 12 }, (_, i) => [i, empty] as const)
    const mine = yield* Objects.writeFolders(gitDir, [...trees].reverse())
    assert.strictEqual(mine, git(["mktree"], trees.map(([i, tree]) => `040000 tree ${tree}\t${i}\n`).join("")))
    const commit = yield* Objects.writeCommit(gitDir, mine, "t1-before")
    yield* Objects.writeRef(gitDir, "t1-before", commit)
    git(["fsck", "--strict", "--no-dangling"])
    assert.strictEqual(git(["rev-parse", "refs/skein/t1-before^{tree}"]), mine)
    assert.strictEqual(git(["log", "-1", "--format=%an <%ae> %s", "refs/skein/t1-before"]), "Skein <skein@localhost> t1-before")
    // Packed by git, still listed; a loose ref written later wins.
    git(["pack-refs", "--all"])
    yield* Objects.writeRef(gitDir, "t2-before", commit)
    assert.deepStrictEqual([...(yield* Objects.readRefs(gitDir))].sort(), [["refs/skein/t1-before", commit], ["refs/skein/t2-before", commit]])
  }).pipe(Effect.scoped))
