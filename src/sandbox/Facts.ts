/**
 * The file system facts a command's `Policy.Layout` needs, read when the command starts
 * (a repository made since, a credential file created since, are seen): real paths of the
 * roots, which secret places exist, where each repository keeps its git files. A few dozen
 * `lstat`s, synchronous: well under a millisecond, and nothing here can block on a peer.
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import { type GitLayout, type Layout, SECRET_PLACES } from "./Policy.ts"

// Most places looked at do not exist: asked without exceptions (a thrown error costs far more
// than the system call).

const kind = (path: string): "dir" | "file" | "other" | undefined => {
  let stat: NodeFs.Stats | undefined
  try {
    stat = NodeFs.statSync(path, { throwIfNoEntry: false })
  } catch {
    return undefined
  }
  return stat === undefined ? undefined : stat.isDirectory() ? "dir" : stat.isFile() ? "file" : "other"
}

const realOrUndefined = (path: string): string | undefined => {
  if (kind(path) === undefined) return undefined
  try {
    return NodeFs.realpathSync.native(path)
  } catch {
    return undefined
  }
}

const readSmall = (path: string): string | undefined => {
  if (kind(path) !== "file") return undefined
  try {
    return NodeFs.readFileSync(path, "utf8").slice(0, 4096)
  } catch {
    return undefined
  }
}

/** Where a worktree's `.git` file points (`gitdir: X`), resolved against its directory. */
const pointer = (file: string): string | undefined => {
  const text = readSmall(file)
  const match = text === undefined ? null : /^gitdir: (.+)$/m.exec(text)
  return match === null ? undefined : realOrUndefined(NodePath.resolve(NodePath.dirname(file), match[1]!.trim()))
}

/** The submodules' git directories under `modules` (nested ones too, a few levels deep). */
const submodules = (dir: string, depth: number, out: Array<string>) => {
  // Most repositories have no `modules`: asked first, since a failed readdir throws.
  if (depth > 4 || out.length > 200 || kind(dir) !== "dir") return
  let names: Array<string>
  try {
    names = NodeFs.readdirSync(dir)
  } catch {
    return
  }
  for (const name of names) {
    const sub = NodePath.join(dir, name)
    if (kind(sub) !== "dir") continue
    if (kind(NodePath.join(sub, "config")) === "file") out.push(sub)
    submodules(NodePath.join(sub, "modules"), depth + 1, out)
    // Submodule names may hold slashes: `modules/a/b`.
    if (kind(NodePath.join(sub, "config")) === undefined) submodules(sub, depth + 1, out)
  }
}

/** `config` and `hooks` of a git directory, read-only; a missing `hooks` stays empty. */
const protect = (gitDir: string, readOnly: Array<string>, empty: Array<string>) => {
  for (const name of ["config", "config.worktree"]) {
    const path = NodePath.join(gitDir, name)
    if (kind(path) !== undefined) readOnly.push(path)
  }
  const hooks = NodePath.join(gitDir, "hooks")
  if (kind(hooks) === "dir") readOnly.push(hooks)
  else if (kind(hooks) === undefined) empty.push(hooks)
}

/**
 * How a root's repository must look to a command, or undefined when the root is not the top
 * of a repository. A git directory inside the root is bound over itself (immovable) with its
 * `config` and `hooks` read-only. A linked worktree (`.git` is a file) keeps that file and its
 * git directory's pointers read-only, and may write its own git directory, the object store
 * and the directory of the branch it has checked out; the rest of the shared repository stays
 * read-only.
 */
const gitLayout = (root: string): GitLayout | undefined => {
  const dotGit = NodePath.join(root, ".git")
  const type = kind(dotGit)
  const writable: Array<string> = []
  const readOnly: Array<string> = []
  const empty: Array<string> = []
  if (type === "dir") {
    writable.push(dotGit)
    protect(dotGit, readOnly, empty)
    const modules: Array<string> = []
    submodules(NodePath.join(dotGit, "modules"), 0, modules)
    for (const module of modules) protect(module, readOnly, empty)
    return { writable, readOnly, empty }
  }
  if (type !== "file") return undefined
  readOnly.push(dotGit)
  const gitDir = pointer(dotGit)
  if (gitDir === undefined || kind(gitDir) !== "dir") return { writable, readOnly, empty }
  const commonText = readSmall(NodePath.join(gitDir, "commondir"))
  const common = commonText === undefined ? gitDir : realOrUndefined(NodePath.resolve(gitDir, commonText.trim())) ?? gitDir
  writable.push(gitDir)
  for (const name of ["commondir", "gitdir", "config.worktree"]) {
    const path = NodePath.join(gitDir, name)
    if (kind(path) === "file") readOnly.push(path)
  }
  if (common !== gitDir) {
    const objects = NodePath.join(common, "objects")
    if (kind(objects) === "dir") writable.push(objects)
    const head = /^ref: (refs\/heads\/\S+)$/m.exec(readSmall(NodePath.join(gitDir, "HEAD")) ?? "")
    if (head !== null && !head[1]!.split("/").includes("..")) {
      for (const base of [common, NodePath.join(common, "logs")]) {
        const dir = NodePath.dirname(NodePath.join(base, head[1]!))
        if (kind(dir) === "dir" && dir !== common) writable.push(dir)
      }
    }
    protect(common, readOnly, empty)
  }
  return { writable, readOnly, empty }
}

interface Places {
  /** The session's roots (the cwd first). */
  readonly roots: ReadonlyArray<string>
  /** Configured places commands may write besides the roots. */
  readonly allowWrite: ReadonlyArray<string>
  /** Configured places hidden besides the well-known ones. */
  readonly denyRead: ReadonlyArray<string>
  readonly cwd: string
  /** The user's home (for the well-known secret places). */
  readonly home: string
  /** Skein's home: its sessions and configuration (keys). */
  readonly skeinHome: string
  /**
   * Skein's runtime directory for the sandbox (each process's seccomp filter, proxy socket and
   * sessions' /tmp): hidden too, for a root that holds it (a workspace that is /tmp itself).
   */
  readonly runtime?: string | undefined
  /** The session's private /tmp on the host. */
  readonly tmp: string
}

/** Reads the facts and gives the layout. A root that does not exist (any more) is left out. */
export const layout = (places: Places, readOnly: boolean): Layout => {
  const writable: Array<string> = []
  for (const dir of [...places.roots, ...places.allowWrite]) {
    const real = realOrUndefined(dir)
    if (real !== undefined && kind(real) === "dir" && !writable.includes(real)) writable.push(real)
  }
  const hiddenDirs: Array<string> = []
  const hiddenFiles: Array<string> = []
  const secret = [places.skeinHome, ...(places.runtime === undefined ? [] : [places.runtime]), ...SECRET_PLACES.map((place) => NodePath.join(places.home, place)), ...places.denyRead]
  for (const path of secret) {
    // Hidden where it really is: every link to it then leads to the hidden place.
    const target = realOrUndefined(path)
    if (target === undefined) continue
    const type = kind(target)
    if (type === "dir" && !hiddenDirs.includes(target)) hiddenDirs.push(target)
    else if ((type === "file" || type === "other") && !hiddenFiles.includes(target)) hiddenFiles.push(target)
  }
  const git: Array<GitLayout> = []
  for (const root of writable.slice(0, places.roots.length)) {
    const found = gitLayout(root)
    if (found !== undefined) git.push(found)
  }
  const cwd = realOrUndefined(places.cwd) ?? places.cwd
  let varRunIsDirectory = false
  try {
    varRunIsDirectory = NodeFs.lstatSync("/var/run").isDirectory()
  } catch {
    // No /var/run at all.
  }
  return { cwd, writable, readOnly, tmp: places.tmp, hiddenDirs, hiddenFiles, git, varRunIsDirectory }
}
