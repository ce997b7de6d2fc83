/**
 * A small, conservative shell lexer: the plain words of each stage of a
 * pipeline, and the files read through `<`. Pure.
 *
 * It accepts only plain words, quotes, pipes and harmless redirections
 * (`2>&1`, `>/dev/null`, `< file`). Anything else it does not fully
 * understand (`;`, `&&`, `||`, `&`, `$…`, backticks, subshells, braces,
 * heredocs, comments, newlines, a tilde the shell would expand, writes to a
 * file) makes the command unparsed, so the user is asked.
 */

export interface Word {
  /** The word after quote removal. */
  readonly text: string
  /** An unquoted `*`, `?` or `[`: the shell may expand it into file names. */
  readonly glob: boolean
  /** The word as a glob pattern: quoted characters escaped with `\`, so they match only themselves. */
  readonly pattern: string
}

export interface Segment {
  readonly words: ReadonlyArray<Word>
  /** Files the stage reads through `< file`. */
  readonly inputs: ReadonlyArray<Word>
}

const PLAIN_STOP = new Set([" ", "\t", "\n", "\r", ";", "&", "|", "<", ">", "(", ")", "$", "`", "'", "\"", "\\", "{", "}", "#"])
const GLOB_SPECIAL = /[*?[\]\\]/g

const escapeGlob = (s: string) => s.replace(GLOB_SPECIAL, (c) => `\\${c}`)

/**
 * Splits a command into the plain words of each pipeline stage, or undefined
 * when it uses any syntax this module does not analyse.
 */
export const parsePipeline = (command: string): ReadonlyArray<Segment> | undefined => {
  const s = command.trim()
  const segments: Array<Segment> = []
  let words: Array<Word> = []
  let inputs: Array<Word> = []
  let text: string | undefined
  let pattern = ""
  let glob = false
  const finish = () => {
    if (text !== undefined) words.push({ text, glob, pattern })
    text = undefined
    pattern = ""
    glob = false
  }
  const append = (raw: string, quoted: boolean) => {
    text = (text ?? "") + raw
    pattern += quoted ? escapeGlob(raw) : raw
  }
  /** Reads a redirection target at `i` (after spaces); returns [target, next index]. */
  const target = (from: number): [string, number] | undefined => {
    let i = from
    while (s[i] === " " || s[i] === "\t") i++
    const start = i
    while (i < s.length && !PLAIN_STOP.has(s[i]!)) i++
    return i > start ? [s.slice(start, i), i] : undefined
  }
  /** `&1`, `&2`, `&-`: duplicating or closing a descriptor writes nothing. */
  const dup = (from: number): number | undefined => {
    let i = from
    if (s[i] === "-") return i + 1
    while (i < s.length && s[i]! >= "0" && s[i]! <= "9") i++
    return i > from ? i : undefined
  }
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!
    if (c === " " || c === "\t") {
      finish()
    } else if (c === "'") {
      const end = s.indexOf("'", i + 1)
      if (end < 0) return undefined
      append(s.slice(i + 1, end), true)
      i = end
    } else if (c === "\"") {
      let k = i + 1
      let out = ""
      for (;; k++) {
        if (k >= s.length) return undefined
        const d = s[k]!
        if (d === "\"") break
        if (d === "$" || d === "`") return undefined
        if (d === "\\") {
          const n = s[k + 1]
          if (n === undefined || n === "\n") return undefined
          if (n === "\"" || n === "\\" || n === "$" || n === "`") {
            out += n
            k++
            continue
          }
        }
        out += d
      }
      append(out, true)
      i = k
    } else if (c === "\\") {
      const n = s[i + 1]
      if (n === undefined || n === "\n" || n === "\r") return undefined
      append(n, true)
      i++
    } else if (c === "|") {
      if (s[i + 1] === "|" || s[i + 1] === "&") return undefined
      finish()
      if (words.length === 0) return undefined
      segments.push({ words, inputs })
      words = []
      inputs = []
    } else if (c === ">" || c === "<" || (c === "&" && s[i + 1] === ">")) {
      // A word of digits glued to the operator is a descriptor number, not an argument.
      if (text !== undefined && /^\d+$/.test(text) && !glob) text = undefined
      finish()
      let k = i + 1
      if (c === "&") {
        k++ // `&>` / `&>>`: both streams to a file
        if (s[k] === ">") k++
      } else if (c === ">") {
        if (s[k] === ">") k++
        else if (s[k] === "|") return undefined
        if (s[k] === "&") {
          const next = dup(k + 1)
          if (next === undefined) return undefined
          i = next - 1
          continue
        }
      } else {
        if (s[k] === "<" || s[k] === "(" || s[k] === ">") return undefined // heredoc, process substitution, read-write
        if (s[k] === "&") {
          const next = dup(k + 1)
          if (next === undefined) return undefined
          i = next - 1
          continue
        }
      }
      const t = target(k)
      if (t === undefined) return undefined
      const [file, next] = t
      if (c !== "<") {
        if (file !== "/dev/null") return undefined // writes a file
      } else {
        // The shell expands a tilde or a glob in the target too: ask rather than guess.
        if (file.startsWith("~") || /[*?[]/.test(file)) return undefined
        inputs.push({ text: file, glob: false, pattern: escapeGlob(file) })
      }
      i = next - 1
    } else if (c === "\n" || c === "\r" || c === ";" || c === "&" || c === "(" || c === ")" || c === "$" || c === "`" || c === "{" || c === "}") {
      return undefined
    } else if (c === "#" && text === undefined) {
      return undefined // a comment hides the rest from review
    } else if (c === "~" && (text === undefined || text.endsWith("=") || text.endsWith(":"))) {
      return undefined // tilde expansion names a home directory
    } else {
      if (c === "*" || c === "?" || c === "[") glob = true
      append(c, false)
    }
  }
  finish()
  if (words.length === 0) return segments.length === 0 && inputs.length === 0 ? [] : undefined
  segments.push({ words, inputs })
  return segments
}
