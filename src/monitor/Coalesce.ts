/**
 * What the monitor does to events before a browser gets them, so a long turn costs a browser
 * a bounded amount whatever it streams:
 *
 * - `merge`: within a batch, adjacent text (or thinking) deltas of the same session and turn
 *   become one, and a tool's running output or a usage update replaces the one just before it
 *   (the rules of the bus's own coalescing). A canonical event is never merged or dropped, so
 *   nothing crosses it.
 * - `cut`: every string longer than `MAX_TEXT` is cut to its head and tail, with a marker
 *   saying how much was left out (a model answer, a tool's output, a file in a diff, a
 *   skill's body alike).
 *
 * Pure.
 */
import type { SessionEvent } from "../log/Event.ts"

/** The longest string a browser gets in one field. */
export const MAX_TEXT = 64_000
/** Of a cut string: how much of its head is kept (the rest of `MAX_TEXT` is its tail). */
const HEAD = 8_000

/** A string cut to `MAX_TEXT` characters, head and tail, with a marker in between. */
export const cutText = (text: string): string => {
  if (text.length <= MAX_TEXT) return text
  const tail = MAX_TEXT - HEAD
  return `${text.slice(0, HEAD)}\n… [${text.length - MAX_TEXT} characters not shown] …\n${text.slice(text.length - tail)}`
}

const cutValue = (value: unknown, depth: number): unknown => {
  if (typeof value === "string") return cutText(value)
  if (typeof value !== "object" || value === null) return value
  if (depth > 32) return "[nested too deep]"
  if (Array.isArray(value)) return value.map((item) => cutValue(item, depth + 1))
  const out: Record<string, unknown> = {}
  for (const [key, item] of Object.entries(value)) out[key] = cutValue(item, depth + 1)
  return out
}

/** A value with every long string in it cut (the same shape otherwise). */
export const cut = <A>(value: A): A => cutValue(value, 0) as A

/** How much an event weighs in a browser's pending batch (its text, plus a fixed cost). */
export const weight = (event: SessionEvent): number =>
  event.type === "text_delta" || event.type === "thinking_delta"
    ? 64 + event.data.text.length
    : event.type === "tool_progress"
    ? 64 + event.data.output.length
    : 512

/** The event that stands for `last` then `next` when they merge. */
const mergeTwo = (last: SessionEvent, next: SessionEvent): SessionEvent | undefined => {
  if (last.type !== next.type || last.sessionId !== next.sessionId || last.turn !== next.turn) return undefined
  if (next.type === "text_delta" || next.type === "thinking_delta") {
    return { ...next, data: { text: (last as typeof next).data.text + next.data.text } }
  }
  if (next.type === "tool_progress") return (last as typeof next).data.id === next.data.id ? next : undefined
  if (next.type === "usage") return next
  return undefined
}

/** Appends `event` to `batch`, merged into the last one when they merge. */
export const push = (batch: Array<SessionEvent>, event: SessionEvent): void => {
  const last = batch.length > 0 ? batch[batch.length - 1]! : undefined
  const merged = last === undefined ? undefined : mergeTwo(last, event)
  if (merged !== undefined) batch[batch.length - 1] = merged
  else batch.push(event)
}

/** A batch merged as `push` does. */
export const merge = (events: ReadonlyArray<SessionEvent>): Array<SessionEvent> => {
  const batch: Array<SessionEvent> = []
  for (const event of events) push(batch, event)
  return batch
}
