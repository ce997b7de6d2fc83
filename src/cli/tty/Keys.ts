/**
 * The keyboard of `skein run`, read key by key: stdin in raw mode, decoded by Node's
 * `readline.emitKeypressEvents`, with bracketed paste turned on so that a paste arrives as one
 * `paste` (its line breaks are text, never Enter).
 *
 * Raw mode and bracketed paste are on exactly while the scope is open, and are turned off
 * whatever happens when the process exits, so the terminal is never left in either.
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as readline from "node:readline"

export type Key =
  /** Printable text typed (one character, or several when the terminal sends them at once). */
  | { readonly _tag: "text"; readonly text: string }
  /** A bracketed paste, whole. */
  | { readonly _tag: "paste"; readonly text: string }
  /** Any other key: Node's name for it (`return`, `enter` for Ctrl-J, `tab`, `up`, `c` with ctrl…). */
  | { readonly _tag: "key"; readonly name: string; readonly ctrl: boolean; readonly meta: boolean; readonly shift: boolean }
  /** stdin ended (the terminal went away). */
  | { readonly _tag: "end" }

interface NodeKey {
  readonly name?: string | undefined
  readonly ctrl?: boolean | undefined
  readonly meta?: boolean | undefined
  readonly shift?: boolean | undefined
  readonly sequence?: string | undefined
}

/** The largest paste taken in (a bigger one is cut there: a prompt is not a file transfer). */
const MAX_PASTE = 1024 * 1024

const PASTE_ON = "\x1b[?2004h"
const PASTE_OFF = "\x1b[?2004l"

/**
 * Decodes Node's keypress events into `Key`s: pure but for its paste buffer. Exported for
 * tests; `listen` feeds it from stdin.
 */
const decoder = (emit: (key: Key) => void) => {
  let paste: Array<string> | undefined
  let size = 0
  return (str: string | undefined, key: NodeKey | undefined): void => {
    const name = key?.name
    if (name === "paste-start") {
      paste = []
      size = 0
      return
    }
    if (name === "paste-end") {
      const text = (paste ?? []).join("")
      paste = undefined
      if (text.length > 0) emit({ _tag: "paste", text })
      return
    }
    if (paste !== undefined) {
      const raw = key?.sequence ?? str ?? ""
      // Line ends as the clipboard had them; other control sequences are not text.
      const piece = raw === "\r" || raw === "\r\n" ? "\n" : raw.length > 0 && !raw.startsWith("\x1b") ? raw : ""
      if (piece.length > 0 && size + piece.length <= MAX_PASTE) {
        paste.push(piece)
        size += piece.length
      }
      return
    }
    const printable = str !== undefined && str.length > 0 && key?.ctrl !== true && key?.meta !== true && !/[\x00-\x1f\x7f]/.test(str)
    if (printable && (name === undefined || name.length <= 1 || name === "space")) return emit({ _tag: "text", text: str })
    if (name === undefined) return
    emit({ _tag: "key", name, ctrl: key?.ctrl === true, meta: key?.meta === true, shift: key?.shift === true })
  }
}

/**
 * Reads keys while the scope is open and hands each to `onKey`. stdin must be a terminal.
 */
export const listen = (onKey: (key: Key) => void): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    const stdin = process.stdin
    const decode = decoder(onKey)
    const onKeypress = (str: string | undefined, key: NodeKey | undefined) => decode(str, key)
    const onEnd = () => onKey({ _tag: "end" })
    let on = false
    const restore = () => {
      if (!on) return
      on = false
      stdin.off("keypress", onKeypress)
      stdin.off("end", onEnd)
      if (stdin.isTTY === true) stdin.setRawMode(false)
      stdin.pause()
      if (process.stderr.isTTY === true) process.stderr.write(PASTE_OFF)
    }
    readline.emitKeypressEvents(stdin)
    stdin.setRawMode(true)
    stdin.on("keypress", onKeypress)
    stdin.on("end", onEnd)
    stdin.resume()
    if (process.stderr.isTTY === true) process.stderr.write(PASTE_ON)
    on = true
    process.once("exit", restore)
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        process.off("exit", restore)
        restore()
      })
    )
  })
