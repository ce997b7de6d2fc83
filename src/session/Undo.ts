/**
 * `/undo`: reverting the file changes one turn's `write` and `edit` calls made, from the log
 * alone. Bash commands are not tracked, so what they changed stays (and the user is told).
 *
 * What the log holds: every `write`/`edit` call that changed a file ended with an `ok` tool
 * result whose `details.diff` is `[{path, oldText, newText}]`, where `path` is the real path
 * the tool resolved and `oldText`/`newText` are the WHOLE file before and after that call
 * (`oldText: null`: the call created it). So a turn's effect on a file is the first call's
 * `oldText` and the last call's `newText`; nothing has to be replayed.
 *
 * - `lastChangingTurn` picks the turn to undo: the last one with such a result, not already
 *   undone (an `undo` event that was not refused), not rewound (a `rewound` event took its
 *   files back already) and not itself an `/undo`.
 * - `plan` is that turn's effect per file: `before` (null: created) and `after`.
 * - `apply` is all or nothing. Under the files' `PathLocks` locks it first checks every file:
 *   its path must still resolve to itself inside the session's roots, and its content must
 *   be exactly `after`; any file that fails refuses the whole undo and nothing is touched.
 *   Then each file is written back atomically through `SafeFs` (a temp file renamed over it
 *   in the verified directory, and only if it is still what was checked), or removed when
 *   the turn created it. A failure half way puts back what was already reverted.
 * - `message` is the text the user is shown.
 *
 * Limits, from what the log holds: directories a `write` created are left in place; a
 * `write` over a file that was not valid UTF-8 logged a lossy `oldText`, so such a file
 * (`before` holding U+FFFD) is refused rather than restored wrongly.
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Path from "effect/Path"
import * as Random from "effect/Random"
import * as PlatformError from "effect/PlatformError"
import type { Canonical } from "../log/Event.ts"
import * as PathLocks from "../tools/PathLocks.ts"
import * as SafeFs from "../fs/SafeFs.ts"
import * as Workspace from "../tools/Workspace.ts"
import { describeError, inspect, type Inspected } from "../tools/write.ts"

// ---------------------------------------------------------------------------
// Reading the log
// ---------------------------------------------------------------------------

/** The tools whose results record file changes. */
const WRITERS: ReadonlySet<string> = new Set(["write", "edit"])

/** What one turn's `write`/`edit` call did to one file. */
interface Change {
  readonly turn: number
  readonly path: string
  readonly oldText: string | null
  readonly newText: string
}

/** Every file change the log records, in order. */
const changes = (events: ReadonlyArray<Canonical>): Array<Change> => {
  const names = new Map<string, string>()
  const out: Array<Change> = []
  for (const event of events) {
    if (event.type === "tool_call") names.set(event.data.id, event.data.name)
    else if (event.type === "tool_result" && event.turn !== null && event.data.ok && WRITERS.has(names.get(event.data.id) ?? "")) {
      for (const diff of event.data.details?.diff ?? []) {
        out.push({ turn: event.turn, path: diff.path, oldText: diff.oldText, newText: diff.newText })
      }
    }
  }
  return out
}

/**
 * The last turn whose `write`/`edit` calls changed files, leaving out turns already undone
 * (an `undo` event for it that was not refused) and `/undo` turns themselves; undefined when
 * there is none. A second `/undo` so reaches the turn before the first one's.
 */
export const lastChangingTurn = (events: ReadonlyArray<Canonical>): number | undefined => {
  const skipped = new Set<number>()
  for (const event of events) {
    if (event.type === "undo" && event.data.refused === undefined) skipped.add(event.data.turn)
    // A rewind took its turns' files (and conversation) back already: there is nothing of them to undo.
    else if (event.type === "rewound" && event.data.refused === undefined && event.turn !== null) {
      for (let turn = event.data.toTurn; turn < event.turn; turn++) skipped.add(turn)
    }
    else if (event.type === "turn_start" && event.data.command?.name === "undo" && event.turn !== null) skipped.add(event.turn)
  }
  let last: number | undefined
  for (const change of changes(events)) {
    if (!skipped.has(change.turn) && (last === undefined || change.turn > last)) last = change.turn
  }
  return last
}

/** One file a turn changed: its content before the turn's first change and after its last. */
interface FileChange {
  /** Absolute: the real path the tool resolved. */
  readonly path: string
  /** Null: the turn created it. */
  readonly before: string | null
  /** The content the turn left. */
  readonly after: string
}

/** What undoing a turn means. */
export interface Plan {
  readonly turn: number
  /** The files the turn changed, in the order it first changed them; a file it left as it found it is not one. */
  readonly files: ReadonlyArray<FileChange>
  /** The turn ran bash commands (whose changes are not tracked). */
  readonly bash: boolean
}

/** What undoing turn `turn` would do, from its `write`/`edit` results. */
export const plan = (events: ReadonlyArray<Canonical>, turn: number): Plan => {
  const files = new Map<string, { before: string | null; after: string }>()
  for (const change of changes(events)) {
    if (change.turn !== turn) continue
    const seen = files.get(change.path)
    if (seen === undefined) files.set(change.path, { before: change.oldText, after: change.newText })
    else seen.after = change.newText
  }
  const bash = events.some((event) => event.turn === turn && event.type === "tool_call" && event.data.name === "bash")
  return {
    turn,
    files: [...files].filter(([, file]) => file.before !== file.after).map(([path, file]) => ({ path, ...file })),
    bash
  }
}

// ---------------------------------------------------------------------------
// Applying
// ---------------------------------------------------------------------------

/** What an undo did: the files written back and the ones removed (absolute paths), or why it did nothing. */
export type Result =
  | { readonly restored: Array<string>; readonly removed: Array<string> }
  | { readonly refused: string }

interface Options {
  /** Every directory the session may touch: the cwd first, then additional directories. */
  readonly roots: ReadonlyArray<string>
  /** The session's working directory: paths are shown relative to it. */
  readonly cwd: string
}

const encode = (text: string): Uint8Array => new TextEncoder().encode(text)
const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && Buffer.compare(a, b) === 0

/** "a", "a and b", "a, b and c". */
const list = (items: ReadonlyArray<string>): string =>
  items.length <= 1 ? items.join("") : `${items.slice(0, -1).join(", ")} and ${items[items.length - 1]}`

/** A file checked for the undo: what is there now (a regular file holding `after`). */
interface Checked {
  readonly file: FileChange
  readonly mode: number
  readonly read: SafeFs.Expected
}

/** A name inside a verified directory, through its descriptor where `/proc` allows (as `SafeFs` does). */
const at = (dir: SafeFs.Directory, name: string): string => (dir.viaProc ? `/proc/self/fd/${dir.fd}/${name}` : NodePath.join(dir.path, name))

/** A failure to put a file back, as the user reads it (never a payload). */
const describe = (error: SafeFs.Failure, shown: string, doing: string): string => {
  if (error._tag === "PlatformError") return `cannot ${doing} ${shown}: ${describeError(error)}`
  switch (error.reason) {
    case "content":
      return `${shown} changed while the undo ran`
    case "link":
      return `a symbolic link appeared on the path of ${shown}`
    case "outside":
      return `the path of ${shown} now leads outside the session's directories`
  }
}

const unlink = (target: string): Effect.Effect<void, PlatformError.PlatformError> =>
  Effect.tryPromise({
    try: () => NodeFs.promises.unlink(target),
    catch: (cause) => {
      const code = (cause as NodeJS.ErrnoException | undefined)?.code
      const _tag = code === "ENOENT" ? "NotFound" : code === "EACCES" || code === "EPERM" ? "PermissionDenied" : "Unknown"
      return PlatformError.systemError({ _tag, module: "FileSystem", method: "unlink", pathOrDescriptor: target, cause })
    }
  })

/**
 * Removes `name` from the verified directory of `absolute`, if it is still the file that was
 * checked (same inode, size, time and bytes); a link put in its place is refused, never followed.
 */
const remove = (absolute: string, shown: string, checked: Checked, roots: SafeFs.RealRoots): Effect.Effect<void, string> =>
  Effect.scoped(Effect.gen(function*() {
    const dir = yield* SafeFs.openDirectory(NodePath.dirname(absolute), roots, false)
    const name = NodePath.basename(absolute)
    const { handle, stat } = yield* SafeFs.openRead(at(dir, name), roots)
    const was = checked.read.stat
    const same = stat.dev === was.dev && stat.ino === was.ino && stat.size === was.size && stat.mtimeNs === was.mtimeNs &&
      sameBytes(yield* SafeFs.readAll(handle), checked.read.bytes)
    if (!same) return yield* new SafeFs.Changed({ reason: "content" })
    yield* unlink(at(dir, name))
  })).pipe(Effect.mapError((error) => describe(error, shown, "remove")))

/** Writes `content` over `absolute` atomically, keeping `mode`; with `expected`, only if it is still that file. */
const store = (
  absolute: string,
  shown: string,
  content: string,
  mode: number,
  roots: SafeFs.RealRoots,
  expected?: SafeFs.Expected
): Effect.Effect<void, string> =>
  Effect.scoped(Effect.gen(function*() {
    const dir = yield* SafeFs.openDirectory(NodePath.dirname(absolute), roots, false)
    const tag = `undo${(yield* Random.nextIntBetween(0, 2 ** 31 - 1)).toString(36)}`
    yield* SafeFs.writeAtomic(dir, NodePath.basename(absolute), encode(content), roots, { mode, tag, expected })
  })).pipe(Effect.mapError((error) => describe(error, shown, "write")))

/** Runs `effect` holding the `PathLocks` lock of every path, taken in one order so two holders of several never wait on each other. */
const withLocks = (paths: ReadonlyArray<string>) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  [...new Set(paths)].sort().reduceRight((inner, path) => PathLocks.withLock(path)(inner), effect)

/**
 * Reverts the plan's files, all or nothing. Every file is checked first (inside the roots by
 * its real path, and holding exactly what the turn left); one that is not refuses the undo,
 * naming it, and nothing is written. Then each is written back, or removed when the turn
 * created it. Never fails: a problem is a `refused` result.
 */
export const apply: (plan: Plan, options: Options) => Effect.Effect<Result, never, FileSystem.FileSystem | Path.Path> = Effect.fn(
  "Undo.apply"
)(function*(plan: Plan, options: Options) {
  const path = yield* Path.Path
  const shown = (absolute: string) => Workspace.display(path, options.cwd, absolute)
  const refuse = (why: string): Result => ({ refused: `Turn ${plan.turn} was not undone: ${why}. No file was changed.` })
  if (plan.files.length === 0) return { restored: [], removed: [] } satisfies Result

  // Confinement: the logged path must still be its own real path inside the roots (no link on the way now).
  const outside: Array<string> = []
  for (const file of plan.files) {
    const resolved = path.isAbsolute(file.path)
      ? yield* Workspace.resolve(file.path, options).pipe(Effect.orElseSucceed(() => undefined))
      : undefined
    if (resolved !== file.path) outside.push(file.path)
  }
  if (outside.length > 0) {
    return refuse(`${list(outside.map(shown))} ${outside.length === 1 ? "is" : "are"} outside the session's directories or now reached through a symbolic link`)
  }
  const unrestorable = plan.files.filter((file) => file.before?.includes("\uFFFD") === true)
  if (unrestorable.length > 0) {
    return refuse(`the log does not hold the exact earlier content of ${list(unrestorable.map((file) => shown(file.path)))} (it was not valid UTF-8 text)`)
  }

  const roots = yield* SafeFs.realRoots(options.roots)
  return yield* withLocks(plan.files.map((file) => file.path))(Effect.gen(function*() {
    // Every file first: what is there must be what the turn left.
    const checked: Array<Checked> = []
    const changed: Array<string> = []
    for (const file of plan.files) {
      const now = yield* inspect(file.path, shown(file.path), roots).pipe(
        Effect.orElseSucceed((): Inspected => ({ _tag: "other", type: "Other" }))
      )
      if (now._tag === "missing") changed.push(`${shown(file.path)} (deleted)`)
      else if (now._tag === "other") changed.push(`${shown(file.path)} (${now.type === "Directory" ? "now a directory" : "no longer a readable regular file"})`)
      else if (!sameBytes(now.read.bytes, encode(file.after))) changed.push(shown(file.path))
      else checked.push({ file, mode: now.mode, read: now.read })
    }
    if (changed.length > 0) {
      return refuse(`${changed.length === 1 ? "this file has" : "these files have"} changed since that turn: ${list(changed)}`)
    }

    // Then the changes, each put back if a later one fails.
    const done: Array<Checked> = []
    const putBack = () => Effect.forEach([...done].reverse(), (item) =>
      store(item.file.path, shown(item.file.path), item.file.after, item.mode, roots).pipe(
        Effect.map(() => undefined),
        Effect.orElseSucceed(() => shown(item.file.path))
      ))
    for (const item of checked) {
      const { file } = item
      const outcome = yield* (file.before === null
        ? remove(file.path, shown(file.path), item, roots)
        : store(file.path, shown(file.path), file.before, item.mode, roots, item.read)).pipe(Effect.result)
      if (outcome._tag === "Failure") {
        const stuck = (yield* putBack()).filter((left): left is string => left !== undefined)
        const why = `Turn ${plan.turn} was not undone: ${outcome.failure}.`
        return {
          refused: stuck.length === 0
            ? `${why} No file was changed.`
            : `${why} ${list(stuck)} could not be put back as the turn left ${stuck.length === 1 ? "it and is" : "them and are"} as before the turn.`
        } satisfies Result
      }
      done.push(item)
    }
    return {
      restored: done.filter((item) => item.file.before !== null).map((item) => item.file.path),
      removed: done.filter((item) => item.file.before === null).map((item) => item.file.path)
    } satisfies Result
  }))
})

// ---------------------------------------------------------------------------
// Telling the user
// ---------------------------------------------------------------------------

/** What `/undo` says when no turn has file changes left to undo. */
export const nothingToUndo = "Nothing to undo: no turn has write or edit changes left to revert."

/**
 * The text the user is shown for an undo: what was restored and removed (paths relative to
 * `cwd` when inside it), or why it was refused; and, when the turn ran bash commands, that
 * their changes are not undone.
 */
export const message = (result: Result, plan: Plan, cwd: string): string => {
  const shown = (absolute: string) => {
    const rel = NodePath.relative(cwd, absolute)
    return rel === "" || rel === ".." || rel.startsWith(`..${NodePath.sep}`) || NodePath.isAbsolute(rel) ? absolute : rel
  }
  const lines: Array<string> = []
  if ("refused" in result) lines.push(result.refused)
  else if (result.restored.length === 0 && result.removed.length === 0) {
    lines.push(`Turn ${plan.turn} left every file it changed as it found it; there was nothing to revert.`)
  } else {
    const parts: Array<string> = []
    if (result.restored.length > 0) parts.push(`restored ${list(result.restored.map(shown))}`)
    if (result.removed.length > 0) parts.push(`removed ${list(result.removed.map(shown))} (created in that turn)`)
    lines.push(`Undid the file changes of turn ${plan.turn}: ${parts.join("; ")}.`)
  }
  if (plan.bash) lines.push(`Turn ${plan.turn} also ran shell commands: changes they made are not tracked and were not undone.`)
  return lines.join("\n")
}
