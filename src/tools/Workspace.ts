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
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel))
}

/** The real path of `target`, or of its nearest existing ancestor joined with the rest. */
const realPathOrAncestor = Effect.fnUntraced(function*(target: string) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const rest: Array<string> = []
  let current = target
  for (;;) {
    const real = yield* fs.realPath(current).pipe(
      Effect.map((p) => ({ _tag: "found" as const, path: p })),
      Effect.catch((error) => {
        const code = error.reason._tag
        return Effect.succeed(code === "NotFound" ? { _tag: "missing" as const } : { _tag: "error" as const, code, message: error.message })
      })
    )
    if (real._tag === "found") return rest.length === 0 ? real.path : path.join(real.path, ...rest.reverse())
    if (real._tag === "error") {
      return yield* Effect.fail(
        /ELOOP/.test(real.message) ? `Path ${JSON.stringify(target)} is a symlink loop` : `Cannot resolve ${JSON.stringify(target)}: ${real.code}`
      )
    }
    const parent = path.dirname(current)
    if (parent === current) return target
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
  const real = yield* realPathOrAncestor(absolute)
  for (const root of roots.roots) {
    const realRoot = yield* fs.realPath(root).pipe(Effect.orElseSucceed(() => root))
    if (isInside(path, realRoot, real)) return real
  }
  return yield* Effect.fail(
    `Path ${JSON.stringify(input)} is outside the workspace (${roots.roots.join(", ")}); only files under the session's directories can be used`
  )
})

/** A path as shown to people: relative to the cwd when inside it. */
export const display = (path: Path.Path, cwd: string, absolute: string): string => {
  const rel = path.relative(cwd, absolute)
  return rel === "" ? "." : rel.startsWith("..") || path.isAbsolute(rel) ? absolute : rel
}
