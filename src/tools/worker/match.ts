/**
 * The CPU-bound part of `grep` and `glob`, as plain functions: a regular
 * expression over the lines of a file's bytes, a glob over a batch of paths.
 * They run in the tool worker (./worker.ts), never on the thread that serves
 * the protocol: a model-supplied pattern can take exponential time.
 *
 * Nothing here may import Effect's runtime or Skein's services: this module is
 * bundled into the worker, which stays small so it starts fast.
 */
import * as Glob from "effect/Glob"

/** Characters of one matching line shown. */
export const MAX_LINE_CHARS = 300

export interface TextResult {
  readonly matches: ReadonlyArray<{ readonly line: number; readonly text: string }>
  /** All matching lines in the file, shown or not. */
  readonly count: number
  readonly binary: boolean
}

/** A line cut to `MAX_LINE_CHARS` around its match. */
const cutLine = (line: string, at: number): string => {
  if (line.length <= MAX_LINE_CHARS) return line
  const start = Math.max(0, Math.min(at - 80, line.length - MAX_LINE_CHARS))
  const end = start + MAX_LINE_CHARS
  return `${start > 0 ? "…" : ""}${line.slice(start, end)}${end < line.length ? "…" : ""}`
}

const looksBinary = (bytes: Uint8Array): boolean => bytes.subarray(0, 8192).includes(0)

/** The lines of `bytes` (UTF-8) that `regex` matches: the first `keep` of them, and how many in all. */
export const searchText = (bytes: Uint8Array, regex: RegExp, keep: number): TextResult => {
  if (looksBinary(bytes)) return { matches: [], count: 0, binary: true }
  const text = new TextDecoder("utf-8").decode(bytes)
  const matches: Array<{ line: number; text: string }> = []
  let count = 0
  const lines = text.split("\n")
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw
    if (i === lines.length - 1 && line === "") break
    const found = regex.exec(line)
    if (found === null) continue
    count++
    if (matches.length < keep) matches.push({ line: i + 1, text: cutLine(line, found.index) })
  }
  return { matches, count, binary: false }
}

/** The indices of the `paths` that `pattern` matches (dotfiles included). */
export const globMatches = (pattern: Glob.Glob, paths: ReadonlyArray<string>): Array<number> => {
  const out: Array<number> = []
  for (let i = 0; i < paths.length; i++) if (Glob.match(pattern, paths[i]!)) out.push(i)
  return out
}
