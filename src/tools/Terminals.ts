/**
 * Where a turn's commands run, as one service chosen once per turn (`runtime/TurnServices.ts`):
 *
 * - `local`: a process group of Skein's own (`process/ProcessGroup.ts`);
 * - `client(terminal)`: the client's terminal the user can watch (ACP `terminal/*`), for
 *   commands run to their end; background commands stay local (a terminal is gone with the
 *   call that made it);
 * - `sandboxed(sandbox, outside)`: through the session's sandbox (`SessionSandbox.prepare`); a
 *   command it lets run outside (the model asked and was allowed, or `auto` found no sandbox)
 *   runs where `outside` runs it.
 *
 * Each gives the model's result (`ToolOutput`): output bounded head and tail, secrets redacted
 * as it arrives, a status line (exit code, signal, timeout), and when the sandbox stopped
 * something, a line saying so. A command never outlives its call (foreground) or its session
 * (background).
 */
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FileSystem from "effect/FileSystem"
import * as Secrets from "../secrets/Secrets.ts"
import * as GitGuard from "./commands/GitGuard.ts"
import { BASH } from "./commands/Shell.ts"
import type * as Background from "./process/Background.ts"
import * as OutputBuffer from "./process/OutputBuffer.ts"
import * as ProcessGroup from "./process/ProcessGroup.ts"
import type { Launch, SessionSandbox } from "./Sandboxed.ts"
import * as Tool from "./Tool.ts"

export const HEAD_BYTES = OutputBuffer.DEFAULT_HEAD_BYTES
const TAIL_BYTES = OutputBuffer.DEFAULT_TAIL_BYTES
/** How often running output is pushed to presenters (at most). */
const PROGRESS_INTERVAL_MS = 150
/** After the shell exits, how long output may keep arriving before leftovers are killed. */
const DRAIN_MS = 100

/** A command of a tool call. */
export interface Command {
  /** Run with `bash -c` (`/bin/sh` where there is no bash). */
  readonly command: string
  readonly cwd: string
  readonly toolCallId: string
  /** The gate allowed it because it only reads: git runs with its code-running configuration off, the sandbox mounts the roots read-only. */
  readonly readOnly: boolean
  /** The model asked to run it outside the sandbox, and was allowed. */
  readonly outside: boolean
}

/** A command run to its end (or its timeout), its output streamed to `progress` as it runs. */
export interface Foreground extends Command {
  readonly timeoutMs: number
  readonly progress: (output: string) => Effect.Effect<void>
}

/** A command started in the session's background (`shells`); stopped after `timeoutMs` when given. */
export interface Started extends Command {
  readonly timeoutMs: number | undefined
  readonly shells: Background.Shells
}

/** The client's terminal (ACP `terminal/*`). */
export interface ClientTerminal {
  /** Runs `command` through the client and returns its (bounded) output and exit status. */
  readonly run: (options: {
    /** The tool call running it, so the client can show the terminal inside it. */
    readonly toolCallId?: string | undefined
    readonly command: string
    readonly cwd: string
    /** Variables to set on top of the terminal's environment. */
    readonly env?: Readonly<Record<string, string>> | undefined
    readonly timeoutMs: number
    readonly outputByteLimit: number
  }) => Effect.Effect<
    {
      /** The client's terminal it ran in: presenters keep showing it as the call's content. */
      readonly terminalId: string
      readonly output: string
      readonly truncated: boolean
      readonly exitCode: number | null
      readonly signal: string | null
      readonly timedOut: boolean
    },
    string
  >
}

export interface Shape {
  readonly run: (command: Foreground) => Effect.Effect<Tool.ToolOutput, never, Tool.ToolEnv>
  readonly start: (command: Started) => Effect.Effect<Tool.ToolOutput, never, Tool.ToolEnv>
  /** The line telling the model that the sandbox stopped a command it ran, when `output` shows it did. */
  readonly explain: (output: string) => string | undefined
}

// ---------------------------------------------------------------------------
// Environment
// ---------------------------------------------------------------------------

/** What a command the gate allowed without asking runs with on top: git with its code-running configuration off. */
const confined = (readOnly: boolean): Record<string, string> | undefined => (readOnly ? GitGuard.environment(process.env) : undefined)

const environment = (command: Command): Record<string, string> => ({ ...Secrets.childEnv(), ...confined(command.readOnly) })

const isDirectory = (cwd: string) =>
  Effect.flatMap(Effect.service(FileSystem.FileSystem), (fs) =>
    fs.stat(cwd).pipe(Effect.map((info) => info.type === "Directory"), Effect.orElseSucceed(() => false)))

const shell = Effect.flatMap(Effect.service(FileSystem.FileSystem), (fs) =>
  Effect.map(fs.exists(BASH).pipe(Effect.orElseSucceed(() => false)), (found) => (found ? BASH : "/bin/sh")))

const missing = (cwd: string) => Tool.error(`The working directory does not exist: ${cwd}`)

// ---------------------------------------------------------------------------
// Result shaping
// ---------------------------------------------------------------------------

const withStatus = (output: string, status: string): string =>
  output.length === 0 ? `(no output)\n${status}` : `${output}${output.endsWith("\n") ? "" : "\n"}${status}`

const timeoutLine = (signal: string, timeoutMs: number) => `[killed by ${signal} after timeout of ${timeoutMs} ms]`

// ---------------------------------------------------------------------------
// Local processes
// ---------------------------------------------------------------------------

const progressLoop = (output: OutputBuffer.OutputBuffer, progress: Foreground["progress"]) =>
  Effect.gen(function*() {
    let seen = 0
    for (;;) {
      yield* Effect.sleep(PROGRESS_INTERVAL_MS)
      const version = output.version()
      if (version !== seen) {
        seen = version
        yield* progress(output.render().text)
      }
    }
  })

/** What a local command runs: the shell with the command, or the sandbox's command line for it. */
type Local = { readonly shell: string; readonly env: Record<string, string> } | { readonly launch: Launch }

const spawnLocal = (local: Local, command: string, cwd: string, onOutput: (chunk: Uint8Array) => void) =>
  "launch" in local
    ? ProcessGroup.spawnProgram({ ...local.launch, cwd, onOutput }).pipe(
      Effect.mapError(({ code }) => `Cannot start the sandbox's ${local.launch.file}${code !== undefined ? ` (${code})` : ""}`)
    )
    : ProcessGroup.spawn({ shell: local.shell, command, cwd, env: local.env, onOutput })

const runLocal = Effect.fn("bash.runLocal")(function*(command: Foreground, local: Local, explain: Shape["explain"]) {
  const output = OutputBuffer.make(HEAD_BYTES, TAIL_BYTES)
  const redacting = Secrets.registry().byteStream()
  const onOutput = (chunk: Uint8Array) => output.push(redacting.push(chunk))

  return yield* Effect.acquireUseRelease(
    spawnLocal(local, command.command, command.cwd, onOutput),
    (group) =>
      Effect.gen(function*() {
        const progress = yield* Effect.forkChild(progressLoop(output, command.progress))
        const exit = yield* Deferred.await(group.exited).pipe(
          Effect.raceFirst(Effect.sleep(command.timeoutMs).pipe(Effect.as(undefined)))
        )
        let status: string
        let exitCode: number | null = null
        if (exit === undefined) {
          const signal = yield* ProcessGroup.terminate(group)
          yield* ProcessGroup.awaitFor(group.exited, 250)
          status = timeoutLine(signal ?? "SIGTERM", command.timeoutMs)
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
        const blocked = explain(rendered.text)
        const content = withStatus(rendered.text, blocked === undefined ? status : `${status}\n${blocked}`)
        return exitCode === 0 ? Tool.ok(content, details) : Tool.error(content, details)
      }),
    (group) => ProcessGroup.release(group)
  ).pipe(Effect.catch((message: string) => Effect.succeed(Tool.error(message))))
})

/** Starts the command in the session's background and says its id. */
const startLocal = (command: Started, local: Local) =>
  command.shells.start({
    command: command.command,
    sandboxed: "launch" in local,
    timeoutMs: command.timeoutMs,
    spawn: (onOutput) => spawnLocal(local, command.command, command.cwd, onOutput)
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

const nothingStopped: Shape["explain"] = () => undefined

const local: Shape = {
  run: (command) =>
    Effect.gen(function*() {
      if (!(yield* isDirectory(command.cwd))) return missing(command.cwd)
      return yield* runLocal(command, { shell: yield* shell, env: environment(command) }, nothingStopped)
    }),
  start: (command) =>
    Effect.gen(function*() {
      if (!(yield* isDirectory(command.cwd))) return missing(command.cwd)
      return yield* startLocal(command, { shell: yield* shell, env: environment(command) })
    }),
  explain: nothingStopped
}

// ---------------------------------------------------------------------------
// The client's terminal
// ---------------------------------------------------------------------------

const runInClient = (terminal: ClientTerminal, command: Foreground) =>
  terminal.run({
    toolCallId: command.toolCallId,
    command: command.command,
    cwd: command.cwd,
    ...(command.readOnly ? { env: confined(true) } : {}),
    timeoutMs: command.timeoutMs,
    outputByteLimit: HEAD_BYTES + TAIL_BYTES
  }).pipe(
    Effect.map((result) => {
      // The client was asked for a limit; bound again in case it ignored it.
      const rendered = OutputBuffer.boundString(Secrets.redact(result.output), HEAD_BYTES, TAIL_BYTES)
      const truncated = result.truncated || rendered.truncated
      const status = result.timedOut
        ? timeoutLine(result.signal ?? "SIGTERM", command.timeoutMs)
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

/** Commands run to their end in the client's terminal (whatever its cwd is to it); background ones locally. */
const client = (terminal: ClientTerminal): Shape => ({ run: (command) => runInClient(terminal, command), start: local.start, explain: nothingStopped })

// ---------------------------------------------------------------------------
// The sandbox
// ---------------------------------------------------------------------------

/**
 * Commands through the session's sandbox (locally: a client's terminal is outside any
 * sandbox); those it lets run outside run as `outside` runs them, in the background locally.
 */
const sandboxed = (sandbox: SessionSandbox, outside: Shape): Shape => {
  const through = <A extends Command>(command: A, use: (launch: Launch | undefined, local: Local) => Effect.Effect<Tool.ToolOutput, never, Tool.ToolEnv>) =>
    Effect.gen(function*() {
      if (!(yield* isDirectory(command.cwd))) return missing(command.cwd)
      const file = yield* shell
      const env = environment(command)
      return yield* sandbox.prepare(
        { file, args: ["-c", command.command], cwd: command.cwd, env },
        { readOnly: command.readOnly, outside: command.outside, required: false },
        (launch) => use(launch, launch === undefined ? { shell: file, env } : { launch })
      ).pipe(Effect.catch((reason: string) => Effect.succeed(Tool.error(`Not run: ${reason}`))))
    })
  return {
    run: (command) => through(command, (launch, local) => (launch === undefined ? outside.run(command) : runLocal(command, local, sandbox.explain))),
    // `prepare`'s descriptors are inherited before `start` returns: in the sandbox exactly as a foreground command.
    start: (command) => through(command, (_launch, local) => startLocal(command, local)),
    explain: sandbox.explain
  }
}

export class Terminals extends Context.Service<Terminals, Shape>()("skein/tools/Terminals") {
  /** Skein's own processes. */
  static readonly local: Shape = local
  /** The client's terminal for commands run to their end. */
  static readonly client: (terminal: ClientTerminal) => Shape = client
  /** The session's sandbox, `outside` for what it lets run outside it. */
  static readonly sandboxed: (sandbox: SessionSandbox, outside: Shape) => Shape = sandboxed
}
