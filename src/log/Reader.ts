/**
 * Reading a session log back: streamed in chunks, one `JSON.parse` per line,
 * the header checked with its Schema and migrated (see `Migrations.ts`), every
 * event's envelope checked here (`seq` strictly increasing, `ts`, `turn`) and
 * its data by the Schema of its type (`Checks.ts`, derived from `CanonicalBody`:
 * a new event type needs nothing here).
 *
 * An event type the union does not have is corruption, like any bad line. It
 * cannot be news from a newer Skein: a new event type bumps `LOG_VERSION`, and
 * the header's version check refuses such a log before its first event (with
 * "written by a newer Skein"). So in a log this Skein accepts, an unknown type
 * is damage or a hand edit, and skipping the line would leave a hole in the
 * history (and lose it for good when the log is next migrated).
 *
 * Recovery: a last line without its `\n`, or a last line that is not JSON, is
 * what a crash mid-write leaves; it is reported as `torn` (with the byte length
 * of the intact part) and not returned. A bad line anywhere else is corruption:
 * a `LogError` naming the file, the line and what is wrong (for a bad event,
 * its type and the field, never a value). Reading never changes the file;
 * cutting the torn tail is the writer's job (`SessionLog.open`).
 */
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Lazy from "../Lazy.ts"
import * as Checks from "./Checks.ts"
import { type Canonical, LogHeader } from "./Event.ts"
import { LogError } from "./LogError.ts"
import * as Migrations from "./Migrations.ts"

export interface Contents {
  readonly file: string
  /** The header, in the current format. */
  readonly header: LogHeader
  /** The format version the file was written in. */
  readonly version: number
  /** Every intact event, in order, stamped with the header's session id. */
  readonly events: Array<Canonical>
  /** Bytes of the file holding the header and every intact line (where a torn tail starts). */
  readonly intactBytes: number
  /** The torn last line a crash left, if any: its line number and length in bytes. */
  readonly torn: { readonly line: number; readonly bytes: number } | undefined
}

export interface Options {
  /** The formats this reader accepts (default: `Migrations.formats`). */
  readonly formats?: ReadonlyMap<number, Migrations.Upgrade> | undefined
  /** The events a log may hold (default: `CanonicalBody`); tests pass a larger union. */
  readonly events?: Checks.EventUnion | undefined
}

const CHUNK_BYTES = 1 << 20
const NEWLINE = 10

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)
const isString = (u: unknown): u is string => typeof u === "string"

const NOT_JSON = Symbol("not-json")
const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return NOT_JSON
  }
}

/** What is wrong with one event line, or undefined: its envelope here, its data by its type's Schema. */
const checkEvent = (e: unknown, lastSeq: number, checkData: Checks.Check): string | undefined => {
  if (!isRecord(e)) return "not an event object"
  if (typeof e.seq !== "number" || !Number.isInteger(e.seq)) return "no integer seq"
  if (e.seq <= lastSeq) return `seq ${e.seq} does not follow ${lastSeq}`
  if (typeof e.ts !== "number") return "no ts"
  if (e.turn !== null && (typeof e.turn !== "number" || !Number.isInteger(e.turn))) return "bad turn"
  if (!isString(e.type)) return "no type"
  if (!isRecord(e.data)) return "no data"
  return checkData(e.type, e.data)
}

const decodeHeader = Lazy.fn(() => Schema.decodeUnknownOption(LogHeader))

const corrupt = (file: string, line: number, what: string) =>
  new LogError({ reason: "corrupt", message: `Session log ${file} is corrupt at line ${line}: ${what}` })

/**
 * A push parser over the bytes of a log: feed chunks, then `end`. Pure and
 * synchronous, so the reader's loop costs one Effect per chunk, not per line.
 */
export const parser = (file: string, options?: Options) => {
  const decoder = new TextDecoder()
  const formats = options?.formats ?? Migrations.formats
  const checkData = options?.events === undefined ? Checks.canonical() : Checks.of(options.events)
  let pending: Array<Uint8Array> = []
  let pendingBytes = 0
  let line = 0
  let offset = 0
  let header: LogHeader | undefined
  let version = 0
  let upgrade: Migrations.Upgrade | undefined
  let lastSeq = 0
  let failure: LogError | undefined
  /** A complete line that was not JSON: torn if nothing follows it, else corruption. */
  let bad: { readonly line: number; readonly start: number; readonly bytes: number } | undefined
  const events: Array<Canonical> = []

  const onLine = (bytes: Uint8Array) => {
    line++
    const start = offset
    offset += bytes.length + 1
    if (bytes.length === 0) return
    if (bad !== undefined) {
      failure = corrupt(file, bad.line, "not valid JSON")
      return
    }
    const json = parseJson(decoder.decode(bytes))
    if (json === NOT_JSON) {
      bad = { line, start, bytes: bytes.length + 1 }
      return
    }
    if (header === undefined) {
      if (!isRecord(json) || json.type !== "session") {
        failure = corrupt(file, line, "the first line is not a session header")
        return
      }
      const plan = Migrations.plan(json.v, formats)
      if (plan._tag === "Unreadable") {
        failure = new LogError({ reason: "version", message: `Cannot read session log ${file}: ${plan.message}` })
        return
      }
      const decoded = decodeHeader(plan._tag === "Upgrade" ? plan.upgrade.header(json) : json)
      if (Option.isNone(decoded)) {
        failure = corrupt(file, line, "the session header is malformed")
        return
      }
      header = decoded.value
      version = json.v as number
      upgrade = plan._tag === "Upgrade" ? plan.upgrade : undefined
      return
    }
    const event = upgrade === undefined ? json : upgrade.event(json as Migrations.Line)
    const problem = checkEvent(event, lastSeq, checkData)
    if (problem !== undefined) {
      failure = corrupt(file, line, problem)
      return
    }
    const e = event as { seq: number; sessionId?: string }
    e.sessionId = header.id
    lastSeq = e.seq
    events.push(e as unknown as Canonical)
  }

  const join = (tail: Uint8Array): Uint8Array => {
    const out = new Uint8Array(pendingBytes + tail.length)
    let at = 0
    for (const piece of pending) {
      out.set(piece, at)
      at += piece.length
    }
    out.set(tail, at)
    pending = []
    pendingBytes = 0
    return out
  }

  /** Feeds the next chunk; returns the failure, if the log is already known to be bad. */
  const push = (chunk: Uint8Array): LogError | undefined => {
    let start = 0
    while (failure === undefined) {
      const nl = chunk.indexOf(NEWLINE, start)
      if (nl === -1) {
        if (start < chunk.length) {
          pending.push(chunk.subarray(start))
          pendingBytes += chunk.length - start
        }
        break
      }
      onLine(pendingBytes > 0 ? join(chunk.subarray(start, nl)) : chunk.subarray(start, nl))
      start = nl + 1
    }
    return failure
  }

  /** Ends the input: the contents, or why the log cannot be read. */
  const end = (): Contents | LogError => {
    if (failure !== undefined) return failure
    let torn: Contents["torn"]
    let intactBytes = offset
    if (pendingBytes > 0) {
      if (bad !== undefined) return corrupt(file, bad.line, "not valid JSON")
      torn = { line: line + 1, bytes: pendingBytes }
    } else if (bad !== undefined) {
      torn = { line: bad.line, bytes: bad.bytes }
      intactBytes = bad.start
    }
    if (header === undefined) {
      return new LogError({ reason: "corrupt", message: `Session log ${file} has no complete header` })
    }
    return { file, header, version, events, intactBytes, torn }
  }

  return { push, end }
}

/** Reads a log file in 1 MiB chunks. A missing file is a `not_found` error. */
export const read = (fs: FileSystem.FileSystem, file: string, options?: Options): Effect.Effect<Contents, LogError> =>
  Effect.scoped(Effect.gen(function*() {
    const handle = yield* fs.open(file, { flag: "r" }).pipe(
      Effect.mapError((error) =>
        error.reason._tag === "NotFound"
          ? new LogError({ reason: "not_found", message: `No session log at ${file}` })
          : new LogError({ reason: "io", message: `Cannot open session log ${file}: ${error.reason._tag}` })
      )
    )
    const p = parser(file, options)
    for (;;) {
      const chunk = yield* handle.readAlloc(CHUNK_BYTES).pipe(
        Effect.mapError((error) => new LogError({ reason: "io", message: `Cannot read session log ${file}: ${error.reason._tag}` }))
      )
      if (Option.isNone(chunk)) break
      const failure = p.push(chunk.value)
      if (failure !== undefined) return yield* failure
    }
    const result = p.end()
    return result instanceof LogError ? yield* result : result
  }))

/** Reads a log held in memory: the bytes of a whole file. */
export const parse = (file: string, bytes: Uint8Array, options?: Options): Effect.Effect<Contents, LogError> =>
  Effect.suspend(() => {
    const p = parser(file, options)
    const failure = p.push(bytes)
    if (failure !== undefined) return Effect.fail(failure)
    const result = p.end()
    return result instanceof LogError ? Effect.fail(result) : Effect.succeed(result)
  })
