/**
 * What the monitor's server sends its page: plain JSON, as server-sent events. Types only (the
 * page's bundle imports them and nothing else from the server side).
 *
 * Two streams: the overview (`/api/overview`: every session as a row, and the approvals inbox)
 * and one session (`/api/sessions/ID/events`: its events, from its log then live). Each message
 * is a batch: the server sends at most one every `BATCH_MS` per stream, with deltas merged.
 */
import type { SessionEvent } from "../log/Event.ts"
import type { PermissionOption, PermissionToolCall } from "../Vocabulary.ts"

/** A session as the overview lists it. */
export interface Row {
  readonly id: string
  readonly cwd: string
  readonly title?: string | undefined
  readonly created: number
  /** When it last changed (its log, or a live event), ms since the epoch. */
  readonly updatedAt: number
  /** A child session's parent. */
  readonly parent?: string | undefined
  /** The agent a child runs as. */
  readonly agent?: string | undefined
  /** Live in the process the monitor watches (it can stream, and ask questions). */
  readonly live: boolean
  /** A turn is running. */
  readonly running: boolean
  /** The last turn's number, when known. */
  readonly turn?: number | undefined
  /** How the last turn ended. */
  readonly stopReason?: string | undefined
  readonly failed?: boolean | undefined
  /** The session's cost so far (USD), when the model's price is known (from live usage updates). */
  readonly cost?: number | undefined
  /** In a cluster: the runner that holds it. */
  readonly runner?: string | undefined
}

/** An open permission question of some session, as the inbox shows it. */
export interface Question {
  /** `<sessionId> <requestId>`: unique in the inbox. */
  readonly key: string
  readonly sessionId: string
  readonly requestId: string
  readonly turn: number | null
  readonly askedAt: number
  readonly toolCall: PermissionToolCall
  readonly options: ReadonlyArray<PermissionOption>
}

export interface Hello {
  readonly type: "hello"
  /** `live`: a running Skein's sessions; `logs`: only their logs (nothing is live, nothing can be answered). */
  readonly mode: "live" | "logs"
  /** Questions may be answered here (`--web-approve`). */
  readonly approve: boolean
  readonly version: string
  /** In a cluster: the runner this monitor runs in. */
  readonly runner?: string | undefined
}

export type OverviewMessage =
  | Hello
  /** Rows that changed (`full`: these are all of them), and rows gone. */
  | { readonly type: "sessions"; readonly full: boolean; readonly rows: ReadonlyArray<Row>; readonly removed: ReadonlyArray<string> }
  /** Questions opened and closed (`full`: these are all the open ones). */
  | { readonly type: "inbox"; readonly full: boolean; readonly added: ReadonlyArray<Question>; readonly removed: ReadonlyArray<string> }

export type SessionMessage =
  | Hello
  /** The session as listed, and its questions open when the stream began (later ones come as events). */
  | { readonly type: "session"; readonly row: Row | undefined; readonly questions: ReadonlyArray<Question> }
  /** The session's next events (text of long events cut to its tail: see `Coalesce`). */
  | { readonly type: "events"; readonly events: ReadonlyArray<SessionEvent> }
  /** The session does not exist (or was deleted). */
  | { readonly type: "gone"; readonly message: string }

/** How often, at most, a stream sends a batch. */
export const BATCH_MS = 75
