/**
 * The overview the monitor shows, folded from what the runtime says: every session as a row
 * (live, running, its last turn, its cost, its parent) and the approvals inbox (every open
 * permission question of every session). It is a projection, never a store: rebuilt from the
 * session listing and the live events whenever the monitor starts, and nothing in it is
 * written anywhere.
 *
 * Rules of the inbox: a `permission_asked` opens a question; it is closed by its
 * `question_withdrawn` (withdrawn, or answered anywhere), by the `permission` its answer logged
 * (same tool call), by the end of its turn, or by its session closing. A child session's
 * questions come from the child's own events; the copies its parent forwards (`child_event`)
 * are not counted twice.
 *
 * The fold mutates one `State` and records what changed in `Changes`, so a burst of events
 * costs a map update each, and the server sends each changed row once per batch. It does no IO.
 */
import type { SessionEvent } from "../log/Event.ts"
import * as Listing from "../log/Listing.ts"
import type { SessionSummary } from "../runtime/Api.ts"
import type { SessionInfo } from "../session/Protocol.ts"
import * as Coalesce from "./Coalesce.ts"
import type { Question, Row } from "./Wire.ts"

/** At most this many sessions that are not live are listed (the most recent). */
export const MAX_ROWS = 1000
/** A streaming session's row is marked changed at most this often (its deltas say nothing else). */
const STREAMING_MS = 1000

/** Events that only say a live session is busy: a row changes for them at most every `STREAMING_MS`. */
const busyOnly = (event: SessionEvent): boolean =>
  event.type === "text_delta" || event.type === "thinking_delta" || event.type === "tool_progress" || event.type === "tool_running" ||
  event.type === "model_partial" || event.type === "client_call" || event.type === "tool_terminal" || event.type === "compacting"

export interface State {
  readonly rows: Map<string, Row>
  readonly inbox: Map<string, Question>
}

export interface Changes {
  readonly rows: Set<string>
  readonly removedRows: Set<string>
  readonly opened: Set<string>
  readonly closed: Set<string>
}

export const empty = (): State => ({ rows: new Map(), inbox: new Map() })
export const noChanges = (): Changes => ({ rows: new Set(), removedRows: new Set(), opened: new Set(), closed: new Set() })

export const questionKey = (sessionId: string, requestId: string) => `${sessionId} ${requestId}`

const unreachable = (value: never): never => {
  throw new Error(`unhandled event ${JSON.stringify(value)}`)
}

const setRow = (state: State, changes: Changes, row: Row) => {
  state.rows.set(row.id, row)
  changes.rows.add(row.id)
  changes.removedRows.delete(row.id)
}

const closeQuestion = (state: State, changes: Changes, key: string) => {
  if (!state.inbox.delete(key)) return
  if (!changes.opened.delete(key)) changes.closed.add(key)
}

const closeWhere = (state: State, changes: Changes, predicate: (q: Question) => boolean) => {
  for (const [key, question] of state.inbox) if (predicate(question)) closeQuestion(state, changes, key)
}

/** Folds one live event of a session. */
export const applyEvent = (state: State, changes: Changes, event: SessionEvent): void => {
  // A child's events reach the monitor directly; its parent's copies add nothing.
  if (event.type === "child_event") return
  const before = state.rows.get(event.sessionId)
  // A stream of deltas costs a comparison each, not a new row each.
  if (before !== undefined && before.live && busyOnly(event) && event.ts - before.updatedAt < STREAMING_MS) return
  const row: Row = before ?? { id: event.sessionId, cwd: "", created: event.ts, updatedAt: event.ts, live: true, running: false }
  let next: Row = { ...row, live: true, updatedAt: Math.max(row.updatedAt, event.ts) }
  switch (event.type) {
    case "turn_start":
      next = {
        ...next,
        running: true,
        ...(event.turn !== null ? { turn: event.turn } : {}),
        stopReason: undefined,
        failed: undefined,
        title: next.title ?? Listing.title(event.data.content)
      }
      break
    case "turn_end":
    // A turn whose end the log refused: it ended all the same, failed.
    case "turn_aborted":
      next = { ...next, running: false, stopReason: event.data.stopReason, failed: event.data.error !== undefined }
      closeWhere(state, changes, (q) => q.sessionId === event.sessionId && q.turn === event.turn)
      break
    case "usage":
      if (event.data.cost !== undefined) next = { ...next, cost: event.data.cost }
      break
    case "permission_asked": {
      const key = questionKey(event.sessionId, event.data.requestId)
      state.inbox.set(key, {
        key,
        sessionId: event.sessionId,
        requestId: event.data.requestId,
        turn: event.turn,
        askedAt: event.ts,
        toolCall: Coalesce.cut(event.data.toolCall),
        options: event.data.options
      })
      if (!changes.closed.delete(key)) changes.opened.add(key)
      break
    }
    case "question_withdrawn":
      closeQuestion(state, changes, questionKey(event.sessionId, event.data.requestId))
      break
    case "permission":
      closeWhere(state, changes, (q) => q.sessionId === event.sessionId && q.toolCall.toolCallId === event.data.toolCallId)
      break
    case "model_partial":
    case "model_response":
    case "tool_call":
    case "tool_result":
    case "mode_changed":
    case "config_changed":
    case "plan":
    case "notice":
    case "mcp_servers":
    case "subagent":
    case "compaction":
    case "skill_activation":
    case "turn_input":
    case "undo":
    case "hook":
    case "text_delta":
    case "thinking_delta":
    case "tool_running":
    case "tool_progress":
    case "client_call":
    case "tool_terminal":
    case "compacting":
    case "checkpoint":
    case "rewound":
      break
    default:
      return unreachable(event)
  }
  setRow(state, changes, next)
}

/**
 * Folds what the runtime lists: the logged sessions (`complete`: all of them, so one missing
 * was deleted) and the live ones. A session no longer live is no longer running, and its
 * questions are closed. `runner`: the runner this monitor runs in (its live sessions are there).
 */
export const applyCatalog = (
  state: State,
  changes: Changes,
  catalog: {
    readonly logged: ReadonlyArray<SessionSummary>
    readonly complete: boolean
    readonly live: ReadonlyArray<SessionInfo>
    readonly runner?: string | undefined
  }
): void => {
  const live = new Map(catalog.live.map((info) => [info.id, info]))
  const logged = new Map(catalog.logged.map((summary) => [summary.id, summary]))
  const ids = new Set([...state.rows.keys(), ...logged.keys(), ...live.keys()])
  for (const id of ids) {
    const row = state.rows.get(id)
    const summary = logged.get(id)
    const info = live.get(id)
    if (summary === undefined && info === undefined) {
      // Gone from the listing: deleted (when the listing was whole), or no longer live.
      if (row === undefined) continue
      if (catalog.complete) {
        state.rows.delete(id)
        changes.rows.delete(id)
        changes.removedRows.add(id)
        closeWhere(state, changes, (q) => q.sessionId === id)
        continue
      }
    }
    const base: Row = row ?? { id, cwd: "", created: 0, updatedAt: 0, live: false, running: false }
    const parent = summary?.parent ?? info?.parent?.sessionId ?? base.parent
    const agent = info?.agent ?? summary?.agent ?? base.agent
    const next: Row = {
      ...base,
      cwd: summary?.cwd ?? info?.cwd ?? base.cwd,
      created: summary?.created ?? info?.created ?? base.created,
      updatedAt: Math.max(base.updatedAt, summary?.updatedAt ?? 0),
      title: base.title ?? summary?.title,
      ...(parent !== undefined ? { parent } : {}),
      ...(agent !== undefined ? { agent } : {}),
      live: info !== undefined,
      running: info !== undefined && base.running,
      ...(info !== undefined && catalog.runner !== undefined ? { runner: catalog.runner } : {})
    }
    if (!next.live) closeWhere(state, changes, (q) => q.sessionId === id)
    if (row === undefined || !sameRow(row, next)) setRow(state, changes, next)
  }
  prune(state, changes)
}

const sameRow = (a: Row, b: Row): boolean => {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]) as Set<keyof Row>
  for (const key of keys) if (a[key] !== b[key]) return false
  return true
}

/** Keeps the live sessions and the `MAX_ROWS` most recent others (with the parents of those kept). */
const prune = (state: State, changes: Changes): void => {
  const others = [...state.rows.values()].filter((row) => !row.live)
  if (others.length <= MAX_ROWS) return
  const keep = new Set(others.sort((a, b) => b.updatedAt - a.updatedAt).slice(0, MAX_ROWS).map((row) => row.id))
  for (const row of state.rows.values()) if (row.live) keep.add(row.id)
  for (const id of [...keep]) {
    let parent = state.rows.get(id)?.parent
    while (parent !== undefined && !keep.has(parent)) {
      keep.add(parent)
      parent = state.rows.get(parent)?.parent
    }
  }
  for (const id of [...state.rows.keys()]) {
    if (keep.has(id)) continue
    state.rows.delete(id)
    changes.rows.delete(id)
    changes.removedRows.add(id)
  }
}
