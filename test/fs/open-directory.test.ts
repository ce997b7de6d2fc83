/**
 * `SafeFs.openDirectory(path, roots, create)`, which the `write` tool uses to make a new file's
 * missing folders: a folder is made only inside a folder already verified inside the roots, so a
 * path outside them (deep and missing, under `/proc`, or through a link in the workspace that
 * leads out) is refused before anything is created anywhere.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as SafeFs from "../../src/fs/SafeFs.ts"

const setup = () => {
  const base = realpathSync(mkdtempSync(join(tmpdir(), "skein-open-directory-")))
  const cwd = join(base, "workspace")
  const outside = join(base, "outside")
  mkdirSync(cwd)
  mkdirSync(outside)
  return { base, cwd, outside }
}

const open = (path: string, roots: ReadonlyArray<string>) =>
  Effect.scoped(Effect.flatMap(SafeFs.realRoots(roots), (real) => Effect.map(SafeFs.openDirectory(path, real, true), (dir) => dir.path)))

describe("SafeFs.openDirectory with create", () => {
  it.effect("makes missing folders inside the roots", () =>
    Effect.gen(function*() {
      const { cwd } = setup()
      assert.strictEqual(yield* open(join(cwd, "a", "b", "c"), [cwd]), join(cwd, "a", "b", "c"))
      assert.isTrue(existsSync(join(cwd, "a", "b", "c")))
    }))

  it.effect("refuses a path outside the roots, under /proc, or through a link that leads out, and makes nothing", () =>
    Effect.gen(function*() {
      const { base, cwd, outside } = setup()
      symlinkSync(outside, join(cwd, "out"))
      const before = readdirSync(base).sort()
      for (const path of [join(outside, "x", "y"), join(base, "new", "deep"), "/proc/self/skein-test/x", join(cwd, "out", "made", "deeper")]) {
        yield* Effect.flip(open(path, [cwd]))
      }
      assert.deepStrictEqual(readdirSync(outside), [])
      assert.deepStrictEqual(readdirSync(base).sort(), before)
      assert.deepStrictEqual(readdirSync(cwd), ["out"])
      assert.isFalse(existsSync("/proc/self/skein-test"))
    }))
})
