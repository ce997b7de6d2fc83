/**
 * A permission question at the terminal: what the tool call would do (the whole command, or
 * the diff of an edit), then the options as a menu answered with one key (`y` allow once, `a`
 * always, `n` reject, `N` always reject) or ↑/↓ and Enter. Esc or Ctrl-C rejects the call and
 * stops the turn (as in Claude Code), back to the prompt; the end of input is a denial. While
 * the question is open, other output (subagents, streamed text) is held and shown after it.
 */
import * as Effect from "effect/Effect"
import type { Answer, PermissionAsked, PermissionOption } from "../../Vocabulary.ts"
import type { Input } from "./Input.ts"
import { diffText } from "./Render.ts"
import * as Terminal from "./Terminal.ts"

/** The key typed for each kind of option. */
const KEYS = { allow_once: "y", allow_always: "a", reject_once: "n", reject_always: "N" } as const

const MAX_SHOWN_LINES = 200

/** A title whose first sentence is a question ("Trust this folder? …"). */
const ASKS = /^[^.:!`]*\?(\s|$)/

interface Choice {
  readonly key: string
  readonly option: PermissionOption
}

export const choices = (options: ReadonlyArray<PermissionOption>): ReadonlyArray<Choice> =>
  options.map((option) => ({ key: KEYS[option.kind], option }))

const bounded = (text: string): string => {
  const lines = Terminal.clean(text).split("\n")
  const shown = lines.slice(0, MAX_SHOWN_LINES).map((line) => `    ${line}`)
  if (lines.length > MAX_SHOWN_LINES) shown.push(`    … ${lines.length - MAX_SHOWN_LINES} more lines`)
  return `${shown.join("\n")}\n`
}

/** The question as shown: the tool call, what it would do, and the keys. */
export const describe = (asked: PermissionAsked): string => {
  const call = asked.toolCall
  const title = Terminal.oneLine(call.title)
  // A title that asks its own question (the trust question) is shown as it is.
  const heading = ASKS.test(title) ? Terminal.bold("err", title) : `Allow ${Terminal.bold("err", title)}?`
  const out = [`${Terminal.bold("err", "?")} ${heading}\n`]
  const input = call.rawInput as Record<string, unknown> | undefined
  if (call.content !== undefined && call.content.length > 0) {
    for (const d of call.content) out.push(diffText(d.path, d.oldText, d.newText))
  } else if (call.kind === "execute" && typeof input?.command === "string") {
    // The title shows a command's first line only; the whole command is what is allowed.
    if (input.command.includes("\n") || input.command.length > 80) out.push(bounded(input.command))
  } else if (call.kind !== "edit" && input !== undefined) {
    out.push(Terminal.dim("err", bounded(JSON.stringify(input, null, 2))))
  }
  return out.join("")
}

const FOOTER = "press a key, or ↑/↓ and Enter · esc or ctrl-c rejects and stops the turn"

/**
 * The answer chosen: the selected option, `cancelled` at the end of input, or `stop` when the
 * user pressed Esc or Ctrl-C (the caller rejects the call and cancels the turn).
 */
export const ask = (input: Input, asked: PermissionAsked): Effect.Effect<Answer | "stop"> =>
  Effect.gen(function*() {
    const offered = choices(asked.options)
    Terminal.newline("err")
    Terminal.note(describe(asked), "\n")
    const chosen = yield* Effect.ensuring(
      Effect.andThen(Effect.sync(Terminal.hold), input.choose({
        items: offered.map((c) => ({ key: c.key, label: Terminal.oneLine(c.option.name) })),
        footer: FOOTER
      })),
      Effect.sync(Terminal.release)
    )
    switch (chosen._tag) {
      case "Chosen": {
        const option = offered[chosen.index]!.option
        Terminal.noteLine(`  → ${Terminal.oneLine(option.name)}`, Terminal.dim)
        return { outcome: "selected", optionId: option.optionId } as const
      }
      case "Interrupt":
        Terminal.noteLine("  → Rejected; stopping the turn.", Terminal.dim)
        return "stop" as const
      case "End":
        return { outcome: "cancelled" } as const
    }
  })
