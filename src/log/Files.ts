/**
 * The files of the session store, and the order in which they change, so that
 * whatever instant a process is killed at (`kill -9`, power loss after the
 * next sync) the directory holds something a later Skein can use:
 *
 * - Private: the sessions directory is 0700 (an existing one with a looser
 *   mode is tightened when the store starts); every file Skein writes in it
 *   (logs, locks, side files, temporary files) is created 0600, whatever the
 *   umask. A log is the whole conversation; `<id>.mcp.json` holds secrets.
 * - A new log appears whole: its header is written to a temporary file that
 *   is then hard-linked into place, so there is never a log without a header.
 * - A session's side files (`<id>.mcp.json` with the MCP servers' secrets,
 *   backups, leftovers) exist only while its log does: they are created after
 *   the log, and deleted before it. A kill half-way through a delete leaves a
 *   log without its secrets, never secrets without their log.
 * - A migration replaces a log in one rename: the new log is written to a
 *   temporary file and synced, the old one is kept as a backup by a hard link,
 *   then the temporary file is renamed over the log. At every instant the log
 *   is complete, in the old format or the new one; what a kill leaves behind
 *   (the temporary file) is removed when the session next opens.
 *
 * File calls are synchronous where they are a few metadata operations
 * (microseconds, where a thread-pool round trip costs more).
 */
import * as Effect from "effect/Effect"
import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import { describeCode, LogError } from "./LogError.ts"

const DIRECTORY_MODE = 0o700
const FILE_MODE = 0o600

/** The temporary file a migration writes the new log to, beside the log. */
const migratingPath = (file: string): string => `${file}.migrating`
/** The backup a migration keeps of a log of format `version`. */
export const backupPath = (file: string, version: number): string => `${file}.v${version}.bak`
/** The temporary file a new log's header is written to, before it is linked into place. */
const creatingPath = (file: string): string => `${file}.creating`

/**
 * Named steps of the store's multi-file operations, where a test may stop the
 * process (`kill -9`) to check that what is left on disk is whole.
 */
export type FaultPoint =
  | "create.written"
  | "create.linked"
  | "remove.side-files"
  | "remove.log"
  | "migrate.written"
  | "migrate.backed-up"
  | "migrate.replaced"

/** Called at every fault point; Skein itself passes none. */
export type Faults = (point: FaultPoint) => void

const code = (error: unknown) => (error as NodeJS.ErrnoException).code ?? "error"

const io = (what: string, file: string) => (error: unknown) =>
  new LogError({ reason: "io", message: `Cannot ${what} ${file}: ${describeCode(error)}` })

/** Whether a mode lets anyone but the owner in. */
const loose = (mode: number) => (mode & 0o077) !== 0

/**
 * Creates the sessions directory (and a missing home) owner-only, or tightens
 * an existing one that others may read; one that is not ours is warned about.
 */
export const ensurePrivateDirectory = (directory: string): Effect.Effect<void, LogError> =>
  Effect.gen(function*() {
    const info = yield* Effect.try({
      try: () => {
        try {
          return nodeFs.statSync(directory)
        } catch (error) {
          if (code(error) !== "ENOENT") throw error
          nodeFs.mkdirSync(directory, { recursive: true, mode: DIRECTORY_MODE })
          // The umask only takes bits away, but a directory made by someone else meanwhile keeps its own.
          return nodeFs.statSync(directory)
        }
      },
      catch: io("create the directory", directory)
    })
    if (!loose(info.mode)) return
    const tightened = yield* Effect.sync(() => {
      try {
        nodeFs.chmodSync(directory, DIRECTORY_MODE)
        return true
      } catch {
        return false
      }
    })
    if (!tightened) {
      yield* Effect.logWarning(
        `The sessions directory ${directory} can be read by other users (mode ${(info.mode & 0o777).toString(8)}) and Skein cannot change that: make it owner-only (chmod 700)`
      )
    }
  })

/** Makes an open file owner-only if it is not (a log written by an older Skein). */
export const tightenFile = (fd: number): void => {
  try {
    if (loose(nodeFs.fstatSync(fd).mode)) nodeFs.fchmodSync(fd, FILE_MODE)
  } catch {
    // Its directory is owner-only: this is a second fence, not the first.
  }
}

const writeAll = (fd: number, bytes: Uint8Array) => {
  let off = 0
  while (off < bytes.length) off += nodeFs.writeSync(fd, bytes, off, bytes.length - off)
}

/**
 * Creates `file` holding `bytes` (a new log's header), all at once: written to a temporary
 * file, then hard-linked into place, which fails if the log exists. Returns a descriptor open
 * for appending to it.
 */
export const createWhole = (file: string, bytes: Uint8Array, faults?: Faults): Effect.Effect<number, LogError> =>
  Effect.try({
    try: () => {
      const temp = creatingPath(file)
      // A leftover of a create that was killed: the log it was for never appeared.
      nodeFs.rmSync(temp, { force: true })
      // For appending (O_APPEND): after an append that failed is cut back, the next lands at the end.
      const fd = nodeFs.openSync(temp, "ax", FILE_MODE)
      try {
        writeAll(fd, bytes)
        faults?.("create.written")
        nodeFs.linkSync(temp, file)
        faults?.("create.linked")
        nodeFs.rmSync(temp, { force: true })
      } catch (error) {
        nodeFs.closeSync(fd)
        nodeFs.rmSync(temp, { force: true })
        throw error
      }
      return fd
    },
    catch: io("create the session log", file)
  })

/**
 * Removes what a migration or a create that was killed left beside a log: the new log's
 * temporary file. The log itself is complete (see the module's comment).
 */
export const removeLeftovers = (file: string): Effect.Effect<void> =>
  Effect.sync(() => {
    for (const temp of [migratingPath(file), creatingPath(file)]) {
      try {
        nodeFs.rmSync(temp, { force: true })
      } catch {
        // Removed with the session at the latest.
      }
    }
  })

/**
 * Replaces a log with `bytes` (the same events in the current format) in one rename, keeping
 * the old file as `backup` (a hard link: no copy). The temporary file is synced before it
 * replaces the log, and the directory after.
 */
export const replaceWhole = (file: string, bytes: Uint8Array, backup: string, faults?: Faults): Effect.Effect<void, LogError> =>
  Effect.try({
    try: () => {
      const temp = migratingPath(file)
      const fd = nodeFs.openSync(temp, "w", FILE_MODE)
      try {
        writeAll(fd, bytes)
        nodeFs.fsyncSync(fd)
      } finally {
        nodeFs.closeSync(fd)
      }
      faults?.("migrate.written")
      try {
        nodeFs.linkSync(file, backup)
      } catch (error) {
        // A migration killed after this step already kept the very same file.
        if (code(error) !== "EEXIST") throw error
      }
      faults?.("migrate.backed-up")
      nodeFs.renameSync(temp, file)
      faults?.("migrate.replaced")
      syncDirectory(nodePath.dirname(file))
    },
    catch: io("migrate the session log", file)
  })

/** The file of a log's side record `side`: `<id>.<side>.json` beside `<id>.ndjson`. */
export const sidePath = (file: string, side: string): string => `${file.replace(/\.ndjson$/, "")}.${side}.json`

/**
 * Replaces a side record whole (owner-only): written to a temporary file beside it, then
 * renamed over it; `undefined` removes it. The caller holds the session's lock.
 */
export const writeSide = (file: string, text: string | undefined): Effect.Effect<void, LogError> =>
  Effect.try({
    try: () => {
      if (text === undefined) return nodeFs.rmSync(file, { force: true })
      const temp = `${file}.${process.pid}.tmp`
      try {
        nodeFs.writeFileSync(temp, text, { mode: FILE_MODE })
        // An existing temporary file keeps its mode through writeFileSync.
        nodeFs.chmodSync(temp, FILE_MODE)
        nodeFs.renameSync(temp, file)
      } catch (error) {
        nodeFs.rmSync(temp, { force: true })
        throw error
      }
    },
    catch: io("write", file)
  })

/** A side record's text, or undefined when there is none. */
export const readSide = (file: string): Effect.Effect<string | undefined, LogError> =>
  Effect.try({
    try: () => {
      try {
        return nodeFs.readFileSync(file, "utf8")
      } catch (error) {
        if (code(error) === "ENOENT") return undefined
        throw error
      }
    },
    catch: io("read", file)
  })

/** Flushes a directory's entries (a new or renamed file survives a power loss). */
const syncDirectory = (directory: string): void => {
  let fd: number | undefined
  try {
    fd = nodeFs.openSync(directory, "r")
    nodeFs.fsyncSync(fd)
  } catch {
    // Not every file system syncs directories; the data itself is synced.
  } finally {
    if (fd !== undefined) nodeFs.closeSync(fd)
  }
}

/**
 * Removes every file of a session but its lock, the log last: first its side files (the MCP
 * settings with their secrets, backups, temporary files), so that a kill half-way leaves the
 * log without them, never them without the log. The caller holds the session's lock, and
 * removes it after. Lock files of other processes (`<id>.lock.*`) are theirs.
 */
export const removeSession = (directory: string, sessionId: string, faults?: Faults): Effect.Effect<void, LogError> =>
  Effect.try({
    try: () => {
      const log = `${sessionId}.ndjson`
      const names = sessionFiles(directory, sessionId).filter((name) => name !== log && !name.startsWith(`${sessionId}.lock`))
      // The secrets first of all, then the rest.
      names.sort((a, b) => Number(b.startsWith(`${sessionId}.mcp.json`)) - Number(a.startsWith(`${sessionId}.mcp.json`)))
      for (const name of names) nodeFs.rmSync(nodePath.join(directory, name), { force: true })
      faults?.("remove.side-files")
      nodeFs.rmSync(nodePath.join(directory, log), { force: true })
      faults?.("remove.log")
    },
    catch: io("remove the session files of", sessionId)
  })

/** The names of a session's files in the directory (`<id>.*`: ids hold no dot); none if it does not exist. */
export const sessionFiles = (directory: string, sessionId: string): Array<string> => {
  let names: Array<string>
  try {
    names = nodeFs.readdirSync(directory)
  } catch (error) {
    if (code(error) === "ENOENT") return []
    throw error
  }
  return names.filter((name) => name.startsWith(`${sessionId}.`))
}
