/**
 * The text work of `edit`, as plain functions: exact-match replacements
 * applied in order to a file's text, all or nothing, keeping CRLF line endings.
 * Each edit scans the whole text, so the cost grows with the file's size times
 * the number of edits: `edit` runs large ones in the tool worker
 * (./ToolWorker.ts), and this module, bundled into it, imports nothing.
 */

export interface Edit {
  readonly oldText: string
  readonly newText: string
}

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

export type Applied = { readonly _tag: "ok"; readonly text: string; readonly firstLine: number } | { readonly _tag: "error"; readonly message: string }

/** Applies the edits in order to `text`, or says which one failed. Pure. */
const applyEdits = (text: string, edits: ReadonlyArray<Edit>, shown: string): Applied => {
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
 * The file's new text after `edits`, or why not. A file whose line breaks are
 * all CRLF keeps them, whichever endings the edits were written with.
 */
export const rewrite = (original: string, edits: ReadonlyArray<Edit>, shown: string): Applied => {
  const crlf = usesCrlf(original)
  const applied = applyEdits(crlf ? toLf(original) : original, crlf ? edits.map((e) => ({ oldText: toLf(e.oldText), newText: toLf(e.newText) })) : edits, shown)
  return applied._tag === "ok" && crlf ? { ...applied, text: applied.text.replaceAll("\n", "\r\n") } : applied
}
