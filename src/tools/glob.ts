/**
 * `glob {pattern, path?}`: the files whose path (relative to `path`) matches a
 * glob, sorted, `.gitignore` respected, bounded.
 */
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as ToolWorker from "./worker/ToolWorker.ts"
import * as Tool from "./Tool.ts"
import * as Walk from "./walk.ts"
import * as Workspace from "./Workspace.ts"
import { absoluteOf, describeError, plural } from "./write.ts"

/** Paths listed. */
export const MAX_RESULTS = 500
/** Files looked at before the listing stops. */
const MAX_SCANNED = 200_000
/** Paths sent to the worker at once to be matched. */
const BATCH = 512

const Params = Schema.Struct({
  pattern: Schema.String.annotate({ description: "Glob matched against file paths relative to `path`, e.g. \"**/*.ts\" or \"src/*.{js,json}\"" }),
  path: Schema.optionalKey(Schema.String.annotate({ description: "Directory to search, absolute or relative to the working directory (default: the working directory)" }))
})
type Params = typeof Params.Type

const isMagic = (segment: string) => /[*?[\]{}\\]/.test(segment)

/**
 * Splits a pattern into its leading literal directories and the rest, so
 * `src/lib/**\/*.ts` walks only `src/lib` and an absolute pattern names its
 * own directory.
 */
const split = (pattern: string): { readonly dir: string; readonly rest: string } => {
  const segments = pattern.split("/")
  let i = 0
  while (i < segments.length - 1 && !isMagic(segments[i]!)) i++
  const dir = segments.slice(0, i).join("/")
  return { dir: pattern.startsWith("/") && dir === "" ? "/" : dir, rest: segments.slice(i).join("/") }
}

export const glob = Tool.define<Params>({
  name: "glob",
  kind: "search",
  mutating: false,
  description: [
    "List the files whose path relative to `path` (default: the working directory) matches a glob pattern.",
    "`*` and `?` stay within one directory level, `**` spans levels (\"**/*.ts\" finds .ts files at any depth, \"*.ts\" only directly in `path`), `{a,b}` and `[abc]` work; dotfiles match.",
    `Files excluded by .gitignore and those in .git and node_modules are left out; symbolic links are not followed; only files are listed, not directories.`,
    `Results are sorted by path, at most ${MAX_RESULTS}, with a count of the rest. Use grep to search contents.`,
    `A listing still running after ${ToolWorker.formatLimit(ToolWorker.TimeLimit.defaultValue())} is stopped with an error.`
  ].join(" "),
  parameters: Params,
  title: (args) => `Find ${args.pattern}${args.path !== undefined ? ` in ${args.path}` : ""}`,
  locations: (args, cwd) => (args.path !== undefined ? [{ path: absoluteOf(args.path, cwd) }] : []),
  execute: (args, ctx) =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const pattern = args.pattern.replace(/^(\.\/)+/, "")
      if (pattern === "") return Tool.error("The pattern is empty; give a glob such as \"**/*.ts\"")
      const { dir, rest } = split(pattern)
      const base = path.resolve(ctx.cwd, args.path ?? ".", dir)
      const resolved = yield* Workspace.resolve(base, ctx)
      const where = Workspace.display(path, ctx.cwd, resolved)
      const info = yield* fs.stat(resolved).pipe(
        Effect.map((info) => info.type),
        Effect.catch((error) =>
          error.reason._tag === "NotFound" ? Effect.succeed("Missing" as const) : Effect.fail(`Cannot list ${where}: ${describeError(error)}`)
        )
      )
      if (info === "Missing") {
        return dir === "" ? Tool.error(`Directory not found: ${where}`) : Tool.ok(`No files match ${args.pattern} (${where} does not exist).`)
      }
      if (info !== "Directory") {
        if (dir === "") return Tool.error(`${where} is a file, not a directory; give the directory to search as path`)
        return Tool.ok(where)
      }

      // Matching runs in the tool worker: a model's glob can cost a lot per path (10,000 brace alternatives, long runs of `*`).
      // Without `**` (or braces, which may hold a `/`) a pattern reaches a fixed depth: deeper directories are not read.
      const restSegments = rest.split("/")
      const maxDepth = restSegments.includes("**") || rest.includes("{") ? Infinity : restSegments.length - 1
      const found: Array<string> = []
      let scanned = 0
      const completed = yield* ToolWorker.use((worker) =>
        Walk.files(resolved, ctx, { descend: (relative) => relative.split("/").length <= maxDepth }).pipe(
          Stream.rechunk(BATCH),
          Stream.chunks,
          Stream.runForEachWhile((chunk) =>
            Effect.gen(function*() {
              const batch = chunk.slice(0, MAX_SCANNED - scanned)
              scanned += batch.length
              const hits = yield* ToolWorker.glob(worker, rest, batch.map((entry) => entry.relative)).pipe(
                Effect.mapError((message) => `glob failed: ${message}`)
              )
              for (const i of hits) found.push(Workspace.display(path, ctx.cwd, batch[i]!.absolute))
              return scanned < MAX_SCANNED
            })
          )
        )
      )
      if (Option.isNone(completed)) {
        const limit = yield* ToolWorker.TimeLimit
        return Tool.error(
          `glob stopped: listing ${args.pattern} did not finish within its time limit of ${ToolWorker.formatLimit(limit)} (${plural(scanned, "file")} looked at, ${
            plural(found.length, "match", "matches")
          } by then). Use a simpler pattern (fewer {a,b} alternatives and * wildcards) or a narrower path.`
        )
      }
      const stopped = scanned >= MAX_SCANNED ? ` Listing stopped after ${MAX_SCANNED} files; there may be more.` : ""
      if (found.length === 0) return Tool.ok(`No files match ${args.pattern}${args.path !== undefined ? ` in ${args.path}` : ""}.${stopped}`)
      found.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      const shown = found.slice(0, MAX_RESULTS)
      const more = found.length - shown.length
      const summary = more > 0
        ? `\n\n[${plural(found.length, "file")} match; the first ${MAX_RESULTS} are shown, ${more} more not shown. Narrow the pattern or path.${stopped}]`
        : stopped === "" ? "" : `\n\n[${stopped.trim()}]`
      return Tool.ok(shown.join("\n") + summary)
    }).pipe(Effect.catch((message: string) => Effect.succeed(Tool.error(message))))
})
