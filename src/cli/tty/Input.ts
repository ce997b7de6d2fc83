/**
 * The keyboard of `skein run` at a terminal: one reader of keys for the whole run, handing each
 * key to what is open — the prompt, a running turn, or a menu (a question, the session picker).
 *
 * - The prompt (`line`): a line editor (`Editor.ts`) in the screen's bottom area, with the
 *   history of this folder on ↑/↓, Tab completing an `@path`, and a hint of the keys.
 * - A running turn (`turn`): what is typed is kept (it is shown below the status line and is
 *   there at the next prompt); Enter queues it as the next prompt, Ctrl-S sends it to the
 *   running turn (steering), Esc or Ctrl-C interrupts the turn, Shift-Tab changes the mode.
 * - A menu (`choose`): a key of an item, or ↑/↓ and Enter; Esc or Ctrl-C leaves it.
 *
 * Raw mode is on while the scope is open (`Keys.ts`); nothing typed is echoed but by this.
 */
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Editor from "./Editor.ts"
import type { History } from "./History.ts"
import * as Keys from "./Keys.ts"
import * as Screen from "./Screen.ts"
import * as Terminal from "./Terminal.ts"

export type Line =
  /** Text submitted with Enter. */
  | { readonly _tag: "Line"; readonly text: string }
  /** Ctrl-C; `empty` when nothing had been typed (the text, if any, is cleared). */
  | { readonly _tag: "Interrupt"; readonly empty: boolean }
  /** Shift-Tab: the next mode, asked for at the prompt (what was typed stays). */
  | { readonly _tag: "Cycle" }
  /** Ctrl-D on an empty prompt, or the end of input. */
  | { readonly _tag: "End" }

export type TurnKey =
  | { readonly _tag: "Queue"; readonly text: string }
  | { readonly _tag: "Steer"; readonly text: string }
  | { readonly _tag: "Interrupt" }
  | { readonly _tag: "Cycle" }

interface MenuItem {
  /** The key that chooses it at once. */
  readonly key?: string | undefined
  readonly label: string
}

type Chosen =
  | { readonly _tag: "Chosen"; readonly index: number }
  /** Esc or Ctrl-C. */
  | { readonly _tag: "Interrupt" }
  | { readonly _tag: "End" }

/** Completes the word at the cursor (an `@path`): the new state, and the candidates when several fit. */
type Complete = (state: Editor.State) => { readonly state: Editor.State; readonly candidates: ReadonlyArray<string> }

export interface Input {
  /** Reads a line at a prompt; an empty one is taken only with `allowEmpty` (a question with a default). */
  readonly line: (options: { readonly prompt: string; readonly hint: string; readonly allowEmpty?: boolean }) => Effect.Effect<Line>
  /**
   * Keys while a turn runs, until the scope closes. With `typeAhead`, what is typed shows and
   * Enter / Ctrl-S queue or steer it; without, only interrupting and Shift-Tab count.
   */
  readonly turn: (options: { readonly typeAhead: boolean; readonly hint: string }) => Effect.Effect<Queue.Dequeue<TurnKey>, never, Scope.Scope>
  readonly choose: (menu: { readonly items: ReadonlyArray<MenuItem>; readonly footer: string; readonly initial?: number }) => Effect.Effect<Chosen>
  /** Puts text back at the prompt (prompts queued behind an interrupted turn). */
  readonly restore: (text: string) => void
}

type Handler = (key: Keys.Key) => void

/** The editor's lines as drawn: `> ` before the first, two spaces before the others, then the hint. */
const editorBlock = (state: Editor.State, prompt: string, hint: string): Screen.Block => {
  const lines = state.text.split("\n")
  const before = state.text.slice(0, state.cursor).split("\n")
  const line = before.length - 1
  const pad = " ".repeat(Screen.width(prompt))
  const shown = lines.map((l, i) => `${i === 0 ? prompt : pad}${Terminal.oneLine(l)}`)
  return {
    lines: hint.length > 0 ? [...shown, Terminal.dim("err", hint)] : shown,
    cursor: { line, column: Screen.width(pad) + Screen.width(Terminal.oneLine(before[line]!)) }
  }
}

/** What was sent, as the transcript keeps it: long prompts shortened. */
const echo = (prompt: string, text: string): string => {
  const lines = text.split("\n")
  const shown = lines.length > 12 ? [...lines.slice(0, 10), `… ${lines.length - 10} more lines`] : lines
  const pad = " ".repeat(Screen.width(prompt))
  return `${shown.map((l, i) => `${i === 0 ? prompt : pad}${Terminal.oneLine(l)}`).join("\n")}\n`
}

export const make = (options: { readonly history: History; readonly complete?: Complete | undefined }): Effect.Effect<Input, never, Scope.Scope> =>
  Effect.gen(function*() {
    let state: Editor.State = Editor.empty
    let handler: Handler | undefined
    /** Where ↑ has gone in the history, and the text typed before it went there. */
    let recalled: { index: number; draft: Editor.State } | undefined
    let candidates: ReadonlyArray<string> = []

    yield* Keys.listen((key) => handler?.(key))
    yield* Effect.addFinalizer(() => Effect.sync(Screen.clear))

    /** The editing keys every text-taking mode shares; returns the action left to the mode. */
    const edit = (key: Keys.Key): Editor.Action | undefined => {
      const stepped = Editor.step(state, key)
      candidates = []
      if (stepped.action === "older" || stepped.action === "newer") {
        const entries = options.history.entries()
        const index = recalled?.index ?? entries.length
        const next = stepped.action === "older" ? index - 1 : index + 1
        if (next < 0 || (recalled === undefined && stepped.action === "newer")) return undefined
        if (next >= entries.length) {
          state = recalled?.draft ?? state
          recalled = undefined
        } else {
          recalled = { index: next, draft: recalled?.draft ?? state }
          state = Editor.of(entries[next]!)
        }
        return undefined
      }
      if (stepped.action === "complete" && options.complete !== undefined) {
        const done = options.complete(state)
        state = done.state
        candidates = done.candidates
        return undefined
      }
      if (stepped.state !== state) recalled = undefined
      state = stepped.state
      return stepped.action
    }

    const show = (prompt: string, hint: string) => {
      const block = editorBlock(state, prompt, candidates.length > 0 ? candidates.slice(0, 12).join("  ") : hint)
      Screen.set("editor", block)
    }

    const line = (o: { readonly prompt: string; readonly hint: string; readonly allowEmpty?: boolean }) =>
      Effect.callback<Line>((resume) => {
        const hint = () => (state.text.length === 0 ? o.hint : "")
        const finish = (result: Line) => {
          handler = undefined
          Screen.set("editor", undefined)
          resume(Effect.succeed(result))
        }
        handler = (key) => {
          const action = edit(key)
          switch (action) {
            case "submit": {
              if (state.text.trim() === "" && o.allowEmpty !== true) break
              const text = state.text
              state = Editor.empty
              recalled = undefined
              if (text.trim() !== "") options.history.add(text)
              Screen.set("editor", undefined)
              Terminal.newline("err")
              Terminal.note(Terminal.bold("err", echo(o.prompt, text)), "\n")
              return finish({ _tag: "Line", text })
            }
            case "interrupt": {
              const empty = state.text.length === 0
              state = Editor.empty
              recalled = undefined
              return finish({ _tag: "Interrupt", empty })
            }
            case "end":
              return finish({ _tag: "End" })
            case "cycle":
              return finish({ _tag: "Cycle" })
            default:
              break
          }
          show(o.prompt, hint())
        }
        Terminal.newline("err")
        show(o.prompt, hint())
        return Effect.sync(() => {
          handler = undefined
          Screen.set("editor", undefined)
        })
      })

    const turn = (o: { readonly typeAhead: boolean; readonly hint: string }) =>
      Effect.gen(function*() {
        const keys = yield* Queue.unbounded<TurnKey>()
        const redraw = () => (o.typeAhead ? show("> ", o.hint) : undefined)
        const mine: Handler = (key) => {
          if (!o.typeAhead) {
            const stepped = Editor.step(Editor.empty, key)
            if (stepped.action === "interrupt" || stepped.action === "escape") Queue.offerUnsafe(keys, { _tag: "Interrupt" })
            else if (stepped.action === "cycle") Queue.offerUnsafe(keys, { _tag: "Cycle" })
            return
          }
          const action = edit(key)
          if (action === "interrupt" || action === "escape") Queue.offerUnsafe(keys, { _tag: "Interrupt" })
          else if (action === "cycle") Queue.offerUnsafe(keys, { _tag: "Cycle" })
          else if ((action === "submit" || action === "steer") && state.text.trim() !== "") {
            const text = state.text
            options.history.add(text)
            state = Editor.empty
            recalled = undefined
            Queue.offerUnsafe(keys, action === "submit" ? { _tag: "Queue", text } : { _tag: "Steer", text })
          }
          redraw()
        }
        yield* Effect.acquireRelease(
          Effect.sync(() => {
            handler = mine
            redraw()
          }),
          () =>
            Effect.sync(() => {
              if (handler === mine) handler = undefined
              Screen.set("editor", undefined)
            })
        )
        return keys
      })

    const choose = (menu: { readonly items: ReadonlyArray<MenuItem>; readonly footer: string; readonly initial?: number }) =>
      Effect.callback<Chosen>((resume) => {
        const previous = handler
        const editor = previous !== undefined
        let at = Math.min(Math.max(0, menu.initial ?? 0), Math.max(0, menu.items.length - 1))
        const draw = () => {
          const lines = menu.items.map((item, i) => {
            const text = `  ${i === at ? "❯" : " "} ${item.key !== undefined ? `${item.key}  ` : ""}${item.label}`
            return i === at ? Terminal.bold("err", Terminal.cyan("err", text)) : text
          })
          Screen.set("menu", { lines: [...lines, Terminal.dim("err", menu.footer)] })
        }
        const finish = (result: Chosen) => {
          handler = previous
          Screen.set("menu", undefined)
          if (editor) previous?.({ _tag: "key", name: "redraw", ctrl: false, meta: false, shift: false })
          resume(Effect.succeed(result))
        }
        Screen.set("editor", undefined)
        handler = (key) => {
          if (key._tag === "end") return finish({ _tag: "End" })
          if (key._tag === "text") {
            const index = menu.items.findIndex((item) => item.key === key.text)
            if (index >= 0) return finish({ _tag: "Chosen", index })
            return
          }
          if (key._tag !== "key") return
          if ((key.ctrl && key.name === "c") || key.name === "escape") return finish({ _tag: "Interrupt" })
          if (key.ctrl && key.name === "d") return finish({ _tag: "End" })
          if (key.name === "up" || (key.ctrl && key.name === "p")) at = (at + menu.items.length - 1) % menu.items.length
          else if (key.name === "down" || (key.ctrl && key.name === "n")) at = (at + 1) % menu.items.length
          else if (key.name === "return" && menu.items.length > 0) return finish({ _tag: "Chosen", index: at })
          draw()
        }
        draw()
        return Effect.sync(() => {
          if (handler !== previous) handler = previous
          Screen.set("menu", undefined)
        })
      })

    return {
      line,
      turn,
      choose,
      restore: (text) => {
        state = Editor.of(state.text.length > 0 ? `${text}\n${state.text}` : text)
      }
    } satisfies Input
  })
