/**
 * `bash {command, timeout_ms?}`: runs a shell command in the session cwd, where the turn's
 * `Terminals` run commands (Skein's own processes, the client's terminal, the sandbox).
 *
 * The command is the leader of its own process group; on timeout, on
 * interruption (the user cancelled) and when it finishes, whatever is left of
 * the group is killed (SIGTERM, then SIGKILL) and the call returns only once
 * it is dead. Output is bounded in memory (head and tail kept, the middle
 * counted), streamed to presenters while it runs, and the environment is the
 * process's minus secrets (`secrets/Secrets.ts`). Secret values are redacted
 * from the output as it arrives, before it is bounded, so a cut never leaves
 * part of one behind. A non-zero exit is a result with `ok: false`.
 *
 * `run_in_background: true` starts the command the same way (the gate asks about it as about
 * any command; the sandbox takes it as any command) in the session's background
 * (`process/Background.ts`) and answers with its id at once; `bash_output` and `kill_shell`
 * (`background.ts`) read and stop it. Those always run locally, never in a client's terminal.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as ProcEnviron from "../secrets/ProcEnviron.ts"
import * as Edges from "./Edges.ts"
import * as Background from "./process/Background.ts"
import { commandPrefix } from "./ReadOnlyCommands.ts"
import * as Terminals from "./Terminals.ts"
import * as Tool from "./Tool.ts"

export const DEFAULT_TIMEOUT_MS = 120_000
const MAX_TIMEOUT_MS = 600_000
const HEAD_BYTES = Terminals.HEAD_BYTES

const Params = Schema.Struct({
  command: Schema.String.annotate({ description: "The shell command to run (bash -c), in the working directory" }),
  sandbox: Schema.optionalKey(Schema.Boolean.annotate({
    description: "false: ask the user to run this command outside the sandbox (needs a reason). Only when the sandbox blocked something the command must do."
  })),
  reason: Schema.optionalKey(Schema.String.annotate({ description: "Why the command must run outside the sandbox (shown to the user with sandbox: false)" })),
  timeout_ms: Schema.optionalKey(
    Schema.Int.check(Schema.isGreaterThan(0), Schema.isLessThanOrEqualTo(MAX_TIMEOUT_MS)).annotate({
      description: `Timeout in milliseconds (default ${DEFAULT_TIMEOUT_MS}, at most ${MAX_TIMEOUT_MS}; in the background: none unless given)`
    })
  ),
  run_in_background: Schema.optionalKey(Schema.Boolean.annotate({
    description: "true: start the command and return its id at once (a dev server, a watcher); read its output with bash_output, stop it with kill_shell"
  }))
})
type Params = typeof Params.Type

const shorten = (command: string): string => {
  const lines = command.trim().split("\n")
  const first = lines[0] ?? ""
  const cut = first.length > 80 ? `${first.slice(0, 79)}…` : lines.length > 1 ? `${first} …` : first
  return `\`${cut}\``
}

export const bash = Tool.define<Params, Terminals.Terminals | Edges.Emit>({
  name: "bash",
  kind: "execute",
  mutating: true,
  description: [
    "Run a shell command with `bash -c` in the working directory and return its output (stdout and stderr merged) and exit code.",
    `Times out after ${DEFAULT_TIMEOUT_MS / 1000} s by default; set timeout_ms (at most ${MAX_TIMEOUT_MS}) for longer commands. On timeout the command and all its child processes are killed.`,
    `Output is capped: the first and last ${HEAD_BYTES / 1024} KB are kept and the middle is dropped, so pipe long output through head, tail or grep.`,
    "Each call is a fresh non-interactive shell with stdin closed and no terminal: `cd` and exported variables do not carry over, and commands that prompt for input fail.",
    "Processes left running in the background (`&`) are killed when the command finishes: to start a server or a watcher that must keep running, set run_in_background: true instead.",
    `With run_in_background: true the call returns an id (bg1, bg2, …) at once and the command runs on, in this session's sandbox when there is one (its servers are reachable from later commands) but never in the client's terminal; bash_output {id} returns what it printed since last read (bounded like here) and whether it still runs, kill_shell {id} stops it and all it started. At most ${Background.DEFAULT_MAX_RUNNING} run at once; all stop when the session ends.`,
    "API keys, tokens and passwords are removed from the environment. Prefer the read, grep and glob tools for reading and searching files.",
    "When Skein's sandbox is on, commands run in it: they may write only in the workspace and /tmp (a private one), cannot read credentials (~/.ssh, ~/.aws, …), have no network except the hosts the user allowed (through a proxy), and see only their own processes. Caches go to /tmp.",
    "If the sandbox blocks something the command must do, call bash again with sandbox: false and a reason; the user is asked each time."
  ].join(" "),
  parameters: Params,
  title: (args) => (args.run_in_background === true ? `${shorten(args.command)} in the background` : shorten(args.command)),
  locations: () => [],
  scope: (args) => {
    const prefix = commandPrefix(args.command)
    return { kind: "command", value: prefix, label: `\`${prefix}\`` }
  },
  execute: (args, ctx) =>
    Effect.gen(function*() {
      if (args.command.trim() === "") return Tool.error("The command is empty")
      if (args.command.includes("\0")) return Tool.error("The command contains a NUL character")
      // Before any command can look at /proc/<skein>/environ (a client's terminal too).
      ProcEnviron.hideSecrets()
      // Where it runs (Skein's processes, the client's terminal, the sandbox) was decided for the turn.
      const terminals = yield* Terminals.Terminals
      const command = { command: args.command, cwd: ctx.cwd, toolCallId: ctx.toolCallId, readOnly: ctx.readOnly === true, outside: args.sandbox === false }
      if (args.run_in_background !== true) {
        const emit = yield* Edges.Emit
        return yield* terminals.run({ ...command, timeoutMs: args.timeout_ms ?? DEFAULT_TIMEOUT_MS, progress: (output) => emit.progress(ctx.toolCallId, output) }).pipe(
          Effect.withSpan("bash.run")
        )
      }
      const shells = yield* Background.Current
      return shells === undefined
        ? Tool.error("Background commands are not available here: run the command without run_in_background.")
        : yield* terminals.start({ ...command, timeoutMs: args.timeout_ms, shells }).pipe(Effect.withSpan("bash.runInBackground"))
    }).pipe(Effect.catch((message: string) => Effect.succeed(Tool.error(message))))
})
