/**
 * What a session store is: the interface the runtime and the CLI use, whatever keeps the
 * sessions. `FileStore` keeps them as NDJSON files in `$SKEIN_HOME/sessions` (the default);
 * `MemoryStore` keeps the very same lines in this process's memory. Both write each event as
 * the line `encodeEvent` makes, read it back with `Reader.ts`, and refuse to write a line the
 * reader would call corrupt (`refuse`).
 */
import type * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as Checks from "./Checks.ts"
import type { Canonical, LogHeader } from "./Event.ts"
import type * as Listing from "./Listing.ts"
import { LogError } from "./LogError.ts"
import type * as Reader from "./Reader.ts"

/**
 * A record kept beside a session's log rather than in it: `mcp`, the settings of the
 * session's MCP servers as the client sent them (they hold secrets; the log holds only what
 * identifies each server). It lives only while its log does: written after the log exists,
 * removed before it.
 */
export type Side = "mcp"

export interface Writer {
  /** Where the log is: a file's path, or the name a store without files gives it. */
  readonly path: string
  /** Appends events as lines, in order, in one write. */
  readonly append: (events: ReadonlyArray<Canonical>) => Effect.Effect<void, LogError>
  /** Makes what was appended durable (a file store flushes it to disk). */
  readonly sync: Effect.Effect<void, LogError>
  /** Replaces a side record whole (owner-only); `undefined` removes it. */
  readonly saveSide: (side: Side, text: string | undefined) => Effect.Effect<void, LogError>
  /** A side record's text, or undefined when there is none. */
  readonly loadSide: (side: Side) => Effect.Effect<string | undefined, LogError>
}

/** A log opened for writing: what it held, and the writer that continues it. */
export interface Opened {
  readonly contents: Reader.Contents
  readonly writer: Writer
}

export interface Store {
  /** Where the logs are (a store without files gives a name that is no path on disk). */
  readonly directory: string
  /** Where a session's log is, as `Reader.Contents.file` and `Writer.path` name it. */
  readonly pathOf: (sessionId: string) => string
  /** Creates a new log with its header and takes its lock; the writer lives as long as the scope. */
  readonly create: (header: LogHeader) => Effect.Effect<Writer, LogError, Scope.Scope>
  /**
   * Takes the lock of an existing log, reads it, then, once `check` accepts what it holds, cuts
   * a torn tail, upgrades an old format and continues it. When `check` refuses, the log is as it
   * was (the lock is released).
   */
  readonly open: <E = never>(
    sessionId: string,
    check?: (contents: Reader.Contents) => Effect.Effect<void, E>
  ) => Effect.Effect<Opened, LogError | E, Scope.Scope>
  /** Reads a session's log without taking its lock or changing it. */
  readonly read: (sessionId: string) => Effect.Effect<Reader.Contents, LogError>
  /** A session's side record, read without its lock (undefined when there is none). */
  readonly readSide: (sessionId: string, side: Side) => Effect.Effect<string | undefined, LogError>
  /**
   * Whether a writer holds the session's lock now, in this process or another (a file store:
   * a live owner; a lock its owner left behind does not count). An invalid id is not held.
   */
  readonly held: (sessionId: string) => Effect.Effect<boolean>
  /** Reads a log by its path (a file store: any file; a memory store: its own logs' names). */
  readonly readFile: (file: string) => Effect.Effect<Reader.Contents, LogError>
  /** One page of the sessions, newest first. */
  readonly list: (query: Listing.Query) => Effect.Effect<Listing.Page, LogError>
  /**
   * Removes a session, its side records first and its log last, under its lock; an unknown id
   * is not an error. Fails if the session is open elsewhere.
   */
  readonly remove: (sessionId: string) => Effect.Effect<void, LogError>
}

/** The JSON line of one canonical event, in the documented field order. */
export const encodeEvent = (event: Canonical): string =>
  JSON.stringify({ seq: event.seq, ts: event.ts, turn: event.turn, type: event.type, data: event.data }) + "\n"

/**
 * Whether JSON holds a value as it is: plain objects and arrays of strings, booleans, null and
 * finite numbers, with no `undefined` anywhere (JSON drops such a key, or writes `null`).
 */
const faithful = (u: unknown): boolean => {
  switch (typeof u) {
    case "string":
    case "boolean":
      return true
    case "number":
      return Number.isFinite(u)
    case "object": {
      if (u === null) return true
      if (Array.isArray(u)) {
        for (const item of u) if (!faithful(item)) return false
        return true
      }
      const proto = Object.getPrototypeOf(u)
      if (proto !== Object.prototype && proto !== null) return false
      for (const key in u) if (!faithful((u as Record<string, unknown>)[key])) return false
      return true
    }
    default:
      return false
  }
}

/**
 * The error for the first event whose data, as its line will hold it, its type's Schema
 * refuses, or undefined: what a store writes, its reader must read back, so such an event is
 * never written (the turn that made it fails instead, and the log stays readable). The data is
 * checked as it is when JSON holds it unchanged (nearly always: no copy), else as JSON gives it
 * back (an `undefined` argument is a missing one). Named by type and field, never by value.
 */
export const refuse = (file: string, events: ReadonlyArray<Canonical>, check: Checks.Check): LogError | undefined => {
  for (const event of events) {
    const data: unknown = event.data
    const line = faithful(data) || data === undefined ? data : JSON.parse(JSON.stringify(data)) as unknown
    const problem = check(event.type, line)
    if (problem !== undefined) {
      return new LogError({ reason: "invalid", message: `Cannot write to session log ${file}: ${problem}` })
    }
  }
  return undefined
}
