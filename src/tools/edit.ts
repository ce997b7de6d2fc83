/**
 * `edit {path, edits: [{oldText, newText}]}`: exact-match replacements in one
 * file, applied in order, all or nothing. Each `oldText` must occur exactly
 * once in the text as the previous edits left it. A file with CRLF line
 * endings keeps them, whichever endings the edits were written with.
 */
import * as Effect from "effect/Effect"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import * as Preview from "./Preview.ts"
import * as SafeFs from "./SafeFs.ts"
import * as Tool from "./Tool.ts"
import * as Workspace from "./Workspace.ts"
import { absoluteOf, editScope, inspect, plural, store } from "./write.ts"

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

const MAX_HINT_CHARS = 80

/** 1-based line number of a character offset. */
const lineAt = (text: string, index: number): number => {
  let line = 1
  for (let i = text.indexOf("\n"); i !== -1 && i < index; i = text.indexOf("\n", i + 1)) line++
  return line
}

/** Offsets of the non-overlapping occurrences of `needle`. */
const occurrences = (text: string, needle: string): Array<number> => {
  const found: Array<number> = []
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) found.push(i)
  return found
}

const firstNonBlank = (text: string): string => text.split("\n").find((l) => l.trim() !== "") ?? ""

/** Why an edit found nothing, with where its first line does occur when it does. */
const notFound = (text: string, oldText: string, label: string, shown: string, afterOthers: boolean): string => {
  const raw = firstNonBlank(oldText).replace(/\r$/, "")
  const first = raw.length > MAX_HINT_CHARS ? `${raw.slice(0, MAX_HINT_CHARS)}…` : raw
  const needle = raw.trim()
  const lines = needle === "" ? [] : text.split("\n").flatMap((line, i) => (line.includes(needle) ? [i + 1] : [])).slice(0, 5)
  const where = lines.length > 0
    ? ` Its first non-blank line (${JSON.stringify(first)}) appears at line${lines.length > 1 ? "s" : ""} ${lines.join(", ")}; check the indentation and the lines after it.`
    : ` Its first non-blank line is ${JSON.stringify(first)}.`
  return `${label} failed: oldText was not found in ${shown}. It must match the file exactly, whitespace and indentation included.${where}${
    afterOthers ? " Edits apply in order, each to the text the previous ones produced." : ""
  } The file was not changed; read it again and retry.`
}

type Applied = { readonly _tag: "ok"; readonly text: string; readonly firstLine: number } | { readonly _tag: "error"; readonly message: string }

/** Applies the edits in order to `text`, or says which one failed. Pure. */
export const applyEdits = (text: string, edits: ReadonlyArray<{ readonly oldText: string; readonly newText: string }>, shown: string): Applied => {
  let current = text
  let first: number | undefined
  for (let i = 0; i < edits.length; i++) {
    const { newText, oldText } = edits[i]!
    const label = edits.length === 1 ? "The edit" : `Edit ${i + 1} of ${edits.length}`
    if (oldText === "") return { _tag: "error", message: `${label} failed: oldText is empty; give text that occurs exactly once in the file (use write to create or replace a whole file). The file was not changed.` }
    const found = occurrences(current, oldText)
    if (found.length === 0) return { _tag: "error", message: notFound(current, oldText, label, shown, i > 0) }
    if (found.length > 1) {
      const lines = found.slice(0, 5).map((index) => lineAt(current, index))
      return {
        _tag: "error",
        message: `${label} failed: oldText matches ${found.length} places in ${shown} (lines ${lines.join(", ")}${found.length > 5 ? ", …" : ""}); include more surrounding lines so it matches exactly once. The file was not changed.`
      }
    }
    const at = found[0]!
    const line = lineAt(current, at)
    first = first === undefined ? line : Math.min(first, line)
    current = current.slice(0, at) + newText + current.slice(at + oldText.length)
  }
  return { _tag: "ok", text: current, firstLine: first ?? 1 }
}

/** True when every line break is CRLF (a file with mixed endings is edited as it is). */
const usesCrlf = (text: string): boolean => text.includes("\r\n") && !/(^|[^\r])\n/.test(text)

const toLf = (text: string) => text.replaceAll("\r\n", "\n")

/**
 * The text an edit makes of `original`: the edits applied in order, a CRLF
 * file kept CRLF whichever endings the edits use. Pure, so a permission
 * request can show the change before it is made.
 */
export const editedText = (original: string, edits: ReadonlyArray<{ readonly oldText: string; readonly newText: string }>, shown: string): Applied => {
  const crlf = usesCrlf(original)
  const applied = applyEdits(crlf ? toLf(original) : original, crlf ? edits.map((e) => ({ oldText: toLf(e.oldText), newText: toLf(e.newText) })) : edits, shown)
  return applied._tag === "ok" && crlf ? { ...applied, text: applied.text.replaceAll("\n", "\r\n") } : applied
}

/** The bytes of a file as text for an edit, or why it cannot be edited. */
const asText = (bytes: Uint8Array, shown: string): Effect.Effect<string, string> =>
  bytes.subarray(0, 8192).includes(0)
    ? Effect.fail(`${shown} is a binary file; edit changes text files only`)
    : Effect.try({
      try: () => new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes),
      catch: () => `${shown} is not valid UTF-8 text; edit refuses to change it`
    })

export const edit = Tool.define<Params>({
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
    Effect.map(Preview.current(args.path, where), (file) => {
      if (file === undefined || file.text === null) return []
      const applied = editedText(file.text, args.edits, args.path)
      return applied._tag === "ok" ? [Preview.diff(file.path, file.text, applied.text)] : []
    }),
  execute: (args, ctx) =>
    Effect.gen(function*() {
      const path = yield* Path.Path
      const resolved = yield* Workspace.resolve(args.path, ctx)
      const shown = Workspace.display(path, ctx.cwd, resolved)
      const before = yield* inspect(resolved, shown, yield* SafeFs.realRoots(ctx.roots))
      if (before._tag === "missing") return Tool.error(`File not found: ${shown}. edit changes existing files; use write to create one.`)
      if (before._tag === "other") return Tool.error(before.type === "Directory" ? `${shown} is a directory, not a file` : `${shown} is not a regular file`)
      const clientRead = ctx.client?.readTextFile
      const original = clientRead
        ? yield* clientRead(resolved).pipe(Effect.mapError((message) => `Cannot read ${shown} through the editor: ${message}`))
        : yield* asText(before.read.bytes, shown)
      const applied = editedText(original, args.edits, shown)
      if (applied._tag === "error") return Tool.error(applied.message)
      const updated = applied.text
      if (updated === original) return Tool.ok(`No change to ${shown}: every newText equals its oldText.`)
      // Replaced only if the file on disk is still the one read: a change made meanwhile is not lost.
      yield* store(resolved, shown, updated, before.mode, ctx, before.read)
      return Tool.ok(
        `Edited ${shown}: ${plural(args.edits.length, "edit")} applied${args.edits.length > 1 ? ", first change" : ""} at line ${applied.firstLine}.`,
        { diff: [{ path: resolved, oldText: original, newText: updated }] }
      )
    }).pipe(Effect.catch((message: string) => Effect.succeed(Tool.error(message))))
})
