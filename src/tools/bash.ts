/**
 * `bash {command, timeout_ms?}`: runs a shell command in the session cwd.
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
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FileSystem from "effect/FileSystem"
import * as Schema from "effect/Schema"
import * as ProcEnviron from "../secrets/ProcEnviron.ts"
import * as Secrets from "../secrets/Secrets.ts"
import * as GitGuard from "./commands/GitGuard.ts"
import * as Background from "./process/Background.ts"
import { BASH } from "./commands/Shell.ts"
import * as OutputBuffer from "./process/OutputBuffer.ts"
import * as ProcessGroup from "./process/ProcessGroup.ts"
import { commandPrefix } from "./ReadOnlyCommands.ts"
import type * as Sandbox from "./Sandboxed.ts"
import * as Tool from "./Tool.ts"

export const DEFAULT_TIMEOUT_MS = 120_000
const MAX_TIMEOUT_MS = 600_000
const HEAD_BYTES = OutputBuffer.DEFAULT_HEAD_BYTES
const TAIL_BYTES = OutputBuffer.DEFAULT_TAIL_BYTES
/** How often running output is pushed to presenters (at most). */
const PROGRESS_INTERVAL_MS = 150
/** After the shell exits, how long output may keep arriving before leftovers are killed. */
const DRAIN_MS = 100

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

// ---------------------------------------------------------------------------
// Environment
// ---------------------------------------------------------------------------

/** What a command the gate allowed without asking runs with on top: git with its code-running configuration off. */
const confined = (ctx: Tool.ToolContext): Record<string, string> | undefined =>
  ctx.readOnly === true ? GitGuard.environment(process.env) : undefined

// ---------------------------------------------------------------------------
// Result shaping
// ---------------------------------------------------------------------------

const withStatus = (output: string, status: string): string =>
  output.length === 0 ? `(no output)\n${status}` : `${output}${output.endsWith("\n") ? "" : "\n"}${status}`

const timeoutLine = (signal: string, timeoutMs: number) => `[killed by ${signal} after timeout of ${timeoutMs} ms]`

const shorten = (command: string): string => {
  const lines = command.trim().split("\n")
  const first = lines[0] ?? ""
  const cut = first.length > 80 ? `${first.slice(0, 79)}…` : lines.length > 1 ? `${first} …` : first
  return `\`${cut}\``
}

// ---------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------

const progressLoop = (output: OutputBuffer.OutputBuffer, ctx: Tool.ToolContext) =>
  Effect.gen(function*() {
    let seen = 0
    for (;;) {
      yield* Effect.sleep(PROGRESS_INTERVAL_MS)
      const version = output.version()
      if (version !== seen) {
        seen = version
        yield* ctx.progress(output.render().text)
      }
    }
  })

/** What a local command runs: the shell with the command, or the sandbox's command line for it. */
type Local = { readonly shell: string; readonly env: Record<string, string> } | { readonly launch: Sandbox.Launch }

const spawnLocal = (local: Local, command: string, cwd: string, onOutput: (chunk: Uint8Array) => void) =>
  "launch" in local
    ? ProcessGroup.spawnProgram({ ...local.launch, cwd, onOutput }).pipe(
      Effect.mapError(({ code }) => `Cannot start the sandbox's ${local.launch.file}${code !== undefined ? ` (${code})` : ""}`)
    )
    : ProcessGroup.spawn({ shell: local.shell, command, cwd, env: local.env, onOutput })

const runLocal = Effect.fn("bash.runLocal")(function*(command: string, timeoutMs: number, ctx: Tool.ToolContext, local: Local) {
  const output = OutputBuffer.make(HEAD_BYTES, TAIL_BYTES)
  const redacting = Secrets.registry().byteStream()
  const onOutput = (chunk: Uint8Array) => output.push(redacting.push(chunk))

  return yield* Effect.acquireUseRelease(
    spawnLocal(local, command, ctx.cwd, onOutput),
    (group) =>
      Effect.gen(function*() {
        const progress = yield* Effect.forkChild(progressLoop(output, ctx))
        const exit = yield* Deferred.await(group.exited).pipe(
          Effect.raceFirst(Effect.sleep(timeoutMs).pipe(Effect.as(undefined)))
        )
        let status: string
        let exitCode: number | null = null
        if (exit === undefined) {
          const signal = yield* ProcessGroup.terminate(group)
          yield* ProcessGroup.awaitFor(group.exited, 250)
          status = timeoutLine(signal ?? "SIGTERM", timeoutMs)
        } else {
          // Let buffered output arrive, then kill what the command left behind (`cmd &`).
          yield* ProcessGroup.awaitFor(group.drained, DRAIN_MS)
          const leftovers = yield* ProcessGroup.terminate(group)
          exitCode = exit.code
          status = exit.code !== null ? `[exit code ${exit.code}]` : `[killed by ${exit.signal ?? "a signal"}]`
          if (leftovers !== null) status += `\n[background processes still running at exit were killed (${leftovers})]`
        }
        yield* ProcessGroup.awaitFor(group.drained, DRAIN_MS)
        yield* Fiber.interrupt(progress)
        output.push(redacting.flush())
        const rendered = output.render()
        const details = { output: rendered.text, exitCode, truncated: rendered.truncated }
        const blocked = "launch" in local ? ctx.sandbox?.explain(rendered.text) : undefined
        const content = withStatus(rendered.text, blocked === undefined ? status : `${status}\n${blocked}`)
        return exitCode === 0 ? Tool.ok(content, details) : Tool.error(content, details)
      }),
    (group) => ProcessGroup.release(group)
  )
})

/**
 * Runs the command: in the session's sandbox when it has one that takes it (locally: a
 * client's terminal is outside any sandbox), otherwise as before, in the client's terminal
 * when it offers one.
 */
const run = Effect.fn("bash.run")(function*(args: Params, timeoutMs: number, ctx: Tool.ToolContext) {
  const fs = yield* FileSystem.FileSystem
  const isDirectory = yield* fs.stat(ctx.cwd).pipe(
    Effect.map((info) => info.type === "Directory"),
    Effect.orElseSucceed(() => false)
  )
  const terminal = ctx.client?.terminal
  if (!isDirectory && terminal === undefined) return Tool.error(`The working directory does not exist: ${ctx.cwd}`)
  const shell = (yield* fs.exists(BASH).pipe(Effect.orElseSucceed(() => false))) ? BASH : "/bin/sh"
  const env = { ...Secrets.childEnv(), ...confined(ctx) }
  const outside = (): Effect.Effect<Tool.ToolOutput, string, Tool.ToolEnv> =>
    terminal !== undefined
      ? runInClient(terminal, args.command, timeoutMs, ctx)
      : isDirectory
      ? runLocal(args.command, timeoutMs, ctx, { shell, env })
      : Effect.succeed(Tool.error(`The working directory does not exist: ${ctx.cwd}`))
  if (ctx.sandbox === undefined) return yield* outside()
  if (!isDirectory) return Tool.error(`The working directory does not exist: ${ctx.cwd}`)
  return yield* ctx.sandbox.prepare(
    { file: shell, args: ["-c", args.command], cwd: ctx.cwd, env },
    { readOnly: ctx.readOnly === true, outside: args.sandbox === false, required: false },
    (launch) =>
      (launch === undefined ? outside() : runLocal(args.command, timeoutMs, ctx, { launch })).pipe(
        Effect.catch((message: string) => Effect.succeed(Tool.error(message)))
      )
  ).pipe(Effect.catch((reason: string) => Effect.succeed(Tool.error(`Not run: ${reason}`))))
})

/**
 * Starts the command in the session's background (`Background.ts`) and says its id. Always
 * local, never in a client's terminal (a terminal is gone with the call that made it); in the
 * sandbox exactly as a foreground command would be: `prepare`'s descriptors are inherited
 * before it returns.
 */
const runInBackground = Effect.fn("bash.runInBackground")(function*(args: Params, ctx: Tool.ToolContext, shells: Background.Shells) {
  const fs = yield* FileSystem.FileSystem
  const isDirectory = yield* fs.stat(ctx.cwd).pipe(Effect.map((info) => info.type === "Directory"), Effect.orElseSucceed(() => false))
  if (!isDirectory) return Tool.error(`The working directory does not exist: ${ctx.cwd}`)
  const shell = (yield* fs.exists(BASH).pipe(Effect.orElseSucceed(() => false))) ? BASH : "/bin/sh"
  const env = { ...Secrets.childEnv(), ...confined(ctx) }
  const start = (local: Local) =>
    shells.start({
      command: args.command,
      sandboxed: "launch" in local,
      timeoutMs: args.timeout_ms,
      spawn: (onOutput) => spawnLocal(local, args.command, ctx.cwd, onOutput)
    }).pipe(
      Effect.map((id) =>
        Tool.ok(
          `Started in the background as ${id}${"launch" in local ? " (in the sandbox)" : ""}. ` +
            `Read what it prints with bash_output {"id": "${id}"}; stop it with kill_shell {"id": "${id}"}. ` +
            "It runs until it exits or is stopped, and at the latest until the session ends."
        )
      ),
      Effect.catch((message: string) => Effect.succeed(Tool.error(message)))
    )
  if (ctx.sandbox === undefined) return yield* start({ shell, env })
  return yield* ctx.sandbox.prepare(
    { file: shell, args: ["-c", args.command], cwd: ctx.cwd, env },
    { readOnly: ctx.readOnly === true, outside: args.sandbox === false, required: false },
    (launch) => start(launch === undefined ? { shell, env } : { launch })
  ).pipe(Effect.catch((reason: string) => Effect.succeed(Tool.error(`Not run: ${reason}`))))
})

const runInClient = (terminal: Tool.ClientTerminal, command: string, timeoutMs: number, ctx: Tool.ToolContext) =>
  terminal.run({
    toolCallId: ctx.toolCallId,
    command,
    cwd: ctx.cwd,
    ...(ctx.readOnly === true ? { env: confined(ctx) } : {}),
    timeoutMs,
    outputByteLimit: HEAD_BYTES + TAIL_BYTES
  }).pipe(
    Effect.map((result) => {
      // The client was asked for a limit; bound again in case it ignored it.
      const rendered = OutputBuffer.boundString(Secrets.redact(result.output), HEAD_BYTES, TAIL_BYTES)
      const truncated = result.truncated || rendered.truncated
      const status = result.timedOut
        ? timeoutLine(result.signal ?? "SIGTERM", timeoutMs)
        : result.exitCode !== null
        ? `[exit code ${result.exitCode}]`
        : result.signal !== null
        ? `[killed by ${result.signal}]`
        : "[exit status unknown]"
      const exitCode = result.timedOut ? null : result.exitCode
      const details = { output: rendered.text, exitCode, truncated, terminalId: result.terminalId }
      const content = withStatus(truncated && !rendered.truncated ? `[output truncated by the terminal]\n${rendered.text}` : rendered.text, status)
      return exitCode === 0 ? Tool.ok(content, details) : Tool.error(content, details)
    }),
    Effect.catch((message: string) => Effect.succeed(Tool.error(`The client's terminal could not run the command: ${message}`)))
  )

export const bash = Tool.define<Params>({
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
      if (args.run_in_background !== true) return yield* run(args, args.timeout_ms ?? DEFAULT_TIMEOUT_MS, ctx)
      const shells = yield* Background.Current
      return shells === undefined
        ? Tool.error("Background commands are not available here: run the command without run_in_background.")
        : yield* runInBackground(args, ctx, shells)
    }).pipe(Effect.catch((message: string) => Effect.succeed(Tool.error(message))))
})
