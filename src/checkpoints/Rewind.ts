/**
 * `/rewind [N]`: the files and the conversation back to before turn N (default: the last
 * turn the model still sees). Run as a turn of its own that the model never sees.
 *
 * - `target` (pure) picks the turn and the `fromSeq` the model's view is cut at. A turn already
 *   rewound, a `/rewind` turn, or a turn before a compaction (the conversation before it is
 *   only a summary now) is refused.
 * - The files: the `before` checkpoint of the first turn from N on that took one is compared
 *   with the workspace now (itself a checkpoint: the rewind turn's own `before`). Every file
 *   that differs is written back from it, or removed when it did not exist then.
 * - Changed by something else: Skein knows its own changes by the `after` checkpoint it took at
 *   each such turn's end; whatever changed between one turn's `after` and the next `before`
 *   (or the workspace now) was someone else. Such a file is not overwritten silently: the
 *   rewind names it and asks (overwrite, or keep it and rewind the rest); when nobody can
 *   answer, it refuses and changes nothing.
 * - A file too large to be in the checkpoint is never removed; it is named as skipped. A turn
 *   whose `before` checkpoint could not be taken (its notice says why: too much new content)
 *   changed files nothing can bring back: the rewind names it (`unrestored`) and leaves them.
 * - Logged as `rewound` (History folds the model's view from it), and told in a `notice`.
 */
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import type { Canonical, CanonicalBody } from "../log/Event.ts"
import type { LogError } from "../log/LogError.ts"
import { Questions } from "../session/TurnContract.ts"
import type { Checkpoints } from "./Checkpoints.ts"
import * as Shadow from "./Shadow.ts"

type CheckpointEvent = Extract<Canonical, { readonly type: "checkpoint" }>

/** "a", "a and b", "a, b and c". */
const list = (items: ReadonlyArray<string>): string =>
  items.length <= 1 ? items.join("") : `${items.slice(0, -1).join(", ")} and ${items[items.length - 1]}`

export type Target =
  | { readonly _tag: "Target"; readonly toTurn: number; readonly fromSeq: number }
  | { readonly _tag: "Refused"; readonly toTurn: number; readonly why: string }

/** The turn `/rewind arguments` in turn `current` goes back to before, from the log. Pure. */
export const target = (events: ReadonlyArray<Canonical>, current: number, args: string): Target => {
  const starts = new Map<number, { readonly seq: number; readonly rewind: boolean }>()
  const gone = new Set<number>()
  for (const event of events) {
    if (event.type === "turn_start" && event.turn !== null && event.turn < current) {
      starts.set(event.turn, { seq: event.seq, rewind: event.data.command?.name === "rewind" && event.data.command.local === true })
    } else if (event.type === "rewound" && event.data.refused === undefined && event.turn !== null) {
      for (let turn = event.data.toTurn; turn < event.turn; turn++) gone.add(turn)
    }
  }
  const live = [...starts].filter(([turn, start]) => !gone.has(turn) && !start.rewind).map(([turn]) => turn)
  const text = args.trim()
  if (text !== "" && !/^\d+$/.test(text)) return { _tag: "Refused", toTurn: 0, why: `"${text.slice(0, 40)}" is not a turn number (use /rewind N, or /rewind for the last turn)` }
  const toTurn = text === "" ? live.at(-1) : Number(text)
  if (toTurn === undefined) return { _tag: "Refused", toTurn: 0, why: "there is no turn to rewind" }
  const start = starts.get(toTurn)
  if (start === undefined) return { _tag: "Refused", toTurn, why: `there is no turn ${toTurn} before this one` }
  if (gone.has(toTurn)) return { _tag: "Refused", toTurn, why: `turn ${toTurn} was rewound already` }
  if (start.rewind) return { _tag: "Refused", toTurn, why: `turn ${toTurn} was itself a /rewind` }
  const compaction = events.find((event) => event.type === "compaction" && event.seq > start.seq)
  if (compaction !== undefined) {
    return { _tag: "Refused", toTurn, why: `the conversation was compacted in turn ${compaction.turn ?? "?"}, after turn ${toTurn} began: what came before that is only a summary now` }
  }
  return { _tag: "Target", toTurn, fromSeq: start.seq }
}

/** The checkpoints from the `before` one the files go back to (the first of a turn from `toTurn` on, before `current`), in log order. */
export const checkpointsFrom = (events: ReadonlyArray<Canonical>, toTurn: number, current: number): ReadonlyArray<CheckpointEvent> => {
  const all = events.filter((event): event is CheckpointEvent => event.type === "checkpoint" && event.data.turn < current)
  const first = all.findIndex((event) => event.data.at === "before" && event.data.turn >= toTurn)
  return first < 0 ? [] : all.slice(first)
}

/**
 * The turns from `toTurn` on (before `current`) that were to take a `before` checkpoint and
 * could not: a `checkpoint` notice of the turn, and no `before` checkpoint of it. Pure.
 */
const unprotected = (events: ReadonlyArray<Canonical>, toTurn: number, current: number): ReadonlyArray<number> => {
  const failed = new Set<number>()
  const taken = new Set<number>()
  for (const event of events) {
    if (event.turn === null || event.turn < toTurn || event.turn >= current) continue
    if (event.type === "notice" && event.data.source === "checkpoint") failed.add(event.turn)
    else if (event.type === "checkpoint" && event.data.at === "before") taken.add(event.data.turn)
  }
  return [...failed].filter((turn) => !taken.has(turn)).sort((a, b) => a - b)
}

/** The pairs of checkpoints between which something other than the session may have changed files: each `after` and what came next. */
export const gaps = (sequence: ReadonlyArray<CheckpointEvent>, now: string): ReadonlyArray<readonly [string, string]> =>
  sequence.flatMap((event, i) => {
    if (event.data.at !== "after") return []
    const next = sequence[i + 1]
    return next === undefined ? [[event.data.id, now] as const] : next.data.at === "before" ? [[event.data.id, next.data.id] as const] : []
  })

export interface Context {
  /** The rewind's own turn. */
  readonly turn: number
  readonly arguments: string
  readonly cwd: string
  readonly events: ReadonlyArray<Canonical>
  /** The session's checkpoints (none: a child session, whose files are its parent's). */
  readonly checkpoints: Checkpoints | undefined
  /** Why the session may not change files now, if it may not. */
  readonly readOnly: string | undefined
  readonly record: (body: CanonicalBody) => Effect.Effect<void, LogError>
}

const OVERWRITE = "allow_once"
const KEEP = "reject_once"

/** Runs `/rewind`; logs what it did. A file changed meanwhile by something else is asked about (the turn's `Questions`). */
export const run = (ctx: Context): Effect.Effect<void, LogError, Questions> =>
  Effect.gen(function*() {
    const shown = (absolute: string) => {
      const rel = NodePath.relative(ctx.cwd, absolute)
      return rel === "" || rel.startsWith("..") || NodePath.isAbsolute(rel) ? absolute : rel
    }
    const notice = (text: string) => ctx.record({ type: "notice", data: { text, source: "rewind" } })
    const refuse = (toTurn: number, fromSeq: number, why: string) =>
      Effect.andThen(
        ctx.record({ type: "rewound", data: { toTurn, fromSeq, restored: [], removed: [], skipped: [], refused: why } }),
        notice(`Nothing was rewound: ${why}. No file and nothing of the conversation was changed.`)
      )
    const picked = target(ctx.events, ctx.turn, ctx.arguments)
    if (picked._tag === "Refused") return yield* refuse(picked.toTurn, 0, picked.why)
    const { toTurn, fromSeq } = picked
    const sequence = checkpointsFrom(ctx.events, toTurn, ctx.turn)
    const from = sequence[0]
    const unrestored = unprotected(ctx.events, toTurn, ctx.turn)
    const lost = unrestored.length === 0 ? "" : ` What turn ${list(unrestored.map(String))} changed was not restored: no checkpoint could be taken before ${unrestored.length === 1 ? "it" : "them"} (see ${unrestored.length === 1 ? "its notice" : "their notices"}), so those files are left as they are.`
    const done = (data: { checkpoint?: string; restored: Array<string>; removed: Array<string>; skipped: Array<string> }, extra: string) =>
      Effect.andThen(
        ctx.record({ type: "rewound", data: { toTurn, fromSeq, ...data, ...(unrestored.length > 0 ? { unrestored } : {}) } }),
        notice(`Rewound to before turn ${toTurn}: the model no longer sees turn ${toTurn} or what followed it.${extra}${lost}`)
      )
    if (from === undefined) return yield* done({ restored: [], removed: [], skipped: [] }, unrestored.length > 0 ? "" : " No file had changed since, by this session.")
    if (ctx.readOnly !== undefined) return yield* refuse(toTurn, fromSeq, `${ctx.readOnly}, and rewinding changes files; switch to another mode to rewind`)
    const checkpoints = ctx.checkpoints
    if (checkpoints === undefined) return yield* refuse(toTurn, fromSeq, "a child session's files are its parent's to rewind")
    const moved = from.data.roots.findIndex((root, i) => checkpoints.roots[i] !== root)
    if (moved >= 0) return yield* refuse(toTurn, fromSeq, `the checkpoint holds ${from.data.roots[moved]}, which is not a directory of this session now`)
    if (!(yield* Shadow.kept(checkpoints.gitDir, from.data.id))) {
      return yield* refuse(toTurn, fromSeq, `the checkpoint of turn ${from.data.turn} is no longer kept (a session keeps those of its last turns that changed files)`)
    }
    const now = yield* checkpoints.before(ctx.turn)
    if (now === undefined) return yield* refuse(toTurn, fromSeq, "the files as they are now could not be compared with the checkpoint")

    const gitDir = checkpoints.gitDir
    const result = yield* checkpoints.lock(Effect.gen(function*() {
      const changes = yield* Shadow.diff(gitDir, from.data.id, now)
      const key = (c: { readonly root: number; readonly path: string }) => `${c.root}\0${c.path}`
      const absolute = (c: { readonly root: number; readonly path: string }) => NodePath.join(checkpoints.roots[c.root]!, c.path)
      // Changed by something else: between an `after` and what came next (a gap git cannot read tells nothing).
      const others = new Set<string>()
      for (const [a, b] of gaps(sequence, now)) {
        for (const change of yield* Effect.orElseSucceed(Shadow.diff(gitDir, a, b), () => [])) others.add(key(change))
      }
      const large = new Set(from.data.skipped ?? [])
      const skipped: Array<string> = []
      const conflicts = changes.filter((c) => others.has(key(c)) && !large.has(absolute(c)))
      let keep = new Set<string>()
      if (conflicts.length > 0) {
        const names = list(conflicts.map((c) => shown(absolute(c))))
        const questions = yield* Questions
        if (!questions.canAsk()) return { refused: `${names} ${conflicts.length === 1 ? "was" : "were"} changed since by something other than this session, and nobody is here to say whether to overwrite ${conflicts.length === 1 ? "it" : "them"}` }
        const toolCallId = `rewind-${ctx.turn}`
        const answer = yield* questions.ask({
          toolCall: {
            toolCallId,
            title: `Rewind to before turn ${toTurn}: ${names} changed since by something else`,
            kind: "edit",
            status: "pending",
            rawInput: { turn: toTurn },
            locations: conflicts.map((c) => ({ path: absolute(c) }))
          },
          options: [
            { optionId: OVERWRITE, name: "Overwrite them too", kind: "allow_once" },
            { optionId: KEEP, name: "Keep them as they are, rewind the rest", kind: "reject_once" }
          ]
        })
        const choice = answer?.outcome === "selected" && (answer.optionId === OVERWRITE || answer.optionId === KEEP) ? answer.optionId : undefined
        yield* ctx.record({ type: "permission", data: { toolCallId, outcome: choice ?? "cancelled" } })
        if (choice === undefined) return { refused: `the question about ${names}, changed since by something else, was not answered` }
        if (choice === KEEP) {
          keep = new Set(conflicts.map(key))
          skipped.push(...conflicts.map(absolute))
        }
      }
      const restored: Array<string> = []
      const removed: Array<string> = []
      for (const [i, root] of checkpoints.roots.entries()) {
        const mine = changes.filter((c) => c.root === i && !keep.has(key(c)))
        const gone = mine.filter((c) => c.status === "A")
        const folders = gone.length === 0 ? new Set<string>() : yield* Shadow.folders(gitDir, from.data.id, i)
        for (const change of gone) {
          if (large.has(absolute(change))) skipped.push(absolute(change))
          else if (yield* Shadow.remove(root, change.path, folders)) removed.push(absolute(change))
          else skipped.push(absolute(change))
        }
        const back = mine.filter((c) => c.status !== "A")
        yield* Shadow.restore(gitDir, from.data.id, i, root, back.map((c) => c.path))
        restored.push(...back.map(absolute))
      }
      return { restored, removed, skipped }
    })).pipe(Effect.catch((error) => Effect.succeed({ refused: `the files could not be written back (${error.message})` })))
    if (result.refused !== undefined) return yield* refuse(toTurn, fromSeq, result.refused)
    const parts: Array<string> = []
    if (result.restored.length > 0) parts.push(`restored ${list(result.restored.map(shown))}`)
    if (result.removed.length > 0) parts.push(`removed ${list(result.removed.map(shown))}`)
    if (result.skipped.length > 0) parts.push(`left ${list(result.skipped.map(shown))} as ${result.skipped.length === 1 ? "it is" : "they are"}`)
    yield* done(
      { checkpoint: from.data.id, ...result },
      parts.length > 0 ? ` Files: ${parts.join("; ")}.` : " Every file was already as it was then."
    )
  })
