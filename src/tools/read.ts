/**
 * `read {path, offset?, limit?}`: a text file with line numbers, a window at a
 * time. Binary files and images are recognised and described, not dumped.
 */
import type { FileHandle } from "node:fs/promises"
import * as Effect from "effect/Effect"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import * as SafeFs from "../fs/SafeFs.ts"
import * as Tool from "./Tool.ts"
import * as Workspace from "./Workspace.ts"

export const DEFAULT_LIMIT = 2000
export const MAX_BYTES = 50 * 1024
export const MAX_LINE_CHARS = 2000
const CHUNK = 64 * 1024

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

const looksBinary = (bytes: Uint8Array): boolean => {
  const n = Math.min(bytes.length, 8192)
  for (let i = 0; i < n; i++) if (bytes[i] === 0) return true
  return false
}

interface Window {
  readonly lines: ReadonlyArray<string>
  /** True when the file ended inside the window (so the total is known). */
  readonly reachedEnd: boolean
  readonly totalLines: number
  readonly cutByBytes: boolean
  readonly firstChunk: Uint8Array
}

/** The same window over text already in memory (a file read through the client). */
const windowOf = (text: string, offset: number, limit: number): Window => {
  const all = text.split("\n")
  if (all.length > 0 && all[all.length - 1] === "") all.pop()
  const lines: Array<string> = []
  let bytes = 0
  let cutByBytes = false
  for (let i = offset - 1; i < all.length && lines.length < limit; i++) {
    const raw = all[i]!.endsWith("\r") ? all[i]!.slice(0, -1) : all[i]!
    const shown = raw.length > MAX_LINE_CHARS ? `${raw.slice(0, MAX_LINE_CHARS)}… [line truncated]` : raw
    const size = Buffer.byteLength(shown) + 1
    if (bytes + size > MAX_BYTES && lines.length > 0) {
      cutByBytes = true
      break
    }
    bytes += size
    lines.push(shown)
  }
  const reachedEnd = offset - 1 + lines.length >= all.length
  return { lines, reachedEnd, totalLines: all.length, cutByBytes, firstChunk: new Uint8Array(0) }
}

/** Reads lines [offset, offset+limit) without loading more of the file than needed. */
const readWindow = (file: FileHandle, offset: number, limit: number) =>
  Effect.gen(function*() {
    const decoder = new TextDecoder("utf-8")
    const lines: Array<string> = []
    let partial = ""
    let lineNo = 0
    let bytes = 0
    let cutByBytes = false
    let firstChunk: Uint8Array = new Uint8Array(0)
    let first = true
    const take = (line: string): boolean => {
      lineNo++
      if (lineNo < offset) return true
      if (lines.length >= limit) return false
      const shown = line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}… [line truncated]` : line
      const size = Buffer.byteLength(shown) + 1
      if (bytes + size > MAX_BYTES && lines.length > 0) {
        cutByBytes = true
        return false
      }
      bytes += size
      lines.push(shown)
      return true
    }
    for (;;) {
      const chunk = yield* SafeFs.readChunk(file, CHUNK)
      if (chunk.length === 0) {
        const rest = partial + decoder.decode()
        if (rest.length > 0 && !take(rest)) return { lines, reachedEnd: false, totalLines: lineNo, cutByBytes, firstChunk } as Window
        return { lines, reachedEnd: true, totalLines: lineNo, cutByBytes, firstChunk } as Window
      }
      if (first) {
        firstChunk = chunk
        first = false
        if (looksBinary(chunk)) return { lines: [], reachedEnd: false, totalLines: 0, cutByBytes, firstChunk } as Window
      }
      const text = partial + decoder.decode(chunk, { stream: true })
      const parts = text.split("\n")
      partial = parts.pop() ?? ""
      for (const part of parts) {
        if (!take(part.endsWith("\r") ? part.slice(0, -1) : part)) {
          return { lines, reachedEnd: false, totalLines: lineNo, cutByBytes, firstChunk } as Window
        }
      }
    }
  })

export const read = Tool.define<Params>({
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
      const local = readWindow(handle, offset, limit).pipe(Effect.mapError((e) => `Cannot read ${shown}: ${e.reason._tag}`))
      // Through the editor when it offers fs: unsaved buffers are what the user sees.
      const viaClient = ctx.client?.readTextFile
      const window = viaClient === undefined
        ? yield* local
        : yield* local.pipe(Effect.flatMap((w) =>
          looksBinary(w.firstChunk) ? Effect.succeed(w) : Effect.map(viaClient(resolved), (text) => windowOf(text, offset, limit))
        ))
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
