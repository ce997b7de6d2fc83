/**
 * The text being typed at `skein run`'s prompt, and what each key does to it. Pure: a state
 * and a key give the next state and, for keys that are not editing, what the user asked for.
 *
 * - Text and pastes are inserted at the cursor; a paste keeps its line breaks, so pasting 50
 *   lines gives one prompt of 50 lines.
 * - Enter submits; Alt-Enter or Ctrl-J inserts a line break, and so does Enter right after a
 *   `\` (the `\` is removed), as in a shell.
 * - ←/→, Home/End (Ctrl-A/Ctrl-E), Backspace, Delete, Ctrl-U / Ctrl-K (cut to the start / end of
 *   the line), Ctrl-W (cut the word before the cursor). ↑/↓ move between lines, and past the
 *   first or last line ask for the history (`older` / `newer`).
 * - Everything else is an action for whoever reads the keys: Ctrl-C, Ctrl-D on an empty text,
 *   Esc, Tab, Shift-Tab, Ctrl-S.
 */
import type { Key } from "./Keys.ts"

export interface State {
  readonly text: string
  /** Index into `text` (UTF-16 units, always on a code point boundary). */
  readonly cursor: number
}

export type Action =
  | "submit"
  | "interrupt"
  | "end"
  | "escape"
  | "complete"
  | "cycle"
  | "steer"
  | "older"
  | "newer"

export const empty: State = { text: "", cursor: 0 }

export const of = (text: string): State => ({ text, cursor: text.length })

const insert = (s: State, text: string): State => ({
  text: s.text.slice(0, s.cursor) + text + s.text.slice(s.cursor),
  cursor: s.cursor + text.length
})

/** The index of the code point before / after `i`. */
const before = (text: string, i: number): number => {
  if (i <= 0) return 0
  const code = text.charCodeAt(i - 1)
  return code >= 0xdc00 && code <= 0xdfff && i >= 2 ? i - 2 : i - 1
}
const after = (text: string, i: number): number => {
  if (i >= text.length) return text.length
  const code = text.charCodeAt(i)
  return code >= 0xd800 && code <= 0xdbff && i + 1 < text.length ? i + 2 : i + 1
}

const lineStart = (text: string, i: number) => text.lastIndexOf("\n", i - 1) + 1
const lineEnd = (text: string, i: number) => {
  const end = text.indexOf("\n", i)
  return end === -1 ? text.length : end
}

/** Moves the cursor one line up or down, keeping its column where the line is long enough. */
const vertical = (s: State, direction: -1 | 1): State | undefined => {
  const start = lineStart(s.text, s.cursor)
  const column = s.cursor - start
  if (direction === -1) {
    if (start === 0) return undefined
    const prevStart = lineStart(s.text, start - 1)
    return { text: s.text, cursor: Math.min(prevStart + column, start - 1) }
  }
  const end = lineEnd(s.text, s.cursor)
  if (end === s.text.length) return undefined
  const nextEnd = lineEnd(s.text, end + 1)
  return { text: s.text, cursor: Math.min(end + 1 + column, nextEnd) }
}

const cut = (s: State, from: number, to: number): State => ({
  text: s.text.slice(0, from) + s.text.slice(to),
  cursor: from
})

/** The start of the word before `i` (spaces before it skipped), as Ctrl-W finds it. */
const wordStart = (text: string, i: number): number => {
  let j = i
  while (j > 0 && /\s/.test(text[j - 1]!)) j--
  while (j > 0 && !/\s/.test(text[j - 1]!)) j--
  return j
}

interface Step {
  readonly state: State
  readonly action?: Action | undefined
}

export const step = (s: State, key: Key): Step => {
  switch (key._tag) {
    case "text":
      return { state: insert(s, key.text) }
    case "paste":
      return { state: insert(s, key.text.replace(/\r\n?/g, "\n")) }
    case "end":
      return { state: s, action: "end" }
    case "key":
      break
    default: {
      const never: never = key
      return never
    }
  }
  const { name, ctrl, meta, shift } = key
  if (ctrl) {
    switch (name) {
      case "c":
        return { state: s, action: "interrupt" }
      case "d":
        return s.text.length === 0 ? { state: s, action: "end" } : { state: cut(s, s.cursor, after(s.text, s.cursor)) }
      case "a":
        return { state: { text: s.text, cursor: lineStart(s.text, s.cursor) } }
      case "e":
        return { state: { text: s.text, cursor: lineEnd(s.text, s.cursor) } }
      case "u":
        return { state: cut(s, lineStart(s.text, s.cursor), s.cursor) }
      case "k":
        return { state: cut(s, s.cursor, lineEnd(s.text, s.cursor)) }
      case "w":
        return { state: cut(s, wordStart(s.text, s.cursor), s.cursor) }
      case "s":
        return { state: s, action: "steer" }
      case "b":
        return { state: { text: s.text, cursor: before(s.text, s.cursor) } }
      case "f":
        return { state: { text: s.text, cursor: after(s.text, s.cursor) } }
      case "p":
        return vertical(s, -1) !== undefined ? { state: vertical(s, -1)! } : { state: s, action: "older" }
      case "n":
        return vertical(s, 1) !== undefined ? { state: vertical(s, 1)! } : { state: s, action: "newer" }
      case "j":
        return { state: insert(s, "\n") }
      default:
        return { state: s }
    }
  }
  switch (name) {
    case "return":
      if (meta) return { state: insert(s, "\n") }
      // `\` + Enter: a line break, as in a shell.
      if (s.cursor > 0 && s.text[s.cursor - 1] === "\\") {
        return { state: insert(cut(s, s.cursor - 1, s.cursor), "\n") }
      }
      return { state: s, action: "submit" }
    case "enter": // Ctrl-J
      return { state: insert(s, "\n") }
    case "backspace":
      return meta ? { state: cut(s, wordStart(s.text, s.cursor), s.cursor) } : { state: cut(s, before(s.text, s.cursor), s.cursor) }
    case "delete":
      return { state: cut(s, s.cursor, after(s.text, s.cursor)) }
    case "left":
      return { state: { text: s.text, cursor: before(s.text, s.cursor) } }
    case "right":
      return { state: { text: s.text, cursor: after(s.text, s.cursor) } }
    case "home":
      return { state: { text: s.text, cursor: lineStart(s.text, s.cursor) } }
    case "end":
      return { state: { text: s.text, cursor: lineEnd(s.text, s.cursor) } }
    case "up": {
      const moved = vertical(s, -1)
      return moved !== undefined ? { state: moved } : { state: s, action: "older" }
    }
    case "down": {
      const moved = vertical(s, 1)
      return moved !== undefined ? { state: moved } : { state: s, action: "newer" }
    }
    case "tab":
      return { state: s, action: shift ? "cycle" : "complete" }
    case "escape":
      return { state: s, action: "escape" }
    default:
      return { state: s }
  }
}
