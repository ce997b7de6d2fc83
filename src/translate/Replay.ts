/**
 * A log as a client is shown it: the `session/update` stream `session/load` sends (through
 * `Present`, the same presentation a live turn has), and those updates as ACP notification
 * lines (the same bytes `session/load` writes, `skein replay --acp` prints).
 */
import type * as Update from "../acp/Update.ts"
import type { Canonical } from "../log/Event.ts"
import { supersededPartials } from "../log/Replay.ts"
import type * as Presented from "./Shown.ts"
import * as Present from "./Present.ts"
import * as Translate from "./Translate.ts"

export interface Options {
  /** What the client shows beyond the stable protocol (`session.compaction`). */
  readonly shown?: Translate.Options | undefined
  /** The client shows child sessions as sessions (`clientCapabilities.subagents`). */
  readonly native?: boolean | undefined
  /** The logs of the session's children (and theirs), when they can be read. */
  readonly childLog?: ((id: string) => ReadonlyArray<Canonical> | undefined) | undefined
  /**
   * Makes the meter of the session's usage updates (`runtime/Usage.meter`, with the models a
   * runtime has): without one, none is shown.
   */
  readonly meter?: (() => Present.Meter) | undefined
}

/** One update of a replay and the session it is shown on (a child's, in the native form). */
export interface Shown {
  readonly sessionId: string
  readonly update: Presented.Shown
}

/**
 * Calls `f` with each update that rebuilds the logged history of session `sessionId`, in order,
 * as `session/load` sends it; the text of each model call once, and each usage update the live
 * session showed (with `options.meter`).
 */
export const forEach = (sessionId: string, events: ReadonlyArray<Canonical>, f: (shown: Shown) => void, options: Options = {}): void => {
  const presenter = Present.make(sessionId, { native: options.native === true, shown: options.shown, childLog: options.childLog, meter: options.meter?.() })
  const superseded = supersededPartials(events)
  // Logs from before results carried their call's title: it comes from the call.
  const titles = new Map<string, string>()
  for (let i = 0; i < events.length; i++) {
    const event = events[i]!
    if (superseded(event, i)) continue
    if (event.type === "tool_call") titles.set(event.data.id, event.data.title)
    const filled = event.type === "tool_result" && event.data.title === undefined && titles.has(event.data.id)
      ? { ...event, data: { ...event.data, title: titles.get(event.data.id)! } }
      : event
    for (const action of presenter.replay(filled)) if (action._tag === "update") f(action)
  }
}

/** Every update of the session itself that rebuilds its logged history, in order. */
export const updates = (events: ReadonlyArray<Canonical>, options?: Translate.Options): Array<typeof Update.SessionUpdate.Encoded> => {
  const out: Array<typeof Update.SessionUpdate.Encoded> = []
  const sessionId = events[0]?.sessionId ?? ""
  forEach(sessionId, events, (shown) => {
    if (shown.sessionId === sessionId) out.push(shown.update as typeof Update.SessionUpdate.Encoded)
  }, { shown: options })
  return out
}

/** The `session/update` notifications `session/load` writes, one JSON-RPC line each (with `\n`). */
export const notificationLines = (sessionId: string, events: ReadonlyArray<Canonical>, options: Options = {}): Array<string> => {
  const encoders = new Map<string, (u: Translate.Update) => string>()
  const lines: Array<string> = []
  forEach(sessionId, events, (shown) => {
    let encode = encoders.get(shown.sessionId)
    if (encode === undefined) encoders.set(shown.sessionId, encode = Translate.encoder(shown.sessionId))
    lines.push(encode(shown.update as Translate.Update))
  }, options)
  return lines
}
