/**
 * The grep tool through `Tool.run` on real trees: matches with line numbers, glob filters,
 * .gitignore (nested, above the searched path, negations), skipped directories, binary and
 * large files, invalid regexes, and the caps on matches and output.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdirSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { grep, MAX_MATCHES, MAX_OUTPUT_BYTES } from "../../src/tools/grep.ts"
import { MAX_LINE_CHARS } from "../../src/tools/worker/match.ts"
import * as Tool from "../../src/tools/Tool.ts"
import * as TempDir from "../support/TempDir.ts"

const setup = Effect.gen(function*() {
  const base = yield* TempDir.make()
  const cwd = join(base, "ws")
  mkdirSync(cwd)
  const ctx: Tool.ToolContext = { sessionId: "s-1", toolCallId: "c-1", cwd, roots: [cwd] }
  const files = (entries: Record<string, string | Uint8Array>) => {
    for (const [name, content] of Object.entries(entries)) {
      mkdirSync(dirname(join(cwd, name)), { recursive: true })
      writeFileSync(join(cwd, name), content)
    }
  }
  const run = (args: unknown) => Tool.run(grep, args, ctx).pipe(Effect.provide(TempDir.platform))
  /** The match lines of a result, without its summary. */
  const matches = (args: unknown) => run(args).pipe(Effect.map((out) => out.content.split("\n\n[")[0]!.split("\n")))
  return { base, cwd, files, run, matches }
})

describe("grep", () => {
  it.effect("prints path:line: text for each matching line, files in path order", () =>
    Effect.gen(function*() {
      const { files, run } = yield* setup
      files({ "a.ts": "const foo = 1\nbar()\nfoo(2)\n", "src/b.ts": "nothing\r\nfoo bar\r\n", "src/c.md": "no match\n" })
      const out = yield* run({ pattern: "fo+" })
      assert.deepStrictEqual(out, {
        ok: true,
        content: "a.ts:1: const foo = 1\na.ts:3: foo(2)\nsrc/b.ts:2: foo bar\n\n[3 matches in 2 files.]",
        details: undefined
      })
      const insensitive = yield* run({ pattern: "(?i)FOO\\(" })
      assert.strictEqual(insensitive.content, "a.ts:3: foo(2)\n\n[1 match in 1 file.]")
    }))

  it.effect("no match is ok; an invalid regex is an error with the engine's message", () =>
    Effect.gen(function*() {
      const { files, run } = yield* setup
      files({ "a.ts": "hello\n" })
      assert.deepStrictEqual(yield* run({ pattern: "absent" }), { ok: true, content: "No matches for /absent/ in the working directory.", details: undefined })
      const bad = yield* run({ pattern: "foo(" })
      assert.isFalse(bad.ok)
      assert.match(bad.content, /^Invalid regular expression: .*Unterminated group/)
    }))

  it.effect("a glob without / matches file names at any depth; with / it matches the path under `path`", () =>
    Effect.gen(function*() {
      const { files, matches } = yield* setup
      files({ "a.ts": "x\n", "a.js": "x\n", "src/b.ts": "x\n", "src/deep/c.ts": "x\n", "src/deep/c.test.ts": "x\n" })
      assert.deepStrictEqual(yield* matches({ pattern: "x", glob: "*.ts" }), ["a.ts:1: x", "src/b.ts:1: x", "src/deep/c.test.ts:1: x", "src/deep/c.ts:1: x"])
      assert.deepStrictEqual(yield* matches({ pattern: "x", glob: "src/**/*.test.ts" }), ["src/deep/c.test.ts:1: x"])
      assert.deepStrictEqual(yield* matches({ pattern: "x", path: "src", glob: "deep/*.{ts,js}" }), ["src/deep/c.test.ts:1: x", "src/deep/c.ts:1: x"])
      assert.deepStrictEqual(yield* matches({ pattern: "x", path: "src/b.ts" }), ["src/b.ts:1: x"])
    }))

  it.effect("respects .gitignore files, nested and above the searched path, and skips .git and node_modules", () =>
    Effect.gen(function*() {
      const { files, matches } = yield* setup
      files({
        ".gitignore": "dist/\n*.log\n!keep.log\n",
        "src/.gitignore": "generated.ts\n",
        "src/app.ts": "needle\n",
        "src/generated.ts": "needle\n",
        "src/debug.log": "needle\n",
        "src/keep.log": "needle\n",
        "lib/generated.ts": "needle\n",
        "dist/out.js": "needle\n",
        "node_modules/pkg/index.js": "needle\n",
        ".git/config": "needle\n",
        ".github/ci.yml": "needle\n"
      })
      assert.deepStrictEqual(yield* matches({ pattern: "needle" }), [
        ".github/ci.yml:1: needle",
        "lib/generated.ts:1: needle",
        "src/app.ts:1: needle",
        "src/keep.log:1: needle"
      ])
      // The root .gitignore still applies when searching a subdirectory.
      assert.deepStrictEqual(yield* matches({ pattern: "needle", path: "src" }), ["src/app.ts:1: needle", "src/keep.log:1: needle"])
      // Paths named explicitly are searched even when ignored or skipped.
      assert.deepStrictEqual(yield* matches({ pattern: "needle", path: "node_modules" }), ["node_modules/pkg/index.js:1: needle"])
      assert.deepStrictEqual(yield* matches({ pattern: "needle", path: "dist" }), ["dist/out.js:1: needle"])
      assert.deepStrictEqual(yield* matches({ pattern: "needle", path: "src/debug.log" }), ["src/debug.log:1: needle"])
    }))

  it.effect("skips binary files and files over 1 MB, and says so", () =>
    Effect.gen(function*() {
      const { files, run } = yield* setup
      files({
        "a.txt": "needle\n",
        "blob.bin": new Uint8Array([110, 101, 101, 100, 108, 101, 0, 1, 2]),
        "big.txt": `${"needle\n".repeat(200_000)}`
      })
      const out = yield* run({ pattern: "needle" })
      assert.strictEqual(out.content, "a.txt:1: needle\n\n[1 match in 1 file. Skipped 1 file over 1 MB and 1 binary file.]")
      const single = yield* run({ pattern: "needle", path: "blob.bin" })
      assert.deepStrictEqual(single, { ok: true, content: "blob.bin is a binary file and was not searched.", details: undefined })
    }))

  it.effect("shows at most 100 matches and counts the rest", () =>
    Effect.gen(function*() {
      const { files, run } = yield* setup
      const tree: Record<string, string> = {}
      for (let i = 0; i < 650; i++) tree[`d${i % 7}/f${String(i).padStart(3, "0")}.txt`] = `needle ${i}\nhay\n`
      files(tree)
      const out = yield* run({ pattern: "needle" })
      assert.isTrue(out.ok)
      const [body, summary] = out.content.split("\n\n[")
      assert.strictEqual(body!.split("\n").length, MAX_MATCHES)
      assert.strictEqual(summary, `650 matches in 650 files; ${650 - MAX_MATCHES} more matches not shown; narrow the pattern, path or glob.]`)
    }))

  it.effect("caps output at about 30 KB and cuts long lines around the match", () =>
    Effect.gen(function*() {
      const { files, run } = yield* setup
      files({ "long.txt": Array.from({ length: 99 }, (_, i) => `${"x".repeat(1000)}needle${i}${"y".repeat(1000)}`).join("\n") })
      const out = yield* run({ pattern: "needle" })
      const [body, summary] = out.content.split("\n\n[")
      const lines = body!.split("\n")
      assert.isAtMost(body!.length, MAX_OUTPUT_BYTES)
      assert.isBelow(lines.length, 99)
      assert.match(summary!, /^99 matches in 1 file; \d+ more matches not shown \(output capped at 30 KB\)/)
      for (const line of lines) {
        assert.include(line, "needle")
        assert.isAtMost(line.length, "long.txt:99: ".length + MAX_LINE_CHARS + 2)
      }
    }))

  it.effect("refuses paths outside the workspace and reports missing paths", () =>
    Effect.gen(function*() {
      const { run } = yield* setup
      const outside = yield* run({ pattern: "x", path: ".." })
      assert.isFalse(outside.ok)
      assert.match(outside.content, /outside the workspace/)
      assert.deepStrictEqual(yield* run({ pattern: "x", path: "nope" }), { ok: false, content: "Path not found: nope", details: undefined })
    }))
})
