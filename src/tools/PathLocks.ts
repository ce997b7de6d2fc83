/**
 * One writer per file at a time, across every session of this process.
 *
 * `write` and `edit` read a file, work out its new content and store it. Two
 * sessions in the same workspace (child sessions sharing their parent's cwd)
 * doing that to one file at once would either lose an update (both read the
 * old text; the second store wins) or, for an edit, fail on the content check
 * of `SafeFs.writeAtomic`. Under `withLock` of the file's path, the second
 * read-modify-write starts after the first has stored its result.
 *
 * Keys are absolute paths as the tools resolved them (real paths), so two
 * spellings of one file share a lock. An entry lives while some fiber holds or
 * waits for it, and is removed with its last user: the table never grows with
 * the number of files ever written. This orders Skein's own writers only; a
 * change made by another program is still caught by the content check.
 */
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Semaphore from "effect/Semaphore"

interface Entry {
  readonly lock: Semaphore.Semaphore
  /** Fibers holding or waiting for the lock. */
  users: number
}

const entries = new Map<string, Entry>()

const enter = (key: string): Entry => {
  let entry = entries.get(key)
  if (entry === undefined) {
    entry = { lock: Semaphore.makeUnsafe(1), users: 0 }
    entries.set(key, entry)
  }
  entry.users++
  return entry
}

const leave = (key: string, entry: Entry): void => {
  if (--entry.users === 0) entries.delete(key)
}

/**
 * Runs `effect` holding the lock of `path` (made absolute): after every
 * earlier holder of that path has finished, before any later one starts.
 * Interruption while waiting or running releases it.
 */
export const withLock = (path: string) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
  const key = NodePath.resolve(path)
  return Effect.acquireUseRelease(
    Effect.sync(() => enter(key)),
    (entry) => entry.lock.withPermit(effect),
    (entry) => Effect.sync(() => leave(key, entry))
  )
}

/** How many paths have a holder or a waiter now (for tests: unused entries are gone). */
export const size = (): number => entries.size
