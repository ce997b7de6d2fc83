/**
 * Closing what a crash left open. A process killed mid-turn leaves a log whose
 * last turn has no `turn_end`, maybe a model call that streamed text but never
 * ended (its `model_partial` checkpoints), and maybe tool calls without a
 * result. Before a session continues such a log, it appends what the
 * supervisor would have: the interrupted call's `model_response` (cancelled,
 * with the text its checkpoints hold: what the model sees as its answer), a
 * failed result for each open tool call and a `turn_end` that says the turn
 * was interrupted. Pure: it only says which events to append.
 */
import type { Canonical, CanonicalBody } from "./Event.ts"
import type { History } from "./History.ts"

export const INTERRUPTED_TOOL = "Not finished: Skein stopped before this tool call ended."
export const INTERRUPTED_TURN = "This turn was interrupted: Skein stopped before it ended."

/** The turn left open at the end of the log, if any. */
export const openTurn = (events: ReadonlyArray<Canonical>): number | undefined => {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!
    if (event.type === "turn_end") return undefined
    if (event.type === "turn_start") return event.turn ?? undefined
  }
  return undefined
}

/** The events that close an interrupted last turn (none when the log ends cleanly). */
export const closing = (events: ReadonlyArray<Canonical>, history: History): { readonly turn: number; readonly bodies: ReadonlyArray<CanonicalBody> } | undefined => {
  const turn = openTurn(events)
  if (turn === undefined) return undefined
  const bodies: Array<CanonicalBody> = []
  if (history.partial !== undefined) {
    bodies.push({ type: "model_response", data: { call: history.partial.call, parts: history.partial.parts, stop: "cancelled" } })
  }
  for (const [id, name] of history.openToolCalls) {
    bodies.push({ type: "tool_result", data: { id, title: history.announced.get(id) ?? name, ok: false, status: "interrupted", content: INTERRUPTED_TOOL } })
  }
  bodies.push({ type: "turn_end", data: { stopReason: "cancelled", error: INTERRUPTED_TURN } })
  return { turn, bodies }
}
