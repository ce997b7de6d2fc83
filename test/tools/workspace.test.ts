/**
 * Workspace confinement on a real file system: relative and absolute paths, `..`, symlinks that
 * leave the roots, symlink loops, paths that do not exist yet, additional roots.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fc from "fast-check"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, relative, resolve as resolvePath, sep } from "node:path"
import * as Workspace from "../../src/tools/Workspace.ts"
import * as TempDir from "../support/TempDir.ts"

/** A workspace `ws` and a sibling directory `outside`, both inside one temp dir. */
const setup = Effect.gen(function*() {
  const base = yield* TempDir.make()
  const ws = join(base, "ws")
  const outside = join(base, "outside")
  const extra = join(base, "extra")
  for (const dir of [ws, outside, extra, join(ws, "src")]) mkdirSync(dir)
  writeFileSync(join(ws, "a.txt"), "a")
  writeFileSync(join(ws, "src", "b.ts"), "b")
  writeFileSync(join(outside, "secret.txt"), "s")
  writeFileSync(join(extra, "e.txt"), "e")
  return { base, ws, outside, extra, roots: { cwd: ws, roots: [ws] } }
})

const resolve = (input: string, roots: Workspace.Roots) =>
  Workspace.resolve(input, roots).pipe(Effect.result, Effect.provide(TempDir.platform))

const ok = (input: string, roots: Workspace.Roots) =>
  Effect.flatMap(resolve(input, roots), (r) => r._tag === "Success" ? Effect.succeed(r.success) : Effect.die(new Error(`refused ${input}: ${r.failure}`)))

const refused = (input: string, roots: Workspace.Roots) =>
  Effect.flatMap(resolve(input, roots), (r) => r._tag === "Failure" ? Effect.succeed(r.failure) : Effect.die(new Error(`accepted ${input} as ${r.success}`)))

describe("Workspace.resolve", () => {
  it.effect("a relative path resolves against the cwd", () =>
    Effect.gen(function*() {
      const { ws, roots } = yield* setup
      assert.strictEqual(yield* ok("a.txt", roots), join(ws, "a.txt"))
      assert.strictEqual(yield* ok("src/b.ts", roots), join(ws, "src", "b.ts"))
      assert.strictEqual(yield* ok("./src/../a.txt", roots), join(ws, "a.txt"))
      assert.strictEqual(yield* ok(".", roots), ws)
    }))

  it.effect("an absolute path inside the workspace is accepted", () =>
    Effect.gen(function*() {
      const { ws, roots } = yield* setup
      assert.strictEqual(yield* ok(join(ws, "src", "b.ts"), roots), join(ws, "src", "b.ts"))
    }))

  it.effect("a relative path inside a subdirectory cwd may climb back to the root, not above it", () =>
    Effect.gen(function*() {
      const { ws } = yield* setup
      const roots = { cwd: join(ws, "src"), roots: [ws] }
      assert.strictEqual(yield* ok("../a.txt", roots), join(ws, "a.txt"))
      assert.match(yield* refused("../../outside/secret.txt", roots), /outside the workspace/)
    }))

  it.effect("`..` that escapes the root is refused with a message naming the input", () =>
    Effect.gen(function*() {
      const { roots } = yield* setup
      const message = yield* refused("../outside/secret.txt", roots)
      assert.match(message, /^Path "\.\.\/outside\/secret\.txt" is outside the workspace/)
      assert.match(yield* refused("src/../../outside", roots), /outside the workspace/)
      assert.match(yield* refused("..", roots), /outside the workspace/)
    }))

  it.effect("an absolute path outside is refused, including a sibling that shares the root's prefix", () =>
    Effect.gen(function*() {
      const { base, outside, roots } = yield* setup
      mkdirSync(join(base, "ws2"))
      assert.match(yield* refused(join(outside, "secret.txt"), roots), /outside the workspace/)
      assert.match(yield* refused(join(base, "ws2", "x"), roots), /outside the workspace/)
      assert.match(yield* refused("/", roots), /outside the workspace/)
    }))

  it.effect("a symlink inside that points outside is refused, also for paths below it", () =>
    Effect.gen(function*() {
      const { ws, outside, roots } = yield* setup
      symlinkSync(outside, join(ws, "escape"))
      symlinkSync(join(outside, "secret.txt"), join(ws, "secret-link"))
      assert.match(yield* refused("escape/secret.txt", roots), /outside the workspace/)
      assert.match(yield* refused("escape/not-yet/new.txt", roots), /outside the workspace/)
      assert.match(yield* refused("secret-link", roots), /outside the workspace/)
    }))

  it.effect("a symlink that stays inside resolves to its target", () =>
    Effect.gen(function*() {
      const { ws, roots } = yield* setup
      symlinkSync(join(ws, "src"), join(ws, "alias"))
      assert.strictEqual(yield* ok("alias/b.ts", roots), join(ws, "src", "b.ts"))
    }))

  it.effect("a symlink loop is refused", () =>
    Effect.gen(function*() {
      const { ws, roots } = yield* setup
      symlinkSync(join(ws, "loop-b"), join(ws, "loop-a"))
      symlinkSync(join(ws, "loop-a"), join(ws, "loop-b"))
      const message = yield* refused("loop-a", roots)
      assert.include(message, "loop-a")
    }))

  // The platform reports ELOOP as a `BadResource` error; the model is told the path is a symlink
  // loop, not `Cannot resolve …: BadResource`.
  it.effect("a symlink loop is refused with a message that says so", () =>
    Effect.gen(function*() {
      const { ws, roots } = yield* setup
      symlinkSync(join(ws, "loop-b"), join(ws, "loop-a"))
      symlinkSync(join(ws, "loop-a"), join(ws, "loop-b"))
      assert.match(yield* refused("loop-a", roots), /symlink loop/)
    }))

  // A path outside is refused as outside whatever stands there: a file where a folder would be
  // (`/tmp/a/a` with `/tmp/a` a file) once failed as `Cannot resolve …: BadResource`, which told
  // the model what exists outside and named an internal error. Inside, the failure says what is wrong.
  it.effect("a path outside through a file is refused as outside; inside, the message says a part is a file", () =>
    Effect.gen(function*() {
      const { ws, outside, roots } = yield* setup
      writeFileSync(join(outside, "plain"), "x")
      assert.match(yield* refused(join(outside, "plain", "child"), roots), /outside the workspace/)
      writeFileSync(join(ws, "plain"), "x")
      const inside = yield* refused("plain/child", roots)
      assert.match(inside, /a part of it is a file, not a folder/)
      assert.notInclude(inside, "BadResource")
    }))

  // A dangling symlink is judged by where it points, not as a not-yet-existing file inside the
  // workspace: a tool that creates the file (write) would follow the link outside the roots.
  it.effect("a dangling symlink that points outside is refused", () =>
    Effect.gen(function*() {
      const { ws, outside, roots } = yield* setup
      symlinkSync(join(outside, "not-yet.txt"), join(ws, "dangling"))
      assert.match(yield* refused("dangling", roots), /outside the workspace/)
    }))

  // Only a `..` segment leaves the root: a first segment that merely begins with two dots is inside.
  it.effect("a file whose name starts with `..` inside the workspace is accepted", () =>
    Effect.gen(function*() {
      const { ws, roots } = yield* setup
      writeFileSync(join(ws, "..notes"), "x")
      assert.strictEqual(yield* ok("..notes", roots), join(ws, "..notes"))
    }))

  it.effect("a not-yet-existing nested path inside is accepted as it will be", () =>
    Effect.gen(function*() {
      const { ws, roots } = yield* setup
      assert.strictEqual(yield* ok("new/deeper/file.txt", roots), join(ws, "new", "deeper", "file.txt"))
      assert.strictEqual(yield* ok(join(ws, "src", "new.ts"), roots), join(ws, "src", "new.ts"))
    }))

  it.effect("additional roots are accepted; everything else stays refused", () =>
    Effect.gen(function*() {
      const { ws, extra, outside } = yield* setup
      const roots = { cwd: ws, roots: [ws, extra] }
      assert.strictEqual(yield* ok(join(extra, "e.txt"), roots), join(extra, "e.txt"))
      assert.strictEqual(yield* ok("../extra/e.txt", roots), join(extra, "e.txt"))
      assert.strictEqual(yield* ok("a.txt", roots), join(ws, "a.txt"))
      const message = yield* refused(join(outside, "secret.txt"), roots)
      assert.include(message, ws)
      assert.include(message, extra)
    }))

  it.effect("empty paths and NUL bytes are refused", () =>
    Effect.gen(function*() {
      const { roots } = yield* setup
      assert.strictEqual(yield* refused("", roots), "Path is empty")
      assert.strictEqual(yield* refused("a\0b", roots), "Path contains a NUL byte")
    }))

  it("resolve succeeds iff the normalized path stays inside the root (property)", async () => {
    const base = realpathSync(mkdtempSync(join(tmpdir(), "skein-ws-prop-")))
    const root = join(base, "root")
    mkdirSync(join(root, "a", "b"), { recursive: true })
    writeFileSync(join(root, "a", "f.txt"), "f")
    try {
      const segment = fc.constantFrom("a", "b", "c", "f.txt", ".", "..")
      await fc.assert(
        fc.asyncProperty(fc.array(segment, { minLength: 1, maxLength: 7 }), async (segments) => {
          const input = segments.join("/")
          // The expected answer from the segments alone: leaving the root once is final, since no
          // segment names the way back in.
          let depth = 0
          let inside = true
          for (const s of segments) {
            if (s === "..") depth--
            else if (s !== ".") depth++
            if (depth < 0) inside = false
          }
          // `f.txt/x` names a child of a file: not a path that can exist, so not part of the property.
          const lexical = resolvePath(root, input)
          const rel = relative(root, lexical)
          if (rel.split(sep).some((s, i, all) => s === "f.txt" && i < all.length - 1)) return
          const result = await Effect.runPromise(resolve(input, { cwd: root, roots: [root] }))
          if (inside) {
            assert.strictEqual(result._tag, "Success", `${input} should be accepted`)
            if (result._tag === "Success") assert.strictEqual(result.success, lexical)
          } else {
            assert.strictEqual(result._tag, "Failure", `${input} should be refused`)
            if (result._tag === "Failure") assert.match(result.failure, /outside the workspace/)
          }
        }),
        { numRuns: 300 }
      )
    } finally {
      rmSync(base, { recursive: true, force: true })
    }
  })
})
