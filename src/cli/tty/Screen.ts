/**
 * The bottom area of the terminal in `skein run`: the spinner with the turn's time, what is
 * being typed (at the prompt, or ahead during a turn), queued prompts, and menus. The
 * transcript is written above it: before anything is written the area is erased, and after a
 * write that ended its line it is drawn again, so output never lands inside a prompt or a
 * menu, and the prompt stays usable while a turn streams.
 *
 * Parts are set by name and drawn in a fixed order (status, queue, editor, menu). Only on a
 * terminal: without one, nothing is drawn.
 */
import * as Terminal from "./Terminal.ts"

type Part = "status" | "queue" | "editor" | "menu"
const ORDER: ReadonlyArray<Part> = ["status", "queue", "editor", "menu"]

export interface Block {
  /** Lines as shown (may be styled). */
  readonly lines: ReadonlyArray<string>
  /** Where the cursor goes, if this block takes it: a line of the block and a column in cells. */
  readonly cursor?: { readonly line: number; readonly column: number } | undefined
}

const parts = new Map<Part, Block>()
let drawn = false
/** Rows from the top of the drawn area to the cursor. */
let cursorRow = 0
let hooked = false

// eslint-disable-next-line no-control-regex
const SGR = /\x1b\[[0-9;]*m/g

/** Cells a character takes: 2 for wide East Asian characters and most emoji, 0 for combining marks. */
const cells = (code: number): number => {
  if (code < 0x300) return 1
  if ((code >= 0x300 && code <= 0x36f) || (code >= 0x200b && code <= 0x200f) || (code >= 0xfe00 && code <= 0xfe0f)) return 0
  if (
    (code >= 0x1100 && code <= 0x115f) || (code >= 0x2e80 && code <= 0xa4cf) || (code >= 0xac00 && code <= 0xd7a3) ||
    (code >= 0xf900 && code <= 0xfaff) || (code >= 0xfe30 && code <= 0xfe4f) || (code >= 0xff00 && code <= 0xff60) ||
    (code >= 0xffe0 && code <= 0xffe6) || (code >= 0x1f300 && code <= 0x1faff) || (code >= 0x20000 && code <= 0x3fffd)
  ) return 2
  return 1
}

/** The width of text in terminal cells, styling left out. */
export const width = (text: string): number => {
  let n = 0
  for (const ch of text.replace(SGR, "")) n += cells(ch.codePointAt(0)!)
  return n
}

const columns = () => Math.max(10, process.stderr.columns ?? 80)
const screenRows = () => Math.max(4, process.stderr.rows ?? 24)

const rowsOf = (text: string, cols: number) => Math.max(1, Math.ceil(width(text) / cols))

const erase = () => {
  if (!drawn) return
  drawn = false
  Terminal.overlay(`${cursorRow > 0 ? `\x1b[${cursorRow}A` : ""}\r\x1b[J`)
  cursorRow = 0
}

const draw = () => {
  if (drawn || !Terminal.isTty("err") || !Terminal.lineStart("err")) return
  const lines: Array<string> = []
  let cursor: { line: number; column: number } | undefined
  for (const name of ORDER) {
    const block = parts.get(name)
    if (block === undefined) continue
    if (block.cursor !== undefined) cursor = { line: lines.length + block.cursor.line, column: block.cursor.column }
    lines.push(...block.lines)
  }
  if (lines.length === 0) return
  const cols = columns()
  // Never taller than the screen: the lines nearest the cursor (or the last ones) are kept.
  const max = screenRows() - 1
  let first = 0
  while (lines.slice(first).reduce((n, l) => n + rowsOf(l, cols), 0) > max && first < lines.length - 1) {
    if (cursor !== undefined && first >= cursor.line) break
    first++
  }
  const shown = lines.slice(first)
  const at = cursor !== undefined ? { line: cursor.line - first, column: cursor.column } : undefined
  let out = "\x1b[?25l" + shown.join("\n")
  const total = shown.reduce((n, l) => n + rowsOf(l, cols), 0)
  let row = total - 1
  if (at !== undefined && at.line >= 0 && at.line < shown.length) {
    const above = shown.slice(0, at.line).reduce((n, l) => n + rowsOf(l, cols), 0)
    const lineRows = rowsOf(shown[at.line]!, cols)
    const target = Math.min(above + Math.floor(at.column / cols), above + lineRows - 1)
    const column = target === above + Math.floor(at.column / cols) ? at.column % cols : cols - 1
    if (row > target) out += `\x1b[${row - target}A`
    out += `\x1b[${column + 1}G`
    row = target
  }
  out += "\x1b[?25h"
  Terminal.overlay(out)
  drawn = true
  cursorRow = row
}

const hook = () => {
  if (hooked) return
  hooked = true
  Terminal.onBeforeWrite((stream) => {
    if (Terminal.sharesScreen(stream)) erase()
  })
  Terminal.onAfterWrite((stream) => {
    if (Terminal.sharesScreen(stream)) draw()
  })
  process.stderr.on("resize", refresh)
}

/** Draws the area again (after one of its parts changed, or to move the spinner). */
const refresh = (): void => {
  erase()
  draw()
}

/** Sets a part (undefined: removes it) and draws the area again. */
export const set = (part: Part, block: Block | undefined): void => {
  if (!Terminal.isTty("err")) return
  hook()
  if (block === undefined) parts.delete(part)
  else parts.set(part, block)
  refresh()
}

/** Erases the area and forgets every part (before the program ends). */
export const clear = (): void => {
  erase()
  parts.clear()
}
