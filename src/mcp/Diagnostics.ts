/**
 * A bounded tail of a server's diagnostic output (its stderr, plus stdout
 * lines that were not JSON-RPC): the last `maxLines` lines, each cut to
 * `maxLineChars`. Memory stays fixed whatever the server prints; nothing of it
 * ever reaches Skein's stdout, and secret values are redacted from it.
 */
import * as Secrets from "../secrets/Secrets.ts"

export interface Tail {
  /** Adds output; lines are split on `\n` (a partial last line waits for its end). */
  readonly push: (chunk: string | Uint8Array) => void
  /** Adds one whole line, e.g. `[stdout] …`. */
  readonly line: (text: string) => void
  /** The kept lines, oldest first (a pending partial line included). */
  readonly lines: () => ReadonlyArray<string>
  /** Lines dropped because the tail was full. */
  readonly dropped: () => number
}

const DEFAULT_MAX_LINES = 40
const DEFAULT_MAX_LINE_CHARS = 400

export const make = (options?: { readonly maxLines?: number; readonly maxLineChars?: number }): Tail => {
  const maxLines = options?.maxLines ?? DEFAULT_MAX_LINES
  const maxLineChars = options?.maxLineChars ?? DEFAULT_MAX_LINE_CHARS
  const kept: Array<string> = []
  const decoder = new TextDecoder("utf-8", { fatal: false })
  let partial = ""
  let dropped = 0
  const cut = (text: string) => (text.length > maxLineChars ? `${text.slice(0, maxLineChars)}…` : text)
  // Redacted before it is cut: a server may print its own token.
  const keep = (text: string) => {
    kept.push(cut(Secrets.redact(text.replace(/\r$/, ""))))
    if (kept.length > maxLines) {
      kept.shift()
      dropped++
    }
  }
  return {
    push: (chunk) => {
      const text = typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true })
      const parts = (partial + text).split("\n")
      // A line that never ends must not grow without bound either.
      partial = cut(parts.pop() ?? "")
      for (const part of parts) keep(part)
    },
    line: keep,
    lines: () => (partial.length > 0 ? [...kept, Secrets.redact(partial)] : kept.slice()),
    dropped: () => dropped
  }
}
