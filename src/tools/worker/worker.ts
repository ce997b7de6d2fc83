/**
 * The tool worker's entry: answers `grep`, `glob`, `edit` and `markdown` requests from
 * the thread that serves the protocol (./ToolWorker.ts), one at a time, in order.
 * It never touches the file system: the main thread reads the files (through
 * the same confinement as every tool) and sends their contents.
 *
 * It is bundled on its own (scripts/build.mjs) and must stay free of Effect's
 * runtime; it writes nothing to stdout.
 */
import * as Glob from "effect/Glob"
import { parentPort } from "node:worker_threads"
import { type Applied, type Edit, rewrite } from "./edits.ts"
import { globMatches, searchText, type TextResult } from "./match.ts"

export type Request =
  | {
    readonly id: number
    readonly op: "grep"
    readonly source: string
    readonly flags: string
    readonly bytes: Uint8Array
    readonly keep: number
  }
  | { readonly id: number; readonly op: "ping" }
  | { readonly id: number; readonly op: "glob"; readonly pattern: string; readonly paths: ReadonlyArray<string> }
  | { readonly id: number; readonly op: "edit"; readonly original: string; readonly edits: ReadonlyArray<Edit>; readonly shown: string }
  | { readonly id: number; readonly op: "markdown"; readonly html: string; readonly url: string }

export type Reply =
  | { readonly id: number; readonly ok: true; readonly value: TextResult | ReadonlyArray<number> | null | Applied | string }
  | { readonly id: number; readonly ok: false; readonly message: string }

// One call sends the same pattern with every file or batch: compile it once.
let regex: { readonly key: string; readonly value: RegExp } | undefined
let glob: { readonly key: string; readonly value: Glob.Glob } | undefined

const answer = (request: Exclude<Request, { readonly op: "markdown" }>): Reply => {
  try {
    if (request.op === "grep") {
      const key = `${request.flags}/${request.source}`
      if (regex?.key !== key) regex = { key, value: new RegExp(request.source, request.flags) }
      return { id: request.id, ok: true, value: searchText(request.bytes, regex.value, request.keep) }
    }
    if (request.op === "ping") return { id: request.id, ok: true, value: null }
    if (request.op === "edit") return { id: request.id, ok: true, value: rewrite(request.original, request.edits, request.shown) }
    if (glob?.key !== request.pattern) glob = { key: request.pattern, value: Glob.make(request.pattern, { dot: true }) }
    return { id: request.id, ok: true, value: globMatches(glob.value, request.paths) }
  } catch (error) {
    return { id: request.id, ok: false, message: error instanceof Error ? error.message : String(error) }
  }
}

// The HTML converter (turndown and its DOM, a few hundred KB) loads with the first page, so
// that a worker started for a search does not pay for it.
let html: Promise<typeof import("./html.ts")> | undefined

const markdown = (request: Extract<Request, { readonly op: "markdown" }>): Promise<Reply> =>
  (html ??= import("./html.ts")).then((module) => module.toMarkdown(request.html, request.url)).then(
    (value): Reply => ({ id: request.id, ok: true, value }),
    (error: unknown): Reply => ({ id: request.id, ok: false, message: error instanceof Error ? error.message : String(error) })
  )

// Answered strictly in order (a ping's reply means everything before it is done), the
// asynchronous first `markdown` included.
let queue: Promise<void> = Promise.resolve()
parentPort?.on("message", (request: Request) => {
  queue = queue.then(() => request.op === "markdown" ? markdown(request) : answer(request)).then((reply) => parentPort!.postMessage(reply))
})
