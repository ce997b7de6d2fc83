/**
 * Front matter: the `key: value` lines between two `---` lines at the top of a Markdown file
 * (agent definitions, skills, prompt-file commands), and the body after them.
 *
 * It is a small subset of YAML read here, with no YAML library (for the bundle's sake): one
 * `key: value` per line, values plain, `"double"`-quoted (JSON's escapes) or `'single'`-quoted
 * (`''` is a quote), `[flow, lists]` of such, or a block list of `- item` lines below a key with
 * an empty value; blank lines and `#` comments.
 *
 * Two readers share it:
 *
 * - **strict** (the default, for agent definitions): anything outside the subset (block scalars
 *   `|`/`>`, nested maps, continued lines, anchors, a key given twice) makes the whole front
 *   matter invalid, with a message naming the line.
 * - **lenient** (`{ lenient: true }`, for skills and prompt files written for other tools): block
 *   scalars `|` and `>` and plain values continued on indented lines are read as YAML reads
 *   them; a value it still cannot read (a nested map such as `metadata:`, a `[a] [b]` hint)
 *   becomes an `invalid` value of that key alone, a problem only for a reader that asks for it.
 *   A line that is not `key: value` at all still makes the front matter invalid.
 *
 * Nothing here throws to its caller except `text` and `flag`, which throw `Invalid` for a
 * reader that checks several keys inside one `attempt`.
 */

/** One key's value. `invalid` only comes from the lenient reader; `raw` is the text after the key's colon. */
export type Value =
  | { readonly _tag: "text"; readonly text: string }
  | { readonly _tag: "list"; readonly items: ReadonlyArray<string>; readonly raw?: string | undefined }
  | { readonly _tag: "null" }
  | { readonly _tag: "invalid"; readonly message: string; readonly raw?: string | undefined }

/** Why the front matter could not be read, as a reason a caller may word its own way and a message. */
interface SplitProblem {
  readonly reason: "missing" | "unterminated" | "invalid"
  readonly message: string
}

interface Split {
  /** The keys and values; empty when there is no front matter, or it could not be read. */
  readonly values: ReadonlyMap<string, Value>
  /**
   * What follows the closing `---` line (untrimmed, lines joined with `\n`); the whole content
   * when there is no front matter or it does not end.
   */
  readonly body: string
  readonly problem?: SplitProblem | undefined
}

/** Something this reader refuses; thrown inside it (and by `text`/`flag`), caught at its edges. */
export class Invalid {
  readonly message: string
  constructor(message: string) {
    this.message = message
  }
}

const KEY = /^[A-Za-z_][A-Za-z0-9_-]*$/
/** Characters that begin a YAML construct outside the subset, when a plain value starts with one. */
const UNSUPPORTED_START = /^[|>{&*!%@`]/
/** A block scalar's header: `|` or `>`, then an optional chomping indicator and indentation digit. */
const BLOCK_HEADER = /^([|>])([+-]?)([1-9]?)([+-]?)\s*(?:#.*)?$/

/** Where a quoted value that starts `raw` ends (the index after its closing quote), or -1. */
const closingQuote = (raw: string): number => {
  const quote = raw[0]!
  for (let i = 1; i < raw.length; i++) {
    const c = raw[i]!
    if (quote === "\"" && c === "\\") i++
    else if (c === quote) {
      if (quote === "'" && raw[i + 1] === "'") i++
      else return i + 1
    }
  }
  return -1
}

/** Drops a `#` comment: one starts after whitespace, as in YAML. */
const uncomment = (raw: string): string => {
  const at = raw.search(/\s#/)
  return (at === -1 ? raw : raw.slice(0, at)).trim()
}

/**
 * One scalar: `"double"` (JSON's escapes, a subset of YAML's), `'single'` (`''` is a quote) or
 * plain. A comment may follow; a plain value ends at one and may not start a YAML construct.
 */
const scalar = (raw: string, where: string): string => {
  if (raw.startsWith("\"") || raw.startsWith("'")) {
    const end = closingQuote(raw)
    if (end === -1) throw new Invalid(`${where}: a quoted value that does not end on its line`)
    const rest = raw.slice(end)
    if (rest.trim() !== "" && !/^\s+#/.test(rest)) throw new Invalid(`${where}: text after a quoted value`)
    const quoted = raw.slice(0, end)
    if (quoted.startsWith("'")) return quoted.slice(1, -1).replaceAll("''", "'")
    try {
      const value: unknown = JSON.parse(quoted)
      if (typeof value === "string") return value
    } catch {
      // Reported below.
    }
    throw new Invalid(`${where}: a double-quoted value with an escape other than JSON's`)
  }
  const text = uncomment(raw)
  if (UNSUPPORTED_START.test(text) || text.startsWith("- ") || text === "-") {
    throw new Invalid(`${where}: "${text.slice(0, 1)}" starts YAML this reader does not support; write the value on one line, quoted if need be`)
  }
  return text
}

/** Splits `[a, "b, c", 'd']` at its top-level commas. */
const flowList = (raw: string, where: string): ReadonlyArray<string> => {
  const inner = raw.slice(1, -1).trim()
  if (inner === "") return []
  const parts: Array<string> = []
  let start = 0
  let quote: string | undefined
  for (let i = 0; i < inner.length; i++) {
    const c = inner[i]!
    if (quote === "\"" && c === "\\") i++
    else if (quote !== undefined) {
      if (c === quote) quote = undefined
    } else if (c === "\"" || c === "'") quote = c
    else if (c === "[" || c === "]" || c === "{" || c === "}") throw new Invalid(`${where}: nested lists or maps are not supported`)
    else if (c === ",") {
      parts.push(inner.slice(start, i))
      start = i + 1
    }
  }
  if (quote !== undefined) throw new Invalid(`${where}: a quoted item that does not end`)
  parts.push(inner.slice(start))
  return parts.map((part, n) => {
    const item = part.trim()
    if (item === "") throw new Invalid(`${where}: item ${n + 1} of the list is empty`)
    return scalar(item, where)
  })
}

/** The value written on a key's own line. */
const value = (raw: string, where: string): Value => {
  if (raw.startsWith("[")) {
    const list = raw.endsWith("]") ? raw : uncomment(raw)
    if (!list.endsWith("]")) throw new Invalid(`${where}: a list that does not end with "]" on its line`)
    return { _tag: "list", items: flowList(list, where), raw }
  }
  return { _tag: "text", text: scalar(raw, where) }
}

/** A block scalar's lines (as written, after its header) as YAML reads them: `|` keeps line breaks, `>` folds them. */
const blockText = (style: string, chomp: string, lines: ReadonlyArray<string>): string => {
  const indents = lines.filter((line) => line.trim() !== "").map((line) => /^\s*/.exec(line)![0].length)
  const indent = indents.length === 0 ? 0 : Math.min(...indents)
  const content = lines.map((line) => line.slice(indent).trimEnd())
  while (content.length > 0 && content[content.length - 1] === "") content.pop()
  let text: string
  if (style === "|") text = content.join("\n")
  else {
    // Folded: lines of a paragraph joined by a space, a blank line a line break; more-indented lines kept as they are.
    text = ""
    content.forEach((line, i) => {
      if (i === 0) text = line
      else if (line === "") text += "\n"
      else if (content[i - 1] === "" || /^\s/.test(line) || /^\s/.test(content[i - 1]!)) text += (content[i - 1] === "" ? "" : "\n") + line
      else text += ` ${line}`
    })
  }
  return chomp === "-" || text === "" ? text : `${text}\n`
}

type Open =
  | { readonly kind: "items"; readonly key: string; readonly items: Array<string> }
  | { readonly kind: "block"; readonly key: string; readonly style: string; readonly chomp: string; readonly lines: Array<string> }
  | { readonly kind: "plain"; readonly key: string; readonly parts: Array<string> }
  | { readonly kind: "skip"; readonly key: string }

/** The front matter's keys and values (`first` is the line number of its first line, for messages). */
const read = (lines: ReadonlyArray<string>, first: number, lenient: boolean): ReadonlyMap<string, Value> => {
  const out = new Map<string, Value>()
  // The key whose value may go on below its line.
  let open: Open | undefined
  const close = () => {
    if (open?.kind === "items") out.set(open.key, open.items.length > 0 ? { _tag: "list", items: open.items } : { _tag: "null" })
    else if (open?.kind === "block") out.set(open.key, { _tag: "text", text: blockText(open.style, open.chomp, open.lines) })
    else if (open?.kind === "plain") out.set(open.key, { _tag: "text", text: open.parts.join(" ") })
    open = undefined
  }
  /** In the lenient reader, what is wrong with one key's value makes that value invalid, and its lines are passed over. */
  const refuse = (key: string, error: unknown, raw?: string) => {
    if (!lenient || !(error instanceof Invalid)) throw error
    out.set(key, raw === undefined ? { _tag: "invalid", message: error.message } : { _tag: "invalid", message: error.message, raw })
    open = { kind: "skip", key }
  }
  lines.forEach((line, i) => {
    const where = `line ${first + i}`
    const trimmed = line.trim()
    const indented = /^\s/.test(line)
    if (open?.kind === "block") {
      if (trimmed === "" || indented) {
        open.lines.push(line)
        return
      }
      close()
    }
    if (trimmed === "" || trimmed.startsWith("#")) return
    if (lenient && indented && (open?.kind === "plain" || open?.kind === "skip")) {
      if (open.kind === "plain") {
        const part = uncomment(trimmed)
        if (part !== "") open.parts.push(part)
      }
      return
    }
    if (!lenient && /^\s*\t/.test(line)) throw new Invalid(`${where}: indentation with a tab`)
    const item = /^\s*-(?:\s+(.*))?$/.exec(line)
    if (item !== null && (open?.kind === "items" || !lenient || !indented)) {
      if (open?.kind !== "items") throw new Invalid(`${where}: a list item without a key above it with an empty value`)
      const key = open.key
      try {
        const text = (item[1] ?? "").trim()
        if (text === "" || text.startsWith("[")) throw new Invalid(`${where}: a list item must be one value`)
        open.items.push(scalar(text, where))
      } catch (error) {
        refuse(key, error)
      }
      return
    }
    if (indented) {
      if (!lenient || open === undefined) {
        throw new Invalid(`${where}: an indented line (a continued value or a nested map), which this reader does not support`)
      }
      refuse(open.key, new Invalid(`${where}: a nested map or a continued list item, which this reader does not support`))
      return
    }
    close()
    const colon = line.indexOf(":")
    const key = colon === -1 ? "" : line.slice(0, colon).trim()
    if (colon === -1 || !KEY.test(key) || (line.length > colon + 1 && !/\s/.test(line[colon + 1]!))) {
      throw new Invalid(`${where}: expected "key: value"`)
    }
    const raw = line.slice(colon + 1).trim()
    if (out.has(key)) {
      refuse(key, new Invalid(`${where}: "${key}" is given twice`))
      return
    }
    if (raw === "" || raw.startsWith("#")) {
      open = { kind: "items", key, items: [] }
      return
    }
    const block = lenient ? BLOCK_HEADER.exec(raw) : null
    if (block !== null) {
      open = { kind: "block", key, style: block[1]!, chomp: block[2] || block[4] || "", lines: [] }
      return
    }
    try {
      const found = value(raw, where)
      if (lenient && found._tag === "text" && !raw.startsWith("\"") && !raw.startsWith("'") && uncomment(raw) === raw) {
        open = { kind: "plain", key, parts: [found.text] }
      } else out.set(key, found)
    } catch (error) {
      refuse(key, error, raw)
    }
  })
  close()
  return out
}

const EMPTY: ReadonlyMap<string, Value> = new Map()

/**
 * The front matter of a Markdown file and its body. A BOM is dropped and CRLF read as LF. Never
 * throws: a file with no front matter, or one that does not end or cannot be read, has a problem.
 */
export const split = (content: string, options?: { readonly lenient?: boolean | undefined }): Split => {
  const lines = content.replace(/^\uFEFF/, "").split(/\r?\n/)
  if (lines[0]?.trimEnd() !== "---") {
    return { values: EMPTY, body: lines.join("\n"), problem: { reason: "missing", message: "no front matter: the file must start with a \"---\" line" } }
  }
  const end = lines.findIndex((line, i) => i > 0 && line.trimEnd() === "---")
  if (end === -1) {
    return { values: EMPTY, body: lines.join("\n"), problem: { reason: "unterminated", message: "the front matter does not end: no closing \"---\" line" } }
  }
  const body = lines.slice(end + 1).join("\n")
  try {
    return { values: read(lines.slice(1, end), 2, options?.lenient === true), body }
  } catch (error) {
    if (error instanceof Invalid) return { values: EMPTY, body, problem: { reason: "invalid", message: `front matter: ${error.message}` } }
    throw error
  }
}

/** `key`'s value as one trimmed string; undefined when absent, null or blank. Throws `Invalid` for a list or an invalid value. */
export const text = (values: ReadonlyMap<string, Value>, key: string): string | undefined => {
  const found = values.get(key)
  if (found === undefined || found._tag === "null") return undefined
  if (found._tag === "invalid") throw new Invalid(found.message)
  if (found._tag === "list") throw new Invalid(`"${key}" must be a single value, not a list`)
  return found.text.trim() === "" ? undefined : found.text.trim()
}

/**
 * `key`'s value as written, for a value that is only shown (a hint): a `[a] [b]` that no YAML
 * reader takes is fine here. Undefined when absent or blank; never throws.
 */
export const asWritten = (values: ReadonlyMap<string, Value>, key: string): string | undefined => {
  const found = values.get(key)
  if (found === undefined || found._tag === "null") return undefined
  const written = found._tag === "text" ? found.text : found.raw ?? (found._tag === "list" ? found.items.join(" ") : "")
  return written.trim() === "" ? undefined : written.trim().replace(/\s+/g, " ")
}

/** `key`'s value as `true` or `false` (in any case); undefined when absent. Throws `Invalid` for anything else. */
export const flag = (values: ReadonlyMap<string, Value>, key: string): boolean | undefined => {
  const found = text(values, key)
  if (found === undefined) return undefined
  const lower = found.toLowerCase()
  if (lower === "true") return true
  if (lower === "false") return false
  throw new Invalid(`"${key}" must be true or false`)
}

/** `f`'s result, or the problem it threw as `Invalid`, as `front matter: …`. */
export const attempt = <A>(f: () => A): A | { readonly problem: string } => {
  try {
    return f()
  } catch (error) {
    if (error instanceof Invalid) return { problem: `front matter: ${error.message}` }
    throw error
  }
}
