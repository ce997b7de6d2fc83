/**
 * `skein run [PROMPT]`: one turn in a terminal. Streams the answer to stdout,
 * shows tool calls as lines, and with `--json` prints every event as NDJSON.
 * The prompt comes from the arguments, or from stdin when it is piped.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import * as readline from "node:readline"
import { Skein } from "../index.ts"
import type { SessionEvent } from "../log/Event.ts"
import type { Asker, PermissionAnswer } from "../runtime/Gate.ts"
import { Runtime } from "../runtime/Runtime.ts"
import { skeinConfig } from "./Config.ts"
import * as Options from "./Options.ts"
import { markWarm } from "./CodeCache.ts"

export const signalExitCode = 130

const tty = process.stderr.isTTY === true
const dim = (s: string) => (tty ? `\x1b[2m${s}\x1b[0m` : s)
const firstLine = (s: string) => {
  const line = s.split("\n", 1)[0] ?? ""
  return line.length > 160 ? `${line.slice(0, 160)}…` : line
}

/** A human-readable rendering of one event, written as it arrives. */
export const render = (event: SessionEvent, out: (s: string) => void, err: (s: string) => void, state: { atLineStart: boolean }) => {
  const write = (s: string) => {
    if (s.length === 0) return
    out(s)
    state.atLineStart = s.endsWith("\n")
  }
  const line = (s: string) => write(`${state.atLineStart ? "" : "\n"}${s}\n`)
  switch (event.type) {
    case "text_delta":
      return write(event.data.text)
    case "thinking_delta":
      return err(dim(event.data.text))
    case "tool_call":
      return line(`→ ${event.data.title}`)
    case "tool_result":
      return line(event.data.ok ? `  ✓ ${firstLine(event.data.content)}` : `  ✗ ${firstLine(event.data.content)}`)
    case "turn_end":
      if (event.data.error !== undefined) line(event.data.error)
      else if (!state.atLineStart) write("\n")
      return
    case "mode_changed":
      return line(`[mode: ${event.data.mode}]`)
    case "notice":
      return line(event.data.text)
    default:
      return
  }
}

/** Asks at the terminal (stdin must be a TTY); anything but a clear answer is a denial. */
const terminalAsker: Asker = (request) =>
  Effect.callback<PermissionAnswer>((resume) => {
    const rl = readline.createInterface({ input: process.stdin, output: process.stderr, terminal: true })
    const always = request.options.find((o) => o.kind === "allow_always")?.name ?? "Always allow"
    const never = request.options.find((o) => o.kind === "reject_always")?.name ?? "Always reject"
    rl.question(
      `\nAllow ${request.toolCall.title}?  [y] once  [a] ${always}  [n] no  [N] ${never}  > `,
      (answer) => {
        rl.close()
        const choice = answer.trim()
        const optionId = choice === "y" || choice === "Y" || choice === "yes"
          ? "allow_once"
          : choice === "a"
          ? "allow_always"
          : choice === "N"
          ? "reject_always"
          : "reject_once"
        resume(Effect.succeed({ outcome: "selected", optionId }))
      }
    )
    rl.once("close", () => resume(Effect.succeed({ outcome: "cancelled" })))
    return Effect.sync(() => rl.close())
  })

const readStdin = () => (process.stdin.isTTY === true ? "" : fs.readFileSync(0, "utf8"))

export const run = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const parsed = yield* Effect.try({
      try: () => Options.parse(args, { ...Options.commonOptions, cwd: { type: "string" }, json: { type: "boolean" } }),
      catch: (e) => e
    })
    if (parsed.values.help === true) {
      process.stdout.write(Options.HELP)
      return 0
    }
    const prompt = parsed.positionals.length > 0 ? parsed.positionals.join(" ") : readStdin().trim()
    if (prompt.length === 0) return yield* Effect.fail(new Options.UsageError("skein run needs a PROMPT (as arguments or on stdin)"))
    const config = yield* skeinConfig(Options.common(parsed.values))
    const cwd = nodePath.resolve(typeof parsed.values.cwd === "string" ? parsed.values.cwd : process.cwd())
    const json = parsed.values.json === true

    return yield* Effect.scoped(Effect.gen(function*() {
      const runtime = yield* Runtime
      // Questions need a person at a terminal; piped runs deny what would need asking.
      const ask = process.stdin.isTTY === true && parsed.positionals.length > 0 ? terminalAsker : undefined
      const session = yield* runtime.newSession({ cwd, mode: config.mode, ask })
      const subscription = yield* session.subscribe
      const ticket = yield* session.submit([{ type: "text", text: prompt }])
      const state = { atLineStart: true }
      const out = (s: string) => void process.stdout.write(s)
      const err = (s: string) => void process.stderr.write(s)
      yield* Stream.fromSubscription(subscription).pipe(
        Stream.filter((event) => event.turn === ticket.turn),
        Stream.takeUntil((event) => event.type === "turn_end"),
        Stream.runForEach((event) =>
          Effect.sync(() => (json ? out(JSON.stringify(event) + "\n") : render(event, out, err, state)))
        )
      )
      const outcome = yield* Deferred.await(ticket.outcome)
      markWarm()
      if (!json) err(dim(`[${outcome.stopReason}] session ${session.id}\n`))
      return outcome.error !== undefined ? 1 : outcome.stopReason === "cancelled" ? 130 : 0
    })).pipe(Effect.provide(Skein.layer(config)))
  })
