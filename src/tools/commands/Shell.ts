/**
 * A small, exact shell lexer: the words of each stage of a pipeline and its
 * redirections, read the way bash reads them, or nothing. Pure.
 *
 * `lex` models bash's reading of a subset: blanks (space and tab) between
 * words; words made of unquoted characters, `\x` escapes, `'…'` and `"…"`
 * (where `\` escapes only `$`, `` ` ``, `"` and `\`), glued together in any
 * order; backslash-newline removed everywhere but inside `'…'`; pipes; and
 * the redirections `<`, `>`, `>>`, `>|`, `<&`, `>&`, `<>`, `&>`, `&>>`, with
 * a descriptor number only where bash takes one (unquoted digits right
 * before `<` or `>`). The target of a redirection is a whole word, read as
 * any other. Everything else makes the command unparsed, so the user is
 * asked: `;`, `&&`, `||`, `&`, `|&`, newlines between commands, `$…` (with
 * `$'…'` and `$"…"`), backticks, subshells, braces (groups and brace
 * expansion), heredocs and here-strings, process substitution, comments, a
 * tilde the shell would expand, assignments before a command, and reserved
 * words or `[` in a command name.
 *
 * `parsePipeline` adds the policy: redirections may only read a file
 * (`< file`, `3< file`), write to `/dev/null`, or duplicate and close
 * descriptors (`2>&1`, `<&-`).
 *
 * The test compares `lex` with bash itself on generated command lines
 * (test/tools/shell-oracle.test.ts): change both together.
 */

/** The shell whose reading this module models: the bash tool runs commands with it when it exists. */
export const BASH = "/bin/bash"

export interface Word {
  /** The word after quote removal. */
  readonly text: string
  /** An unquoted `*`, `?` or `[`: the shell may expand it into file names. */
  readonly glob: boolean
  /** The word as a glob pattern: quoted punctuation escaped with `\`, so it matches only itself. */
  readonly pattern: string
}

export interface Segment {
  readonly words: ReadonlyArray<Word>
  /** Files the stage reads through `< file` (or `N< file`). */
  readonly inputs: ReadonlyArray<Word>
}

/** Where a token lies in the command: `[start, end)` in UTF-16 units. */
interface Span {
  readonly start: number
  readonly end: number
}

export type Operator = "<" | "<&" | "<>" | ">" | ">>" | ">|" | ">&" | "&>" | "&>>"

export type Token =
  | { readonly _tag: "word"; readonly word: Word; readonly span: Span }
  | {
    readonly _tag: "redirect"
    /** The descriptor number written before the operator (`2>`), if any. */
    readonly fd: number | undefined
    readonly op: Operator
    /** The operator's own characters, without the descriptor number. */
    readonly opSpan: Span
    readonly target: Word
    /** The target had quotes or escapes (`>&'1'` is not the same token as `>&1` to bash). */
    readonly targetQuoted: boolean
  }
  | { readonly _tag: "pipe"; readonly span: Span }

/** Characters that end a word outside quotes (bash's metacharacters). */
const META = new Set([" ", "\t", "\n", "|", "&", ";", "<", ">", "(", ")"])
/** Words bash reads as syntax where a command starts. */
const RESERVED = new Set([
  "!", "[[", "]]", "{", "}", "case", "coproc", "do", "done", "elif", "else", "esac", "fi", "for", "function", "if", "in",
  "select", "then", "time", "until", "while"
])
/** Quoted characters escaped in a pattern: every ASCII punctuation but `/` (inside `[…]`, `-`, `!`, `^` and `:` are special too). */
const GLOB_SPECIAL = /[!-.:-@[-`{-~]/g
/** A descriptor number bash reads as one (it must fit in an int; longer ones are not modelled). */
const DESCRIPTOR = /^\d{1,9}$/
/** A lone surrogate: what bash would get is not what this reads. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u

const escapeGlob = (s: string) => s.replace(GLOB_SPECIAL, (c) => `\\${c}`)

/**
 * The last `length` characters of `word`'s text as a word of their own, such
 * as a value glued to its option (`--file=x`, `-fx`).
 */
export const tail = (word: Word, length: number): Word => {
  // Each character of the text is one unit of the pattern: itself, or `\` and itself.
  let i = 0
  for (let skip = word.text.length - length; skip > 0; skip--) i += word.pattern[i] === "\\" ? 2 : 1
  const pattern = word.pattern.slice(i)
  let glob = false
  for (let k = 0; k < pattern.length; k++) {
    const c = pattern[k]
    if (c === "\\") k++
    else if (c === "*" || c === "?" || c === "[") glob = true
  }
  return { text: word.text.slice(word.text.length - length), glob, pattern }
}

/** Past any backslash-newline pairs at `i`: bash removes them before it reads anything but `'…'`. */
const continued = (s: string, from: number): number => {
  let i = from
  while (s[i] === "\\" && s[i + 1] === "\n") i += 2
  return i
}

/** Past blanks (space, tab) and line continuations. */
const blanks = (s: string, from: number): number => {
  let i = continued(s, from)
  while (s[i] === " " || s[i] === "\t") i = continued(s, i + 1)
  return i
}

interface Read {
  readonly word: Word
  /** Some part was quoted or escaped. */
  readonly quoted: boolean
  readonly end: number
}

/** The inside of `"…"` starting after the opening quote: [text, index after the closing quote]. */
const doubleQuoted = (s: string, from: number): [string, number] | undefined => {
  let out = ""
  let i = from
  for (;;) {
    i = continued(s, i)
    const c = s[i]
    if (c === undefined || c === "$" || c === "`") return undefined
    if (c === "\"") return [out, i + 1]
    if (c === "\\") {
      const n = s[i + 1]
      if (n === "\"" || n === "\\" || n === "$" || n === "`") {
        out += n
        i += 2
        continue
      }
    }
    out += c
    i++
  }
}

/**
 * The word starting at `from`: "none" at a metacharacter or the end,
 * undefined for syntax this does not model.
 */
const readWord = (s: string, from: number): Read | "none" | undefined => {
  let i = from
  let text = ""
  let pattern = ""
  let glob = false
  let quoted = false
  let started = false
  const add = (raw: string, isQuoted: boolean) => {
    text += raw
    pattern += isQuoted ? escapeGlob(raw) : raw
    quoted ||= isQuoted
    started = true
  }
  for (;;) {
    i = continued(s, i)
    const c = s[i]
    if (c === undefined || META.has(c)) break
    if (c === "'") {
      const end = s.indexOf("'", i + 1)
      if (end < 0) return undefined
      add(s.slice(i + 1, end), true)
      i = end + 1
    } else if (c === "\"") {
      const inner = doubleQuoted(s, i + 1)
      if (inner === undefined) return undefined
      add(inner[0], true)
      i = inner[1]
    } else if (c === "\\") {
      const n = s[i + 1]
      if (n === undefined) return undefined
      add(n, true)
      i += 2
    } else if (c === "$" || c === "`" || c === "{" || c === "}") {
      return undefined // expansions, substitutions, brace expansion
    } else if (c === "#" && !started) {
      return undefined // a comment hides the rest from review
    } else if (c === "~" && (!started || text.endsWith("=") || text.endsWith(":"))) {
      return undefined // tilde expansion names a home directory
    } else {
      if (c === "*" || c === "?" || c === "[") glob = true
      add(c, false)
      i++
    }
  }
  return started ? { word: { text, glob, pattern }, quoted, end: i } : "none"
}

/** Operators and the prefixes bash extends greedily (`&` alone runs in the background, `<<` starts a heredoc). */
const OPERATORS = new Set(["<", "<&", "<>", "<<", ">", ">>", ">|", ">&", "&", "&>", "&>>"])
const isOperator = (op: string): op is Operator => OPERATORS.has(op) && op !== "&" && op !== "<<"

/** The redirection whose operator starts at `at` (after its descriptor number, if any). */
const readRedirect = (s: string, at: number, fd: number | undefined): [Token, number] | undefined => {
  let op = s[at]!
  let opEnd = at + 1
  for (;;) {
    const k = continued(s, opEnd)
    if (k >= s.length || !OPERATORS.has(op + s[k])) break
    op += s[k]
    opEnd = k + 1
  }
  if (!isOperator(op)) return undefined // background, `&&`, heredocs and here-strings
  const read = readWord(s, blanks(s, opEnd))
  if (read === undefined || read === "none") return undefined
  // Plain digits before `<` or `>` may be read by bash as the next redirection's descriptor number: not modelled.
  const next = s[continued(s, read.end)]
  if (!read.quoted && /^\d+$/.test(read.word.text) && (next === "<" || next === ">")) return undefined
  const token: Token = { _tag: "redirect", fd, op, opSpan: { start: at, end: opEnd }, target: read.word, targetQuoted: read.quoted }
  return [token, read.end]
}

/**
 * The tokens of `command` exactly as bash reads them, or undefined when it
 * uses any syntax this module does not model.
 */
export const lex = (command: string): ReadonlyArray<Token> | undefined => {
  const s = command
  if (s.includes("\0") || LONE_SURROGATE.test(s)) return undefined
  const tokens: Array<Token> = []
  for (let i = blanks(s, 0); i < s.length; i = blanks(s, i)) {
    const c = s[i]!
    if (c === "\n") {
      // A newline ends a command: fine before the first one, after a pipe, or with nothing after it.
      const last = tokens.at(-1)
      if (last !== undefined && last._tag !== "pipe" && !/^[ \t\n]*$/.test(s.slice(i))) return undefined
      i++
    } else if (c === "|") {
      const n = s[continued(s, i + 1)]
      if (n === "|" || n === "&") return undefined
      tokens.push({ _tag: "pipe", span: { start: i, end: i + 1 } })
      i++
    } else if (c === "<" || c === ">" || c === "&") {
      const read = readRedirect(s, i, undefined)
      if (read === undefined) return undefined
      tokens.push(read[0])
      i = read[1]
    } else if (META.has(c)) {
      return undefined // `;`, `(`, `)`
    } else {
      const read = readWord(s, i)
      if (read === undefined || read === "none") return undefined
      const next = continued(s, read.end)
      if (!read.quoted && /^\d+$/.test(read.word.text) && (s[next] === "<" || s[next] === ">")) {
        if (!DESCRIPTOR.test(read.word.text)) return undefined
        const redirect = readRedirect(s, next, Number(read.word.text))
        if (redirect === undefined) return undefined
        tokens.push(redirect[0])
        i = redirect[1]
      } else {
        tokens.push({ _tag: "word", word: read.word, span: { start: i, end: read.end } })
        i = read.end
      }
    }
  }
  return commandsOk(tokens) ? tokens : undefined
}

/**
 * Every stage has a word, and its first word is a command name to bash: not a reserved word, not
 * an assignment (`a=1`), not the start of an array assignment (`a[` reads on to its `]`, blanks
 * and all).
 */
const commandsOk = (tokens: ReadonlyArray<Token>): boolean => {
  let words = 0
  for (const token of tokens) {
    if (token._tag === "pipe") {
      if (words === 0) return false
      words = 0
    } else if (token._tag === "word") {
      if (words === 0 && (RESERVED.has(token.word.text) || /[=[]/.test(token.word.text))) return false
      words++
    }
  }
  return tokens.length === 0 || words > 0
}

/** `&1`, `&-`: duplicating or closing a descriptor, never a file (bash writes `>&name` to a file). */
const descriptor = (token: Extract<Token, { _tag: "redirect" }>) =>
  !token.targetQuoted && (token.target.text === "-" || DESCRIPTOR.test(token.target.text))

/** A file `<` may open: no glob (bash would expand it), none of the names bash opens itself (`/dev/tcp/…`). */
const readable = (target: Word) => !target.glob && !/^\/dev\/(?:tcp|udp)\//.test(target.text)

/**
 * Splits a command into the words of each pipeline stage and the files it
 * reads, or undefined when it uses any syntax this module does not analyse
 * or a redirection that is not harmless.
 */
export const parsePipeline = (command: string): ReadonlyArray<Segment> | undefined => {
  const tokens = lex(command)
  if (tokens === undefined) return undefined
  const segments: Array<Segment> = []
  let words: Array<Word> = []
  let inputs: Array<Word> = []
  for (const token of tokens) {
    switch (token._tag) {
      case "word":
        words.push(token.word)
        break
      case "pipe":
        segments.push({ words, inputs })
        words = []
        inputs = []
        break
      case "redirect":
        switch (token.op) {
          case "<":
            if (!readable(token.target)) return undefined
            inputs.push(token.target)
            break
          case "<&":
          case ">&":
            if (!descriptor(token)) return undefined
            break
          case ">":
          case ">>":
          case ">|":
          case "&>":
          case "&>>":
            if (token.target.text !== "/dev/null") return undefined // writes a file
            break
          case "<>":
            return undefined // opens for writing, creating the file
          default: {
            const unhandled: never = token.op
            return unhandled
          }
        }
        break
      default: {
        const unhandled: never = token
        return unhandled
      }
    }
  }
  if (tokens.length > 0) segments.push({ words, inputs })
  return segments
}
