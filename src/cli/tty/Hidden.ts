/**
 * A line typed at the terminal without echo, for a secret (an API key): stdin in raw mode,
 * read key by key, nothing written back but the line end. Enter ends the line; Backspace and
 * Ctrl-U edit it; Ctrl-C is an interrupt and Ctrl-D on an empty line the end of input (as at
 * a `readline` prompt, `Input.Line`); escape sequences (arrow keys, a terminal's paste
 * markers) and other control keys are dropped. The terminal is restored however the read ends.
 */
import * as Effect from "effect/Effect"
import type { Line } from "./Input.ts"
import * as Terminal from "./Terminal.ts"

/** What a run of keys does to a hidden line: its text so far, and whether it ended (and how). */
interface State {
  readonly text: string
  /** Inside an escape sequence (after ESC, until its final byte). */
  readonly escape: "none" | "start" | "csi" | "osc"
  readonly done?: Line | undefined
}

export const initial: State = { text: "", escape: "none" }

/** Feeds typed characters; stops at the first that ends the line (the rest is left unread). */
export const feed = (state: State, keys: string): State => {
  let { text, escape } = state
  for (const key of keys) {
    const code = key.codePointAt(0)!
    if (escape === "start") {
      escape = key === "[" ? "csi" : key === "]" ? "osc" : "none"
      continue
    }
    if (escape === "csi") {
      if (code >= 0x40 && code <= 0x7e) escape = "none"
      continue
    }
    if (escape === "osc") {
      if (key === "\x07") escape = "none"
      else if (key === "\x1b") escape = "start"
      continue
    }
    if (key === "\r" || key === "\n") return { text, escape, done: { _tag: "Line", text } }
    if (key === "\x03") return { text, escape, done: { _tag: "Interrupt", empty: text.length === 0 } }
    if (key === "\x04") {
      if (text.length === 0) return { text, escape, done: { _tag: "End" } }
      continue
    }
    if (key === "\x7f" || key === "\b") text = [...text].slice(0, -1).join("")
    else if (key === "\x15") text = ""
    else if (key === "\x1b") escape = "start"
    else if (code >= 0x20 && !(code >= 0x7f && code <= 0x9f)) text += key
  }
  return { text, escape }
}

/** Reads one hidden line after `prompt` (on stderr). Needs stdin to be a terminal. */
export const line = (prompt: string): Effect.Effect<Line> =>
  Effect.callback<Line>((resume) => {
    const stdin = process.stdin
    let state = initial
    // Another reader of keys (\`Input\`) may have the terminal in raw mode already: it is left as it was.
    const wasRaw = stdin.isRaw === true
    const wasFlowing = stdin.readableFlowing === true
    const cleanup = () => {
      stdin.off("data", onData)
      stdin.setRawMode(wasRaw)
      if (!wasFlowing) stdin.pause()
      process.off("exit", restore)
    }
    const restore = () => {
      if (stdin.isTTY === true) stdin.setRawMode(false)
    }
    const onData = (chunk: Buffer | string) => {
      state = feed(state, typeof chunk === "string" ? chunk : chunk.toString("utf8"))
      if (state.done === undefined) return
      cleanup()
      process.stderr.write("\n")
      Terminal.markLineStart()
      resume(Effect.succeed(state.done))
    }
    process.once("exit", restore)
    Terminal.note(prompt)
    stdin.setRawMode(true)
    stdin.on("data", onData)
    stdin.resume()
    return Effect.sync(cleanup)
  })
