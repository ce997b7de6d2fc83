/**
 * Options the way GNU getopt reads them, against an allowlist. Pure.
 *
 * A spec names every option a command may be given without asking, in
 * getopt's own notation: short options as an option string (`"an:f@"`: `-a`
 * takes nothing, `-n` a text value, `-f` a path), long options by their full
 * names (`"lines="`, `"file=@"`, `"color?"` for an optional `=value`).
 * Anything not named asks, including an abbreviation: getopt and git accept
 * any unambiguous prefix of a long option (`--out` for `--output`), and a
 * prefix of an option we allow may name one we do not know. An exact name
 * always wins over a prefix, so full names are safe.
 *
 * Words are permuted as getopt does: options anywhere until `--`. A glob may
 * stand only where its expansion cannot shift the words: an operand, or
 * glued to its option (`--include=*.ts`). Values that are paths are returned
 * for the confinement check, with operands the command reads as paths.
 */
import { tail, type Word } from "./Shell.ts"

export interface Spec {
  /** getopt option string: a letter alone takes nothing; `:` after it a text value, `@` a path, `?` an optional glued value. */
  readonly short?: string
  /** Full long names: `name`, `name=` (text), `name=@` (path), `name?` (optional `=text`). */
  readonly long?: ReadonlyArray<string>
  /** `-NUM` is an option (`head -5`, `grep -3`). */
  readonly numbers?: boolean
  /** What the operands are; returns the words to confine, or undefined to ask. */
  readonly operands: Operands
}

interface Parsed {
  /** Each option as written (`-n`, `--lines`), with its value. */
  readonly options: ReadonlyArray<{ readonly name: string; readonly value?: Word | undefined }>
  readonly operands: ReadonlyArray<Word>
}

/** A word the command opens as a path; `file` when a directory there would be read through (diff). */
export interface PathWord {
  readonly word: Word
  readonly file?: boolean | undefined
}

export type Operands = (operands: ReadonlyArray<Word>, parsed: Parsed) => ReadonlyArray<PathWord> | undefined

type Kind = "flag" | "text" | "path" | "optional"

const shortKinds = (spec: string): Map<string, Kind> => {
  const out = new Map<string, Kind>()
  for (let i = 0; i < spec.length; i++) {
    const next = spec[i + 1]
    const kind: Kind = next === ":" ? "text" : next === "@" ? "path" : next === "?" ? "optional" : "flag"
    out.set(spec[i]!, kind)
    if (kind !== "flag") i++
  }
  return out
}

const longKinds = (spec: ReadonlyArray<string>): Map<string, Kind> =>
  new Map(spec.map((l) => {
    if (l.endsWith("=@")) return [l.slice(0, -2), "path"]
    if (l.endsWith("=")) return [l.slice(0, -1), "text"]
    if (l.endsWith("?")) return [l.slice(0, -1), "optional"]
    return [l, "flag"]
  }))

const cache = new WeakMap<Spec, { short: Map<string, Kind>; long: Map<string, Kind> }>()
const kindsOf = (spec: Spec) => {
  let kinds = cache.get(spec)
  if (kinds === undefined) {
    kinds = { short: shortKinds(spec.short ?? ""), long: longKinds(spec.long ?? []) }
    cache.set(spec, kinds)
  }
  return kinds
}

/** A value glued to its option: the rest of the word, with its own quoting. */
const sub = (word: Word, text: string): Word => tail(word, text.length)

interface Result {
  readonly parsed: Parsed
  /** Every word to confine: path values and path operands. */
  readonly paths: ReadonlyArray<PathWord>
}

/** Reads `words` against `spec`; undefined when any of them is not allowed. */
export const parse = (spec: Spec, words: ReadonlyArray<Word>): Result | undefined => {
  const { short, long } = kindsOf(spec)
  const options: Array<{ name: string; value?: Word | undefined }> = []
  const operands: Array<Word> = []
  const paths: Array<PathWord> = []
  /** A value in its own word: its expansion could shift the words after it, so no glob. */
  const separate = (i: number): Word | undefined => {
    const value = words[i]
    return value === undefined || value.glob ? undefined : value
  }
  let done = false
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!
    const a = word.text
    if (done || a === "-" || !a.startsWith("-")) {
      operands.push(word)
      continue
    }
    if (a === "--") {
      done = true
      continue
    }
    if (a.startsWith("--")) {
      const eq = a.indexOf("=")
      const name = eq < 0 ? a.slice(2) : a.slice(2, eq)
      const kind = long.get(name)
      if (kind === undefined) return undefined
      if (kind === "flag") {
        if (eq >= 0 || word.glob) return undefined
        options.push({ name: `--${name}` })
      } else if (kind === "optional") {
        options.push({ name: `--${name}`, value: eq < 0 ? undefined : sub(word, a.slice(eq + 1)) })
      } else {
        const value = eq >= 0 ? sub(word, a.slice(eq + 1)) : separate(++i)
        if (value === undefined || (kind === "path" && value.glob)) return undefined
        options.push({ name: `--${name}`, value })
        if (kind === "path") paths.push({ word: value })
      }
      continue
    }
    if (spec.numbers === true && /^-\d+$/.test(a)) {
      if (word.glob) return undefined
      options.push({ name: a })
      continue
    }
    for (let k = 1; k < a.length; k++) {
      const ch = a[k]!
      const kind = short.get(ch)
      if (kind === undefined) return undefined
      if (kind === "flag") {
        options.push({ name: `-${ch}` })
        continue
      }
      const rest = a.slice(k + 1)
      if (kind === "optional") {
        options.push({ name: `-${ch}`, value: rest === "" ? undefined : sub(word, rest) })
        break
      }
      const value = rest !== "" ? sub(word, rest) : separate(++i)
      if (value === undefined || (kind === "path" && value.glob)) return undefined
      options.push({ name: `-${ch}`, value })
      if (kind === "path") paths.push({ word: value })
      break
    }
  }
  const parsed: Parsed = { options, operands }
  const operandPaths = spec.operands(operands, parsed)
  if (operandPaths === undefined) return undefined
  return { parsed, paths: [...paths, ...operandPaths] }
}

/** Whether any of `names` (as written: `-e`, `--regexp`) was given. */
export const given = (parsed: Parsed, ...names: ReadonlyArray<string>): boolean =>
  parsed.options.some((o) => names.includes(o.name))

// ---------------------------------------------------------------------------
// Operand kinds
// ---------------------------------------------------------------------------

/** Every operand is a file or directory to read. */
export const paths: Operands = (operands) => operands.map((word) => ({ word }))

/** At most `n` operands, each a path; a glob could add operands that change their roles, so none. */
export const upTo = (n: number, file?: boolean): Operands => (operands) =>
  operands.length > n || operands.some((w) => w.glob) ? undefined : operands.map((word) => ({ word, file }))

/** No operands. */
export const none: Operands = (operands) => operands.length === 0 ? [] : undefined

/** Operands are plain text (names, numbers, formats); a glob still lists a directory, so it is confined. */
export const texts: Operands = (operands) => operands.filter((w) => w.glob).map((word) => ({ word }))

/** The first operand is text (a pattern, a script) unless `unless` was given; the rest are paths. */
export const firstText = (...unless: ReadonlyArray<string>): Operands => (operands, parsed) => {
  if (given(parsed, ...unless)) return paths(operands, parsed)
  const [first, ...rest] = operands
  if (first === undefined || first.glob) return undefined
  return rest.map((word) => ({ word }))
}
