/**
 * A window of a text file's lines, as `read` shows it: lines [offset, offset + limit), each cut
 * at `MAX_LINE_CHARS`, at most `MAX_BYTES` of them, and whether the file ended inside the
 * window. Read from an open file without loading more of it than needed, or taken from text
 * already in memory (a file the client's editor gave). Pure but for the file's read.
 */
import type { FileHandle } from "node:fs/promises"
import * as Effect from "effect/Effect"
import type { PlatformError } from "effect/PlatformError"
import * as SafeFs from "../fs/SafeFs.ts"

export const MAX_BYTES = 50 * 1024
export const MAX_LINE_CHARS = 2000
const CHUNK = 64 * 1024

export interface Window {
  readonly lines: ReadonlyArray<string>
  /** True when the file ended inside the window (so the total is known). */
  readonly reachedEnd: boolean
  readonly totalLines: number
  readonly cutByBytes: boolean
  /** The file's first bytes on disk, as far as they were read (binary files are recognised by them). */
  readonly firstChunk: Uint8Array
}

export const looksBinary = (bytes: Uint8Array): boolean => {
  const n = Math.min(bytes.length, 8192)
  for (let i = 0; i < n; i++) if (bytes[i] === 0) return true
  return false
}

/** The same window over text already in memory (a file read through the client). */
export const ofText = (text: string, offset: number, limit: number): Window => {
  const all = text.split("\n")
  if (all.length > 0 && all[all.length - 1] === "") all.pop()
  const lines: Array<string> = []
  let bytes = 0
  let cutByBytes = false
  for (let i = offset - 1; i < all.length && lines.length < limit; i++) {
    const raw = all[i]!.endsWith("\r") ? all[i]!.slice(0, -1) : all[i]!
    const shown = raw.length > MAX_LINE_CHARS ? `${raw.slice(0, MAX_LINE_CHARS)}… [line truncated]` : raw
    const size = Buffer.byteLength(shown) + 1
    if (bytes + size > MAX_BYTES && lines.length > 0) {
      cutByBytes = true
      break
    }
    bytes += size
    lines.push(shown)
  }
  const reachedEnd = offset - 1 + lines.length >= all.length
  return { lines, reachedEnd, totalLines: all.length, cutByBytes, firstChunk: new Uint8Array(0) }
}

/** Reads lines [offset, offset+limit) without loading more of the file than needed. */
export const ofFile = (file: FileHandle, offset: number, limit: number): Effect.Effect<Window, PlatformError> =>
  Effect.gen(function*() {
    const decoder = new TextDecoder("utf-8")
    const lines: Array<string> = []
    let partial = ""
    let lineNo = 0
    let bytes = 0
    let cutByBytes = false
    let firstChunk: Uint8Array = new Uint8Array(0)
    let first = true
    const take = (line: string): boolean => {
      lineNo++
      if (lineNo < offset) return true
      if (lines.length >= limit) return false
      const shown = line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}… [line truncated]` : line
      const size = Buffer.byteLength(shown) + 1
      if (bytes + size > MAX_BYTES && lines.length > 0) {
        cutByBytes = true
        return false
      }
      bytes += size
      lines.push(shown)
      return true
    }
    for (;;) {
      const chunk = yield* SafeFs.readChunk(file, CHUNK)
      if (chunk.length === 0) {
        const rest = partial + decoder.decode()
        if (rest.length > 0 && !take(rest)) return { lines, reachedEnd: false, totalLines: lineNo, cutByBytes, firstChunk }
        return { lines, reachedEnd: true, totalLines: lineNo, cutByBytes, firstChunk }
      }
      if (first) {
        firstChunk = chunk
        first = false
        if (looksBinary(chunk)) return { lines: [], reachedEnd: false, totalLines: 0, cutByBytes, firstChunk }
      }
      const text = partial + decoder.decode(chunk, { stream: true })
      const parts = text.split("\n")
      partial = parts.pop() ?? ""
      for (const part of parts) {
        if (!take(part.endsWith("\r") ? part.slice(0, -1) : part)) {
          return { lines, reachedEnd: false, totalLines: lineNo, cutByBytes, firstChunk }
        }
      }
    }
  })
