/**
 * `@path` in a prompt at `skein run`: the file is attached the way ACP clients attach one — a
 * text file as an embedded `resource` (its content, with its `file://` URI), an image
 * (`@shot.png`) as an `image` block when the model accepts images, anything else (too big,
 * binary, a folder) as a `resource_link`. The prompt's text stays as typed. A path with spaces
 * is written `@"my file.txt"`. Tab completes the path at the cursor.
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { pathToFileURL } from "node:url"
import type { UserBlock } from "../../Vocabulary.ts"
import type * as Editor from "./Editor.ts"

const MENTION = /(^|\s)@("[^"\n]+"|[^\s"]+)/g
const MAX_TEXT_BYTES = 256 * 1024
const MAX_IMAGE_BYTES = 5 * 1024 * 1024

const IMAGES: Readonly<Record<string, string>> = {
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp"
}

/** The paths mentioned, as typed (quotes removed), in order and once each. */
const mentioned = (text: string): Array<string> => {
  const out: Array<string> = []
  for (const m of text.matchAll(MENTION)) {
    const raw = m[2]!
    const path = raw.startsWith("\"") ? raw.slice(1, -1) : raw.replace(/[.,;:!?)]+$/, "")
    if (path.length > 0 && !out.includes(path)) out.push(path)
  }
  return out
}

const resolve = (cwd: string, path: string) =>
  path.startsWith("~/") ? nodePath.join(process.env.HOME ?? "", path.slice(2)) : nodePath.resolve(cwd, path)

interface Expanded {
  readonly content: ReadonlyArray<UserBlock>
  /** What was attached, or why not, for the person at the terminal. */
  readonly notes: ReadonlyArray<string>
}

/**
 * The prompt's blocks: its text, then one block per mentioned file that exists. `images`:
 * whether the model takes images (`undefined`: not known, the provider decides).
 */
export const expand = (text: string, options: { readonly cwd: string; readonly images: boolean | undefined }): Expanded => {
  const blocks: Array<UserBlock> = [{ type: "text", text }]
  const notes: Array<string> = []
  for (const path of mentioned(text)) {
    const abs = resolve(options.cwd, path)
    let stat: fs.Stats
    try {
      stat = fs.statSync(abs)
    } catch {
      continue // Not a file: an @ that means something else (a handle, a decorator).
    }
    const uri = pathToFileURL(abs).href
    const name = nodePath.basename(abs)
    const link = (why: string) => {
      blocks.push({ type: "resource_link", uri, name, ...(stat.isFile() ? { size: stat.size } : {}) })
      notes.push(`@${path}: linked (${why})`)
    }
    if (!stat.isFile()) {
      link(stat.isDirectory() ? "a folder" : "not a regular file")
      continue
    }
    const image = IMAGES[nodePath.extname(abs).toLowerCase()]
    if (image !== undefined) {
      if (options.images === false) link("this model does not take images")
      else if (stat.size > MAX_IMAGE_BYTES) link(`larger than ${MAX_IMAGE_BYTES / 1024 / 1024} MB`)
      else {
        blocks.push({ type: "image", mimeType: image, data: fs.readFileSync(abs).toString("base64"), uri })
        notes.push(`@${path}: image attached`)
      }
      continue
    }
    if (stat.size > MAX_TEXT_BYTES) {
      link(`larger than ${MAX_TEXT_BYTES / 1024} KB`)
      continue
    }
    const bytes = fs.readFileSync(abs)
    if (bytes.subarray(0, 8192).includes(0)) {
      link("binary")
      continue
    }
    blocks.push({ type: "resource", uri, mimeType: "text/plain", text: bytes.toString("utf8") })
    notes.push(`@${path}: attached (${bytes.length} bytes)`)
  }
  return { content: blocks, notes }
}

/** The longest common start of some strings. */
const common = (words: ReadonlyArray<string>): string => {
  if (words.length === 0) return ""
  let prefix = words[0]!
  for (const w of words) while (!w.startsWith(prefix)) prefix = prefix.slice(0, -1)
  return prefix
}

/**
 * Tab on an `@path`: completes it as far as the entries of its folder agree (a folder gets its
 * `/`), and lists them when several fit. Hidden entries only when asked for with a leading dot.
 */
export const complete = (cwd: string) => (state: Editor.State): { readonly state: Editor.State; readonly candidates: ReadonlyArray<string> } => {
  const before = state.text.slice(0, state.cursor)
  const m = /(^|\s)@([^\s"]*)$/.exec(before)
  if (m === null) return { state, candidates: [] }
  const typed = m[2]!
  const slash = typed.lastIndexOf("/")
  const dirPart = typed.slice(0, slash + 1)
  const base = typed.slice(slash + 1)
  let entries: Array<fs.Dirent>
  try {
    entries = fs.readdirSync(resolve(cwd, dirPart === "" ? "." : dirPart), { withFileTypes: true })
  } catch {
    return { state, candidates: [] }
  }
  const names = entries
    .filter((e) => e.name.startsWith(base) && (base.startsWith(".") || !e.name.startsWith(".")))
    .map((e) => (e.isDirectory() ? `${e.name}/` : e.name))
    .sort()
  if (names.length === 0) return { state, candidates: [] }
  const completion = names.length === 1 ? names[0]! : common(names)
  const added = completion.slice(base.length)
  const text = state.text.slice(0, state.cursor) + added + state.text.slice(state.cursor)
  return { state: { text, cursor: state.cursor + added.length }, candidates: names.length > 1 ? names : [] }
}
