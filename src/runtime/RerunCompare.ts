/**
 * Comparing a re-run with its log, turn by turn: each logged tool result
 * against the re-run's result for the same call id (`ok`, content, diffs, exit
 * code), then how each turn ended. Pure.
 *
 * Equal by design: two results whose status says the call did not run to its
 * end (cancelled, crashed, a failed turn, a refused log write), and two results
 * that were both refused (the wording of a refusal depends on how it was
 * refused: no answer, timeout, cancel). One that stopped against one that ran
 * differs in its `status`, whatever their texts say. Likewise two turns that both
 * ended `cancelled` are the same whatever their notes say (a crash's recovery
 * notes that the turn was interrupted): the stop reason decides, not the text.
 */
import { absurd } from "effect/Function"
import type { Canonical, ToolStatus } from "../log/Event.ts"
import type { ToolDetails } from "../Vocabulary.ts"

export interface Difference {
  /** `changed`: both ran, results differ; `missing`: only the log has it; `extra`: only the re-run; `outcome`: the turn ended otherwise. */
  readonly kind: "changed" | "missing" | "extra" | "outcome"
  readonly toolCallId?: string | undefined
  /** The tool call's title, e.g. "Read notes.txt". */
  readonly tool?: string | undefined
  readonly field?: "ok" | "status" | "content" | "diff" | "exitCode" | "stopReason" | "error" | undefined
  readonly recorded?: string | undefined
  readonly rerun?: string | undefined
}

export interface TurnReport {
  /** The turn's number in the log. */
  readonly turn: number
  /** The turn's prompt (its first line, shortened). */
  readonly prompt: string
  /** Logged tool results compared. */
  readonly compared: number
  readonly differences: ReadonlyArray<Difference>
}

export interface Report {
  readonly sessionId: string
  readonly rerunSessionId: string
  /** The re-run's own log. */
  readonly rerunLog: string
  readonly turns: ReadonlyArray<TurnReport>
  /** True when any turn differs (a child's included). */
  readonly diverged: boolean
  /** The children the session started, re-run from their logs, under the parent's turn that started them. */
  readonly children?: ReadonlyArray<ChildReport> | undefined
}

export interface ChildReport {
  readonly sessionId: string
  /** The re-run's child, when one started for it. */
  readonly rerunSessionId: string | undefined
  readonly agent: string
  /** The parent's turn that started it. */
  readonly parentTurn: number
  readonly turns: ReadonlyArray<TurnReport>
  readonly diverged: boolean
}

interface Result {
  readonly ok: boolean
  readonly status: ToolStatus
  readonly content: string
  readonly details?: ToolDetails | undefined
}

/** The ends of a call stopped from outside before it ended (an external agent's unfinished calls are its own). */
const stopped: ReadonlySet<ToolStatus> = new Set<ToolStatus>(["cancelled", "not_run", "not_logged", "interrupted"])

/** A result that says the call did not run to its end. */
export const isInterrupted = (result: Result): boolean => stopped.has(result.status)

const allowed: ReadonlySet<string> = new Set(["allow_once", "allow_always"])

interface Turn {
  readonly turn: number
  prompt: string
  readonly results: Map<string, Result>
  readonly order: Array<string>
  readonly titles: Map<string, string>
  readonly permissions: Map<string, string>
  end: { readonly stopReason: string; readonly error?: string | undefined } | undefined
}

const turnsOf = (events: ReadonlyArray<Canonical>): Array<Turn> => {
  const out: Array<Turn> = []
  const byNumber = new Map<number, Turn>()
  for (const event of events) {
    if (event.turn === null) continue
    if (event.type === "turn_start") {
      const text = event.data.content.map((b) => (b.type === "text" ? b.text : `[${b.type}]`)).join(" ").replace(/\s+/g, " ").trim()
      const turn: Turn = {
        turn: event.turn,
        prompt: text.length > 60 ? `${text.slice(0, 59)}…` : text,
        results: new Map(),
        order: [],
        titles: new Map(),
        permissions: new Map(),
        end: undefined
      }
      out.push(turn)
      byNumber.set(event.turn, turn)
      continue
    }
    const turn = byNumber.get(event.turn)
    if (turn === undefined) continue
    switch (event.type) {
      case "tool_call":
        turn.titles.set(event.data.id, event.data.title)
        break
      case "tool_result":
        if (!turn.results.has(event.data.id)) turn.order.push(event.data.id)
        turn.results.set(event.data.id, event.data)
        break
      case "permission":
        turn.permissions.set(event.data.toolCallId, event.data.outcome)
        break
      case "turn_end":
        turn.end = event.data
        break
      case "model_response":
      case "model_partial":
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
      case "checkpoint":
      case "rewound":
        break
      default:
        absurd(event)
    }
  }
  return out
}

const replaceAll = (text: string, from: string, to: string) => (from === to || from.length === 0 ? text : text.split(from).join(to))

/** The first line where two texts differ, each side shortened, for a report. */
const firstDifference = (a: string, b: string): { readonly recorded: string; readonly rerun: string } => {
  const la = a.split("\n")
  const lb = b.split("\n")
  let i = 0
  while (i < la.length && i < lb.length && la[i] === lb[i]) i++
  const clip = (lines: Array<string>) =>
    i < lines.length ? `line ${i + 1}: ${(lines[i]!.length > 120 ? lines[i]!.slice(0, 119) + "…" : lines[i]!)}` : `(ends after ${lines.length} lines)`
  return { recorded: clip(la), rerun: clip(lb) }
}

const compareResults = (id: string, tool: string | undefined, logged: Result, now: Result): Array<Difference> => {
  const out: Array<Difference> = []
  const changed = (field: Difference["field"], recorded: string, rerun: string) =>
    out.push({ kind: "changed", toolCallId: id, tool, field, recorded, rerun })
  if (logged.ok !== now.ok) changed("ok", String(logged.ok), String(now.ok))
  if (isInterrupted(logged) !== isInterrupted(now)) changed("status", logged.status, now.status)
  if (logged.content !== now.content) {
    const d = firstDifference(logged.content, now.content)
    changed("content", d.recorded, d.rerun)
  }
  const diffA = JSON.stringify(logged.details?.diff ?? [])
  const diffB = JSON.stringify(now.details?.diff ?? [])
  if (diffA !== diffB) changed("diff", `${logged.details?.diff?.length ?? 0} file(s)`, `${now.details?.diff?.length ?? 0} file(s), different`)
  if ((logged.details?.exitCode ?? null) !== (now.details?.exitCode ?? null)) {
    changed("exitCode", String(logged.details?.exitCode ?? null), String(now.details?.exitCode ?? null))
  }
  return out
}

/** Rewrites paths under the re-run's cwd as paths under the logged cwd. */
const normalize = (result: Result, from: string, to: string): Result => {
  if (from === to) return result
  const details = result.details === undefined ? undefined : {
    ...result.details,
    ...(result.details.output !== undefined ? { output: replaceAll(result.details.output, from, to) } : {}),
    ...(result.details.diff !== undefined
      ? { diff: result.details.diff.map((d) => ({ ...d, path: replaceAll(d.path, from, to) })) }
      : {})
  }
  return { ok: result.ok, status: result.status, content: replaceAll(result.content, from, to), ...(details !== undefined ? { details } : {}) }
}

export const compare = (input: {
  readonly recorded: ReadonlyArray<Canonical>
  readonly rerun: ReadonlyArray<Canonical>
  readonly recordedCwd: string
  readonly rerunCwd: string
  /** Names the re-run gave things the log names otherwise (its children's ids): read as the logged ones. */
  readonly renamed?: ReadonlyMap<string, string> | undefined
}): Omit<Report, "sessionId" | "rerunSessionId" | "rerunLog"> => {
  const logged = turnsOf(input.recorded)
  const again = turnsOf(input.rerun)
  const turns: Array<TurnReport> = logged.map((turn, index) => {
    const other = again[index]
    const differences: Array<Difference> = []
    if (other === undefined) {
      return { turn: turn.turn, prompt: turn.prompt, compared: 0, differences: [{ kind: "outcome", field: "stopReason", recorded: turn.end?.stopReason ?? "(unfinished)", rerun: "(not run)" }] }
    }
    for (const id of turn.order) {
      const a = turn.results.get(id)!
      const tool = turn.titles.get(id)
      const raw = other.results.get(id)
      if (raw === undefined) {
        differences.push({ kind: "missing", toolCallId: id, tool })
        continue
      }
      let b = normalize(raw, input.rerunCwd, input.recordedCwd)
      for (const [from, to] of input.renamed ?? []) b = normalize(b, from, to)
      if (isInterrupted(a) && isInterrupted(b)) continue
      const refusedA = a.status === "denied" || (turn.permissions.has(id) && !allowed.has(turn.permissions.get(id)!))
      const refusedB = b.status === "denied" || (other.permissions.has(id) && !allowed.has(other.permissions.get(id)!))
      if (refusedA && refusedB && !a.ok && !b.ok) continue
      differences.push(...compareResults(id, tool, a, b))
    }
    for (const id of other.order) {
      if (turn.results.has(id)) continue
      const b = other.results.get(id)!
      if (turn.titles.has(id) && isInterrupted(b)) continue // the log stopped inside this call
      differences.push({ kind: "extra", toolCallId: id, tool: other.titles.get(id) })
    }
    const stopA = turn.end?.stopReason ?? "cancelled"
    const stopB = other.end?.stopReason ?? "(unfinished)"
    if (stopA !== stopB) {
      differences.push({ kind: "outcome", field: "stopReason", recorded: stopA, rerun: stopB })
    } else if (stopA !== "cancelled" && (turn.end?.error ?? "") !== (other.end?.error ?? "")) {
      differences.push({ kind: "outcome", field: "error", recorded: turn.end?.error ?? "(none)", rerun: other.end?.error ?? "(none)" })
    }
    return { turn: turn.turn, prompt: turn.prompt, compared: turn.order.length, differences }
  })
  return { turns, diverged: turns.some((t) => t.differences.length > 0) }
}
