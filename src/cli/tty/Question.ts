/**
 * A permission question at the terminal: what the tool call would do (the whole command, or
 * the diff of an edit), the options as keys, and the answer typed back. An answer that is not
 * one of the keys asks again; Ctrl-C ends the run; the end of input is a denial.
 */
import * as Effect from "effect/Effect"
import type { Answer, PermissionAsked, PermissionOption } from "../../Vocabulary.ts"
import type { Input } from "./Input.ts"
import { diffText } from "./Render.ts"
import * as Terminal from "./Terminal.ts"

/** The key typed for each kind of option. */
const KEYS = { allow_once: "y", allow_always: "a", reject_once: "n", reject_always: "N" } as const

const MAX_SHOWN_LINES = 200

export interface Choice {
  readonly key: string
  readonly option: PermissionOption
}

export const choices = (options: ReadonlyArray<PermissionOption>): ReadonlyArray<Choice> =>
  options.map((option) => ({ key: KEYS[option.kind], option }))

/** The option an answer chose; undefined when it is none of them. */
export const parse = (input: string, offered: ReadonlyArray<Choice>): PermissionOption | undefined => {
  const typed = input.trim()
  const key = typed === "yes" ? "y" : typed === "no" ? "n" : typed === "Y" ? "y" : typed
  return offered.find((choice) => choice.key === key)?.option
}

const bounded = (text: string): string => {
  const lines = Terminal.clean(text).split("\n")
  const shown = lines.slice(0, MAX_SHOWN_LINES).map((line) => `    ${line}`)
  if (lines.length > MAX_SHOWN_LINES) shown.push(`    … ${lines.length - MAX_SHOWN_LINES} more lines`)
  return `${shown.join("\n")}\n`
}

/** The question as shown: the tool call, what it would do, and the keys. */
export const describe = (asked: PermissionAsked): string => {
  const call = asked.toolCall
  const out = [`${Terminal.bold("err", "?")} Allow ${Terminal.bold("err", Terminal.oneLine(call.title))}?\n`]
  const input = call.rawInput as Record<string, unknown> | undefined
  if (call.content !== undefined && call.content.length > 0) {
    for (const d of call.content) out.push(diffText(d.path, d.oldText, d.newText))
  } else if (call.kind === "execute" && typeof input?.command === "string") {
    // The title shows a command's first line only; the whole command is what is allowed.
    if (input.command.includes("\n") || input.command.length > 80) out.push(bounded(input.command))
  } else if (call.kind !== "edit" && input !== undefined) {
    out.push(Terminal.dim("err", bounded(JSON.stringify(input, null, 2))))
  }
  out.push(`  ${choices(asked.options).map((c) => `[${c.key}] ${Terminal.oneLine(c.option.name)}`).join("  ")}\n`)
  return out.join("")
}

/**
 * Asks until an answer is given: the selected option, `cancelled` at the end of input, or
 * `quit` when the user pressed Ctrl-C.
 */
export const ask = (input: Input, asked: PermissionAsked): Effect.Effect<Answer | "quit"> =>
  Effect.gen(function*() {
    const offered = choices(asked.options)
    Terminal.note(describe(asked), "\n")
    for (;;) {
      const reply = yield* input.line("> ")
      if (reply._tag === "Interrupt") return "quit" as const
      if (reply._tag === "End") return { outcome: "cancelled" } as const
      const option = parse(reply.text, offered)
      if (option !== undefined) return { outcome: "selected", optionId: option.optionId } as const
      Terminal.noteLine(`Type ${offered.map((c) => c.key).join(", ")} and Enter (Ctrl-C ends the run).`, Terminal.dim)
    }
  })
