/**
 * A log as a client is shown it: the `session/update` stream `session/load` sends (through
 * `Translate.replay`), and those updates as ACP notification lines (the same bytes
 * `session/load` writes, `skein replay --acp` prints).
 */
import type * as Update from "../acp/Update.ts"
import type { Canonical } from "../log/Event.ts"
import { supersededPartials } from "../log/Replay.ts"
import * as Translate from "./Translate.ts"

/** Every update that rebuilds the logged history, in order; the text of each model call once. */
export const updates = (events: ReadonlyArray<Canonical>, options?: Translate.Options): Array<typeof Update.SessionUpdate.Encoded> => {
  const out: Array<typeof Update.SessionUpdate.Encoded> = []
  forEach(events, (_event, shown) => {
    for (const update of shown) out.push(update)
  }, options)
  return out
}

/** Calls `f` with each event that is shown and the updates that show it (none for some, e.g. `subagent`). */
export const forEach = (
  events: ReadonlyArray<Canonical>,
  f: (event: Canonical, updates: ReadonlyArray<typeof Update.SessionUpdate.Encoded>) => void,
  options?: Translate.Options
): void => {
  const superseded = supersededPartials(events)
  // Logs from before results carried their call's title: it comes from the call.
  const titles = new Map<string, string>()
  for (let i = 0; i < events.length; i++) {
    const event = events[i]!
    if (superseded(event, i)) continue
    if (event.type === "tool_call") titles.set(event.data.id, event.data.title)
    const shown = event.type === "tool_result" && event.data.title === undefined && titles.has(event.data.id)
      ? { ...event, data: { ...event.data, title: titles.get(event.data.id)! } }
      : event
    f(event, Translate.replay(shown, options))
  }
}

/** The `session/update` notifications `session/load` writes, one JSON-RPC line each (with `\n`). */
export const notificationLines = (sessionId: string, events: ReadonlyArray<Canonical>): Array<string> => {
  const encode = Translate.encoder(sessionId)
  return updates(events).map(encode)
}
