/**
 * `skein run -r` without an id: the sessions of this folder, newest first, to choose one with
 * ↑/↓ and Enter (Esc leaves). Each shows its title (its first prompt), how long ago it was last
 * used, its number of turns, and whether it is a fork.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type { Runtime } from "../../runtime/Api.ts"
import type { Input } from "./Input.ts"
import * as Terminal from "./Terminal.ts"

const MAX_SHOWN = 20

/** `just now`, `5m ago`, `3h ago`, `2d ago`. */
const age = (ms: number): string => {
  const m = Math.floor(Math.max(0, ms) / 60_000)
  if (m < 1) return "just now"
  if (m < 60) return `${m}m ago`
  const h = Math.floor(m / 60)
  return h < 48 ? `${h}h ago` : `${Math.floor(h / 24)}d ago`
}

interface Row {
  readonly id: string
  readonly title: string | undefined
  readonly updatedAt: number
  readonly turns: number | undefined
  readonly forkedFrom: string | undefined
}

const label = (row: Row, now: number): string => {
  const title = Terminal.oneLine(row.title ?? "(no prompt yet)")
  const shown = title.length > 60 ? `${title.slice(0, 59)}…` : title
  const turns = row.turns === undefined ? "" : ` · ${row.turns} turn${row.turns === 1 ? "" : "s"}`
  const fork = row.forkedFrom !== undefined ? ` · fork of ${row.forkedFrom.slice(0, 8)}` : ""
  return `${shown.padEnd(60)}  ${age(now - row.updatedAt)}${turns}${fork} · ${row.id.slice(0, 8)}`
}

/** The chosen session's id; undefined when there is none to choose or the user left. */
export const pick = (runtime: Runtime["Service"], input: Input, cwd: string) =>
  Effect.gen(function*() {
    const page = yield* runtime.listSessions({ cwd, limit: MAX_SHOWN })
    if (page.sessions.length === 0) {
      Terminal.noteLine(`No saved session in ${cwd}.`)
      return undefined
    }
    const rows: Array<Row> = []
    for (const s of page.sessions) {
      const record = yield* Effect.option(runtime.readSession(s.id))
      const header = record._tag === "Some" ? record.value.header : undefined
      rows.push({
        id: s.id,
        title: s.title,
        updatedAt: s.updatedAt,
        turns: record._tag === "Some" ? record.value.events.filter((e) => e.type === "turn_start").length : undefined,
        forkedFrom: header?.forkedFrom?.sessionId
      })
    }
    const now = yield* Clock.currentTimeMillis
    Terminal.noteLine(`Sessions in ${cwd}:`, Terminal.dim)
    const chosen = yield* input.choose({ items: rows.map((row) => ({ label: label(row, now) })), footer: "↑/↓ and Enter resume one · esc leaves" })
    return chosen._tag === "Chosen" ? rows[chosen.index]!.id : undefined
  })
