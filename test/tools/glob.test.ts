/**
 * The glob tool through `Tool.run` on real trees: glob semantics, sorting, .gitignore,
 * skipped directories, literal and absolute prefixes, confinement, and the result cap.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { glob, MAX_RESULTS } from "../../src/tools/glob.ts"
import * as Tool from "../../src/tools/Tool.ts"
import * as TempDir from "../support/TempDir.ts"

const setup = Effect.gen(function*() {
  const base = yield* TempDir.make()
  const cwd = join(base, "ws")
  mkdirSync(cwd)
  const ctx: Tool.ToolContext = { sessionId: "s-1", toolCallId: "c-1", cwd, roots: [cwd] }
  const files = (...names: ReadonlyArray<string>) => {
    for (const name of names) {
      mkdirSync(dirname(join(cwd, name)), { recursive: true })
      writeFileSync(join(cwd, name), name.endsWith(".gitignore") ? "" : "x")
    }
  }
  const run = (args: unknown) => Tool.run(glob, args, ctx).pipe(Effect.provide(TempDir.platform))
  const list = (args: unknown) => run(args).pipe(Effect.map((out) => out.content.split("\n")))
  return { base, cwd, files, run, list }
})

describe("glob", () => {
  it.effect("lists matching files sorted by path; * stays in one level, ** spans levels", () =>
    Effect.gen(function*() {
      const { files, list, run } = yield* setup
      files("b.ts", "a.ts", "z/y.ts", "src/index.ts", "src/lib/util.ts", "src/lib/util.js", ".github/ci.ts", "README.md")
      assert.deepStrictEqual(yield* list({ pattern: "**/*.ts" }), [".github/ci.ts", "a.ts", "b.ts", "src/index.ts", "src/lib/util.ts", "z/y.ts"])
      assert.deepStrictEqual(yield* list({ pattern: "*.ts" }), ["a.ts", "b.ts"])
      assert.deepStrictEqual(yield* list({ pattern: "src/**/*.{ts,js}" }), ["src/index.ts", "src/lib/util.js", "src/lib/util.ts"])
      assert.deepStrictEqual(yield* list({ pattern: "*.ts", path: "src/lib" }), ["src/lib/util.ts"])
      assert.deepStrictEqual(yield* list({ pattern: "./src/index.ts" }), ["src/index.ts"])
      assert.deepStrictEqual(yield* run({ pattern: "**/*.rs" }), { ok: true, content: "No files match **/*.rs.", details: undefined })
    }))

  it.effect("accepts an absolute pattern inside the workspace and refuses one outside", () =>
    Effect.gen(function*() {
      const { base, cwd, files, list, run } = yield* setup
      files("src/a.ts", "src/b/c.ts")
      assert.deepStrictEqual(yield* list({ pattern: `${cwd}/src/**/*.ts` }), ["src/a.ts", "src/b/c.ts"])
      const outside = yield* run({ pattern: `${base}/**/*.ts` })
      assert.isFalse(outside.ok)
      assert.match(outside.content, /outside the workspace/)
      const up = yield* run({ pattern: "../**" })
      assert.isFalse(up.ok)
    }))

  it.effect("respects .gitignore and never lists .git, node_modules or followed symlinks", () =>
    Effect.gen(function*() {
      const { base, cwd, files, list } = yield* setup
      files("keep.ts", "build/out.ts", "src/gen/x.ts", "src/y.ts", "node_modules/p/i.ts", ".git/h.ts", "debug.ts")
      writeFileSync(join(cwd, ".gitignore"), "build/\ndebug.ts\n")
      writeFileSync(join(cwd, "src/.gitignore"), "gen/\n")
      mkdirSync(join(base, "outside"))
      writeFileSync(join(base, "outside", "secret.ts"), "x")
      symlinkSync(join(base, "outside"), join(cwd, "link"))
      assert.deepStrictEqual(yield* list({ pattern: "**/*.ts" }), ["keep.ts", "src/y.ts"])
      assert.deepStrictEqual(yield* list({ pattern: "**/*" }), [".gitignore", "keep.ts", "src/.gitignore", "src/y.ts"])
      assert.deepStrictEqual(yield* list({ pattern: "**/*.ts", path: "node_modules" }), ["node_modules/p/i.ts"])
    }))

  it.effect("lists at most 500 paths and counts the rest", () =>
    Effect.gen(function*() {
      const { files, run } = yield* setup
      const names = Array.from({ length: 640 }, (_, i) => `d${i % 9}/f${String(i).padStart(3, "0")}.txt`)
      files(...names)
      const out = yield* run({ pattern: "**/*.txt" })
      assert.isTrue(out.ok)
      const [body, summary] = out.content.split("\n\n[")
      const shown = body!.split("\n")
      assert.strictEqual(shown.length, MAX_RESULTS)
      assert.deepStrictEqual(shown, [...names].sort().slice(0, MAX_RESULTS))
      assert.strictEqual(summary, `640 files match; the first ${MAX_RESULTS} are shown, ${640 - MAX_RESULTS} more not shown. Narrow the pattern or path.]`)
    }))

  it.effect("a missing directory or a file as path is an error", () =>
    Effect.gen(function*() {
      const { files, run } = yield* setup
      files("a.ts")
      assert.deepStrictEqual(yield* run({ pattern: "*", path: "nope" }), { ok: false, content: "Directory not found: nope", details: undefined })
      const file = yield* run({ pattern: "*", path: "a.ts" })
      assert.isFalse(file.ok)
      assert.match(file.content, /a\.ts is a file/)
      assert.isFalse((yield* run({ pattern: "" })).ok)
    }))
})
