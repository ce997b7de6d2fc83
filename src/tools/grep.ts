/**
 * `grep {pattern, path?, glob?}`: a JavaScript regular expression over the
 * lines of the files under a directory (or one file), the way `rg` searches:
 * `.gitignore` respected, `.git/` and `node_modules/` skipped, binary and very
 * large files skipped, results bounded.
 */
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Glob from "effect/Glob"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as SafeFs from "./SafeFs.ts"
import * as Tool from "./Tool.ts"
import * as Walk from "./walk.ts"
import * as Workspace from "./Workspace.ts"
import { absoluteOf, describeError, plural } from "./write.ts"

/** Matches shown to the model. */
export const MAX_MATCHES = 100
/** Bytes of match lines shown to the model. */
export const MAX_OUTPUT_BYTES = 30 * 1024
/** Files larger than this are not searched. */
export const MAX_FILE_BYTES = 1024 * 1024
/** Characters of one matching line shown. */
export const MAX_LINE_CHARS = 300
/** Matches counted (past those shown) before the search stops. */
export const MAX_COUNTED = 10_000
/** Files read before the search stops. */
export const MAX_FILES = 20_000

const Params = Schema.Struct({
  pattern: Schema.String.annotate({ description: "JavaScript regular expression, matched against each line; start with (?i) to ignore case" }),
  path: Schema.optionalKey(Schema.String.annotate({ description: "Directory or file to search, absolute or relative to the working directory (default: the working directory)" })),
  glob: Schema.optionalKey(Schema.String.annotate({ description: "Only search files matching this glob, e.g. \"*.ts\" (file name at any depth) or \"src/**/*.test.ts\" (path relative to `path`)" }))
})
type Params = typeof Params.Type

interface FileResult {
  readonly shown: string
  readonly matches: ReadonlyArray<{ readonly line: number; readonly text: string }>
  /** All matching lines in the file, shown or not. */
  readonly count: number
  readonly skipped?: "large" | "binary" | "unreadable" | undefined
}

/** A line cut to `MAX_LINE_CHARS` around its match. */
const cutLine = (line: string, at: number): string => {
  if (line.length <= MAX_LINE_CHARS) return line
  const start = Math.max(0, Math.min(at - 80, line.length - MAX_LINE_CHARS))
  const end = start + MAX_LINE_CHARS
  return `${start > 0 ? "…" : ""}${line.slice(start, end)}${end < line.length ? "…" : ""}`
}

const looksBinary = (bytes: Uint8Array): boolean => bytes.subarray(0, 8192).includes(0)

/** Compiles the pattern; a leading `(?i)` (as ripgrep users write it) means ignore case. */
const compile = (pattern: string): Effect.Effect<RegExp, string> => {
  const insensitive = pattern.startsWith("(?i)")
  const source = insensitive ? pattern.slice(4) : pattern
  return Effect.try({
    try: () => new RegExp(source, insensitive ? "i" : ""),
    catch: (error) => `Invalid regular expression: ${error instanceof Error ? error.message : String(error)}`
  })
}

const searchFile = (absolute: string, shown: string, regex: RegExp, keep: number, roots: SafeFs.RealRoots) =>
  Effect.gen(function*() {
    // Opened without following links and verified inside the roots (a path swapped for a symlink is unreadable).
    const bytes = yield* SafeFs.readFileBounded(absolute, roots, MAX_FILE_BYTES)
    if (bytes === undefined) return { shown, matches: [], count: 0, skipped: "large" } satisfies FileResult
    if (looksBinary(bytes)) return { shown, matches: [], count: 0, skipped: "binary" } satisfies FileResult
    const text = new TextDecoder("utf-8").decode(bytes)
    const matches: Array<{ line: number; text: string }> = []
    let count = 0
    const lines = text.split("\n")
    for (let i = 0; i < lines.length; i++) {
      const raw = lines[i]!
      const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw
      if (i === lines.length - 1 && line === "") break
      const found = regex.exec(line)
      if (found === null) continue
      count++
      if (matches.length < keep) matches.push({ line: i + 1, text: cutLine(line, found.index) })
    }
    return { shown, matches, count } satisfies FileResult
  }).pipe(Effect.orElseSucceed((): FileResult => ({ shown, matches: [], count: 0, skipped: "unreadable" })))

export const grep = Tool.define<Params>({
  name: "grep",
  kind: "search",
  mutating: false,
  description: [
    "Search file contents with a JavaScript regular expression, line by line (a match cannot span lines); start the pattern with (?i) to ignore case.",
    "Searches the files under `path` (default: the working directory; may be a single file), optionally only those matching `glob`.",
    "Files excluded by .gitignore, the .git and node_modules directories, binary files and files over 1 MB are skipped; symbolic links are not followed.",
    `Prints \`path:line: text\` for each matching line; at most ${MAX_MATCHES} matches and about ${MAX_OUTPUT_BYTES / 1024} KB are shown, lines are cut to ${MAX_LINE_CHARS} characters, and the output says how many more matches there are.`,
    "Narrow `path` or `glob` when results are cut."
  ].join(" "),
  parameters: Params,
  title: (args) => `Search for /${args.pattern}/${args.path !== undefined ? ` in ${args.path}` : ""}${args.glob !== undefined ? ` (${args.glob})` : ""}`,
  locations: (args, cwd) => (args.path !== undefined ? [{ path: absoluteOf(args.path, cwd) }] : []),
  execute: (args, ctx) =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const regex = yield* compile(args.pattern)
      const resolved = yield* Workspace.resolve(args.path ?? ".", ctx)
      const where = Workspace.display(path, ctx.cwd, resolved)
      const roots = yield* SafeFs.realRoots(ctx.roots)
      const info = yield* fs.stat(resolved).pipe(
        Effect.mapError((error) => (error.reason._tag === "NotFound" ? `Path not found: ${where}` : `Cannot search ${where}: ${describeError(error)}`))
      )

      if (info.type === "File") {
        const result = yield* searchFile(resolved, where, regex, MAX_MATCHES, roots)
        if (result.skipped === "large") return Tool.ok(`${where} is larger than ${MAX_FILE_BYTES / 1024 / 1024} MB and was not searched; use read with offset to page through it.`)
        if (result.skipped === "binary") return Tool.ok(`${where} is a binary file and was not searched.`)
        if (result.skipped === "unreadable") return Tool.error(`Cannot read ${where}`)
        if (result.count === 0) return Tool.ok(`No matches for /${args.pattern}/ in ${where}.`)
        const lines = result.matches.map((m) => `${where}:${m.line}: ${m.text}`)
        const more = result.count - result.matches.length
        return Tool.ok(`${lines.join("\n")}\n\n[${plural(result.count, "match", "matches")} in ${where}${more > 0 ? `; ${more} more matches not shown` : ""}]`)
      }
      if (info.type !== "Directory") return Tool.error(`${where} is neither a file nor a directory`)

      const filter = args.glob === undefined ? undefined : Glob.make(args.glob, { dot: true })
      const matchesGlob = (relative: string) =>
        filter === undefined || Glob.match(filter, args.glob!.includes("/") ? relative : relative.slice(relative.lastIndexOf("/") + 1))

      const shownLines: Array<string> = []
      let bytes = 0
      let outputFull = false
      let total = 0
      let filesSearched = 0
      let filesMatched = 0
      let large = 0
      let binary = 0
      let stoppedBy: string | undefined

      yield* Walk.files(resolved, ctx).pipe(
        Stream.filter((entry) => matchesGlob(entry.relative)),
        Stream.mapEffect((entry) => searchFile(entry.absolute, Workspace.display(path, ctx.cwd, entry.absolute), regex, MAX_MATCHES, roots), { concurrency: 8 }),
        Stream.runForEachWhile((result) =>
          Effect.sync(() => {
            filesSearched++
            if (result.skipped === "large") large++
            if (result.skipped === "binary") binary++
            if (result.count > 0) filesMatched++
            total += result.count
            for (const match of result.matches) {
              if (outputFull || shownLines.length >= MAX_MATCHES) break
              const line = `${result.shown}:${match.line}: ${match.text}`
              if (bytes + line.length + 1 > MAX_OUTPUT_BYTES) {
                outputFull = true
                break
              }
              bytes += line.length + 1
              shownLines.push(line)
            }
            if (total >= MAX_COUNTED) stoppedBy = `${MAX_COUNTED} matches`
            else if (filesSearched >= MAX_FILES) stoppedBy = `${MAX_FILES} files`
            return stoppedBy === undefined
          })
        )
      )

      const skippedNote = [
        large > 0 ? `${plural(large, "file")} over ${MAX_FILE_BYTES / 1024 / 1024} MB` : "",
        binary > 0 ? `${plural(binary, "binary file")}` : ""
      ].filter((s) => s !== "").join(" and ")
      const skipped = skippedNote === "" ? "" : ` Skipped ${skippedNote}.`
      const scope = `${where === "." ? "the working directory" : where}${args.glob !== undefined ? ` (files matching ${args.glob})` : ""}`
      if (total === 0) {
        return Tool.ok(`No matches for /${args.pattern}/ in ${scope}${stoppedBy !== undefined ? `; search stopped after ${stoppedBy}` : ""}.${skipped}`)
      }
      const notes = [`${plural(total, "match", "matches")}${stoppedBy !== undefined ? " or more" : ""} in ${plural(filesMatched, "file")}`]
      if (total > shownLines.length) {
        notes.push(`${total - shownLines.length} more matches not shown${outputFull ? ` (output capped at ${MAX_OUTPUT_BYTES / 1024} KB)` : ""}; narrow the pattern, path or glob`)
      }
      if (stoppedBy !== undefined) notes.push(`search stopped after ${stoppedBy}; there may be more`)
      return Tool.ok(`${shownLines.join("\n")}\n\n[${notes.join("; ")}.${skipped}]`)
    }).pipe(Effect.catch((message: string) => Effect.succeed(Tool.error(message))))
})
