/**
 * Paths as the kernel and the shell see them, for confining the words of a
 * command: physical resolution (symlinks as they are met, `..` from the real
 * parent, so `link/..` is where the link points, not where it sits), bash's
 * filename expansion of a glob, and the program PATH would run.
 */
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Path from "effect/Path"

export const inside = (path: Path.Path, root: string, candidate: string): boolean => {
  const rel = path.relative(root, candidate)
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel))
}

type Step = { readonly _tag: "real"; readonly path: string } | { readonly _tag: "missing" } | { readonly _tag: "unknown" }

const realStep = (fs: FileSystem.FileSystem, target: string): Effect.Effect<Step> =>
  fs.realPath(target).pipe(
    Effect.map((path): Step => ({ _tag: "real", path })),
    Effect.catch((error) =>
      error.reason._tag !== "NotFound"
        ? Effect.succeed<Step>({ _tag: "unknown" })
        // A dangling symlink points somewhere we cannot judge by name: unknown, not missing.
        : fs.readLink(target).pipe(
          Effect.map((): Step => ({ _tag: "unknown" })),
          Effect.orElseSucceed((): Step => ({ _tag: "missing" }))
        )
    )
  )

/**
 * Where `input` lands when opened from the real directory `base`, or
 * undefined when that cannot be told (a dangling link, a loop, `..` after a
 * missing component). A missing tail is kept as written.
 */
export const resolvePhysical = Effect.fnUntraced(function*(base: string, input: string) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  let current = input.startsWith("/") ? "/" : base
  let missing = false
  for (const part of input.split("/")) {
    if (part === "" || part === ".") continue
    if (part === "..") {
      if (missing) return undefined
      current = path.dirname(current)
      continue
    }
    const next = path.join(current, part)
    if (missing) {
      current = next
      continue
    }
    const step = yield* realStep(fs, next)
    if (step._tag === "unknown") return undefined
    if (step._tag === "missing") missing = true
    current = step._tag === "real" ? step.path : next
  }
  return current
})

// ---------------------------------------------------------------------------
// Filename expansion (bash, no dotglob, no extglob, globasciiranges)
// ---------------------------------------------------------------------------

/**
 * Character classes over ASCII. For names with other characters the classes,
 * `?` and brackets depend on the locale (a byte or a character), so `expand`
 * does not answer for them.
 */
const CLASSES: Record<string, string> = {
  alpha: "A-Za-z", digit: "0-9", alnum: "A-Za-z0-9", upper: "A-Z", lower: "a-z", space: " \\t\\n\\r\\f\\v",
  xdigit: "0-9A-Fa-f", punct: "!-\\/:-@\\[-`{-~", blank: " \\t", word: "A-Za-z0-9_"
}
/** Escapes for a `u` regular expression, outside and inside `[…]`. */
const escapeOutside = (c: string) => /[\\^$.*+?()[\]{}|/]/.test(c) ? `\\${c}` : c
const escapeInside = (c: string) => /[\\\]\[^-]/.test(c) ? `\\${c}` : c
const isAscii = (c: string) => c.length === 1 && c.charCodeAt(0) < 128

/**
 * One element of a bracket expression at `k` (a character, an escaped
 * character or a class): [regex source, a single character or undefined for a
 * class, next index]; undefined for syntax not modelled.
 */
const element = (chars: ReadonlyArray<string>, k: number): [string, string | undefined, number] | undefined => {
  const d = chars[k]!
  if (d === "\\") {
    const n = chars[k + 1]
    return n === undefined ? undefined : [escapeInside(n), n, k + 2]
  }
  if (d === "[" && (chars[k + 1] === ":" || chars[k + 1] === "=" || chars[k + 1] === ".")) {
    if (chars[k + 1] !== ":") return undefined // equivalence classes, collating symbols
    for (let end = k + 2; end + 1 < chars.length; end++) {
      if (chars[end] === ":" && chars[end + 1] === "]") {
        const cls = CLASSES[chars.slice(k + 2, end).join("")]
        return cls === undefined ? undefined : [cls, undefined, end + 2]
      }
    }
    return undefined
  }
  return [escapeInside(d), d, k + 1]
}

/** `[…]` starting at `i`: [regex source, next index], "literal" when it does not close (bash then reads `[` as itself). */
const bracket = (chars: ReadonlyArray<string>, i: number): [string, number] | "literal" | undefined => {
  let k = i + 1
  const negate = chars[k] === "!" || chars[k] === "^"
  if (negate) k++
  let body = ""
  for (let first = true; k < chars.length; first = false) {
    if (chars[k] === "]" && !first) return [`[${negate ? "^" : ""}${body}]`, k + 1]
    const start = element(chars, k)
    if (start === undefined) return undefined
    k = start[2]
    if (chars[k] === "-" && k + 1 < chars.length && chars[k + 1] !== "]") {
      const end = element(chars, k + 1)
      if (end === undefined) return undefined
      const [from, to] = [start[1], end[1]]
      // A range between ASCII characters, in order; classes, other characters and reversed ranges are not modelled.
      if (from === undefined || to === undefined || !isAscii(from) || !isAscii(to) || from > to) return undefined
      body += `${start[0]}-${end[0]}`
      k = end[2]
    } else body += start[0]
  }
  return "literal"
}

/** A bash pattern as a regular expression, or undefined for syntax this does not model. */
const patternRegex = (pattern: string): RegExp | undefined => {
  const chars = Array.from(pattern)
  let out = ""
  for (let i = 0; i < chars.length;) {
    const c = chars[i]!
    if (c === "\\") {
      const n = chars[i + 1]
      if (n === undefined) return undefined
      out += escapeOutside(n)
      i += 2
    } else if (c === "*") {
      out += ".*"
      i++
    } else if (c === "?") {
      out += "."
      i++
    } else if (c === "[") {
      const read = bracket(chars, i)
      if (read === undefined) return undefined
      if (read === "literal") {
        out += "\\["
        i++
      } else {
        out += read[0]
        i = read[1]
      }
    } else {
      out += escapeOutside(c)
      i++
    }
  }
  return new RegExp(`^${out}$`, "su")
}

const MAX_MATCHES = 1000
const GLOB_CHAR = /(?<!\\)(?:\\\\)*[*?[]/

/**
 * The words bash would put in place of a glob, relative as written: the
 * names in its directory that match its last component, or the pattern's
 * own text when nothing matches. Undefined when this cannot tell: a glob in
 * a directory component, a directory that cannot be listed, a pattern this
 * does not model, too many matches.
 */
export const expand = Effect.fnUntraced(function*(base: string, pattern: string, text: string) {
  const fs = yield* FileSystem.FileSystem
  const slash = pattern.lastIndexOf("/")
  const dirPattern = slash < 0 ? "" : pattern.slice(0, slash + 1)
  const last = pattern.slice(slash + 1)
  if (GLOB_CHAR.test(dirPattern) || last === "") return undefined
  const dirText = dirPattern.replace(/\\(.)/g, "$1")
  const regex = patternRegex(last)
  if (regex === undefined) return undefined
  const dir = yield* resolvePhysical(base, dirText === "" ? "." : dirText)
  if (dir === undefined) return undefined
  const names = yield* fs.readDirectory(dir).pipe(Effect.option)
  if (names._tag === "None") return undefined
  // A leading dot must be matched by a literal dot; older bash also lists `.` and `..` then.
  const dot = last.startsWith(".") || last.startsWith("\\.")
  const candidates = dot ? [".", "..", ...names.value] : names.value
  // `?` and brackets match a byte or a character as the locale says: for other names than ASCII, ask.
  if (/(?<!\\)(?:\\\\)*[?[]/.test(last) && candidates.some((name) => !/^[\x00-\x7f]*$/.test(name))) return undefined
  const matches = candidates.filter((name) => (dot || !name.startsWith(".")) && regex.test(name)).sort()
  // A name that is not valid UTF-8 was read with U+FFFD in it: it is not the name bash passes on.
  if (matches.length > MAX_MATCHES || matches.some((name) => name.includes("\uFFFD"))) return undefined
  return matches.length === 0 ? [text] : matches.map((name) => dirText + name)
})

// ---------------------------------------------------------------------------
// The program a name runs
// ---------------------------------------------------------------------------

/**
 * The real path of the file bash would run for `name` through `PATH` (an
 * empty or relative entry counts from `cwd`), or undefined when none is found.
 */
export const locate = Effect.fnUntraced(function*(name: string, pathVar: string, cwd: string) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  for (const entry of pathVar.split(":")) {
    const candidate = path.resolve(cwd, entry, name)
    const info = yield* fs.stat(candidate).pipe(Effect.option)
    if (info._tag === "Some" && info.value.type === "File" && (info.value.mode & 0o111) !== 0) {
      return yield* fs.realPath(candidate).pipe(Effect.orElseSucceed(() => candidate))
    }
  }
  return undefined
})
