/**
 * Stamping: the one place a body becomes a session's event (its session, `seq`, time and
 * turn). Pure. The session's journal (`runtime/Journal.ts`) stamps what it writes with it;
 * so does a replay that previews what loading would append, and a fork's copy of a log.
 */
import type { Canonical, EventBody, SessionEvent } from "./Event.ts"

/** Where an event goes: its session, its number, its time and its turn (`null`: session-level). */
interface At {
  readonly sessionId: string
  readonly seq: number
  readonly ts: number
  readonly turn: number | null
}

export const stamp = <B extends EventBody>(body: B, at: At): SessionEvent<B> =>
  ({ ...body, sessionId: at.sessionId, seq: at.seq, ts: at.ts, turn: at.turn }) as SessionEvent<B>

/** Bodies of one turn stamped at one time, numbered on after `lastSeq`. */
export const after = <B extends EventBody>(
  bodies: ReadonlyArray<B>,
  at: { readonly sessionId: string; readonly lastSeq: number; readonly ts: number; readonly turn: number | null }
): Array<SessionEvent<B>> =>
  bodies.map((body, i) => stamp(body, { sessionId: at.sessionId, seq: at.lastSeq + 1 + i, ts: at.ts, turn: at.turn }))

/** A logged event moved to another session and number (a fork's copy); its time and turn stay. */
export const restamp = (event: Canonical, sessionId: string, seq: number): Canonical => ({ ...event, sessionId, seq })
