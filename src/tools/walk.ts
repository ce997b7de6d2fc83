/**
 * Walking a directory tree the way a developer expects a search to: files
 * under a base directory, in name order, minus what `.gitignore` files exclude
 * (those in the tree and those above it up to the repository root), never
 * inside `.git/` or `node_modules/` unless the base is already inside one.
 * Symbolic links are not followed, so a walk never leaves the workspace: each
 * directory is listed, and each `.gitignore` read, through a descriptor that
 * `SafeFs` opened without following links and verified inside the roots (a
 * directory swapped for a symlink after it was listed is not entered).
 *
 * The walk is a lazy Stream: a consumer that has seen enough stops it and no
 * further directory is read. It never fails: unreadable directories and
 * `.gitignore` files are skipped.
 */
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Stream from "effect/Stream"
import ignore from "ignore"
import * as SafeFs from "../fs/SafeFs.ts"
import type * as Workspace from "./Workspace.ts"

interface Entry {
  /** Absolute path of the file. */
  readonly absolute: string
  /** Path relative to the walk's base, `/`-separated. */
  readonly relative: string
}

interface Options {
  /** Whether to enter a directory (its path relative to the base); pruning only, ignore rules still apply. */
  readonly descend?: ((relativeDir: string) => boolean) | undefined
}

/** Directory names a walk never enters unless its base is inside one. */
const SKIPPED = [".git", "node_modules"]

/** The rules of one `.gitignore`, for the paths under `dir` (relative to the walk's anchor, "" for the anchor). */
interface Layer {
  readonly dir: string
  readonly rules: ignore.Ignore
}

interface Pending {
  readonly absolute: string
  /** Relative to the base ("" for the base). */
  readonly relative: string
  readonly layers: ReadonlyArray<Layer>
}

const join = (a: string, b: string) => (a === "" ? b : b === "" ? a : `${a}/${b}`)

/** Whether the deepest `.gitignore` with an opinion on `path` (relative to the anchor) ignores it. */
const isIgnored = (layers: ReadonlyArray<Layer>, path: string): boolean => {
  let ignored = false
  for (const layer of layers) {
    if (layer.dir !== "" && !path.startsWith(`${layer.dir}/`)) continue
    const result = layer.rules.test(layer.dir === "" ? path : path.slice(layer.dir.length + 1))
    if (result.ignored) ignored = true
    else if (result.unignored) ignored = false
  }
  return ignored
}

/** `.gitignore` files larger than this are not read. */
const MAX_RULES_BYTES = 1024 * 1024

const readRules = (file: string, roots: SafeFs.RealRoots) =>
  SafeFs.readFileBounded(file, roots, MAX_RULES_BYTES).pipe(
    Effect.map((bytes) => bytes === undefined ? Option.none<ignore.Ignore>() : Option.some(ignore({ ignorecase: false }).add(new TextDecoder().decode(bytes)))),
    Effect.orElseSucceed(() => Option.none<ignore.Ignore>())
  )

/**
 * Where ignore rules start for a walk of `base`: the nearest directory at or
 * above it that holds `.git`, else the workspace root that contains it; with
 * the `.gitignore` layers of the directories strictly above `base`.
 */
const anchorOf = Effect.fnUntraced(function*(base: string, realRoots: SafeFs.RealRoots) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const inside = (root: string) => {
    const rel = path.relative(root, base)
    return rel === "" || (rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel))
  }
  const root = realRoots.filter(inside).sort((a, b) => b.length - a.length)[0] ?? base
  const chain = [base]
  let current = base
  for (;;) {
    const hasGit = yield* fs.exists(path.join(current, ".git")).pipe(Effect.orElseSucceed(() => false))
    if (hasGit || current === root) break
    const parent = path.dirname(current)
    if (parent === current) break
    chain.push(parent)
    current = parent
  }
  const anchor = current
  const layers: Array<Layer> = []
  for (const dir of chain.slice(1).reverse()) {
    const rules = yield* readRules(path.join(dir, ".gitignore"), realRoots)
    if (Option.isSome(rules)) layers.push({ dir: path.relative(anchor, dir).split(path.sep).join("/"), rules: rules.value })
  }
  const prefix = path.relative(anchor, base).split(path.sep).join("/")
  // A base that the rules above it ignore was named on purpose: search it as if those rules were not there.
  const effective = prefix !== "" && isIgnored(layers, `${prefix}/`) ? [] : layers
  const skipped = new Set(SKIPPED.filter((name) => !path.relative(root, base).split(path.sep).includes(name)))
  return { prefix, layers: effective, skipped }
})

/**
 * The files under the directory `base` (an absolute real path, already
 * confined by `Workspace.resolve`), lazily, each directory's files in name
 * order before its subdirectories.
 */
export const files = (
  base: string,
  roots: Workspace.Roots,
  options: Options = {}
): Stream.Stream<Entry, never, FileSystem.FileSystem | Path.Path> =>
  Stream.unwrap(
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const realRoots = yield* SafeFs.realRoots(roots.roots)
      const { prefix, layers, skipped } = yield* anchorOf(base, realRoots)

      // The stack of directories still to read; created per run, so mutating it is local to this walk.
      const step = Effect.fnUntraced(function*(stack: Array<Pending>) {
        const dir = stack.pop()!
        const entries = [...(yield* SafeFs.listDirectory(dir.absolute, realRoots).pipe(Effect.orElseSucceed(() => [])))]
          .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
        let dirLayers = dir.layers
        if (entries.some((e) => e.name === ".gitignore" && e.type === "File")) {
          const rules = yield* readRules(path.join(dir.absolute, ".gitignore"), realRoots)
          if (Option.isSome(rules)) dirLayers = [...dirLayers, { dir: join(prefix, dir.relative), rules: rules.value }]
        }
        const found: Array<Entry> = []
        const subdirs: Array<Pending> = []
        for (const entry of entries) {
          const relative = join(dir.relative, entry.name)
          const absolute = path.join(dir.absolute, entry.name)
          let type = entry.type
          if (type === "Unknown") {
            type = yield* fs.lstat(absolute).pipe(Effect.map((info) => info.type), Effect.orElseSucceed(() => "Unknown" as const))
          }
          if (type === "Directory") {
            if (skipped.has(entry.name)) continue
            if (isIgnored(dirLayers, `${join(prefix, relative)}/`)) continue
            if (options.descend && !options.descend(relative)) continue
            subdirs.push({ absolute, relative, layers: dirLayers })
          } else if (type === "File") {
            if (isIgnored(dirLayers, join(prefix, relative))) continue
            found.push({ absolute, relative })
          }
        }
        for (let i = subdirs.length - 1; i >= 0; i--) stack.push(subdirs[i]!)
        return [found, stack.length > 0 ? Option.some(stack) : Option.none()] as const
      })

      return Stream.paginate<Array<Pending>, Entry, never, FileSystem.FileSystem | Path.Path>(
        [{ absolute: base, relative: "", layers }],
        step
      )
    })
  )
