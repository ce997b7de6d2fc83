/**
 * Workspace confinement: every path a tool touches resolves against the
 * session cwd, then through `realpath`, and must land inside one of the
 * session's roots (the cwd and its additional directories). `..`, absolute
 * paths elsewhere and symlinks that leave the roots are refused.
 */
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Path from "effect/Path"

export interface Roots {
  readonly cwd: string
  readonly roots: ReadonlyArray<string>
}

const isInside = (path: Path.Path, root: string, candidate: string): boolean => {
  const rel = path.relative(root, candidate)
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel))
}

const MAX_LINKS = 40

/**
 * The real path of `target`, or of its nearest existing ancestor joined with
 * the rest. A dangling symlink on the way is followed to where it points (a
 * write through it would land there), so a link to a missing file outside the
 * roots is judged by its target.
 */
const realPathOrAncestor = Effect.fnUntraced(function*(target: string) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const rest: Array<string> = []
  let current = target
  let links = 0
  for (;;) {
    const real = yield* fs.realPath(current).pipe(
      Effect.map((p) => ({ _tag: "found" as const, path: p })),
      Effect.catch((error) => {
        const code = error.reason._tag
        const cause = (error.reason as { readonly cause?: { readonly code?: unknown } }).cause
        const loop = cause?.code === "ELOOP"
        return Effect.succeed(
          code === "NotFound"
            ? { _tag: "missing" as const }
            : loop
            ? { _tag: "loop" as const }
            : { _tag: "error" as const, code: cause?.code === "ENOTDIR" ? "a part of it is a file, not a folder" : cause?.code === "EACCES" ? "permission denied" : String(cause?.code ?? code) }
        )
      })
    )
    if (real._tag === "found") return rest.length === 0 ? real.path : path.join(real.path, ...[...rest].reverse())
    if (real._tag === "loop") return yield* Effect.fail(`Path ${JSON.stringify(target)} is a symlink loop`)
    if (real._tag === "error") return yield* Effect.fail(`Cannot resolve ${JSON.stringify(target)}: ${real.code}`)
    const link = yield* fs.readLink(current).pipe(Effect.option)
    if (link._tag === "Some") {
      if (++links > MAX_LINKS) return yield* Effect.fail(`Path ${JSON.stringify(target)} is a symlink loop`)
      current = path.resolve(path.dirname(current), link.value)
      continue
    }
    const parent = path.dirname(current)
    if (parent === current) return path.join(current, ...[...rest].reverse())
    rest.push(path.basename(current))
    current = parent
  }
})

/**
 * Resolves a tool's path argument to an absolute real path inside the roots,
 * or fails with a message for the model.
 */
export const resolve = Effect.fnUntraced(function*(input: string, roots: Roots) {
  const path = yield* Path.Path
  const fs = yield* FileSystem.FileSystem
  if (input.length === 0) return yield* Effect.fail("Path is empty")
  if (input.includes("\0")) return yield* Effect.fail("Path contains a NUL byte")
  const absolute = path.resolve(roots.cwd, input)
  const realRoots = yield* Effect.forEach(roots.roots, (root) => fs.realPath(root).pipe(Effect.orElseSucceed(() => root)))
  const outside = Effect.fail(
    `Path ${JSON.stringify(input)} is outside the workspace (${roots.roots.join(", ")}); only files under the session's directories can be used`
  )
  // A path that names no place inside the roots is refused as outside whatever the disk holds
  // there: how resolving it failed (a file where a folder would be) says nothing about the
  // workspace, and would tell the model what exists outside it.
  const named = (candidate: string) => [...roots.roots, ...realRoots].some((root) => isInside(path, root, candidate))
  const real = yield* realPathOrAncestor(absolute).pipe(Effect.catch((message) => named(absolute) ? Effect.fail(message) : outside))
  for (const realRoot of realRoots) if (isInside(path, realRoot, real)) return real
  return yield* outside
})

/** A path as shown to people: relative to the cwd when inside it. */
export const display = (path: Path.Path, cwd: string, absolute: string): string => {
  const rel = path.relative(cwd, absolute)
  return rel === "" ? "." : rel === ".." || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel) ? absolute : rel
}
