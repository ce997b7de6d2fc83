/**
 * Forking a session: a new log that starts with a session's events up to the end of one of its
 * turns, and then goes its own way. The session's own log is only read.
 *
 * What the fork holds, for a fork at turn N (`select`):
 * - every event of turns 1..N, wherever it is in the log;
 * - the session-level events (`turn: null`: mode and config changes, MCP servers, notices)
 *   logged before turn N+1 started, so the fork starts with the settings the session had when
 *   it went on after turn N (for the last turn: the settings it has now);
 * - renumbered from `seq` 1 and stamped with the fork's id; a compaction's `fromSeq`, `toSeq`
 *   and `keepFromSeq` follow the events they name.
 *
 * A turn still running (its log is open for writing, here or in another process) cannot be
 * forked. A last turn a crash left open (nobody holds its log) is forked closed, as loading the
 * session would close it (`Recovery.closing`). The session's `mcp` side record (its MCP servers' settings)
 * is copied beside the fork's log. The fork is written through the `Store`, so the file and
 * the memory store both keep forks; it is not opened (`Runtime.loadSession` makes it live).
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { type Canonical, LOG_VERSION, type LogHeader } from "../log/Event.ts"
import * as History from "../log/History.ts"
import type { LogError } from "../log/LogError.ts"
import * as Recovery from "../log/Recovery.ts"
import type { Store } from "../log/Store.ts"
import { RuntimeError, type SessionRecord } from "./Api.ts"

interface Options {
  readonly sessionId: string
  /** The turn the fork ends with (default: see `select`). */
  readonly turn?: number | undefined
  /** The new session's id. */
  readonly id: string
  /** The fork's cwd and additional directories (default: the session's); checked by the caller. */
  readonly cwd?: string | undefined
  readonly additionalDirectories?: ReadonlyArray<string> | undefined
  /** The Skein version, for the header. */
  readonly version: string
}

/** What a fork at a turn keeps of a log, as `select` chose it. */
interface Selection {
  readonly turn: number
  /** The events kept, as the session's log holds them (its `seq`s). */
  readonly events: ReadonlyArray<Canonical>
  /** Whether they end in a turn a crash left open (the fork closes it). */
  readonly interrupted: boolean
}

const invalid = (message: string) => new RuntimeError({ reason: "invalid_request", message })

/**
 * Which events a fork of `sessionId` at `turn` keeps. `running`: whether the log's open last
 * turn (if it has one) still runs. Default turn: the last one, unless it still runs (then the
 * one before; 0 when there is none).
 */
export const select = (
  sessionId: string,
  events: ReadonlyArray<Canonical>,
  turn: number | undefined,
  running: boolean
): Selection | RuntimeError => {
  let last = 0
  for (const event of events) if (event.type === "turn_start" && event.turn !== null && event.turn > last) last = event.turn
  const open = Recovery.openTurn(events)
  const runningTurn = running ? open : undefined
  const n = turn ?? (runningTurn === last ? last - 1 : last)
  if (!Number.isInteger(n) || n < 0) return invalid(`A turn to fork at is a whole number, 0 or more (0: before the first turn)`)
  if (n > last) {
    return invalid(last === 0
      ? `Session ${sessionId} has no turn ${n}: it has no turns yet`
      : `Session ${sessionId} has no turn ${n}: its turns are 1 to ${last}`)
  }
  if (n === runningTurn) return invalid(`Turn ${n} of session ${sessionId} is still running: fork at an earlier turn, or once it has ended`)
  // Session-level events count until the next turn starts.
  let cut = events.findIndex((event) => event.type === "turn_start" && event.turn !== null && event.turn > n)
  if (cut === -1) cut = events.length
  const kept = events.filter((event, i) => (event.turn === null ? i < cut : event.turn <= n))
  return { turn: n, events: kept, interrupted: open !== undefined && open === n }
}

/**
 * The kept events renumbered from 1 and stamped with the fork's id; a compaction's sequence
 * numbers follow: a start to the first kept event at or after it, an end to the last kept one
 * at or before it.
 */
export const renumber = (events: ReadonlyArray<Canonical>, sessionId: string): Array<Canonical> => {
  const olds = events.map((event) => event.seq)
  const atOrAfter = (seq: number) => {
    const i = olds.findIndex((old) => old >= seq)
    return i === -1 ? olds.length + 1 : i + 1
  }
  const atOrBefore = (seq: number) => {
    let i = olds.length - 1
    while (i >= 0 && olds[i]! > seq) i--
    return i + 1
  }
  return events.map((event, i) => {
    const stamped = { ...event, sessionId, seq: i + 1 }
    if (event.type !== "compaction") return stamped as Canonical
    const data = event.data
    return {
      ...stamped,
      data: { ...data, fromSeq: atOrAfter(data.fromSeq), toSeq: atOrBefore(data.toSeq), keepFromSeq: atOrAfter(data.keepFromSeq) }
    } as Canonical
  })
}

const fromLogError = (error: LogError): RuntimeError =>
  new RuntimeError({
    reason: error.reason === "not_found" ? "not_found" : error.reason === "locked" ? "locked" : "log",
    message: error.message
  })

/** Writes the fork of `options.sessionId` into `store` and gives its log as written. */
export const fork = (store: Store, options: Options): Effect.Effect<SessionRecord, RuntimeError> =>
  Effect.gen(function*() {
    const contents = yield* Effect.mapError(store.read(options.sessionId), fromLogError)
    const parent = contents.header
    if (parent.parent !== undefined) {
      return yield* invalid(
        `${options.sessionId} is a child session (a subagent of ${parent.parent.sessionId}): it is driven by its parent; fork the parent instead`
      )
    }
    const running = Recovery.openTurn(contents.events) !== undefined && (yield* store.held(options.sessionId))
    const selection = select(options.sessionId, contents.events, options.turn, running)
    if (selection instanceof RuntimeError) return yield* selection
    const events = renumber(selection.events, options.id)
    const now = yield* Clock.currentTimeMillis
    if (selection.interrupted) {
      // Closed as loading the session would close it.
      const history = History.make()
      for (const event of events) History.apply(history, event)
      const closing = Recovery.closing(events, history)
      if (closing !== undefined) {
        for (const body of closing.bodies) {
          events.push({ ...body, sessionId: options.id, seq: events.length + 1, ts: now, turn: closing.turn } as Canonical)
        }
      }
    }
    const additionalDirectories = options.additionalDirectories ?? parent.additionalDirectories ?? []
    const header: LogHeader = {
      type: "session",
      v: LOG_VERSION,
      id: options.id,
      cwd: options.cwd ?? parent.cwd,
      created: now,
      ...(parent.mode !== undefined ? { mode: parent.mode } : {}),
      ...(additionalDirectories.length > 0 ? { additionalDirectories } : {}),
      skein: options.version,
      forkedFrom: { sessionId: parent.id, turn: selection.turn }
    }
    const side = yield* Effect.mapError(store.readSide(options.sessionId, "mcp"), fromLogError)
    let created = false
    const file = yield* Effect.scoped(Effect.gen(function*() {
      const writer = yield* store.create(header)
      created = true
      yield* writer.append(events)
      if (side !== undefined) yield* writer.saveSide("mcp", side)
      yield* writer.sync
      return writer.path
    })).pipe(
      // A fork is written whole or not at all.
      Effect.tapError(() => (created ? Effect.ignore(store.remove(options.id)) : Effect.void)),
      Effect.mapError(fromLogError)
    )
    return { header, events, file } satisfies SessionRecord
  }).pipe(Effect.withSpan("Fork.fork"))
