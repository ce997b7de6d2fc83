/**
 * The model's Markdown as a terminal shows it, while it streams: headings, bold, italics, code
 * spans, fenced code in a dim frame, lists, quotes, tables, links. `marked` parses (its lexer
 * only, loaded on first use: `skein acp` never loads it); the styling is here.
 *
 * Streaming: text is rendered a line at a time, once its line is complete, so nothing written
 * needs taking back; a fenced code block is held until it closes and a table until its last
 * row, since their lines only make sense together. `flush` renders whatever is left (the turn
 * ended, or something else is about to be shown). The text was made inert (`Terminal.clean`)
 * before it gets here.
 */
import type { Token, Tokens, TokensList } from "marked"

export type Lexer = (markdown: string) => TokensList

/** Loads the parser (once). */
export const load = (): Promise<Lexer> => import("marked").then((m) => (text: string) => m.lexer(text, { gfm: true }))

interface Style {
  readonly bold: (s: string) => string
  readonly italic: (s: string) => string
  readonly underline: (s: string) => string
  readonly strike: (s: string) => string
  readonly dim: (s: string) => string
  readonly code: (s: string) => string
  readonly heading: (s: string, depth: number) => string
}

const sgr = (open: string, close: string) => (s: string) => (s.length === 0 ? s : `\x1b[${open}m${s}\x1b[${close}m`)

export const ansi: Style = {
  bold: sgr("1", "22"),
  italic: sgr("3", "23"),
  underline: sgr("4", "24"),
  strike: sgr("9", "29"),
  dim: sgr("2", "22"),
  code: sgr("36", "39"),
  heading: (s, depth) => (depth <= 1 ? sgr("1;4", "22;24")(s) : depth === 2 ? sgr("1", "22")(s) : sgr("1;2", "22")(s))
}

/** No styling (NO_COLOR): the structure stays (bullets, frames), the markers go. */
export const plain: Style = {
  bold: (s) => s,
  italic: (s) => s,
  underline: (s) => s,
  strike: (s) => s,
  dim: (s) => s,
  code: (s) => s,
  heading: (s) => s
}

const inline = (tokens: ReadonlyArray<Token> | undefined, style: Style): string =>
  (tokens ?? []).map((t) => inlineToken(t, style)).join("")

const inlineToken = (t: Token, style: Style): string => {
  switch (t.type) {
    case "strong":
      return style.bold(inline((t as Tokens.Strong).tokens, style))
    case "em":
      return style.italic(inline((t as Tokens.Em).tokens, style))
    case "codespan":
      return style.code((t as Tokens.Codespan).text)
    case "del":
      return style.strike(inline((t as Tokens.Del).tokens, style))
    case "link": {
      const link = t as Tokens.Link
      const text = inline(link.tokens, style)
      const plainText = link.text
      return plainText === link.href || `mailto:${plainText}` === link.href ? style.underline(text) : `${style.underline(text)} ${style.dim(`(${link.href})`)}`
    }
    case "image": {
      const image = t as Tokens.Image
      return style.dim(`[image: ${image.text}](${image.href})`)
    }
    case "br":
      return "\n"
    case "text": {
      const text = t as Tokens.Text
      return text.tokens !== undefined ? inline(text.tokens, style) : decode(text.text)
    }
    case "escape":
      return (t as Tokens.Escape).text
    default:
      return decode("text" in t && typeof t.text === "string" ? t.text : t.raw)
  }
}

/** marked escapes &, <, >, " and ' in text: a terminal shows them as typed. */
const decode = (s: string): string =>
  s.replace(/&(amp|lt|gt|quot|#39);/g, (_, e: string) => ({ amp: "&", lt: "<", gt: ">", quot: "\"", "#39": "'" })[e]!)

const indent = (text: string, first: string, rest: string) =>
  text.split("\n").map((line, i) => (i === 0 ? first : rest) + line).join("\n")

const listText = (list: Tokens.List, style: Style): string => {
  const start = typeof list.start === "number" ? list.start : 1
  return list.items.map((item, i) => {
    const marker = list.ordered ? `${start + i}. ` : "• "
    const task = item.task ? (item.checked === true ? "[x] " : "[ ] ") : ""
    const body = item.tokens.map((t) => (t.type === "text" ? inlineToken(t, style) : block(t, style))).filter((s) => s.length > 0).join("\n")
    return indent(task + body, style.dim(marker), " ".repeat(marker.length))
  }).join("\n")
}

const tableText = (table: Tokens.Table, style: Style): string => {
  const cells = [table.header.map((c) => inline(c.tokens, style)), ...table.rows.map((r) => r.map((c) => inline(c.tokens, style)))]
  // eslint-disable-next-line no-control-regex
  const width = (s: string) => [...s.replace(/\x1b\[[0-9;]*m/g, "")].length
  const widths = table.header.map((_, i) => Math.max(...cells.map((row) => width(row[i] ?? ""))))
  const row = (r: ReadonlyArray<string>, head: boolean) =>
    r.map((c, i) => {
      const pad = " ".repeat(Math.max(0, widths[i]! - width(c)))
      return table.align[i] === "right" ? pad + c : table.align[i] === "center" ? pad.slice(0, pad.length >> 1) + c + pad.slice(pad.length >> 1) : c + pad
    }).map((c) => (head ? style.bold(c) : c)).join(style.dim(" │ "))
  const rule = style.dim(widths.map((w) => "─".repeat(w)).join("─┼─"))
  return [row(cells[0]!, true), rule, ...cells.slice(1).map((r) => row(r, false))].join("\n")
}

/** One block, without the line breaks after it (the source's are kept: see `render`). */
const block = (t: Token, style: Style): string => {
  switch (t.type) {
    case "heading":
      return style.heading(inline((t as Tokens.Heading).tokens, style), (t as Tokens.Heading).depth)
    case "paragraph":
      return inline((t as Tokens.Paragraph).tokens, style)
    case "text": {
      const text = t as Tokens.Text
      return text.tokens !== undefined ? inline(text.tokens, style) : decode(text.text)
    }
    case "code": {
      const code = t as Tokens.Code
      const bar = style.dim("│ ")
      const lines = code.text.split("\n").map((line) => bar + line)
      return [style.dim(`╭─${code.lang !== undefined && code.lang.length > 0 ? ` ${code.lang}` : ""}`), ...lines, style.dim("╰─")].join("\n")
    }
    case "blockquote":
      return indent(style.italic((t as Tokens.Blockquote).tokens.map((b) => block(b, style)).join("\n")), style.dim("│ "), style.dim("│ "))
    case "list":
      return listText(t as Tokens.List, style)
    case "table":
      return tableText(t as Tokens.Table, style)
    case "hr":
      return style.dim("─".repeat(40))
    case "space":
    case "def":
      return ""
    case "html":
      return (t as Tokens.HTML).text.replace(/\n+$/, "")
    default:
      return t.raw.replace(/\n+$/, "")
  }
}

/** Rendered Markdown, with the line breaks of the source between blocks. */
const render = (lex: Lexer, markdown: string, style: Style): string => {
  let out = ""
  for (const t of lex(markdown)) {
    const trailing = /\n*$/.exec(t.raw)![0].length
    if (t.type === "space") out += "\n".repeat(trailing)
    else out += block(t, style) + "\n".repeat(trailing)
  }
  return out
}

const FENCE = /^ {0,3}(`{3,}|~{3,})/

/**
 * How much of `text` (complete lines only) can be rendered now: up to an unclosed code fence,
 * or to a table that may still grow.
 */
const ready = (text: string): number => {
  const end = text.lastIndexOf("\n") + 1
  if (end === 0) return 0
  let fence: { readonly mark: string; readonly at: number } | undefined
  let table: number | undefined
  let at = 0
  for (const line of text.slice(0, end - 1).split("\n")) {
    const m = FENCE.exec(line)
    if (fence !== undefined) {
      if (m !== null && m[1]![0] === fence.mark[0] && m[1]!.length >= fence.mark.length && line.trim() === m[1]) fence = undefined
    } else if (m !== null) {
      fence = { mark: m[1]!, at }
      table = undefined
    } else if (/^\s*\|/.test(line)) {
      table ??= at
    } else {
      table = undefined
    }
    at += line.length + 1
  }
  return fence !== undefined ? fence.at : table !== undefined ? table : end
}

interface Stream {
  /** More text from the model. */
  readonly push: (text: string) => void
  /** Renders what is left (even an unfinished line). */
  readonly flush: () => void
}

/** Renders streamed Markdown to `write` as its lines complete. */
export const stream = (lex: Lexer, style: Style, write: (rendered: string) => void): Stream => {
  let pending = ""
  const emit = (text: string) => {
    if (text.length > 0) write(render(lex, text, style))
  }
  return {
    push: (text) => {
      pending += text
      const n = ready(pending)
      if (n === 0) return
      const done = pending.slice(0, n)
      pending = pending.slice(n)
      emit(done)
    },
    flush: () => {
      const rest = pending
      pending = ""
      emit(rest)
    }
  }
}
