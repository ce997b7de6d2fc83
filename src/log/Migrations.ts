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
import { LOG_VERSION } from "./Event.ts"

export type Line = Record<string, unknown>

/** How a line of one format version becomes a line of the current one. */
export interface Upgrade {
  readonly header: (header: Line) => Line
  readonly event: (event: Line) => Line
}

export const identity: Upgrade = { header: (header) => header, event: (event) => event }

/** v1 … v4 → v5: later formats only add event types and fields; every older line is a v5 line. */
const older: Upgrade = { header: (header) => ({ ...header, v: 5 }), event: (event) => event }

/** The formats Skein reads, by version. */
export const formats: ReadonlyMap<number, Upgrade> = new Map<number, Upgrade>([
  [1, older],
  [2, older],
  [3, older],
  [4, older],
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
