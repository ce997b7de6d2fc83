/**
 * Keyboard input at a terminal, for `skein run`: a line at a prompt (Node's readline, with
 * history), and Ctrl-C while no prompt is open (a turn runs).
 *
 * Outside a prompt, stdin is in raw mode and only Ctrl-C counts: other keys are dropped, so
 * nothing typed during a turn is echoed into its output. At a prompt, readline owns stdin.
 * Only one of the two reads at a time; the terminal is restored when the scope closes (and,
 * whatever happens, when the process exits).
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as readline from "node:readline"
import * as Terminal from "./Terminal.ts"

export type Line =
  /** A line ended with Enter. */
  | { readonly _tag: "Line"; readonly text: string }
  /** Ctrl-C; `empty` when nothing had been typed on the line. */
  | { readonly _tag: "Interrupt"; readonly empty: boolean }
  /** The end of input (Ctrl-D on an empty line, or stdin closed). */
  | { readonly _tag: "End" }

export interface Input {
  /** Reads a line at a prompt on stderr; `history` lines can be recalled with the arrow keys. */
  readonly line: (prompt: string, options?: { readonly history?: boolean }) => Effect.Effect<Line>
  /** The next Ctrl-C typed while no prompt is open. */
  readonly interrupt: Effect.Effect<void>
}

const HISTORY_SIZE = 500

export const make: Effect.Effect<Input, never, Scope.Scope> = Effect.gen(function*() {
  const stdin = process.stdin
  let reading = false
  let raw = false
  let history: Array<string> = []
  const waiters = new Set<() => void>()

  const onData = (chunk: Buffer | string) => {
    if (!(typeof chunk === "string" ? chunk.includes("\x03") : chunk.includes(3))) return
    const woken = [...waiters]
    waiters.clear()
    for (const wake of woken) wake()
    listen()
  }

  /** Raw mode and the Ctrl-C listener exactly while someone waits for Ctrl-C and no prompt is open. */
  const listen = () => {
    const wanted = !reading && waiters.size > 0
    if (wanted === raw) return
    raw = wanted
    if (wanted) {
      stdin.setRawMode(true)
      stdin.on("data", onData)
      stdin.resume()
    } else {
      stdin.off("data", onData)
      stdin.setRawMode(false)
      stdin.pause()
    }
  }

  const restore = () => {
    waiters.clear()
    listen()
    if (stdin.isTTY === true) stdin.setRawMode(false)
  }
  process.once("exit", restore)
  yield* Effect.addFinalizer(() => Effect.sync(restore))

  const line = (prompt: string, options?: { readonly history?: boolean }) =>
    Effect.callback<Line>((resume) => {
      const keep = options?.history === true
      reading = true
      listen()
      const rl = readline.createInterface({
        input: stdin,
        output: process.stderr,
        terminal: true,
        history: keep ? [...history] : [],
        historySize: keep ? HISTORY_SIZE : 0,
        removeHistoryDuplicates: true
      })
      if (keep) rl.on("history", (lines: Array<string>) => (history = lines))
      let done = false
      // Settles once: closing the interface emits "close" synchronously, which must not
      // override the answer it follows.
      const finish = (result: Line | undefined) => {
        if (done) return
        done = true
        rl.close()
        // After Enter, readline has ended the line; otherwise it is ended here.
        if (result?._tag !== "Line") process.stderr.write("\n")
        Terminal.markLineStart()
        reading = false
        listen()
        if (result !== undefined) resume(Effect.succeed(result))
      }
      rl.on("SIGINT", () => finish({ _tag: "Interrupt", empty: rl.line.length === 0 }))
      rl.on("close", () => finish({ _tag: "End" }))
      rl.question(prompt, (text) => finish({ _tag: "Line", text }))
      return Effect.sync(() => finish(undefined))
    })

  const interrupt = Effect.callback<void>((resume) => {
    const wake = () => resume(Effect.void)
    waiters.add(wake)
    listen()
    return Effect.sync(() => {
      waiters.delete(wake)
      listen()
    })
  })

  return { line, interrupt } satisfies Input
})
