/**
 * `edit {path, edits: [{oldText, newText}]}`: exact-match replacements in one
 * file, applied in order, all or nothing. Each `oldText` must occur exactly
 * once in the text as the previous edits left it. A file with CRLF line
 * endings keeps them, whichever endings the edits were written with. The
 * read, rewrite and store hold the file's `PathLocks` lock: concurrent edits
 * of one file apply one after the other, none lost.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import * as Files from "./Files.ts"
import * as PathLocks from "./PathLocks.ts"
import * as Preview from "./Preview.ts"
import * as SafeFs from "../fs/SafeFs.ts"
import * as Tool from "./Tool.ts"
import * as ToolWorker from "./worker/ToolWorker.ts"
import * as Workspace from "./Workspace.ts"
import { absoluteOf, describeProblem, editScope, inspect, plural, store } from "./write.ts"

const Edit = Schema.Struct({
  oldText: Schema.String.annotate({ description: "Text to replace; must occur exactly once in the file, whitespace and indentation included" }),
  newText: Schema.String.annotate({ description: "Replacement text" })
})

const Params = Schema.Struct({
  path: Schema.String.annotate({ description: "File path, absolute or relative to the working directory" }),
  edits: Schema.Array(Edit).check(Schema.isMinLength(1)).annotate({
    description: "Replacements, applied in order; each sees the text the previous ones produced"
  })
})
type Params = typeof Params.Type


export const edit = Tool.define<Params, Files.Files>({
  name: "edit",
  kind: "edit",
  mutating: true,
  description: [
    "Edit an existing file by exact-match replacement: each `oldText` is replaced by its `newText`.",
    "Each oldText must occur exactly once in the file (whitespace and indentation included) — include enough surrounding lines to make it unique; it is never a regex.",
    "Edits apply in order, each to the text the previous ones produced. If any edit fails (no match, several matches, empty oldText) none is applied and the file is unchanged.",
    "The file is written atomically and keeps its permissions and CRLF line endings. Read the file first. To create a file or replace all of it, use `write`."
  ].join(" "),
  parameters: Params,
  title: (args) => `Edit ${args.path}`,
  locations: (args, cwd) => [{ path: absoluteOf(args.path, cwd) }],
  scope: (args, cwd) => editScope(args.path, cwd),
  preview: (args, where) =>
    Effect.gen(function*() {
      const file = yield* Preview.current(args.path, where)
      if (file === undefined || file.text === null) return []
      // Off the protocol thread when it is large work, like the edit itself.
      const applied = yield* ToolWorker.rewrite(file.text, args.edits, args.path).pipe(Effect.orElseSucceed(() => Option.none()))
      return Option.isSome(applied) && applied.value._tag === "ok" ? [Preview.diff(file.path, file.text, applied.value.text)] : []
    }),
  execute: (args, ctx) =>
    Effect.gen(function*() {
      const path = yield* Path.Path
      const resolved = yield* Workspace.resolve(args.path, ctx)
      const shown = Workspace.display(path, ctx.cwd, resolved)
      // Read, rewrite and store under the file's lock: a concurrent edit of it starts from this one's result.
      return yield* PathLocks.withLock(resolved)(Effect.gen(function*() {
        const before = yield* inspect(resolved, shown, yield* SafeFs.realRoots(ctx.roots))
        if (before._tag === "missing") return Tool.error(`File not found: ${shown}. edit changes existing files; use write to create one.`)
        if (before._tag === "other") return Tool.error(before.type === "Directory" ? `${shown} is a directory, not a file` : `${shown} is not a regular file`)
        // The text as the user sees it: the disk's (refused when not UTF-8 text), or the editor's buffer.
        const files = yield* Files.Files
        const original = yield* files.text(resolved, before.read.bytes).pipe(
          Effect.mapError((problem) => describeProblem(problem, shown, "read", `Cannot read ${shown}`))
        )
        const rewritten = yield* ToolWorker.rewrite(original, args.edits, shown).pipe(Effect.mapError((message) => `edit failed: ${message}`))
        if (Option.isNone(rewritten)) return Tool.error(`edit stopped: applying the edits to ${shown} did not finish within the time limit of ${ToolWorker.formatLimit(yield* ToolWorker.TimeLimit)}. The file was not changed.`)
        const applied = rewritten.value
        if (applied._tag === "error") return Tool.error(applied.message)
        const updated = applied.text
        if (updated === original) return Tool.ok(`No change to ${shown}: every newText equals its oldText.`)
        // Replaced only if the file on disk is still the one read: a change made meanwhile is not lost.
        yield* store(resolved, shown, updated, before.mode, ctx, before.read)
        return Tool.ok(
          `Edited ${shown}: ${plural(args.edits.length, "edit")} applied${args.edits.length > 1 ? ", first change" : ""} at line ${applied.firstLine}.`,
          { diff: [{ path: resolved, oldText: original, newText: updated }] }
        )
      }))
    }).pipe(Effect.catch((message: string) => Effect.succeed(Tool.error(message))))
})
