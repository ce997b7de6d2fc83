/**
 * The commands `skein run` answers itself, without the model: `/help`, `/exit` (`/quit`),
 * `/clear`, `/model`, `/mode`, `/context`, `/cost`. Any other `/name` (the session's commands:
 * `/compact`, `/undo`, `/rewind`, `/init`, `/review`, prompt files, skills) is a prompt for the session,
 * as before.
 */
import type { ModeId } from "../../Vocabulary.ts"

export type Local =
  | { readonly _tag: "help" }
  | { readonly _tag: "exit" }
  | { readonly _tag: "clear" }
  | { readonly _tag: "model"; readonly id: string | undefined }
  | { readonly _tag: "mode"; readonly id: string | undefined }
  | { readonly _tag: "context" }
  | { readonly _tag: "cost" }

const COMMANDS: ReadonlyArray<{ readonly name: string; readonly hint?: string; readonly description: string }> = [
  { name: "help", description: "these commands and keys" },
  { name: "exit", description: "leave (also /quit, Ctrl-D)" },
  { name: "clear", description: "start a new session in this folder (this one stays saved)" },
  { name: "model", hint: "[ID]", description: "list the models, or switch to one" },
  { name: "mode", hint: "[ID]", description: "list the modes, or switch (Shift-Tab cycles default → acceptEdits → plan)" },
  { name: "context", description: "how much of the model's context window the conversation fills" },
  { name: "cost", description: "what the session has cost so far, when the model's price is known" }
]

/** The local command a prompt is, if it is one. */
export const parse = (text: string): Local | undefined => {
  const m = /^\/([a-z]+)(?:\s+(.*))?$/s.exec(text.trim())
  if (m === null) return undefined
  const arg = m[2]?.trim() === "" ? undefined : m[2]?.trim()
  switch (m[1]) {
    case "help":
      return { _tag: "help" }
    case "exit":
    case "quit":
      return { _tag: "exit" }
    case "clear":
      return { _tag: "clear" }
    case "model":
      return { _tag: "model", id: arg }
    case "mode":
      return { _tag: "mode", id: arg }
    case "context":
      return { _tag: "context" }
    case "cost":
      return { _tag: "cost" }
    default:
      return undefined
  }
}

export const MODES: ReadonlyArray<ModeId> = ["default", "acceptEdits", "plan", "bypassPermissions"]

/** Shift-Tab's next mode: default → acceptEdits → plan → default (bypassPermissions only by /mode). */
export const nextMode = (mode: string): ModeId =>
  mode === "default" ? "acceptEdits" : mode === "acceptEdits" ? "plan" : "default"

const KEYS: ReadonlyArray<readonly [string, string]> = [
  ["Enter", "send (during a turn: queue as the next prompt)"],
  ["Ctrl-J, Alt-Enter, \\ then Enter", "a new line (a paste keeps its lines)"],
  ["Ctrl-S", "during a turn: send what is typed to the running turn (steer)"],
  ["Esc, Ctrl-C", "interrupt the turn; at a question: reject and stop the turn"],
  ["Shift-Tab", "next mode"],
  ["↑ ↓", "earlier prompts of this folder"],
  ["Tab", "complete an @path"],
  ["@path", "attach a file (an image: @shot.png)"],
  ["Ctrl-D", "leave (on an empty prompt)"]
]

/** The text of `/help`: local commands, the session's commands, and the keys. */
export const help = (sessionCommands: ReadonlyArray<{ readonly name: string; readonly description: string; readonly hint?: string | undefined }>): string => {
  const row = (name: string, description: string) => `  ${name.padEnd(30)} ${description}`
  const local = COMMANDS.map((c) => row(`/${c.name}${c.hint !== undefined ? ` ${c.hint}` : ""}`, c.description))
  const session = sessionCommands.filter((c) => parse(`/${c.name}`) === undefined)
    .map((c) => row(`/${c.name}${c.hint !== undefined ? ` ${c.hint}` : ""}`, c.description.split("\n", 1)[0]!.slice(0, 80)))
  return [
    "Answered here (no model call):",
    ...local,
    ...(session.length > 0 ? ["Sent to the session:", ...session] : []),
    "Keys:",
    ...KEYS.map(([k, d]) => row(k, d)),
    ""
  ].join("\n")
}
