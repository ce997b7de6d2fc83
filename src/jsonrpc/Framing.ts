/**
 * LF-only NDJSON framing.
 *
 * Lines are split on `\n` (0x0A) only. U+2028 and U+2029 are legal inside JSON
 * strings and are NOT line breaks here (Node's `readline` treats them as such;
 * that is the bug this module avoids). Bytes are split before decoding, so a
 * multi-byte UTF-8 character cut across chunks decodes correctly.
 *
 * Memory is bounded: a line longer than `maxLineBytes` is not buffered; its
 * bytes are dropped up to the next `\n` and a single `TooLong` item reports it,
 * as soon as the line passes the limit (a reader need not wait for a line that
 * may never end to know it is too long).
 */
import * as Stream from "effect/Stream"

export type Line =
  | { readonly _tag: "Line"; readonly text: string }
  | { readonly _tag: "TooLong" }

export interface Options {
  /** Longest accepted line in bytes, excluding the `\n`. Default 16 MiB. */
  readonly maxLineBytes?: number | undefined
}

const DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024

const LF = 0x0a
const tooLong: Line = { _tag: "TooLong" }

/** A stateful splitter: feed it chunks, get back the complete lines they close. */
interface Splitter {
  readonly push: (chunk: Uint8Array) => Array<Line>
  /** End of input: the unterminated last line, if any. The splitter is reset. */
  readonly end: () => Array<Line>
  /** Bytes currently held for an unterminated line (for tests of the memory bound). */
  readonly bufferedBytes: () => number
}

export const makeSplitter = (options?: Options): Splitter => {
  const max = options?.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES
  const decoder = new TextDecoder("utf-8")
  let parts: Array<Uint8Array> = []
  let size = 0
  let discarding = false

  const reset = () => {
    parts = []
    size = 0
  }

  const emit = (out: Array<Line>, bytes: Uint8Array) => {
    let end = bytes.length
    if (end > 0 && bytes[end - 1] === 0x0d) end--
    const text = decoder.decode(bytes.subarray(0, end))
    if (text.trim() !== "") out.push({ _tag: "Line", text })
  }

  const take = (last: Uint8Array): Uint8Array => {
    if (parts.length === 0) return last
    const joined = new Uint8Array(size + last.length)
    let offset = 0
    for (const part of parts) {
      joined.set(part, offset)
      offset += part.length
    }
    joined.set(last, offset)
    return joined
  }

  const push = (chunk: Uint8Array): Array<Line> => {
    const out: Array<Line> = []
    let start = 0
    while (start <= chunk.length) {
      const lf = chunk.indexOf(LF, start)
      if (lf === -1) {
        const rest = chunk.length - start
        if (rest === 0 || discarding) break
        if (size + rest > max) {
          discarding = true
          reset()
          out.push(tooLong)
        } else {
          // Copy: the producer may reuse its buffer.
          parts.push(chunk.slice(start))
          size += rest
        }
        break
      }
      const segment = chunk.subarray(start, lf)
      if (discarding) {
        // Reported when it passed the limit.
        discarding = false
      } else if (size + segment.length > max) {
        out.push(tooLong)
      } else {
        emit(out, take(segment))
      }
      reset()
      start = lf + 1
    }
    return out
  }

  const end = (): Array<Line> => {
    const out: Array<Line> = []
    if (!discarding && size > 0) emit(out, take(new Uint8Array(0)))
    discarding = false
    reset()
    return out
  }

  return { push, end, bufferedBytes: () => size }
}

/**
 * Splits a byte stream into lines. A final unterminated line is emitted at the
 * end of input. Each run of the resulting stream gets its own splitter.
 */
export const lines = (options?: Options) => <E, R>(self: Stream.Stream<Uint8Array, E, R>): Stream.Stream<Line, E, R> =>
  self.pipe(
    Stream.mapAccumArray(
      () => makeSplitter(options),
      (splitter, chunks) => {
        const out: Array<Line> = []
        for (const chunk of chunks) {
          for (const line of splitter.push(chunk)) out.push(line)
        }
        return [splitter, out] as const
      },
      { onHalt: (splitter) => splitter.end() }
    )
  )

const SEPARATORS = /[\u2028\u2029]/g

const escapeSeparator = (c: string): string => (c === "\u2028" ? "\\u2028" : "\\u2029")

/**
 * JSON text for one NDJSON line (without its `\n`): `JSON.stringify`, with U+2028/U+2029
 * escaped so clients that split with `readline` keep our lines whole. Throws like
 * `JSON.stringify` on values JSON cannot represent (BigInt, cycles).
 */
export const stringify = (value: unknown): string => {
  const json = JSON.stringify(value)
  return json.includes("\u2028") || json.includes("\u2029") ? json.replace(SEPARATORS, escapeSeparator) : json
}

/** One NDJSON line: {@link stringify} plus `\n`. */
export const encode = (message: unknown): string => `${stringify(message)}\n`
