/**
 * A change to a file as lines removed and added: the common head and tail are left out, and
 * what differs between them is shown as the old lines then the new ones. Bounded: at most
 * `MAX_LINES` lines of each side.
 */
import { h } from "./dom.ts"

const MAX_LINES = 400

export interface FileChange {
  readonly path: string
  readonly oldText: string | null
  readonly newText: string
}

const lines = (text: string) => (text.length === 0 ? [] : text.replace(/\n$/, "").split("\n"))

export const view = (change: FileChange): HTMLElement => {
  const before = change.oldText === null ? [] : lines(change.oldText)
  const after = lines(change.newText)
  let head = 0
  while (head < before.length && head < after.length && before[head] === after[head]) head++
  let tail = 0
  while (tail < before.length - head && tail < after.length - head && before[before.length - 1 - tail] === after[after.length - 1 - tail]) tail++
  const removed = before.slice(head, before.length - tail)
  const added = after.slice(head, after.length - tail)
  const pre = h("pre", { class: "diff" })
  const line = (cls: string, prefix: string, text: string) => pre.append(h("span", { class: cls }, `${prefix}${text}\n`))
  const side = (list: ReadonlyArray<string>, cls: string, prefix: string) => {
    for (const text of list.slice(0, MAX_LINES)) line(cls, prefix, text)
    if (list.length > MAX_LINES) line("skip", "  ", `… ${list.length - MAX_LINES} more lines`)
  }
  if (head > 0) line("skip", "  ", `… ${head} unchanged line${head === 1 ? "" : "s"}`)
  side(removed, "del", "- ")
  side(added, "add", "+ ")
  if (tail > 0) line("skip", "  ", `… ${tail} unchanged line${tail === 1 ? "" : "s"}`)
  return h("div", { class: "change" }, h("div", { class: "path" }, change.oldText === null ? `${change.path} (new file)` : change.path), pre)
}
