/**
 * `grep {pattern, path?, glob?}`: a JavaScript regular expression over the
 * lines of the files under a directory (or one file), the way `rg` searches:
 * `.gitignore` respected, `.git/` and `node_modules/` skipped, binary and very
 * large files skipped, results bounded.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as SafeFs from "../fs/SafeFs.ts"
import * as Match from "./worker/match.ts"
import * as ToolWorker from "./worker/ToolWorker.ts"
import * as Tool from "./Tool.ts"
import * as Walk from "./walk.ts"
import * as Workspace from "./Workspace.ts"
import { absoluteOf, describeError, plural } from "./write.ts"

/** Matches shown to the model. */
export const MAX_MATCHES = 100
/** Bytes of match lines shown to the model. */
export const MAX_OUTPUT_BYTES = 30 * 1024
/** Files larger than this are not searched. */
const MAX_FILE_BYTES = 1024 * 1024
/** Characters of one matching line shown. */
/** Paths sent to the worker at once to be matched against `glob`. */
const GLOB_BATCH = 512
/** Matches counted (past those shown) before the search stops. */
const MAX_COUNTED = 10_000
/** Files read before the search stops. */
const MAX_FILES = 20_000

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

/** Compiles the pattern; a leading `(?i)` (as ripgrep users write it) means ignore case. Parsing only: matching runs in the worker. */
const compile = (pattern: string): Effect.Effect<RegExp, string> => {
  const insensitive = pattern.startsWith("(?i)")
  const source = insensitive ? pattern.slice(4) : pattern
  return Effect.try({
    try: () => new RegExp(source, insensitive ? "i" : ""),
    catch: (error) => `Invalid regular expression: ${error instanceof Error ? error.message : String(error)}`
  })
}

type Read = { readonly shown: string; readonly bytes: Uint8Array | "large" | "unreadable" }

/** Reads one file here (IO): opened without following links and verified inside the roots. */
const readFile = (absolute: string, shown: string, roots: SafeFs.RealRoots): Effect.Effect<Read> =>
  SafeFs.readFileBounded(absolute, roots, MAX_FILE_BYTES).pipe(
    Effect.map((read): Read => ({ shown, bytes: read ?? "large" })),
    Effect.orElseSucceed((): Read => ({ shown, bytes: "unreadable" }))
  )

/** Matches one file's bytes in the worker (CPU); a worker failure fails the search. */
const matchFile = (worker: ToolWorker.Handle, { bytes, shown }: Read, regex: RegExp) =>
  Effect.gen(function*() {
    if (typeof bytes === "string") return { shown, matches: [], count: 0, skipped: bytes } satisfies FileResult
    const found = yield* ToolWorker.grep(worker, regex, bytes, MAX_MATCHES).pipe(
      Effect.mapError((message) => `grep failed while searching ${shown}: ${message}`)
    )
    return found.binary ? { shown, matches: [], count: 0, skipped: "binary" } satisfies FileResult : { shown, matches: found.matches, count: found.count }
  })

/** The tool error for a search the time limit stopped, with what it had found by then. */
const timedOut = (pattern: string, limit: Duration.Duration, found: ReadonlyArray<string>, searched: number) =>
  Tool.error(
    `${found.length > 0 ? `${found.join("\n")}\n\n` : ""}[grep stopped: the search for /${pattern}/ did not finish within its time limit of ${
      ToolWorker.formatLimit(limit)
    } (${plural(searched, "file")} searched${found.length > 0 ? "; the matches above were found by then" : ""}). A pattern with nested repetition such as (a+)+ can take exponential time on some lines: rewrite it without nested quantifiers, or narrow path or glob.]`
  )

export const grep = Tool.define<Params>({
  name: "grep",
  kind: "search",
  mutating: false,
  description: [
    "Search file contents with a JavaScript regular expression, line by line (a match cannot span lines); start the pattern with (?i) to ignore case.",
    "Searches the files under `path` (default: the working directory; may be a single file), optionally only those matching `glob`.",
    "Files excluded by .gitignore, the .git and node_modules directories, binary files and files over 1 MB are skipped; symbolic links are not followed.",
    `Prints \`path:line: text\` for each matching line; at most ${MAX_MATCHES} matches and about ${MAX_OUTPUT_BYTES / 1024} KB are shown, lines are cut to ${Match.MAX_LINE_CHARS} characters, and the output says how many more matches there are.`,
    "Narrow `path` or `glob` when results are cut.",
    `A search still running after ${ToolWorker.formatLimit(ToolWorker.TimeLimit.defaultValue())} is stopped with an error: avoid nested repetition such as (a+)+, which can take exponential time.`
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

      const limit = yield* ToolWorker.TimeLimit

      if (info.type === "File") {
        const searched = yield* ToolWorker.use((worker) => Effect.flatMap(readFile(resolved, where, roots), (read) => matchFile(worker, read, regex)))
        if (Option.isNone(searched)) return timedOut(args.pattern, limit, [], 0)
        const result = searched.value
        if (result.skipped === "large") return Tool.ok(`${where} is larger than ${MAX_FILE_BYTES / 1024 / 1024} MB and was not searched; use read with offset to page through it.`)
        if (result.skipped === "binary") return Tool.ok(`${where} is a binary file and was not searched.`)
        if (result.skipped === "unreadable") return Tool.error(`Cannot read ${where}`)
        if (result.count === 0) return Tool.ok(`No matches for /${args.pattern}/ in ${where}.`)
        const lines = result.matches.map((m) => `${where}:${m.line}: ${m.text}`)
        const more = result.count - result.matches.length
        return Tool.ok(`${lines.join("\n")}\n\n[${plural(result.count, "match", "matches")} in ${where}${more > 0 ? `; ${more} more matches not shown` : ""}]`)
      }
      if (info.type !== "Directory") return Tool.error(`${where} is neither a file nor a directory`)

      // A glob without `/` names files at any depth: it is matched against the file name.
      const globKey = args.glob === undefined || args.glob.includes("/") ? (relative: string) => relative : (relative: string) => relative.slice(relative.lastIndexOf("/") + 1)

      const shownLines: Array<string> = []
      let bytes = 0
      let outputFull = false
      let total = 0
      let filesSearched = 0
      let filesMatched = 0
      let large = 0
      let binary = 0
      let stoppedBy: string | undefined

      const completed = yield* ToolWorker.use((worker) => {
        const filter = args.glob
        const candidates = filter === undefined ? Walk.files(resolved, ctx) : Walk.files(resolved, ctx).pipe(
          Stream.rechunk(GLOB_BATCH),
          Stream.chunks,
          Stream.mapEffect((batch) =>
            ToolWorker.glob(worker, filter, batch.map((entry) => globKey(entry.relative))).pipe(
              Effect.mapBoth({ onFailure: (message) => `grep failed while matching ${filter}: ${message}`, onSuccess: (hits) => hits.map((i) => batch[i]!) })
            )
          ),
          Stream.flattenIterable
        )
        return candidates.pipe(
          // Files are read eight at a time but handed to the worker in the walk's order, so which
          // files a search got through does not depend on which read finished first.
          Stream.mapEffect((entry) => readFile(entry.absolute, Workspace.display(path, ctx.cwd, entry.absolute), roots), { concurrency: 8 }),
          Stream.mapEffect((read) => matchFile(worker, read, regex), { concurrency: 8 }),
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
      })
      if (Option.isNone(completed)) return timedOut(args.pattern, limit, shownLines, filesSearched)

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
