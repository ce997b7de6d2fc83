/**
 * A session's shadow repository: `$SKEIN_HOME/checkpoints/<sessionId>.git`, a bare git
 * repository that holds snapshots of the session's roots, never touching the user's own `.git`.
 *
 * - A snapshot adds each root's files (tracked and untracked; what the root's `.gitignore`
 *   files, the user's repository's `info/exclude` and the unanchored patterns of the
 *   `.gitignore` files above the root leave out stays out) to an index of its own for that
 *   root (`index-<i>`: its stat cache makes a repeat snapshot hash only what changed, and git
 *   stores each distinct content once), writes its tree, and commits a tree that holds root
 *   `i` as the folder `i`. A ref (`refs/skein/<name>`) keeps it. The top tree, the commit and
 *   the ref are written in-process (`Objects.ts`): three git processes fewer per snapshot.
 * - A file larger than `MAX_FILE_BYTES` is left out (and named in the snapshot's `skipped`):
 *   a checkpoint stays bounded. A nested repository is kept as its commit (a gitlink), not its
 *   files.
 * - Restoring writes files back with `git checkout-index` into the root (git replaces a link
 *   met on the way, never writes through it) and removes files with checked paths (`remove`).
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import { fields, git, GitError, run } from "./Git.ts"
import * as Objects from "./Objects.ts"
import { dirOf } from "./Place.ts"

/** Files larger than this are not in a checkpoint. */
export const MAX_FILE_BYTES = 10 * 1024 * 1024

/** Where the shadow repository of a session lives. */
export { dirOf }

const fsCall = <A>(what: string, body: () => Promise<A>): Effect.Effect<A, GitError> =>
  Effect.tryPromise({ try: body, catch: (cause) => new GitError({ message: `${what} failed (${(cause as NodeJS.ErrnoException | undefined)?.code ?? "unknown error"})` }) })

const readText = (file: string): Promise<string> => NodeFs.promises.readFile(file, "utf8").catch(() => "")

/** Environment of a call on root `i` (or on the repository alone). */
const envOf = (gitDir: string, root?: { readonly dir: string; readonly index: string }): Record<string, string> => ({
  GIT_DIR: gitDir,
  GIT_LITERAL_PATHSPECS: "1",
  ...(root !== undefined ? { GIT_WORK_TREE: root.dir, GIT_INDEX_FILE: root.index } : {})
})

/** Creates the repository the first time. */
const ensure = (gitDir: string): Effect.Effect<void, GitError> =>
  Effect.gen(function*() {
    if (NodeFs.existsSync(NodePath.join(gitDir, "HEAD"))) return
    yield* fsCall("Creating the checkpoints folder", () => NodeFs.promises.mkdir(NodePath.dirname(gitDir), { recursive: true, mode: 0o700 }))
    yield* git("Creating the shadow repository", ["init", "-q", "--bare", gitDir], { cwd: NodePath.dirname(gitDir), env: {} })
  })

/**
 * What the user's repository ignores that git would not see from a work tree of its own:
 * its `info/exclude`, and the patterns of `.gitignore` files above `root` that match at any
 * depth (no `/` but a trailing one). Only files are read; nothing of the repository runs.
 */
const userExcludes = (root: string): Effect.Effect<string> =>
  Effect.gen(function*() {
    const read = (file: string) => Effect.promise(() => readText(file))
    const lines: Array<string> = []
    let dir = root
    for (let first = true;; first = false) {
      if (!first) {
        for (const line of (yield* read(NodePath.join(dir, ".gitignore"))).split("\n")) {
          const body = line.replace(/^!/, "").replace(/\/$/, "")
          if (line.trim() === "" || line.startsWith("#") || body.includes("/")) continue
          lines.push(line)
        }
      }
      const dotGit = NodePath.join(dir, ".git")
      const stat = yield* Effect.promise(() => NodeFs.promises.lstat(dotGit).catch(() => undefined))
      if (stat?.isDirectory() === true) {
        lines.push(yield* read(NodePath.join(dotGit, "info", "exclude")))
        break
      }
      if (stat?.isFile() === true) {
        const pointer = /^gitdir:\s*(.+)$/m.exec(yield* read(dotGit))?.[1]?.trim()
        if (pointer !== undefined) {
          const worktreeGit = NodePath.resolve(dir, pointer)
          const common = (yield* read(NodePath.join(worktreeGit, "commondir"))).trim()
          lines.push(yield* read(NodePath.join(common === "" ? worktreeGit : NodePath.resolve(worktreeGit, common), "info", "exclude")))
        }
        break
      }
      const parent = NodePath.dirname(dir)
      if (parent === dir) break
      dir = parent
    }
    return lines.join("\n")
  })

/** "1 GiB", "3.5 MiB", "100 bytes". */
const bytes = (n: number): string => {
  const [unit, size] = n >= 2 ** 30 ? ["GiB", 2 ** 30] : n >= 2 ** 20 ? ["MiB", 2 ** 20] : n >= 2 ** 10 ? ["KiB", 2 ** 10] : ["bytes", 1]
  return `${Number((n / size).toFixed(1))} ${unit}`
}

/** A path as an exclude line that matches it alone (anchored, its special characters escaped). */
const excludeLine = (relative: string): string => `/${relative.replace(/[\\*?[\]!# ]/g, (c) => `\\${c}`)}`

/** The size of a regular file at `file` (not following a link), or undefined. */
const sizeOf = (file: string): Promise<number | undefined> =>
  NodeFs.promises.lstat(file).then((s) => (s.isFile() ? s.size : undefined), () => undefined)

/** One root's snapshot: its tree, and the files left out for their size (relative to the root). */
const snapshotRoot = (gitDir: string, root: string, i: number, maxBytes: number) =>
  Effect.gen(function*() {
    const index = NodePath.join(gitDir, `index-${i}`)
    const env = envOf(gitDir, { dir: root, index })
    const opts = { cwd: root, env }
    const largeList = NodePath.join(gitDir, `large-${i}`)
    const base = yield* userExcludes(root)
    const exclude = NodePath.join(gitDir, "info", "exclude")
    yield* fsCall("Writing the excludes", () =>
      NodeFs.promises.mkdir(NodePath.dirname(exclude), { recursive: true }).then(() => NodeFs.promises.writeFile(exclude, `${base}\n`)))
    // Files too large to keep: those found large before (still large), and new or changed ones.
    const before = (yield* Effect.promise(() => readText(largeList))).split("\0").filter((p) => p !== "")
    const candidates = fields(yield* git("Listing the changed files", ["ls-files", "-z", "--others", "--modified", "--exclude-standard"], opts))
    const paths = [...new Set([...before, ...candidates])]
    const sizes = yield* Effect.promise(() => Promise.all(paths.map((rel) => sizeOf(NodePath.join(root, rel)))))
    const large = paths.filter((_, i) => (sizes[i] ?? 0) > MAX_FILE_BYTES)
    // One snapshot never stores more than this much new content (a session started in a huge folder).
    const adding = sizes.reduce<number>((sum, size) => sum + (size !== undefined && size <= MAX_FILE_BYTES ? size : 0), 0)
    if (adding > maxBytes) {
      return yield* new GitError({ message: `the files of ${root} that changed add up to more than ${bytes(maxBytes)}, too much for a checkpoint` })
    }
    yield* fsCall("Writing the excludes", () =>
      Promise.all([
        NodeFs.promises.writeFile(exclude, `${base}\n${large.map(excludeLine).join("\n")}\n`),
        NodeFs.promises.writeFile(largeList, large.join("\0"))
      ]))
    if (large.length > 0) yield* git("Leaving out large files", ["rm", "-q", "--cached", "--ignore-unmatch", "--", ...large], opts)
    // Unreadable files are left out (git says which on stderr); the rest is still a snapshot.
    const added = yield* run(["add", "-A", "--ignore-errors"], opts)
    if (added.code !== 0 && !/^(?:warning|error): (?:open|could not open|unable to)/m.test(added.stderr)) {
      return yield* new GitError({ message: `Adding the files of ${root} failed: ${added.stderr.split("\n")[0]?.slice(0, 300) ?? ""}` })
    }
    const tree = (yield* git("Writing the tree", ["write-tree"], opts)).trim()
    return { tree, large }
  })

export interface Snapshot {
  /** The commit that holds every root (root `i` as the folder `i`). */
  readonly commit: string
  /** Files left out for their size (absolute paths). */
  readonly skipped: ReadonlyArray<string>
}

/**
 * Snapshots `roots` into the shadow repository at `gitDir`, kept by the ref `refs/skein/<name>`;
 * fails (storing nothing) when a root's new content adds up to more than `maxBytes`.
 */
export const snapshot = (gitDir: string, roots: ReadonlyArray<string>, name: string, maxBytes: number): Effect.Effect<Snapshot, GitError> =>
  Effect.gen(function*() {
    yield* ensure(gitDir)
    const trees: Array<readonly [number, string]> = []
    const skipped: Array<string> = []
    for (const [i, root] of roots.entries()) {
      if (!NodeFs.existsSync(root)) continue
      const { tree, large } = yield* snapshotRoot(gitDir, root, i, maxBytes)
      trees.push([i, tree])
      skipped.push(...large.map((rel) => NodePath.join(root, rel)))
    }
    // The top tree, the commit and the ref are written here, not by three more git processes.
    const top = yield* Objects.writeFolders(gitDir, trees)
    const commit = yield* Objects.writeCommit(gitDir, top, name)
    yield* Objects.writeRef(gitDir, name, commit)
    return { commit, skipped }
  })

/** Whether the repository still keeps `commit` (its ref was not dropped). */
export const kept = (gitDir: string, commit: string): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    if (!NodeFs.existsSync(NodePath.join(gitDir, "HEAD"))) return false
    return [...(yield* Objects.readRefs(gitDir)).values()].includes(commit)
  })

/** A file that differs between two checkpoints: its root, its path relative to it, and how. */
export interface Change {
  readonly root: number
  readonly path: string
  /** A: only in the later one; D: only in the earlier one; M/T: in both, different. */
  readonly status: "A" | "D" | "M" | "T"
}

/** The files that differ between checkpoints `from` and `to` (every root). */
export const diff = (gitDir: string, from: string, to: string): Effect.Effect<ReadonlyArray<Change>, GitError> =>
  Effect.gen(function*() {
    const out = fields(yield* git("Comparing checkpoints", ["diff-tree", "-r", "-z", "--no-renames", "--name-status", from, to], { cwd: gitDir, env: envOf(gitDir) }))
    const changes: Array<Change> = []
    for (let i = 0; i + 1 < out.length; i += 2) {
      const status = out[i]!.charAt(0)
      const full = out[i + 1]!
      const slash = full.indexOf("/")
      if (slash < 0 || (status !== "A" && status !== "D" && status !== "M" && status !== "T")) continue
      changes.push({ root: Number(full.slice(0, slash)), path: full.slice(slash + 1), status })
    }
    return changes
  })

/** Writes `paths` (relative to `root`) back as checkpoint `commit` holds them in root `i`. */
export const restore = (gitDir: string, commit: string, i: number, root: string, paths: ReadonlyArray<string>): Effect.Effect<void, GitError> =>
  paths.length === 0 ? Effect.void : Effect.gen(function*() {
    const index = NodePath.join(gitDir, `index-restore`)
    const opts = { cwd: root, env: envOf(gitDir, { dir: root, index }) }
    yield* Effect.ensuring(
      Effect.gen(function*() {
        yield* git("Reading the checkpoint", ["read-tree", `${commit}:${i}`], opts)
        yield* git("Writing files back", ["checkout-index", "-f", "-z", "--stdin"], { ...opts, input: paths.map((p) => `${p}\0`).join("") })
      }),
      Effect.promise(() => NodeFs.promises.rm(index, { force: true }))
    )
  })

/**
 * Removes `relative` under `root` when every folder on its way is a real folder (no link)
 * and it is a file or a link (removed as such, never followed); then the folders it leaves
 * empty, up to the root, that `keep` does not name. Whether it was removed.
 */
export const remove = (root: string, relative: string, keep: ReadonlySet<string>): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    const lstat = (file: string) => Effect.promise(() => NodeFs.promises.lstat(file).catch(() => undefined))
    const parts = relative.split("/")
    if (parts.some((p) => p === "" || p === "." || p === "..")) return false
    let dir = root
    for (const part of parts.slice(0, -1)) {
      dir = NodePath.join(dir, part)
      const stat = yield* lstat(dir)
      if (stat === undefined || !stat.isDirectory()) return false
    }
    const target = NodePath.join(root, ...parts)
    const stat = yield* lstat(target)
    if (stat === undefined || stat.isDirectory()) return false
    if (!(yield* Effect.promise(() => NodeFs.promises.unlink(target).then(() => true, () => false)))) return false
    for (let n = parts.length - 1; n > 0; n--) {
      const folder = parts.slice(0, n).join("/")
      if (keep.has(folder)) break
      if (!(yield* Effect.promise(() => NodeFs.promises.rmdir(NodePath.join(root, folder)).then(() => true, () => false)))) break
    }
    return true
  })

/** The folders of root `i` in checkpoint `commit` (relative to the root). */
export const folders = (gitDir: string, commit: string, i: number): Effect.Effect<ReadonlySet<string>, GitError> =>
  Effect.map(
    git("Listing the checkpoint's folders", ["ls-tree", "-r", "-d", "-z", "--name-only", `${commit}:${i}`], { cwd: gitDir, env: envOf(gitDir) }),
    (out) => new Set(fields(out))
  )

/** The checkpoints' refs (`refs/skein/<name>`). */
export const refs = (gitDir: string): Effect.Effect<ReadonlyArray<string>> => Effect.map(Objects.readRefs(gitDir), (found) => [...found.keys()])

/** Drops refs (their checkpoints can no longer be restored once collected). */
export const drop = (gitDir: string, names: ReadonlyArray<string>): Effect.Effect<void, GitError> =>
  names.length === 0 ? Effect.void : git("Dropping old checkpoints", ["update-ref", "--stdin"], {
    cwd: gitDir,
    env: envOf(gitDir),
    input: names.map((n) => `delete ${n}\n`).join("")
  }).pipe(Effect.asVoid)

/** Where the turns that took checkpoints since the last collection are counted. */
const counterOf = (gitDir: string): string => NodePath.join(gitDir, "skein-turns-since-collect")

/** Counts one more turn that took checkpoints since the last collection (in the repository, so across processes); the count. */
export const countTurn = (gitDir: string): Effect.Effect<number> =>
  Effect.promise(() =>
    readText(counterOf(gitDir)).then((text) => {
      const count = (Number.parseInt(text.trim(), 10) || 0) + 1
      return NodeFs.promises.writeFile(counterOf(gitDir), `${count}\n`).then(() => count, () => count)
    })
  )

/** Packs the repository and deletes what no ref keeps (the objects of dropped checkpoints); the count starts again. */
export const collect = (gitDir: string): Effect.Effect<void, GitError> =>
  Effect.andThen(
    git("Packing the checkpoints", ["gc", "--prune=now", "--quiet"], { cwd: gitDir, env: envOf(gitDir) }),
    fsCall("Counting the checkpoints", () => NodeFs.promises.writeFile(counterOf(gitDir), "0\n"))
  )

/** The repository's size on disk (bytes), read here: no git process at every turn's end. */
export const size = (gitDir: string): Effect.Effect<number> =>
  Effect.gen(function*() {
    let total = 0
    const pending = [gitDir]
    while (pending.length > 0) {
      const dir = pending.pop()!
      const entries = yield* Effect.promise(() => NodeFs.promises.readdir(dir, { withFileTypes: true }).catch(() => []))
      const files = entries.filter((entry) => !entry.isDirectory()).map((entry) => NodePath.join(dir, entry.name))
      for (const entry of entries) if (entry.isDirectory()) pending.push(NodePath.join(dir, entry.name))
      const sizes = yield* Effect.promise(() => Promise.all(files.map((file) => NodeFs.promises.lstat(file).then((s) => s.size, () => 0))))
      for (const bytes of sizes) total += bytes
    }
    return total
  })

/** Deletes a session's shadow repository (nothing when it has none). */
export const removeAll = (home: string, sessionId: string): Effect.Effect<void> =>
  /^[A-Za-z0-9_-]+$/.test(sessionId)
    ? Effect.promise(() => NodeFs.promises.rm(dirOf(home, sessionId), { recursive: true, force: true }).catch(() => undefined))
    : Effect.void
