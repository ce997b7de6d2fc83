/**
 * `write {path, content}`: creates or replaces a whole file, atomically (a
 * temp file in the same directory, fsynced, renamed over the target), or
 * through the client's editor when it offers `fs/write_text_file`.
 *
 * Also the file-writing helpers `edit` shares: the atomic write, the
 * permission scope of an edit, line counting.
 */
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Path from "effect/Path"
import type { PlatformError } from "effect/PlatformError"
import * as Random from "effect/Random"
import * as Schema from "effect/Schema"
import * as Preview from "./Preview.ts"
import * as Tool from "./Tool.ts"
import * as Workspace from "./Workspace.ts"

const Params = Schema.Struct({
  path: Schema.String.annotate({ description: "File path, absolute or relative to the working directory" }),
  content: Schema.String.annotate({ description: "The complete new content of the file" })
})
type Params = typeof Params.Type

const reasonNames: Record<string, string> = {
  NotFound: "not found",
  PermissionDenied: "permission denied",
  AlreadyExists: "already exists",
  BadResource: "bad resource",
  Busy: "busy"
}

/** A platform failure as the model reads it: its kind and errno code, never the payload. */
export const describeError = (error: PlatformError): string => {
  const reason = error.reason
  if (reason._tag === "BadArgument") return "bad argument"
  const cause = reason.cause
  const code = typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string" ? cause.code : undefined
  const name = reasonNames[reason._tag] ?? reason._tag
  return code !== undefined ? `${name} (${code})` : name
}

/** Lines in a text, a trailing newline not starting another. */
export const lineCount = (text: string): number =>
  text === "" ? 0 : text.split("\n").length - (text.endsWith("\n") ? 1 : 0)

/** "1 line", "2 lines"; `many` for irregular plurals. */
export const plural = (n: number, word: string, many = `${word}s`): string => `${n} ${n === 1 ? word : many}`

/** The absolute form of a path argument, for locations and scopes (no file system access). */
export const absoluteOf = (input: string, cwd: string): string => NodePath.resolve(cwd, input)

/** What an "always allow" answer for an edit of `input` covers: edits in the file's directory. */
export const editScope = (input: string, cwd: string): Tool.PermissionScope => {
  const dir = NodePath.dirname(absoluteOf(input, cwd))
  const rel = NodePath.relative(cwd, dir)
  const label = rel === ""
    ? "edits in this project"
    : rel === ".." || rel.startsWith(`..${NodePath.sep}`) || NodePath.isAbsolute(rel)
    ? `edits in ${dir}/`
    : `edits in ${rel}/`
  return { kind: "path", value: dir, label }
}

/** What is at a resolved path: nothing, a regular file (with its mode), or something else. */
export const inspect = Effect.fnUntraced(function*(absolute: string, shown: string) {
  const fs = yield* FileSystem.FileSystem
  const info = yield* fs.stat(absolute).pipe(
    Effect.map((info) => ({ _tag: info.type === "File" ? "file" as const : "other" as const, type: info.type, mode: info.mode & 0o7777 })),
    Effect.catch((error) =>
      error.reason._tag === "NotFound"
        ? Effect.succeed({ _tag: "missing" as const })
        : Effect.fail(`Cannot access ${shown}: ${describeError(error)}`)
    )
  )
  return info
})

/**
 * Writes `content` to `target` atomically: a uniquely named temp file beside
 * it, fsynced, given `mode` when set, then renamed over the target. The temp
 * file is removed when any step fails.
 */
export const writeAtomic = Effect.fnUntraced(function*(target: string, content: string, mode: number | undefined, tag: string) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const unique = (yield* Random.nextIntBetween(0, 2 ** 31 - 1)).toString(36)
  const safeTag = tag.replace(/[^A-Za-z0-9_-]/g, "").slice(0, 24)
  const temp = path.join(path.dirname(target), `.${path.basename(target).slice(0, 100)}.${safeTag}${unique}.skein.tmp`)
  const bytes = new TextEncoder().encode(content)
  const removeTemp = fs.remove(temp).pipe(Effect.ignore)
  yield* Effect.scoped(
    Effect.gen(function*() {
      // A failed open created nothing (the name is new: "wx"); from here on the temp file is ours to remove.
      const file = yield* fs.open(temp, { flag: "wx", mode: mode ?? 0o666 })
      yield* file.writeAll(bytes).pipe(Effect.andThen(file.sync), Effect.onError(() => removeTemp))
    })
  )
  yield* (mode === undefined ? Effect.void : fs.chmod(temp, mode)).pipe(
    Effect.andThen(fs.rename(temp, target)),
    Effect.onError(() => removeTemp)
  )
})

/** Reads a file's current text for a diff: through the client when it can, else from disk; null when unreadable. */
export const currentText = (absolute: string, ctx: Tool.ToolContext) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const client = ctx.client?.readTextFile
    if (client) return yield* client(absolute).pipe(Effect.orElseSucceed(() => null))
    return yield* fs.readFile(absolute).pipe(
      Effect.map((bytes): string | null => new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes)),
      Effect.orElseSucceed(() => null)
    )
  })

/**
 * Stores `content` at the resolved path `absolute`: through the client's
 * editor when it offers writes, else atomically on disk keeping `mode`.
 * Missing parent directories are created first (they are inside the roots:
 * the path was resolved). Fails with a message for the model.
 */
export const store = Effect.fnUntraced(function*(absolute: string, shown: string, content: string, mode: number | undefined, ctx: Tool.ToolContext) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const parent = path.dirname(absolute)
  const parentExists = yield* fs.exists(parent).pipe(Effect.orElseSucceed(() => false))
  if (!parentExists) {
    yield* fs.makeDirectory(parent, { recursive: true }).pipe(
      Effect.mapError((error) => `Cannot create the directory of ${shown}: ${describeError(error)}`)
    )
  }
  const write = ctx.client?.writeTextFile
  if (write) {
    return yield* write(absolute, content).pipe(Effect.mapError((message) => `Cannot write ${shown} through the editor: ${message}`))
  }
  yield* writeAtomic(absolute, content, mode, ctx.toolCallId).pipe(
    Effect.mapError((error) => `Cannot write ${shown}: ${describeError(error)}`)
  )
})

export const write = Tool.define<Params>({
  name: "write",
  kind: "edit",
  mutating: true,
  description: [
    "Create a file, or replace a file's whole content, with `content` exactly as given (no newline is added).",
    "Missing parent directories are created. The write is atomic: the file is either fully replaced or left as it was; a replaced file keeps its permissions.",
    "To change part of an existing file prefer `edit`, which does not need the whole text.",
    "Paths outside the working directory and its additional directories are refused; directories cannot be overwritten."
  ].join(" "),
  parameters: Params,
  title: (args) => `Write ${args.path}`,
  locations: (args, cwd) => [{ path: absoluteOf(args.path, cwd) }],
  scope: (args, cwd) => editScope(args.path, cwd),
  preview: (args, where) =>
    Effect.map(Preview.current(args.path, where), (file) => (file === undefined ? [] : [Preview.diff(file.path, file.text, args.content)])),
  execute: (args, ctx) =>
    Effect.gen(function*() {
      const path = yield* Path.Path
      const resolved = yield* Workspace.resolve(args.path, ctx)
      const shown = Workspace.display(path, ctx.cwd, resolved)
      const before = yield* inspect(resolved, shown)
      if (before._tag === "other") {
        return Tool.error(before.type === "Directory" ? `${shown} is a directory; give the path of a file` : `${shown} is not a regular file; write only replaces regular files`)
      }
      const oldText = before._tag === "file" ? yield* currentText(resolved, ctx) : null
      yield* store(resolved, shown, args.content, before._tag === "file" ? before.mode : undefined, ctx)
      const lines = lineCount(args.content)
      const content = before._tag === "file"
        ? `Replaced ${shown} (${plural(lineCount(oldText ?? ""), "line")} before, ${plural(lines, "line")} now)`
        : `Created ${shown} (${plural(lines, "line")})`
      return Tool.ok(content, { diff: [{ path: resolved, oldText: before._tag === "file" ? oldText ?? "" : null, newText: args.content }] })
    }).pipe(Effect.catch((message: string) => Effect.succeed(Tool.error(message))))
})
