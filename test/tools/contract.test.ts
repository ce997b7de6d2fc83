/**
 * The Tool contract, for every built-in tool: arguments named as DESIGN.md names them, bad
 * arguments of any shape are tool errors (never a throw or a defect), results have the
 * `{ok, content, details?}` shape with details that validate against `ToolDetails`, and the
 * limits the descriptions promise hold on a tree of more than 600 files.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as fc from "fast-check"
import { mkdirSync, writeFileSync } from "node:fs"
import { dirname, isAbsolute, join } from "node:path"
import { Location, ToolDetails, ToolKind } from "../../src/Vocabulary.ts"
import { edit } from "../../src/tools/edit.ts"
import { glob, MAX_RESULTS } from "../../src/tools/glob.ts"
import { grep, MAX_MATCHES, MAX_OUTPUT_BYTES } from "../../src/tools/grep.ts"
import { DEFAULT_LIMIT, read } from "../../src/tools/read.ts"
import { MAX_BYTES } from "../../src/tools/TextWindow.ts"
import type * as Edges from "../../src/tools/Edges.ts"
import * as Tool from "../../src/tools/Tool.ts"
import { bash_output, kill_shell } from "../../src/tools/background.ts"
import * as Background from "../../src/tools/process/Background.ts"
import { update_plan } from "../../src/tools/update_plan.ts"
import { write } from "../../src/tools/write.ts"
import * as TempDir from "../support/TempDir.ts"
import * as ToolServices from "../support/ToolServices.ts"

const tools: ReadonlyArray<Tool.Tool<any, Edges.Services>> = [read, write, edit, grep, glob, update_plan, bash_output, kill_shell]

/** The arguments each tool takes (DESIGN.md), required ones first. */
const signatures: Record<string, { readonly required: ReadonlyArray<string>; readonly optional: ReadonlyArray<string> }> = {
  read: { required: ["path"], optional: ["offset", "limit"] },
  write: { required: ["path", "content"], optional: [] },
  edit: { required: ["path", "edits"], optional: [] },
  grep: { required: ["pattern"], optional: ["path", "glob"] },
  glob: { required: ["pattern"], optional: ["path"] },
  update_plan: { required: ["entries"], optional: [] },
  bash_output: { required: ["id"], optional: ["filter"] },
  kill_shell: { required: ["id"], optional: [] }
}

/** Shapes no tool accepts. */
const badForAll: ReadonlyArray<unknown> = [
  undefined,
  null,
  "src/a.ts",
  "{\"path\":\"a.ts\"}",
  42,
  true,
  [],
  [{ path: "a.ts" }],
  {},
  { path: 5, pattern: 5, entries: 5, content: 5, edits: 5 },
  { path: null, pattern: null, entries: null }
]

/** Shapes that are almost right for one tool. */
const badFor: Record<string, ReadonlyArray<unknown>> = {
  read: [{ path: "a.ts", offset: 0 }, { path: "a.ts", offset: 1.5 }, { path: "a.ts", limit: "10" }, { path: ["a.ts"] }],
  write: [{ path: "a.ts" }, { content: "x" }, { path: "a.ts", content: null }, { path: "a.ts", content: ["x"] }],
  edit: [
    { path: "a.ts" },
    { path: "a.ts", edits: "x" },
    { path: "a.ts", edits: [] },
    { path: "a.ts", edits: [{ oldText: "a" }] },
    { path: "a.ts", edits: [{ oldText: 1, newText: "b" }] },
    { path: "a.ts", edits: { oldText: "a", newText: "b" } }
  ],
  grep: [{ path: "." }, { pattern: "x", path: 3 }, { pattern: "x", glob: false }, { pattern: /x/ }],
  glob: [{ path: "." }, { pattern: "*", path: {} }, { pattern: ["*"] }],
  update_plan: [
    { entries: "x" },
    { entries: [{}] },
    { entries: [{ content: "a", status: "done", priority: "high" }] },
    { entries: [{ content: "a", status: "pending", priority: "urgent" }] },
    { entries: [{ content: 1, status: "pending", priority: "low" }] }
  ],
  bash_output: [{ id: 1 }, { filter: "x" }, { id: "bg1", filter: 3 }, { id: ["bg1"] }],
  kill_shell: [{ id: null }, { id: ["bg1"] }, { id: { id: "bg1" } }]
}

const isDetails = Schema.is(ToolDetails)
const isLocation = Schema.is(Location)
const isKind = Schema.is(ToolKind)

const setup = Effect.gen(function*() {
  const base = yield* TempDir.make()
  const cwd = join(base, "ws")
  mkdirSync(cwd)
  const plans: Array<unknown> = []
  const ctx: Tool.ToolContext = {
    sessionId: "s-1",
    toolCallId: "c-1",
    cwd,
    roots: [cwd]
  }
  const files = (entries: Record<string, string>) => {
    for (const [name, content] of Object.entries(entries)) {
      mkdirSync(dirname(join(cwd, name)), { recursive: true })
      writeFileSync(join(cwd, name), content)
    }
  }
  // The session's background commands (none started): bash_output and kill_shell reach it.
  const shells = yield* Background.make()
  const run = (tool: Tool.Tool<any, Edges.Services>, args: unknown) =>
    Tool.run(tool, args, ctx).pipe(ToolServices.provide({ plan: (entries) => Effect.sync(() => void plans.push(entries)) }), Effect.provide(TempDir.platform), Effect.provideService(Background.Current, shells))
  return { cwd, ctx, files, run, plans }
})

/** The result shape every tool call has, whatever its arguments. */
const assertShape = (out: Tool.ToolOutput, label: string) => {
  assert.deepStrictEqual(Object.keys(out).sort(), ["content", "details", "ok"], label)
  assert.isBoolean(out.ok, label)
  assert.isString(out.content, label)
  assert.isAbove(out.content.length, 0, label)
  if (out.details !== undefined) assert.isTrue(isDetails(out.details), `${label}: details validate`)
}

describe("tool contract", () => {
  it("every tool declares the arguments DESIGN.md names, a kind, and a description stating its limits", () => {
    assert.deepStrictEqual(tools.map((t) => t.name), Object.keys(signatures))
    for (const tool of tools) {
      const schema = Tool.jsonSchema(tool) as { type: string; properties: Record<string, unknown>; required?: Array<string> }
      const { optional, required } = signatures[tool.name]!
      assert.strictEqual(schema.type, "object", tool.name)
      assert.deepStrictEqual(Object.keys(schema.properties).sort(), [...required, ...optional].sort(), tool.name)
      assert.deepStrictEqual([...(schema.required ?? [])].sort(), [...required].sort(), tool.name)
      assert.isTrue(isKind(tool.kind), tool.name)
      assert.isAbove(tool.description.length, 80, tool.name)
      assert.strictEqual(tool.mutating, tool.name === "write" || tool.name === "edit", tool.name)
      assert.strictEqual(tool.scope !== undefined, tool.mutating, `${tool.name}: mutating tools scope their permissions`)
    }
    assert.include(read.description, String(DEFAULT_LIMIT))
    assert.include(grep.description, String(MAX_MATCHES))
    assert.include(glob.description, String(MAX_RESULTS))
    assert.include(edit.description, "exactly once")
    assert.include(write.description, "atomic")
  })

  it.effect("bad arguments of every shape are tool errors naming the tool", () =>
    Effect.gen(function*() {
      const { plans, run } = yield* setup
      for (const tool of tools) {
        for (const raw of [...badForAll, ...badFor[tool.name]!]) {
          const label = `${tool.name}(${JSON.stringify(raw)})`
          const out = yield* run(tool, raw)
          assertShape(out, label)
          assert.isFalse(out.ok, label)
          assert.match(out.content, new RegExp(`^Invalid arguments for ${tool.name}: `), label)
        }
      }
      assert.deepStrictEqual(plans, [])
    }))

  it.effect("arbitrary arguments never throw or defect; title, locations and scope work on any valid ones", () =>
    Effect.gen(function*() {
      const { cwd, ctx, files, run } = yield* setup
      files({ "a.ts": "const a = 1\n", "src/b.ts": "export {}\n" })
      const path = fc.oneof(fc.constantFrom(".", "a.ts", "src", "src/b.ts", "..", "/", "new/x.txt", "a.ts/x", "../ws/a.ts", "\0", ""), fc.string())
      const pattern = fc.oneof(fc.constantFrom("a", "(", "[", "*", "**/*", "(?i)A", "\\", "", "src/*.ts", "/**"), fc.string())
      // Mostly well-typed arguments with awkward values, so calls get past decoding into execute.
      const plausible = fc.record({
        path,
        content: fc.string(),
        edits: fc.array(fc.record({ oldText: fc.oneof(fc.constantFrom("a", "const", "", "\n"), fc.string()), newText: fc.string() }), { maxLength: 3 }),
        pattern,
        glob: pattern,
        entries: fc.array(
          fc.record({
            content: fc.string(),
            status: fc.constantFrom("pending", "in_progress", "completed"),
            priority: fc.constantFrom("high", "medium", "low")
          }),
          { maxLength: 4 }
        ),
        id: fc.oneof(fc.constantFrom("bg1", "bg0", "", "bg99999999999999999999", "x".repeat(100)), fc.string()),
        filter: pattern,
        offset: fc.integer({ min: -1, max: 5 }),
        limit: fc.integer({ min: -1, max: 5 })
      }, { requiredKeys: [] })
      const key = fc.constantFrom("path", "content", "edits", "pattern", "glob", "entries", "offset", "limit", "id", "filter")
      const samples = fc.sample(fc.oneof(fc.anything(), fc.dictionary(key, fc.anything(), { maxKeys: 4 }), plausible), { numRuns: 200, seed: 20240601 })
      const valid = new Map<string, number>()
      for (const tool of tools) {
        for (const raw of samples) {
          const label = `${tool.name}(${String(JSON.stringify(raw))?.slice(0, 200)})`
          const out = yield* run(tool, raw)
          assertShape(out, label)
          assert.notMatch(out.content, /crashed/, label)
          const decoded = yield* Effect.result(Tool.decodeArgs(tool, raw))
          if (decoded._tag === "Success") {
            valid.set(tool.name, (valid.get(tool.name) ?? 0) + 1)
            assert.isString(tool.title(decoded.success), label)
            for (const location of tool.locations(decoded.success, cwd)) {
              assert.isTrue(isLocation(location), label)
              assert.isTrue(isAbsolute(location.path), label)
            }
            const scope = tool.scope?.(decoded.success, ctx.cwd)
            if (scope !== undefined) assert.isTrue(isAbsolute(scope.value), label)
          } else {
            assert.isFalse(out.ok, label)
          }
        }
      }
      // The samples reach past argument decoding for every tool, so execute itself is exercised.
      for (const tool of tools) assert.isAtLeast(valid.get(tool.name) ?? 0, 20, `${tool.name}: valid samples`)
    }), 60_000)

  it.effect("the limits hold on a tree of more than 600 files", () =>
    Effect.gen(function*() {
      const { files, run } = yield* setup
      const tree: Record<string, string> = {}
      for (let i = 0; i < 640; i++) tree[`pkg${i % 8}/dir${i % 5}/file${i}.txt`] = `${"needle ".repeat(60)}\n`.repeat(3)
      tree["big.txt"] = Array.from({ length: DEFAULT_LIMIT + 500 }, (_, i) => `line ${i + 1}`).join("\n")
      files(tree)

      const found = yield* run(grep, { pattern: "needle" })
      assert.isTrue(found.ok)
      const [matches, grepSummary] = found.content.split("\n\n[")
      assert.isAtMost(matches!.split("\n").length, MAX_MATCHES)
      assert.isAtMost(matches!.length, MAX_OUTPUT_BYTES)
      assert.match(grepSummary!, /^1920 matches in 640 files; \d+ more matches not shown/)

      const listed = yield* run(glob, { pattern: "**/*.txt" })
      const [paths, globSummary] = listed.content.split("\n\n[")
      assert.strictEqual(paths!.split("\n").length, MAX_RESULTS)
      assert.match(globSummary!, new RegExp(`^641 files match; the first ${MAX_RESULTS} are shown, ${641 - MAX_RESULTS} more not shown`))

      const window = yield* run(read, { path: "big.txt" })
      const [lines, readSummary] = window.content.split("\n\n[")
      assert.strictEqual(lines!.split("\n").length, DEFAULT_LIMIT)
      assert.isAtMost(lines!.length, MAX_BYTES + DEFAULT_LIMIT * 8)
      assert.match(readSummary!, new RegExp(`continue with offset=${DEFAULT_LIMIT + 1}`, "i"))
    }))

  it.effect("results of successful mutating calls carry diffs that validate", () =>
    Effect.gen(function*() {
      const { cwd, run } = yield* setup
      const created = yield* run(write, { path: "n/new.txt", content: "a\n" })
      assertShape(created, "write")
      assert.deepStrictEqual(created.details, { diff: [{ path: join(cwd, "n/new.txt"), oldText: null, newText: "a\n" }] })
      const edited = yield* run(edit, { path: "n/new.txt", edits: [{ oldText: "a", newText: "b" }] })
      assertShape(edited, "edit")
      assert.deepStrictEqual(edited.details, { diff: [{ path: join(cwd, "n/new.txt"), oldText: "a\n", newText: "b\n" }] })
    }))
})
