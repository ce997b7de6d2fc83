/**
 * `read {path, offset?, limit?}`: a text file with line numbers, a window at a
 * time (`TextWindow.ts`), from the turn's `Files`: the disk, or the client's editor (its
 * unsaved buffers) when it offers reads. Binary files and images are recognised and
 * described, not dumped.
 */
import * as Effect from "effect/Effect"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import * as SafeFs from "../fs/SafeFs.ts"
import * as Files from "./Files.ts"
import { looksBinary, MAX_BYTES, MAX_LINE_CHARS } from "./TextWindow.ts"
import * as Tool from "./Tool.ts"
import * as Workspace from "./Workspace.ts"

export const DEFAULT_LIMIT = 2000

const Params = Schema.Struct({
  path: Schema.String.annotate({ description: "File path, absolute or relative to the working directory" }),
  offset: Schema.optionalKey(
    Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).annotate({ description: "1-based line number to start at (default 1)" })
  ),
  limit: Schema.optionalKey(
    Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).annotate({ description: `Maximum number of lines (default ${DEFAULT_LIMIT})` })
  )
})
type Params = typeof Params.Type

const imageTypes: Record<string, string> = {
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".bmp": "image/bmp",
  ".ico": "image/x-icon",
  ".svgz": "image/svg+xml"
}

/** A problem reading the lines, as the model reads it. */
const unreadable = (problem: Files.Problem, shown: string): string =>
  problem._tag === "Editor"
    ? problem.message
    : problem._tag === "Disk"
    ? `Cannot read ${shown}: ${problem.error._tag === "PlatformError" ? problem.error.reason._tag : problem.error._tag}`
    : `Cannot read ${shown}: it is not text`

export const read = Tool.define<Params, Files.Files>({
  name: "read",
  kind: "read",
  mutating: false,
  description: [
    "Read a text file from the workspace. Returns lines prefixed with their 1-based line numbers.",
    `At most ${DEFAULT_LIMIT} lines and about ${MAX_BYTES / 1024} KB are returned per call; lines longer than ${MAX_LINE_CHARS} characters are cut.`,
    "When the output says more lines follow, call again with `offset` set to the line it names.",
    "Paths outside the working directory and its additional directories are refused. Binary files and images are described, not shown."
  ].join(" "),
  parameters: Params,
  title: (args) => `Read ${args.path}${args.offset !== undefined ? ` from line ${args.offset}` : ""}`,
  locations: (args, cwd) => [{ path: args.path.startsWith("/") ? args.path : `${cwd.replace(/\/$/, "")}/${args.path}`, ...(args.offset !== undefined ? { line: args.offset } : {}) }],
  execute: (args, ctx) =>
    Effect.gen(function*() {
      const path = yield* Path.Path
      const resolved = yield* Workspace.resolve(args.path, ctx)
      const shown = Workspace.display(path, ctx.cwd, resolved)
      const roots = yield* SafeFs.realRoots(ctx.roots)
      // The file checked is the file read: opened without following links, its descriptor verified.
      const { handle, stat: info } = yield* SafeFs.openRead(resolved, roots).pipe(Effect.mapError((e) =>
        SafeFs.describeChange(e, shown) ?? (SafeFs.isNotFound(e) ? `File not found: ${shown}` : `Cannot read ${shown}: ${e._tag === "PlatformError" ? e.reason._tag : e._tag}`)
      ))
      if (info.isDirectory()) return Tool.error(`${shown} is a directory; use glob to list files`)
      if (!info.isFile()) return Tool.error(`${shown} is not a regular file`)
      const size = Number(info.size)
      const image = imageTypes[path.extname(resolved).toLowerCase()]
      if (image !== undefined) return Tool.ok(`${shown} is an image (${image}, ${size} bytes); its contents are not shown as text.`)
      const offset = args.offset ?? 1
      const limit = args.limit ?? DEFAULT_LIMIT
      // Where the lines come from (the disk, or the editor's buffer) was decided for the turn.
      const files = yield* Files.Files
      const window = yield* files.window({ absolute: resolved, handle }, offset, limit).pipe(Effect.mapError((problem) => unreadable(problem, shown)))
      if (looksBinary(window.firstChunk)) return Tool.ok(`${shown} is a binary file (${size} bytes); its contents are not shown.`)
      if (size === 0) return Tool.ok(`${shown} is empty.`)
      if (window.lines.length === 0) {
        return window.reachedEnd
          ? Tool.error(`Offset ${offset} is past the end of ${shown} (${window.totalLines} lines)`)
          : Tool.ok(`${shown}: nothing to show at line ${offset}.`)
      }
      const width = String(offset + window.lines.length - 1).length
      const body = window.lines.map((line, i) => `${String(offset + i).padStart(width, " ")}\t${line}`).join("\n")
      const last = offset + window.lines.length - 1
      const more = window.reachedEnd
        ? last < window.totalLines ? `\n\n[Lines ${offset}-${last} of ${window.totalLines}. ${window.totalLines - last} more lines; continue with offset=${last + 1}.]` : ""
        : `\n\n[Lines ${offset}-${last} shown${window.cutByBytes ? ` (output capped at ${MAX_BYTES / 1024} KB)` : ""}; more lines follow. Continue with offset=${last + 1}.]`
      return Tool.ok(body + more)
    }).pipe(Effect.scoped, Effect.catch((message: string) => Effect.succeed(Tool.error(message))))
})
