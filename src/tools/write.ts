/**
 * `write {path, content}`: creates or replaces a whole file through the turn's
 * `Files`: atomically on disk (a temp file in the same directory, fsynced,
 * renamed over the target), or through the client's editor. Files are
 * opened through `SafeFs`: what was checked is what is read and written. A
 * call holds the file's `PathLocks` lock from its read to its store, so
 * concurrent sessions writing one file take turns.
 *
 * Also the file-writing helpers `edit` shares: inspecting and storing a file,
 * the permission scope of an edit, line counting.
 */
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Path from "effect/Path"
import type { PlatformError } from "effect/PlatformError"
import * as Schema from "effect/Schema"
import * as Files from "./Files.ts"
import * as PathLocks from "./PathLocks.ts"
import * as Preview from "./Preview.ts"
import * as SafeFs from "../fs/SafeFs.ts"
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
const lineCount = (text: string): number =>
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

/** A failure of `SafeFs` as the model reads it: a change under the tool, or `prefix: kind (code)`. */
const describeFailure = (error: SafeFs.Failure, shown: string, prefix: string): string =>
  SafeFs.describeChange(error, shown) ?? `${prefix}: ${describeError(error as PlatformError)}`

const decode = (bytes: Uint8Array): string => new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes)

/**
 * What is at a resolved path: nothing, a regular file (its mode, and what was
 * read: status and bytes, for a replace that must find it unchanged), or
 * something else. Read from the descriptor `SafeFs` opened.
 */
export type Inspected =
  | { readonly _tag: "missing" }
  | { readonly _tag: "file"; readonly mode: number; readonly read: SafeFs.Expected }
  | { readonly _tag: "other"; readonly type: "Directory" | "Other" }

export const inspect = (absolute: string, shown: string, roots: SafeFs.RealRoots): Effect.Effect<Inspected, string> =>
  Effect.scoped(SafeFs.openRead(absolute, roots).pipe(
    Effect.flatMap(({ handle, stat }): Effect.Effect<Inspected, SafeFs.Failure> =>
      stat.isFile()
        ? Effect.map(SafeFs.readAll(handle), (bytes) => ({ _tag: "file", mode: Number(stat.mode) & 0o7777, read: { stat, bytes } }))
        : Effect.succeed({ _tag: "other", type: stat.isDirectory() ? "Directory" : "Other" })
    ),
    Effect.catch((error) =>
      SafeFs.isNotFound(error) ? Effect.succeed({ _tag: "missing" } as const) : Effect.fail(describeFailure(error, shown, `Cannot access ${shown}`))
    )
  ))

/** A problem of the turn's `Files` as the model reads it. */
export const describeProblem = (problem: Files.Problem, shown: string, verb: "read" | "write", prefix: string): string => {
  switch (problem._tag) {
    case "Disk":
      return describeFailure(problem.error, shown, prefix)
    case "Editor":
      return `Cannot ${verb} ${shown} through the editor: ${problem.message}`
    case "Binary":
      return `${shown} is a binary file; edit changes text files only`
    case "NotUtf8":
      return `${shown} is not valid UTF-8 text; edit refuses to change it`
    default:
      return problem satisfies never
  }
}

/**
 * Stores `content` at the resolved path `absolute` through the turn's `Files` (the disk,
 * atomically keeping `mode`; or the client's editor). Missing parent directories are created
 * first, each inside a verified one. With `expected`, a write to disk goes ahead only if the
 * file is still what was read. Fails with a message for the model.
 */
export const store = (
  absolute: string,
  shown: string,
  content: string,
  mode: number | undefined,
  ctx: Tool.ToolContext,
  expected?: SafeFs.Expected
) =>
  Effect.scoped(Effect.gen(function*() {
    const files = yield* Files.Files
    const roots = yield* SafeFs.realRoots(ctx.roots)
    const directory = yield* SafeFs.openDirectory(NodePath.dirname(absolute), roots, true).pipe(
      Effect.mapError((error) => describeFailure(error, shown, `Cannot create the directory of ${shown}`))
    )
    yield* files.store({ absolute, directory, roots, content, mode, expected, toolCallId: ctx.toolCallId }).pipe(
      Effect.mapError((problem) => describeProblem(problem, shown, "write", `Cannot write ${shown}`))
    )
  }))

export const write = Tool.define<Params, Files.Files>({
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
      // What was there and its replacement, under the file's lock: the diff shows what this call replaced.
      return yield* PathLocks.withLock(resolved)(Effect.gen(function*() {
        const before = yield* inspect(resolved, shown, yield* SafeFs.realRoots(ctx.roots))
        if (before._tag === "other") {
          return Tool.error(before.type === "Directory" ? `${shown} is a directory; give the path of a file` : `${shown} is not a regular file; write only replaces regular files`)
        }
        // The editor's buffer when the turn reads through it; else, or when it cannot, what is on
        // disk (the diff, and `/undo`, need what the file held: never an empty text).
        const files = yield* Files.Files
        const oldText = before._tag !== "file"
          ? null
          : yield* files.text(resolved, before.read.bytes).pipe(Effect.orElseSucceed(() => decode(before.read.bytes)))
        yield* store(resolved, shown, args.content, before._tag === "file" ? before.mode : undefined, ctx)
        const lines = lineCount(args.content)
        const content = before._tag === "file"
          ? `Replaced ${shown} (${plural(lineCount(oldText ?? ""), "line")} before, ${plural(lines, "line")} now)`
          : `Created ${shown} (${plural(lines, "line")})`
        return Tool.ok(content, { diff: [{ path: resolved, oldText: before._tag === "file" ? oldText ?? "" : null, newText: args.content }] })
      }))
    }).pipe(Effect.catch((message: string) => Effect.succeed(Tool.error(message))))
})
