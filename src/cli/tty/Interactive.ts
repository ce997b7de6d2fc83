/**
 * `skein run` kept open: prompt after prompt in one session, until the user leaves.
 *
 * At the prompt, Enter sends the line as the next turn; Ctrl-C clears a line that has text,
 * and Ctrl-C on an empty line or Ctrl-D leaves (exit 0: the session ended as the user chose).
 * While a turn runs, Ctrl-C cancels the turn and the prompt comes back. At a permission
 * question, Ctrl-C ends the run (exit 130, as an interrupted `skein run PROMPT` does).
 * The session id is printed on the way out, to come back with `--resume`.
 */
import * as Effect from "effect/Effect"
import type { Canonical } from "../../log/Event.ts"
import type { Session, TurnOutcome } from "../../session/Protocol.ts"
import { markWarm } from "../CodeCache.ts"
import type { Input } from "./Input.ts"
import * as Present from "./Present.ts"
import { usageText, type View } from "./Render.ts"
import * as Terminal from "./Terminal.ts"

const clip = (text: string, max: number) => {
  const line = Terminal.oneLine(text.trim())
  return line.length > max ? `${line.slice(0, max)}…` : line
}

/** Where a saved session was: its last prompt and the end of the answer to it. */
export const summary = (session: Session, events: ReadonlyArray<Canonical>): string => {
  const starts = events.filter((e) => e.type === "turn_start")
  const head = `Resumed session ${session.id} (${starts.length} turn${starts.length === 1 ? "" : "s"}, ${session.cwd})`
  const last = starts.at(-1)
  if (last === undefined || last.type !== "turn_start") return `${head}\n`
  const prompt = last.data.content.map((block) => (block.type === "text" ? block.text : `[${block.type}]`)).join(" ")
  let answer = ""
  for (const e of events) {
    if (e.turn !== last.turn || e.type !== "model_response") continue
    for (const part of e.data.parts) if (part.type === "text") answer += part.text
  }
  const lines = Terminal.clean(answer.trim()).split("\n").filter((line) => line.trim() !== "")
  const tail = lines.slice(-3).map((line) => `  ${clip(line, 160)}`)
  return [head, `  > ${clip(prompt, 160)}`, ...(lines.length > 3 ? ["  …"] : []), ...tail, ""].join("\n")
}

/** After a turn: how it stopped (when not normally), the context used and the cost. */
export const footer = (outcome: TurnOutcome, view: View | undefined): void => {
  const parts: Array<string> = []
  if (outcome.stopReason !== "end_turn") parts.push(`[${outcome.stopReason}]`)
  const usage = view?.usage()
  if (usage !== undefined) parts.push(usageText(usage))
  if (parts.length > 0) Terminal.noteLine(parts.join(" "), Terminal.dim)
}

export const goodbye = (session: Session): void =>
  Terminal.noteLine(`Session ${session.id} (continue it with: skein run --resume ${session.id})`, Terminal.dim)

export const loop = (
  session: Session,
  options: {
    readonly input: Input
    readonly view: View
    readonly version: string
    readonly child?: ((id: string) => Effect.Effect<Session, unknown>) | undefined
  }
) =>
  Effect.gen(function*() {
    const { input, view } = options
    Terminal.noteLine(`skein ${options.version} · ${session.cwd} · mode ${(yield* session.settings).mode}`, Terminal.dim)
    Terminal.noteLine("Ctrl-C cancels a turn; Ctrl-D or Ctrl-C on an empty line leaves.", Terminal.dim)
    let warm = false
    for (;;) {
      const line = yield* input.line("> ", { history: true })
      if (line._tag === "End" || (line._tag === "Interrupt" && line.empty)) {
        goodbye(session)
        return 0
      }
      if (line._tag === "Interrupt" || line.text.trim() === "") continue
      const presented = yield* Present.turn(session, [{ type: "text", text: line.text }], { show: view.event, view, input, child: options.child }).pipe(
        // The session's log could not be written (a full disk): say so, and let the user go on once it can.
        Effect.catchIf((error) => error.reason === "log", (error) =>
          Effect.sync(() => {
            view.pause()
            Terminal.noteLine(Terminal.clean(error.message), Terminal.red)
            return undefined
          }))
      )
      if (presented === undefined) continue
      footer(presented.outcome, view)
      if (!warm) {
        warm = true
        markWarm()
      }
      if (presented._tag === "Quit") {
        goodbye(session)
        return 130
      }
    }
  })
