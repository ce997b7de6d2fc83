/**
 * The files Skein reads on its own, with no one asking — agent definitions, prompt-file
 * commands, skills, project instructions — are read as the `read` tool reads: only from inside
 * their root. A repository is untrusted: its `.claude/commands/x.md` may be a link to
 * `~/.netrc`, its `AGENTS.md` a FIFO or a link to `/dev/zero`.
 *
 * - A **root** is the real path of the folder a file must stay inside: the project (the cwd, or
 *   the repository root for what is found walking up to it) for a project's definitions, and
 *   the definitions folder itself for the user's (`$SKEIN_HOME/commands`, `~/.claude/skills`).
 * - A file, or a folder, whose real path (every link on the way followed) leaves its root is
 *   not read; the caller reports why (`skein doctor` shows it).
 * - What was checked is what is read: the real path is opened without following links
 *   (`SafeFs`: O_NOFOLLOW, O_NONBLOCK) and the descriptor verified inside the root before a
 *   byte is read, so a link swapped in after the check is refused, not followed.
 * - Only regular files are read (a FIFO or a device is refused without blocking), and never
 *   more than a bound: a larger file is refused, or cut (`truncate`).
 *
 * Nothing here fails: every outcome is a value.
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import * as SafeFs from "../fs/SafeFs.ts"
import { mayExist } from "./FileErrors.ts"

const codeOf = (error: unknown): string | undefined => {
  const code = (error as { readonly code?: unknown } | undefined)?.code
  return typeof code === "string" ? code : undefined
}

/**
 * One of `node:fs`'s callback functions as an Effect failing with the error's code. Not
 * `fs.promises`: opening a session looks at a dozen folders through here, and loading Node's
 * promise API for that (about 1 MB resident and a few ms) is left to the first file read.
 */
const nodeCall = <A>(call: (done: (error: NodeJS.ErrnoException | null, value: A) => void) => void): Effect.Effect<A, string> =>
  Effect.callback<A, string>((resume) => {
    call((error, value) => resume(error === null ? Effect.succeed(value) : Effect.fail(codeOf(error) ?? "unknown error")))
  })

/** The real path of a folder to use as a root; the path itself (absolute) while it does not exist. */
export const root = (dir: string): Effect.Effect<string> =>
  // Most definitions folders do not exist: ruled out synchronously, with no asynchronous call.
  !mayExist(dir)
    ? Effect.succeed(NodePath.resolve(dir))
    : Effect.orElseSucceed(nodeCall<string>((done) => NodeFs.realpath.native(dir, done)), () => NodePath.resolve(dir))

export const inside = (root: string, candidate: string): boolean => {
  const rel = NodePath.relative(root, candidate)
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${NodePath.sep}`) && !NodePath.isAbsolute(rel))
}

/** Why a path was refused, as `skein doctor` says it. */
export const outsideMessage = (root: string) => `it leads outside ${root} (through a symbolic link), so it is not read`
const changedMessage = "it changed while it was being read (a symbolic link appeared on its path), so it is not read"

/** What a path is, seen from its root. */
type Kind =
  | { readonly _tag: "missing" }
  | { readonly _tag: "outside" }
  | { readonly _tag: "directory"; readonly real: string }
  | { readonly _tag: "file"; readonly real: string }
  | { readonly _tag: "other"; readonly real: string }
  | { readonly _tag: "error"; readonly code: string }

/** A path's real path (links followed), or the error code of the failure. */
const realpath = (path: string) => nodeCall<string>((done) => NodeFs.realpath.native(path, done))

const statOf = (path: string) => nodeCall<NodeFs.Stats>((done) => NodeFs.stat(path, done))

const failed = (code: string): Kind => (code === "ENOENT" || code === "ENOTDIR" ? { _tag: "missing" } : { _tag: "error", code })

/** Resolves `path` through its links and says what it is, or that it leaves `root`. */
export const kind = (path: string, root: string): Effect.Effect<Kind> =>
  realpath(path).pipe(
    Effect.flatMap((real) =>
      !inside(root, real)
        ? Effect.succeed<Kind>({ _tag: "outside" })
        : Effect.map(statOf(real), (info): Kind =>
          info.isDirectory() ? { _tag: "directory", real } : info.isFile() ? { _tag: "file", real } : { _tag: "other", real })
    ),
    Effect.catch((code) => Effect.succeed(failed(code)))
  )

const failureCode = (error: SafeFs.Failure): string | undefined =>
  error._tag === "PlatformError" && error.reason._tag !== "BadArgument" ? codeOf(error.reason.cause) : undefined

/** A folder's entries. */
type Listing =
  | { readonly _tag: "missing" }
  | { readonly _tag: "entries"; readonly real: string; readonly names: ReadonlyArray<string> }
  | { readonly _tag: "refused"; readonly message: string }

/**
 * The names in the folder `dir`, read through a descriptor verified inside `root`. A folder
 * that does not exist (or is a file) is `missing`, one that leads out of the root or cannot be
 * read is `refused` with why.
 */
export const list = (dir: string, root: string): Effect.Effect<Listing> =>
  Effect.gen(function*() {
    // Most folders looked at do not exist: ruled out synchronously, before any asynchronous call.
    if (!mayExist(dir)) return { _tag: "missing" } as const
    const found = yield* kind(dir, root)
    switch (found._tag) {
      case "missing":
      case "file":
      case "other":
        return { _tag: "missing" } as const
      case "outside":
        return { _tag: "refused", message: outsideMessage(root) } as const
      case "error":
        return { _tag: "refused", message: `cannot read the folder (${found.code})` } as const
      case "directory":
        break
      default:
        return found satisfies never
    }
    const real = found.real
    return yield* SafeFs.listDirectory(real, [root]).pipe(
      Effect.map((entries): Listing => ({ _tag: "entries", real, names: entries.map((entry) => entry.name) })),
      Effect.catch((error): Effect.Effect<Listing> => {
        if (error._tag === "SafeFsChanged") return Effect.succeed({ _tag: "refused", message: changedMessage })
        const code = failureCode(error)
        if (code === "ENOENT" || code === "ENOTDIR") return Effect.succeed({ _tag: "missing" })
        return Effect.succeed({ _tag: "refused", message: `cannot read the folder (${code ?? error.reason._tag})` })
      })
    )
  })

/** A file's text, or why there is none. */
type Read =
  | { readonly _tag: "text"; readonly text: string; readonly truncated: boolean }
  | { readonly _tag: "missing" }
  | { readonly _tag: "directory" }
  | { readonly _tag: "refused"; readonly reason: Reason; readonly message: string }

/** Why a file was not read: a link out of its root, changed while read, not a regular file, too large, or an error. */
type Reason = "outside" | "changed" | "special" | "too_large" | "unreadable"

const KIB = 1024
const special = { _tag: "refused", reason: "special", message: "it is not a regular file (a FIFO, socket or device), so it is not read" } as const

/**
 * The text (UTF-8) of the regular file `file`, read only from inside `root` and at most
 * `maxBytes` of it: a larger file is refused, or with `truncate` its first `maxBytes` are
 * given (`truncated`). A missing file (or a dangling link) is `missing`, a folder `directory`;
 * a link out of the root, a FIFO, a device or an unreadable file is `refused` with why.
 */
export const readText = (
  file: string,
  root: string,
  options: { readonly maxBytes: number; readonly truncate?: boolean | undefined }
): Effect.Effect<Read> =>
  Effect.gen(function*() {
    const found = yield* kind(file, root)
    switch (found._tag) {
      case "missing":
        return { _tag: "missing" } as const
      case "directory":
        return { _tag: "directory" } as const
      case "outside":
        return { _tag: "refused", reason: "outside", message: outsideMessage(root) } as const
      case "error":
        return { _tag: "refused", reason: "unreadable", message: `cannot read the file (${found.code})` } as const
      case "other":
        return special
      case "file":
        break
      default:
        return found satisfies never
    }
    return yield* Effect.scoped(Effect.gen(function*() {
      const { handle, stat } = yield* SafeFs.openRead(found.real, [root])
      // What is open now is what counts: the file may have been replaced since it was looked at.
      if (stat.isDirectory()) return { _tag: "directory" } as const
      if (!stat.isFile()) return special
      const tooLarge = { _tag: "refused", reason: "too_large", message: `it is larger than ${options.maxBytes >= KIB ? `${Math.floor(options.maxBytes / KIB)} KiB` : `${options.maxBytes} bytes`}, so it is not read` } as const
      if (stat.size > BigInt(options.maxBytes) && options.truncate !== true) return tooLarge
      // Read to one byte past the bound, whatever the size said: the file may grow meanwhile.
      const chunks: Array<Uint8Array> = []
      let total = 0
      while (total <= options.maxBytes) {
        const chunk = yield* SafeFs.readChunk(handle, Math.min(64 * KIB, options.maxBytes + 1 - total))
        if (chunk.length === 0) break
        chunks.push(chunk)
        total += chunk.length
      }
      const over = total > options.maxBytes
      if (over && options.truncate !== true) return tooLarge
      const bytes = Buffer.concat(chunks).subarray(0, Math.min(total, options.maxBytes))
      return { _tag: "text", text: new TextDecoder("utf-8").decode(bytes), truncated: over } as const
    })).pipe(
      Effect.catch((error): Effect.Effect<Read> => {
        if (error._tag === "SafeFsChanged") return Effect.succeed({ _tag: "refused", reason: "changed", message: changedMessage })
        const code = failureCode(error)
        if (code === "ENOENT") return Effect.succeed({ _tag: "missing" })
        return Effect.succeed({ _tag: "refused", reason: "unreadable", message: `cannot read the file (${code ?? error.reason._tag})` })
      })
    )
  })
