/**
 * Versions of the log format, and how a log of each version is read.
 *
 * The header's `v` names the format a log was written in. `formats` holds,
 * for every version Skein can read, the upgrade of one of its lines (header
 * or event, as parsed JSON) into the current format. The current version
 * (`LOG_VERSION`) maps to the identity, and reading a current log calls
 * nothing per line.
 *
 * Changing the format: bump `LOG_VERSION` in `Event.ts`, add the new version
 * here as the identity, and turn the old version's entry into a function that
 * rewrites its lines into the new shape (composing older upgrades with it). A
 * log opened for writing is rewritten once in the current format (the old file
 * is kept as `<id>.ndjson.v<N>.bak`; see `Files.replaceWhole`).
 */
import { LOG_VERSION, type ToolStatus } from "./Event.ts"

export type Line = Record<string, unknown>

/** How a line of one format version becomes a line of the current one. */
export interface Upgrade {
  readonly header: (header: Line) => Line
  readonly event: (event: Line) => Line
}

export const identity: Upgrade = { header: (header) => header, event: (event) => event }

/**
 * The texts v4 and older Skeins logged for a tool call that did not end by itself, and how it
 * ended: frozen here as they were written (today's producers may reword theirs; these logs
 * will not change).
 */
const endedBy: ReadonlyMap<string, ToolStatus> = new Map<string, ToolStatus>([
  ["Cancelled by the user", "cancelled"],
  ["Not run: the turn failed", "not_run"],
  ["Unknown: the session's log could not record what this call did", "not_logged"],
  ["Not finished: Skein stopped before this tool call ended.", "interrupted"],
  ["Not finished: the agent ended its turn before this tool call did.", "unfinished"]
])

const isRecord = (u: unknown): u is Line => typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * How a v4 tool result ended, from its text: `done` when it succeeded, the status its text
 * names when it is one of those above, else `failed` (a refusal's texts vary: it reads as
 * failed, as its `ok` always said).
 */
export const statusOf = (ok: boolean, content: unknown): ToolStatus =>
  ok ? "done" : (typeof content === "string" ? endedBy.get(content) : undefined) ?? "failed"

/** v4 → v5: a `tool_result` gains its `status` (a malformed one is left for the reader to refuse). */
const v4: Upgrade = {
  header: (header) => ({ ...header, v: 5 }),
  event: (event) => {
    if (event.type !== "tool_result" || !isRecord(event.data) || typeof event.data.ok !== "boolean" || "status" in event.data) return event
    // Right after `ok`, where a v5 Skein writes it, so an upgraded line reads as a new one does.
    const status = statusOf(event.data.ok, event.data.content)
    const data: Line = {}
    for (const [key, value] of Object.entries(event.data)) {
      data[key] = value
      if (key === "ok") data.status = status
    }
    return { ...event, data }
  }
}

/** v1, v2, v3 → v4 only add event types and fields (every older line is a v4 line), then → v5. */
const older: Upgrade = { header: v4.header, event: v4.event }

/** The formats Skein reads, by version. */
export const formats: ReadonlyMap<number, Upgrade> = new Map<number, Upgrade>([
  [1, older],
  [2, older],
  [3, older],
  [4, v4],
  [5, identity]
])

type Plan =
  | { readonly _tag: "Current" }
  | { readonly _tag: "Upgrade"; readonly from: number; readonly upgrade: Upgrade }
  | { readonly _tag: "Unreadable"; readonly message: string }

/** What reading a log of version `v` takes: nothing, an upgrade, or it cannot be read (why). */
export const plan = (v: unknown, table: ReadonlyMap<number, Upgrade> = formats, current: number = LOG_VERSION): Plan => {
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0) {
    return { _tag: "Unreadable", message: "its header has no valid format version (\"v\")" }
  }
  if (v > current) {
    return {
      _tag: "Unreadable",
      message: `it was written by a newer Skein (log format v${v}; this Skein reads up to v${current}). Upgrade Skein to open it`
    }
  }
  const upgrade = table.get(v)
  if (upgrade === undefined) return { _tag: "Unreadable", message: `log format v${v} is not supported by this Skein` }
  return v === current && upgrade === identity ? { _tag: "Current" } : { _tag: "Upgrade", from: v, upgrade }
}
