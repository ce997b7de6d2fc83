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

const CLASSES: Record<string, string> = {
  alpha: "A-Za-z", digit: "0-9", alnum: "A-Za-z0-9", upper: "A-Z", lower: "a-z", space: " \\t\\n\\r\\f\\v",
  xdigit: "0-9A-Fa-f", punct: "!-\\/:-@\\[-`{-~", blank: " \\t", word: "A-Za-z0-9_"
}
const escapeRegex = (c: string) => c.replace(/[\\^$.*+?()[\]{}|/-]/g, (x) => `\\${x}`)

/** A bash pattern as a regular expression, or undefined for syntax this does not model. */
export const patternRegex = (pattern: string): RegExp | undefined => {
  let out = ""
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!
    if (c === "\\") {
      const n = pattern[++i]
      if (n === undefined) return undefined
      out += escapeRegex(n)
    } else if (c === "*") out += ".*"
    else if (c === "?") out += "."
    else if (c === "[") {
      let k = i + 1
      let negate = false
      if (pattern[k] === "!" || pattern[k] === "^") {
        negate = true
        k++
      }
      let body = ""
      let first = true
      let closed = false
      for (; k < pattern.length; k++) {
        const d = pattern[k]!
        if (d === "]" && !first) {
          closed = true
          break
        }
        first = false
        if (d === "[" && (pattern[k + 1] === ":" || pattern[k + 1] === "=" || pattern[k + 1] === ".")) {
          if (pattern[k + 1] !== ":") return undefined
          const end = pattern.indexOf(":]", k + 2)
          const cls = end < 0 ? undefined : CLASSES[pattern.slice(k + 2, end)]
          if (cls === undefined) return undefined
          body += cls
          k = end + 1
        } else if (d === "\\") {
          const n = pattern[++k]
          if (n === undefined) return undefined
          body += escapeRegex(n)
        } else if (d === "-" && body !== "" && pattern[k + 1] !== "]") body += "-"
        else body += escapeRegex(d)
      }
      if (!closed) out += "\\["
      else {
        out += `[${negate ? "^" : ""}${body}]`
        i = k
      }
    } else out += escapeRegex(c)
  }
  try {
    return new RegExp(`^${out}$`, "s")
  } catch {
    return undefined // a range out of order, say: bash matches nothing, we cannot say what
  }
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
  const matches = candidates.filter((name) => (dot || !name.startsWith(".")) && regex.test(name)).sort()
  if (matches.length > MAX_MATCHES) return undefined
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
