/**
 * File access on the model's behalf that uses what was checked, not the path
 * again. `Workspace.resolve` checks a path (its real path is inside the
 * roots); until the file is opened, any directory on that path, or the file
 * itself, can be swapped for a symlink out of the workspace. So:
 *
 * - A file is opened with O_NOFOLLOW, and the descriptor's real path (the
 *   kernel's, `/proc/self/fd/N`) must be inside the roots before a byte is
 *   read from it.
 * - A directory is opened the same way (O_DIRECTORY); a missing one is made
 *   inside its already verified parent, one level at a time.
 * - Below a verified directory, names are used relative to its descriptor:
 *   `/proc/self/fd/N/name` is `openat(N, "name")`, so a write creates its temp
 *   file (O_EXCL|O_NOFOLLOW) and renames it over the target in the directory
 *   that was verified, whatever its path names by then.
 *
 * Without `/proc` (macOS), a descriptor is checked by device and inode against
 * the real path of the name it was opened by, and names below a directory are
 * joined to its path: O_NOFOLLOW and the check narrow the window there, they
 * cannot close it.
 */
import * as NodeFs from "node:fs"
import type { FileHandle } from "node:fs/promises"
import * as NodePath from "node:path"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as PlatformError from "effect/PlatformError"
import type * as Scope from "effect/Scope"

const C = NodeFs.constants
// Absent on Windows, where there are no such links to guard against.
const NOFOLLOW = C.O_NOFOLLOW ?? 0
const READ = C.O_RDONLY | NOFOLLOW | (C.O_NONBLOCK ?? 0) | (C.O_NOCTTY ?? 0)
const DIRECTORY = C.O_RDONLY | NOFOLLOW | (C.O_DIRECTORY ?? 0)
const CREATE = C.O_WRONLY | C.O_CREAT | C.O_EXCL | NOFOLLOW

/**
 * A path changed between its check and its use: a symlink appeared on it
 * (`link`), it now leads outside the roots (`outside`), or the file an edit
 * read is no longer the one on disk (`content`).
 */
export class Changed extends Data.TaggedError("SafeFsChanged")<{ readonly reason: "link" | "outside" | "content" }> {}

export type Failure = PlatformError.PlatformError | Changed

/** Seams for tests: `before` runs just ahead of a step, `noProc` takes the path used where `/proc` is missing. */
export interface Hooks {
  readonly before?: ((step: "replace", target: string) => void) | undefined
  readonly noProc?: boolean | undefined
}
export const Hooks = Context.Reference<Hooks>("skein/SafeFs/Hooks", { defaultValue: () => ({}) })

/** The roots through `realpath`, to compare descriptors' real paths with. */
export type RealRoots = ReadonlyArray<string>

export const realRoots = (roots: ReadonlyArray<string>): Effect.Effect<RealRoots> =>
  // The callback API: a session's first look at its folders does not load `fs.promises` for this.
  Effect.forEach(roots, (root) =>
    Effect.callback<string>((resume) => {
      NodeFs.realpath.native(root, (error, real) => resume(Effect.succeed(error === null ? real : root)))
    }))

const inside = (roots: RealRoots, candidate: string): boolean =>
  roots.some((root) => {
    const rel = NodePath.relative(root, candidate)
    return rel === "" || (rel !== ".." && !rel.startsWith(`..${NodePath.sep}`) && !NodePath.isAbsolute(rel))
  })

const tags: Record<string, PlatformError.SystemErrorTag> = {
  ENOENT: "NotFound",
  EACCES: "PermissionDenied",
  EPERM: "PermissionDenied",
  EEXIST: "AlreadyExists",
  EISDIR: "BadResource",
  ENOTDIR: "BadResource",
  EBUSY: "Busy"
}

const call = <A>(method: string, path: string | number, run: () => Promise<A>): Effect.Effect<A, PlatformError.PlatformError> =>
  Effect.tryPromise({
    try: run,
    catch: (cause) => {
      const code = (cause as NodeJS.ErrnoException | undefined)?.code ?? ""
      return PlatformError.systemError({ _tag: tags[code] ?? "Unknown", module: "FileSystem", method, pathOrDescriptor: path, cause })
    }
  })

/** A failure with an errno code of our own making, shaped like the platform's. */
const errno = (method: string, path: string, code: string): PlatformError.PlatformError =>
  PlatformError.systemError({ _tag: tags[code] ?? "Unknown", module: "FileSystem", method, pathOrDescriptor: path, cause: { code } })

const codeOf = (error: Failure): string | undefined =>
  error._tag === "PlatformError" && error.reason._tag !== "BadArgument"
    ? (error.reason.cause as NodeJS.ErrnoException | undefined)?.code
    : undefined

export const isNotFound = (error: Failure): boolean => codeOf(error) === "ENOENT"

/** Opens `path` with `flags`, closed with the scope. O_NOFOLLOW refusing a link (ELOOP; EMLINK on BSD) is a change. */
const open = (path: string, flags: number, mode?: number): Effect.Effect<FileHandle, Failure, Scope.Scope> =>
  Effect.acquireRelease(
    call("open", path, () => NodeFs.promises.open(path, flags, mode)).pipe(
      Effect.mapError((error): Failure => (codeOf(error) === "ELOOP" || codeOf(error) === "EMLINK" ? new Changed({ reason: "link" }) : error))
    ),
    (handle) => Effect.promise(() => handle.close().catch(() => undefined))
  )

/**
 * Checks that descriptor `fd`, opened by `path`, is inside the roots; returns
 * whether `/proc` answered (so names below it can go through the descriptor).
 */
const verify = Effect.fnUntraced(function*(fd: number, path: string, roots: RealRoots) {
  const hooks = yield* Hooks
  if (hooks.noProc !== true) {
    const link = yield* Effect.promise(() => NodeFs.promises.readlink(`/proc/self/fd/${fd}`).catch(() => undefined))
    if (link !== undefined) return inside(roots, link) ? true : yield* new Changed({ reason: "outside" })
  }
  const real = yield* call("realpath", path, () => NodeFs.promises.realpath(path)).pipe(Effect.mapError(() => new Changed({ reason: "outside" })))
  if (!inside(roots, real)) return yield* new Changed({ reason: "outside" })
  const [held, named] = yield* Effect.all([
    call("fstat", fd, () => new Promise<NodeFs.Stats>((ok, fail) => NodeFs.fstat(fd, (error, stat) => (error ? fail(error) : ok(stat))))),
    call("stat", real, () => NodeFs.promises.stat(real))
  ]).pipe(Effect.mapError(() => new Changed({ reason: "outside" })))
  if (held.dev !== named.dev || held.ino !== named.ino) return yield* new Changed({ reason: "outside" })
  return false
})

/**
 * Opens a directory without following a link. Linux answers ENOTDIR, not
 * ELOOP, for a link opened with O_DIRECTORY|O_NOFOLLOW: one found there now is
 * a change.
 */
const openDir = (path: string) =>
  open(path, DIRECTORY).pipe(
    Effect.catchIf((error) => codeOf(error) === "ENOTDIR", (error) =>
      Effect.flatMap(
        Effect.promise(() => NodeFs.promises.lstat(path).then((info) => info.isSymbolicLink(), () => false)),
        (link): Effect.Effect<never, Failure> => Effect.fail(link ? new Changed({ reason: "link" }) : error)
      ))
  )

/** A directory held open by descriptor, verified inside the roots. */
export interface Directory {
  readonly fd: number
  readonly path: string
  readonly viaProc: boolean
}

/** A name inside a verified directory, through its descriptor where `/proc` allows. */
const at = (dir: Directory, name: string): string => (dir.viaProc ? `/proc/self/fd/${dir.fd}/${name}` : NodePath.join(dir.path, name))

/**
 * Opens the directory `path` (a real path inside the roots) by descriptor,
 * closed with the scope. With `create`, a missing directory is made inside its
 * verified parent (which is opened, or made, the same way first).
 */
export const openDirectory = (path: string, roots: RealRoots, create: boolean): Effect.Effect<Directory, Failure, Scope.Scope> =>
  Effect.gen(function*() {
    const found = yield* openDir(path).pipe(
      Effect.map((handle): FileHandle | undefined => handle),
      Effect.catchIf((error) => create && isNotFound(error), () => Effect.succeed(undefined))
    )
    if (found !== undefined) return { fd: found.fd, path, viaProc: yield* verify(found.fd, path, roots) }
    const parentPath = NodePath.dirname(path)
    if (parentPath === path) return yield* errno("open", path, "ENOENT")
    const parent = yield* openDirectory(parentPath, roots, true)
    const name = NodePath.basename(path)
    yield* call("mkdir", path, () => NodeFs.promises.mkdir(at(parent, name), 0o777)).pipe(
      Effect.catchIf((error) => codeOf(error) === "EEXIST", () => Effect.void)
    )
    const made = yield* openDir(at(parent, name))
    return { fd: made.fd, path, viaProc: yield* verify(made.fd, path, roots) }
  })

/** A file opened for reading, checked, with its status. */
interface Opened {
  readonly handle: FileHandle
  readonly stat: NodeFs.BigIntStats
}

/**
 * Opens `target` (a real path inside the roots) for reading, closed with the
 * scope. O_NONBLOCK: a FIFO put in the file's place cannot hang the call.
 */
export const openRead = (target: string, roots: RealRoots): Effect.Effect<Opened, Failure, Scope.Scope> =>
  Effect.gen(function*() {
    const handle = yield* open(target, READ)
    yield* verify(handle.fd, target, roots)
    const stat = yield* call("fstat", handle.fd, () => handle.stat({ bigint: true }))
    return { handle, stat }
  })

/** Reads up to `size` bytes at the handle's position; none at the end. */
export const readChunk = (handle: FileHandle, size: number): Effect.Effect<Uint8Array, PlatformError.PlatformError> =>
  call("read", handle.fd, () => handle.read(Buffer.alloc(size), 0, size, null)).pipe(
    Effect.map(({ buffer, bytesRead }) => new Uint8Array(buffer.buffer, buffer.byteOffset, bytesRead))
  )

/** The rest of an opened file. */
export const readAll = (handle: FileHandle): Effect.Effect<Uint8Array, PlatformError.PlatformError> =>
  call("read", handle.fd, () => handle.readFile()).pipe(Effect.map((buffer) => new Uint8Array(buffer)))

/**
 * A regular file's bytes, or `undefined` when it is larger than `maxBytes`;
 * fails when it is not a regular file. For tools reading many files (grep).
 */
export const readFileBounded = (target: string, roots: RealRoots, maxBytes: number) =>
  Effect.scoped(Effect.gen(function*() {
    const { handle, stat } = yield* openRead(target, roots)
    if (!stat.isFile()) return yield* errno("read", target, "EISDIR")
    if (stat.size > BigInt(maxBytes)) return undefined
    return yield* readAll(handle)
  }))

/** The entries of the directory `path` (a real path inside the roots), read through its verified descriptor. */
export const listDirectory = (path: string, roots: RealRoots) =>
  Effect.scoped(Effect.gen(function*() {
    const dir = yield* openDirectory(path, roots, false)
    const entries = yield* call("readdir", path, () => NodeFs.promises.readdir(dir.viaProc ? `/proc/self/fd/${dir.fd}` : path, { withFileTypes: true }))
    return entries.map((entry): FileSystem.DirectoryEntry => ({
      name: entry.name,
      type: entry.isFile() ? "File" : entry.isDirectory() ? "Directory" : entry.isSymbolicLink() ? "SymbolicLink" : "Unknown"
    }))
  }))

/** What an edit read: the replace goes ahead only if the file on disk is still this one. */
export interface Expected {
  readonly stat: NodeFs.BigIntStats
  readonly bytes: Uint8Array
}

const sameBytes = (a: Uint8Array, b: Uint8Array) => a.length === b.length && Buffer.compare(a, b) === 0

/** Whether `name` in `dir` is still the file (inode, size, mtime) with the content that was read. */
const unchanged = (dir: Directory, name: string, expected: Expected) =>
  Effect.scoped(Effect.gen(function*() {
    const now = yield* open(at(dir, name), READ)
    const stat = yield* call("fstat", now.fd, () => now.stat({ bigint: true }))
    const was = expected.stat
    if (stat.dev !== was.dev || stat.ino !== was.ino || stat.size !== was.size || stat.mtimeNs !== was.mtimeNs) return false
    return sameBytes(yield* readAll(now), expected.bytes)
  })).pipe(Effect.catch(() => Effect.succeed(false)))

/**
 * Writes `bytes` as `name` in the verified directory `dir`, atomically: a new
 * temp file (O_EXCL, so it is ours to remove on failure) written, given `mode`
 * (else 0666 less the umask), fsynced and renamed over the target. A symlink
 * put in the target's place is replaced, never followed. With `expected`, a
 * target that is no longer what was read fails with `Changed` and is left as
 * it is.
 */
export const writeAtomic = (
  dir: Directory,
  name: string,
  bytes: Uint8Array,
  roots: RealRoots,
  options: { readonly mode?: number | undefined; readonly tag: string; readonly expected?: Expected | undefined }
) =>
  Effect.scoped(Effect.gen(function*() {
    const hooks = yield* Hooks
    const temp = at(dir, `.${name.slice(0, 100)}.${options.tag}.skein.tmp`)
    const file = yield* open(temp, CREATE, options.mode ?? 0o666)
    const removeTemp = Effect.promise(() => NodeFs.promises.unlink(temp).catch(() => undefined))
    yield* Effect.gen(function*() {
      yield* call("write", temp, () => file.writeFile(bytes))
      if (options.mode !== undefined) yield* call("chmod", temp, () => file.chmod(options.mode!))
      yield* call("fsync", temp, () => file.sync())
      hooks.before?.("replace", NodePath.join(dir.path, name))
      if (options.expected !== undefined && !(yield* unchanged(dir, name, options.expected))) return yield* new Changed({ reason: "content" })
      // The directory is the one opened; it must still be inside the roots (not moved out since).
      yield* verify(dir.fd, dir.path, roots)
      yield* call("rename", temp, () => NodeFs.promises.rename(temp, at(dir, name)))
    }).pipe(Effect.onError(() => removeTemp))
  }))

/** The model's message for a change under a tool, or undefined for a platform failure. */
export const describeChange = (error: Failure, shown: string): string | undefined => {
  if (error._tag !== "SafeFsChanged") return undefined
  if (error.reason === "content") return `${shown} changed on disk while it was being edited; the edit was not applied. Read it again and retry.`
  return `${shown} changed while in use (${
    error.reason === "link" ? "a symbolic link appeared on its path" : "its path now leads outside the workspace"
  }); it was refused and nothing was read or written.`
}
