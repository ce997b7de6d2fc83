/**
 * `skein run` kept open: prompt after prompt in one session, until the user leaves.
 *
 * At the prompt, Enter sends; local commands (`Local.ts`) are answered here without a model
 * call; `@path` attaches a file (`Mentions.ts`); Shift-Tab cycles the mode. Ctrl-C clears a
 * line that has text; Ctrl-C on an empty line, Ctrl-D, `/exit` or `/quit` leave (exit 0).
 * While a turn runs, typing goes on: Enter queues the text as the next prompt, Ctrl-S steers
 * the running turn with it, Esc or Ctrl-C interrupt the turn (queued prompts come back to the
 * prompt). At a question, Esc or Ctrl-C reject the call and stop the turn. The session id is
 * printed on the way out, to come back with `--resume`.
 */
import * as Effect from "effect/Effect"
import type { Canonical } from "../../log/Event.ts"
import type { Runtime } from "../../runtime/Api.ts"
import type { Session, TurnOutcome } from "../../session/Protocol.ts"
import { markWarm } from "../CodeCache.ts"
import type { Input, TurnKey } from "./Input.ts"
import * as Local from "./Local.ts"
import * as Mentions from "./Mentions.ts"
import * as Present from "./Present.ts"
import { usageText, type View } from "./Render.ts"
import * as Screen from "./Screen.ts"
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

/** After a turn: how it stopped (when not normally and not with an error already shown), the context used and the cost. */
const footer = (outcome: TurnOutcome, view: View | undefined): void => {
  const parts: Array<string> = []
  if (outcome.stopReason !== "end_turn" && outcome.error === undefined) parts.push(`[${outcome.stopReason}]`)
  const usage = view?.usage()
  if (usage !== undefined) parts.push(usageText(usage))
  if (parts.length > 0) Terminal.noteLine(parts.join(" "), Terminal.dim)
}

export const goodbye = (session: Session): void => {
  Screen.clear()
  Terminal.noteLine(`Session ${session.id} (continue it with: skein run --resume ${session.id})`, Terminal.dim)
}

interface Options {
  readonly runtime: Runtime["Service"]
  readonly input: Input
  readonly view: View
  readonly version: string
}

const HINT = "enter: send · ctrl-j, alt-enter or \\ enter: new line · shift-tab: mode · /help · ctrl-d: leave"

export const loop = (first: Session, options: Options) =>
  Effect.gen(function*() {
    const { input, view, runtime } = options
    let session = first
    /** Prompts typed during a turn with Enter: sent one by one after it. */
    const queued: Array<string> = []
    const showQueue = () =>
      Screen.set("queue", queued.length === 0 ? undefined : { lines: queued.map((q) => Terminal.dim("err", `  queued: ${clip(q, 100)}`)) })
    const mode = Effect.map(Effect.orElseSucceed(session.settings, () => undefined), (s) => s?.mode ?? "default")
    const setMode = (next: string) =>
      session.setMode(next).pipe(
        Effect.andThen(Effect.sync(() => Terminal.noteLine(`[mode: ${next}]`, Terminal.dim))),
        Effect.catch((e) => Effect.sync(() => Terminal.noteLine(e.message, Terminal.red)))
      )
    const cycle = Effect.flatMap(mode, (m) => setMode(Local.nextMode(m)))

    const onKey = (key: Exclude<TurnKey, { readonly _tag: "Interrupt" }>): Effect.Effect<void> => {
      switch (key._tag) {
        case "Queue":
          return Effect.sync(() => {
            queued.push(key.text)
            showQueue()
          })
        case "Steer":
          return session.send({ _tag: "Steer", content: [{ type: "text", text: key.text }] }).pipe(
            Effect.andThen(Effect.sync(() => Terminal.noteLine(`[steering] ${clip(key.text, 100)}`, Terminal.dim))),
            Effect.catch((e) => Effect.sync(() => Terminal.noteLine(`Could not steer: ${e.message}`, Terminal.red)))
          )
        case "Cycle":
          return cycle
        default: {
          const never: never = key
          return never
        }
      }
    }

    const local = (command: Local.Local): Effect.Effect<"leave" | undefined> =>
      Effect.gen(function*() {
        switch (command._tag) {
          case "help": {
            const commands = runtime.commands === undefined ? [] : yield* runtime.commands(session.cwd)
            Terminal.note(Local.help(commands))
            return
          }
          case "exit":
            return "leave"
          case "clear": {
            const current = yield* mode
            const next = yield* Effect.result(runtime.newSession({ cwd: session.cwd, mode: current }))
            if (next._tag === "Failure") {
              Terminal.noteLine(`Could not start a new session: ${next.failure.message}`, Terminal.red)
              return
            }
            Terminal.noteLine(`New session ${next.success.id} (the last one stays: skein run --resume ${session.id})`, Terminal.dim)
            session = next.success
            return
          }
          case "model": {
            const settings = yield* Effect.orElseSucceed(session.settings, () => undefined)
            const entries = runtime.models?.entries ?? []
            if (command.id === undefined) {
              const current = settings?.model ?? runtime.models?.defaultModel
              if (entries.length === 0) Terminal.noteLine(`Model: ${current ?? "the provider's default"} (no other model is configured)`)
              else Terminal.note(`${entries.map((e) => `${e.key === current ? "❯" : " "} ${e.key}${e.info.contextWindow !== undefined ? `  (${Math.round(e.info.contextWindow / 1000)}k context)` : ""}`).join("\n")}\n`)
              return
            }
            const found = entries.find((e) => e.key === command.id || e.info.id === command.id)
            yield* session.setConfig("model", found?.key ?? command.id).pipe(
              Effect.andThen(Effect.sync(() => Terminal.noteLine(`[model: ${found?.key ?? command.id}]`, Terminal.dim))),
              Effect.catch((e) => Effect.sync(() => Terminal.noteLine(e.message, Terminal.red)))
            )
            return
          }
          case "mode": {
            const current = yield* mode
            if (command.id === undefined) {
              Terminal.note(`${Local.MODES.map((m) => `${m === current ? "❯" : " "} ${m}`).join("\n")}\n`)
              return
            }
            yield* setMode(command.id)
            return
          }
          case "context":
          case "cost": {
            const usage = view.usage()
            if (usage === undefined) Terminal.noteLine("Not known yet: no model call has reported usage in this run.", Terminal.dim)
            else if (command._tag === "context") Terminal.noteLine(usageText({ used: usage.used, size: usage.size }))
            else Terminal.noteLine(usage.cost === undefined ? "The cost is not known (no price is configured for this model)." : `$${usage.cost.toFixed(4)} so far in this session`)
            return
          }
          default: {
            const never: never = command
            return never
          }
        }
      })

    Terminal.noteLine(`skein ${options.version} · ${session.cwd} · mode ${yield* mode}`, Terminal.dim)
    let warm = false
    for (;;) {
      const next = queued.shift()
      showQueue()
      let text: string
      if (next !== undefined) {
        Terminal.note(Terminal.bold("err", `> ${clip(next, 200)}\n`), "\n")
        text = next
      } else {
        const line = yield* input.line({ prompt: "> ", hint: `${HINT} · mode: ${yield* mode}` })
        if (line._tag === "End" || (line._tag === "Interrupt" && line.empty)) break
        if (line._tag === "Cycle") {
          yield* cycle
          continue
        }
        if (line._tag === "Interrupt") continue
        text = line.text
      }
      const command = Local.parse(text)
      if (command !== undefined) {
        if ((yield* local(command)) === "leave") break
        continue
      }
      const settings = yield* Effect.orElseSucceed(session.settings, () => undefined)
      const images = runtime.models === undefined ? undefined : runtime.models.info(settings?.model ?? runtime.models.defaultModel)?.images
      const expanded = Mentions.expand(text, { cwd: session.cwd, images })
      for (const note of expanded.notes) Terminal.noteLine(note, Terminal.dim)
      const child = (id: string) => runtime.getSession(id)
      const presented = yield* Present.turn(session, expanded.content, { show: view.event, view, input, child, onKey }).pipe(
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
      if (presented.interrupted && queued.length > 0) {
        // An interrupted turn takes the prompts queued behind it back to the prompt, to edit or send.
        input.restore(queued.splice(0).join("\n"))
        showQueue()
      }
      if (!warm) {
        warm = true
        markWarm()
      }
    }
    goodbye(session)
    return 0
  })
