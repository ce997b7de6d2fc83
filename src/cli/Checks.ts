/**
 * Checks of what a user names on the command line, made before any work starts, so a mistake
 * is one line and exit 2 (a `UsageError`) rather than a failure deep inside a command.
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { UsageError } from "./Options.ts"

const isDirectory = (path: string): boolean | undefined => {
  try {
    return fs.statSync(path).isDirectory()
  } catch {
    return undefined
  }
}

/** An existing directory, as an absolute path. */
export const directory = (path: string, what: string): string => {
  const resolved = nodePath.resolve(path)
  const found = isDirectory(resolved)
  if (found === undefined) throw new UsageError(`${what} ${resolved} does not exist`)
  if (!found) throw new UsageError(`${what} ${resolved} is not a directory`)
  return resolved
}

const HOME = "the home directory (--home, SKEIN_HOME)"

/** The nearest of `path` and its parents that exists. */
const nearestExisting = (path: string): string => {
  for (let dir = path; ; dir = nodePath.dirname(dir)) {
    try {
      fs.statSync(dir)
      return dir
    } catch {
      if (nodePath.dirname(dir) === dir) return dir
    }
  }
}

/**
 * Makes `dir` and its missing parents, one level at a time: Node's `mkdirSync(…, { recursive:
 * true })` loops forever where making a folder fails with ENOENT under an existing one (/proc).
 */
const makeDirectories = (dir: string): void => {
  const missing: Array<string> = []
  for (let at = dir; isDirectory(at) === undefined && nodePath.dirname(at) !== at; at = nodePath.dirname(at)) missing.unshift(at)
  for (const level of missing) {
    try {
      fs.mkdirSync(level)
    } catch (error) {
      if ((error as { code?: unknown }).code !== "EEXIST") throw error
    }
  }
}

/**
 * The home directory (or another like it, named by `what`) is usable: a directory, or absent
 * (it is created when needed). With `write`, it and its `sessions` folder are created now and
 * must be writable; with `create: false` too, nothing is left created, but the same is checked
 * (a folder can be made in a missing one's nearest existing parent: one is made and removed), so
 * `skein doctor` refuses the home that `skein run` and `skein acp` would refuse.
 */
export const home = (
  path: string,
  options: { readonly write: boolean; readonly create?: boolean | undefined; readonly what?: string | undefined }
): void => {
  const what = options.what ?? HOME
  for (const dir of [path, nodePath.join(path, "sessions")]) {
    const found = isDirectory(dir)
    if (found === false) throw new UsageError(`${dir} is not a directory: it cannot be ${what}`)
    if (!options.write) continue
    if (found === undefined && options.create === false) {
      const parent = nearestExisting(nodePath.dirname(dir))
      try {
        if (isDirectory(parent) !== true) throw Object.assign(new Error("not a directory"), { code: "ENOTDIR" })
        // Whether a folder can be made there, by making one and removing it: permissions alone
        // do not say (a read-only file system, root on a pseudo file system).
        fs.rmdirSync(fs.mkdtempSync(nodePath.join(parent, ".skein-check-")))
      } catch (error) {
        throw new UsageError(`Cannot create ${dir} for ${what}: ${reason(error)}`)
      }
      // Its parent is made first, and can be: the rest is checked when it exists.
      break
    }
    if (found === undefined) {
      try {
        makeDirectories(dir)
      } catch (error) {
        throw new UsageError(`Cannot create ${dir} for ${what}: ${reason(error)}`)
      }
    }
    try {
      fs.accessSync(dir, fs.constants.W_OK | fs.constants.X_OK)
    } catch (error) {
      throw new UsageError(`Cannot write to ${dir}, ${what}: ${reason(error)}`)
    }
  }
}

/** The system's reason, without the path it repeats (`EACCES: permission denied, mkdir '…'`). */
const reason = (error: unknown): string => {
  const code = (error as { code?: unknown }).code
  const messages: Record<string, string> = {
    EACCES: "permission denied",
    EPERM: "operation not permitted",
    EROFS: "read-only file system",
    ENOTDIR: "a part of the path is not a directory",
    ENOSPC: "no space left on the device",
    ENOENT: "no folder can be made there"
  }
  return typeof code === "string" ? messages[code] ?? code : "unknown error"
}
