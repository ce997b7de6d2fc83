/**
 * The write lease on a session: `<id>.lock` beside its log, holding the owner
 * `{pid, host, started}`. Only the holder appends to the log; reading needs no
 * lease. Two Skein processes therefore never write the same session.
 *
 * The lock file appears atomically with its content (written to a private
 * temporary file, then hard-linked into place, which fails if a lock exists).
 * A lock whose owner is a process of this host that no longer runs (a crash,
 * `kill -9`, a zombie not yet reaped) is stale and taken over, quietly (at debug level). A lock held by another host cannot be
 * checked and is respected; the error says which file to remove.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import type * as Scope from "effect/Scope"
import * as nodeFs from "node:fs"
import * as os from "node:os"
import { describeCode, LogError } from "./LogError.ts"

interface Owner {
  readonly pid: number
  readonly host: string
  /** When the owner took the lock (ms since the epoch). */
  readonly started: number
  /**
   * Where the system tells (Linux): the boot the owner ran in and its process's start time
   * in that boot. A pid reused by another process, or a lock left before a reboot, then
   * reads as stale instead of live. Locks written without them fall back to the pid alone.
   */
  readonly boot?: string | undefined
  readonly since?: string | undefined
}

const parseOwner = (text: string): Owner | undefined => {
  try {
    const o = JSON.parse(text) as Partial<Owner>
    return typeof o.pid === "number" && typeof o.host === "string" && typeof o.started === "number"
      ? {
        pid: o.pid,
        host: o.host,
        started: o.started,
        ...(typeof o.boot === "string" ? { boot: o.boot } : {}),
        ...(typeof o.since === "string" ? { since: o.since } : {})
      }
      : undefined
  } catch {
    return undefined
  }
}

/**
 * Whether a process of this host runs with that pid (EPERM: it runs, as someone else). A
 * zombie (dead, not yet reaped by its parent: an editor that killed Skein and has not waited
 * for it yet) still answers signal 0, but runs no more: where the system tells (Linux), it
 * does not count.
 */
const running = (pid: number): boolean => {
  if (!Number.isInteger(pid) || pid <= 0) return false
  try {
    process.kill(pid, 0)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false
  }
  const state = processState(pid)
  return state !== "Z" && state !== "X"
}

const readProc = (file: string): string | undefined => {
  if (process.platform !== "linux") return undefined
  try {
    return nodeFs.readFileSync(file, "utf8")
  } catch {
    return undefined
  }
}

let thisBoot: string | undefined | null = null
/** This boot's id (Linux), read once. */
export const bootId = (): string | undefined => {
  if (thisBoot === null) thisBoot = readProc("/proc/sys/kernel/random/boot_id")?.trim() || undefined
  return thisBoot
}

/** The fields of /proc/<pid>/stat after the command name (Linux), from field 3 on. */
const statFields = (pid: number): Array<string> | undefined => {
  const stat = readProc(`/proc/${pid}/stat`)
  // The command name (field 2) is in parentheses and may hold spaces: count after its end.
  return stat === undefined ? undefined : stat.slice(stat.lastIndexOf(")") + 2).split(" ")
}

/** When a process started, in clock ticks since boot (Linux: field 22 of /proc/<pid>/stat). */
export const processStart = (pid: number): string | undefined => statFields(pid)?.[19]

let ownStart: string | undefined | null = null
/** When this process started (Linux), read once: every lock it takes says so. */
const thisProcessStart = (): string | undefined => {
  if (ownStart === null) ownStart = processStart(process.pid)
  return ownStart
}

/** A process's state letter (Linux: field 3 of /proc/<pid>/stat; `Z` zombie, `X` dead). */
export const processState = (pid: number): string | undefined => statFields(pid)?.[0]

/** The same process as the one that wrote `owner`, as far as this system can tell. */
const sameProcess = (owner: Owner): boolean => {
  const boot = bootId()
  if (owner.boot !== undefined && boot !== undefined && owner.boot !== boot) return false
  if (owner.since === undefined) return true
  const since = processStart(owner.pid)
  return since === undefined || since === owner.since
}

/** Whether the lock's owner may still write: another host, or a running process here. */
export const isLive = (owner: Owner | undefined): boolean =>
  owner !== undefined &&
  (owner.host !== os.hostname() || ((owner.pid === process.pid || running(owner.pid)) && sameProcess(owner)))

const lockedError = (sessionId: string, lockFile: string, owner: Owner) =>
  new LogError({
    reason: "locked",
    message: owner.pid === process.pid && owner.host === os.hostname()
      ? `Session ${sessionId} is already open in this Skein process (pid ${owner.pid})`
      : `Session ${sessionId} is open in another Skein process (pid ${owner.pid} on ${owner.host}). ` +
        `Close it there first; if that process is gone, remove ${lockFile}`
  })

/** The current owner of a lock file, if there is a readable one. */
export const owner = (fs: FileSystem.FileSystem, lockFile: string): Effect.Effect<Owner | undefined> =>
  fs.readFileString(lockFile).pipe(Effect.map(parseOwner), Effect.orElseSucceed(() => undefined))

/** Fails with `locked` when a live process other than this one holds the lock. */
export const checkFree = (fs: FileSystem.FileSystem, lockFile: string, sessionId: string) =>
  Effect.flatMap(owner(fs, lockFile), (o) => (o !== undefined && isLive(o) ? Effect.fail(lockedError(sessionId, lockFile, o)) : Effect.void))

/**
 * Takes the lock for the scope's lifetime; it is removed when the scope closes
 * (only if it is still ours). Fails with `locked` when a live owner has it.
 *
 * Synchronous file calls: a handful of metadata operations on a local file take
 * microseconds, where a thread-pool round trip each made up a good part of the
 * time `session/new` takes.
 */
export const acquire = (lockFile: string, sessionId: string): Effect.Effect<void, LogError, Scope.Scope> =>
  Effect.gen(function*() {
    const boot = bootId()
    const since = thisProcessStart()
    const me: Owner = {
      pid: process.pid,
      host: os.hostname(),
      started: yield* Clock.currentTimeMillis,
      ...(boot !== undefined ? { boot } : {}),
      ...(since !== undefined ? { since } : {})
    }
    const mine = JSON.stringify(me)
    const io = (what: string, error: unknown) =>
      new LogError({ reason: "io", message: `Cannot ${what} the lock ${lockFile}: ${describeCode(error)}` })
    const read = (): string | undefined => {
      try {
        return nodeFs.readFileSync(lockFile, "utf8")
      } catch {
        return undefined
      }
    }
    const remove = (file: string) => {
      try {
        nodeFs.rmSync(file, { force: true })
      } catch {
        // A lock we cannot remove is left for the next owner to take over.
      }
    }
    const temp = `${lockFile}.${process.pid}.${me.started}.tmp`
    try {
      nodeFs.writeFileSync(temp, mine, { flag: "w", mode: 0o600 })
    } catch (error) {
      return yield* io("write", error)
    }
    // The lock appears whole or not at all: a hard link of a complete file, which fails if one exists.
    const link = (): boolean | LogError => {
      try {
        nodeFs.linkSync(temp, lockFile)
        return true
      } catch (error) {
        return (error as NodeJS.ErrnoException).code === "EEXIST" ? false : io("create", error)
      }
    }
    const taken = yield* Effect.gen(function*() {
      const first = link()
      if (first !== false) return first
      const text = read()
      if (text === undefined) return link() // removed meanwhile
      const current = parseOwner(text)
      if (current !== undefined && isLive(current)) return lockedError(sessionId, lockFile, current)
      // Stale: remove it only if it is still the stale one, then race for it once more.
      if (read() === text) remove(lockFile)
      // Routine after a crash and none of the user's business: editors show stderr in their transcript.
      yield* Effect.logDebug(`Took over the stale lock ${lockFile} (its owner, pid ${current?.pid ?? "?"}, is gone)`)
      return link()
    }).pipe(Effect.ensuring(Effect.sync(() => remove(temp))))
    if (taken instanceof LogError) return yield* taken
    if (!taken) {
      const text = read()
      return yield* lockedError(sessionId, lockFile, (text === undefined ? undefined : parseOwner(text)) ?? me)
    }
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        if (read() === mine) remove(lockFile)
      })
    )
  })
