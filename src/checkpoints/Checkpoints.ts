/**
 * A session's checkpoints: the workspace before each turn first changes it, and at that
 * turn's end, in the session's shadow repository (`Shadow.ts`), each logged as a `checkpoint`
 * event of the turn.
 *
 * - `before(turn)` is called where a call that may change files was allowed to run (`guard`
 *   wraps the permission gate): the first caller of a turn takes the checkpoint, any other
 *   (parallel calls, a child in the shared workspace) waits for it. A checkpoint that cannot
 *   be taken is said once in a notice; the call still runs.
 * - `after(turn)`, at the turn's end, takes the second one only for a turn that took the
 *   first: the two tell Skein's own changes from changes made by something else in between.
 * - Bounded (`Limits`): at the end of every turn that took them, the checkpoints of all but the
 *   last `keepTurns` turns that took any are dropped (a rewind past them says it cannot); every
 *   `collectEvery` such turns (counted in the repository, so across processes too), or as soon
 *   as the repository is over `maxBytes`, git packs it and deletes what no checkpoint keeps;
 *   while it is still over `maxBytes`, older turns are dropped too. One snapshot stores at most
 *   `maxSnapshotBytes` of new content (`Shadow.snapshot`).
 * - Every operation on the repository runs one at a time (`lock`).
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Semaphore from "effect/Semaphore"
import type { CanonicalBody } from "../log/Event.ts"
import type { LogError } from "../log/LogError.ts"
import { dirOf } from "./Place.ts"

/** How much a session's checkpoints may keep (`DEFAULT_LIMITS` unless the host says otherwise). */
export interface Limits {
  /** The turns (that changed files) whose checkpoints a session keeps. */
  readonly keepTurns: number
  /** The most a session's shadow repository may take on disk (bytes). */
  readonly maxBytes: number
  /** The most new content one snapshot stores (bytes); a larger one is not taken. */
  readonly maxSnapshotBytes: number
  /** Every this many turns that changed files, the repository is packed and what is unkept deleted. */
  readonly collectEvery: number
}

export const DEFAULT_LIMITS: Limits = {
  keepTurns: 50,
  maxBytes: 1024 * 1024 * 1024,
  maxSnapshotBytes: 1024 * 1024 * 1024,
  collectEvery: 20
}

export interface Options {
  readonly home: string
  readonly sessionId: string
  /** The session's roots, the cwd first. */
  readonly roots: ReadonlyArray<string>
  /** Logs an event in turn `turn`. */
  readonly record: (turn: number, body: CanonicalBody) => Effect.Effect<void, LogError>
  /** Any of the limits to change (the rest: `DEFAULT_LIMITS`). */
  readonly limits?: Partial<Limits> | undefined
}

export interface Checkpoints {
  readonly gitDir: string
  readonly roots: ReadonlyArray<string>
  /** The turn's `before` checkpoint, taken once: its commit, or undefined when it could not be taken. Never fails. */
  readonly before: (turn: number) => Effect.Effect<string | undefined>
  /** At the end of a turn that took a `before` checkpoint: its `after` one (then the upkeep). Never fails. */
  readonly after: (turn: number) => Effect.Effect<void>
  /** Runs `effect` while nothing else uses the repository. */
  readonly lock: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

const refTurn = (ref: string): number => Number(/\/t(\d+)-/.exec(ref)?.[1] ?? "0")

/**
 * The shadow repository's module (with git's and the object store's), loaded with a session's
 * first checkpoint: opening a session takes none, and `skein acp` answers `session/new` without
 * evaluating it (scripts/startup-modules.mjs).
 */
const shadow = Effect.promise(() => import("./Shadow.ts"))

export const make = (options: Options): Checkpoints => {
  const gitDir = dirOf(options.home, options.sessionId)
  const given: Limits = { ...DEFAULT_LIMITS, ...options.limits }
  // The current turn's checkpoints are always kept, and collecting can be due every turn at most.
  const limits: Limits = { ...given, keepTurns: Math.max(1, given.keepTurns), collectEvery: Math.max(1, given.collectEvery) }
  const semaphore = Semaphore.makeUnsafe(1)
  const lock = semaphore.withPermits(1)
  const taken = new Map<number, Deferred.Deferred<string | undefined>>()

  const take = (turn: number, at: "before" | "after") =>
    lock(Effect.flatMap(shadow, (Shadow) => Shadow.snapshot(gitDir, options.roots, `t${turn}-${at}`, limits.maxSnapshotBytes))).pipe(
      Effect.tap((shot) =>
        options.record(turn, {
          type: "checkpoint",
          data: { turn, at, id: shot.commit, roots: options.roots, ...(shot.skipped.length > 0 ? { skipped: shot.skipped } : {}) }
        })
      ),
      Effect.map((shot) => shot.commit as string | undefined),
      Effect.catch((error) =>
        Effect.as(
          Effect.ignore(options.record(turn, {
            type: "notice",
            data: {
              text: at === "before"
                ? `No checkpoint could be taken before this turn changed files (${error.message}): /rewind cannot bring them back to before it.`
                : `No checkpoint could be taken at the end of this turn (${error.message}): a later /rewind treats what changed since as changed by someone else.`,
              source: "checkpoint"
            }
          })),
          undefined
        )
      )
    )

  /** After a turn's checkpoints: drops the oldest turns' beyond the bounds; packs and deletes what is unkept when due. */
  const upkeep = lock(Effect.gen(function*() {
    const Shadow = yield* shadow
    const refs = yield* Shadow.refs(gitDir)
    if (refs.length === 0) return
    let turns = [...new Set(refs.map(refTurn))].sort((a, b) => a - b)
    const dropTurns = (count: number) => {
      const gone = new Set(turns.slice(0, count))
      turns = turns.slice(count)
      return Shadow.drop(gitDir, refs.filter((ref) => gone.has(refTurn(ref))))
    }
    if (turns.length > limits.keepTurns) yield* dropTurns(turns.length - limits.keepTurns)
    const due = (yield* Shadow.countTurn(gitDir)) >= limits.collectEvery
    if (!due && (yield* Shadow.size(gitDir)) <= limits.maxBytes) return
    yield* Shadow.collect(gitDir)
    while (turns.length > 1 && (yield* Shadow.size(gitDir)) > limits.maxBytes) {
      yield* dropTurns(Math.max(1, Math.floor(turns.length / 2)))
      yield* Shadow.collect(gitDir)
    }
  })).pipe(Effect.catch((error) => Effect.logWarning(`checkpoints of ${options.sessionId}: ${error.message}`)))

  return {
    gitDir,
    roots: options.roots,
    lock,
    before: (turn) =>
      Effect.suspend(() => {
        const known = taken.get(turn)
        if (known !== undefined) return Deferred.await(known)
        const done = Deferred.makeUnsafe<string | undefined>()
        taken.set(turn, done)
        return take(turn, "before").pipe(
          Effect.onExit((exit) => Deferred.succeed(done, exit._tag === "Success" ? exit.value : undefined))
        )
      }),
    after: (turn) =>
      Effect.suspend(() => {
        const known = taken.get(turn)
        if (known === undefined) return Effect.void
        taken.delete(turn)
        return Effect.andThen(take(turn, "after"), upkeep)
      })
  }
}

/**
 * The permission gate with the checkpoint in it: a call allowed to change files (a mutating
 * tool, not confined to reading) takes `checkpoint` first.
 */
export const guard = <C, T extends { readonly mutating: boolean }, Rest extends ReadonlyArray<unknown>, P extends { readonly _tag: string; readonly readOnly?: true | undefined }, R>(
  gate: (call: C, tool: T, ...rest: Rest) => Effect.Effect<P, never, R>,
  checkpoint: Effect.Effect<unknown>
) =>
(call: C, tool: T, ...rest: Rest): Effect.Effect<P, never, R> =>
  Effect.tap(gate(call, tool, ...rest), (permit) =>
    permit._tag === "allow" && permit.readOnly !== true && tool.mutating ? checkpoint : Effect.void)
