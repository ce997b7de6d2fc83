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

/**
 * The home directory (or another like it, named by `what`) is usable: a directory, or absent
 * (it is created when needed). With `write`, it and its `sessions` folder are created now and
 * must be writable.
 */
export const home = (path: string, options: { readonly write: boolean; readonly what?: string | undefined }): void => {
  const what = options.what ?? HOME
  for (const dir of [path, nodePath.join(path, "sessions")]) {
    const found = isDirectory(dir)
    if (found === false) throw new UsageError(`${dir} is not a directory: it cannot be ${what}`)
    if (!options.write) continue
    if (found === undefined) {
      try {
        fs.mkdirSync(dir, { recursive: true })
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
    ENOSPC: "no space left on the device"
  }
  return typeof code === "string" ? messages[code] ?? code : "unknown error"
}
