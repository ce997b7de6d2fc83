/**
 * The `skein` command. Keeps start-up small: argument parsing is Node's own,
 * and each command builds only the layers it needs.
 */
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Logger from "effect/Logger"
import * as Stderr from "../secrets/Stderr.ts"
import * as Telemetry from "../telemetry/Telemetry.ts"
import * as Descriptors from "../tools/process/Descriptors.ts"
import { VERSION } from "../version.ts"
import * as Acp from "./acp.ts"
import * as Options from "./Options.ts"

type Command = (args: ReadonlyArray<string>) => Effect.Effect<number, unknown>

interface CommandModule {
  readonly run: Command
  /**
   * Exit code after SIGINT/SIGTERM: `acp` shuts down cleanly (0), `run` was interrupted (130).
   * After SIGHUP, `acp` still exits 0; the others exit 129 (128 + SIGHUP, what a shell reports
   * for a hangup).
   */
  readonly signalExitCode: number
}

/** The signals that shut a command down cleanly: each interrupts it, so every finalizer runs. */
const SHUTDOWN_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const
type ShutdownSignal = (typeof SHUTDOWN_SIGNALS)[number]

/** The exit code after `signal`: a hangup is not an interrupt by the user, unless the command exits 0 anyway. */
const exitCodeAfter = (signal: ShutdownSignal, signalExitCode: number) =>
  signal === "SIGHUP" && signalExitCode !== 0 ? 129 : signalExitCode

// `acp` is imported statically; every other command loads when it runs, so `acp` never
// evaluates their modules (the launcher's code cache makes loading them later cheap).
const commands: Record<string, () => Promise<CommandModule>> = {
  acp: () => Promise.resolve(Acp),
  run: () => import("./run.ts"),
  sessions: () => import("./sessions.ts"),
  replay: () => import("./replay.ts"),
  serve: () => import("./serve.ts"),
  monitor: () => import("./monitor.ts"),
  doctor: () => import("./doctor.ts"),
  setup: () => import("./setup.ts")
}

/** Reasons of the runtime's and the log's errors that are the user's to fix: a usage error (exit 2). */
const usageReasons: ReadonlySet<string> = new Set(["invalid_cwd", "invalid_mode", "invalid_request", "not_found", "invalid_config", "unknown_provider", "invalid"])

/**
 * A failure people read as one line: a usage error, or one of Skein's own errors (they carry a
 * message meant for people). Anything else is a defect and keeps its trace.
 */
const describe = (error: unknown): { readonly message: string; readonly usage: boolean } | undefined => {
  if (error instanceof Options.UsageError) return { message: error.message, usage: true }
  if (typeof error !== "object" || error === null || !("_tag" in error) || !("message" in error)) return undefined
  if (!["RuntimeError", "LogError", "SessionError", "RegistryError", "ConfigWriteError"].includes(String(error._tag))) return undefined
  const reason = "reason" in error ? String(error.reason) : ""
  return { message: String(error.message), usage: usageReasons.has(reason) }
}

/**
 * Runs a command effect; SIGINT, SIGTERM and SIGHUP interrupt it and shut everything down
 * cleanly (turns cancelled, child processes killed, logs synced, locks removed).
 *
 * SIGHUP is what an editor or terminal that goes away sends (Emacs on exit, a closed pty); by
 * default it would kill Skein on the spot. It stays handled after the first one (a hangup
 * often comes twice: from the kernel and from the shell), while a second SIGINT or SIGTERM
 * is left to its default, so a user can still force a stuck shutdown.
 */
const runMain = (effect: Effect.Effect<number, unknown>, signalExitCode: number) => {
  // Every log line goes to stderr, redacted.
  const fiber = Effect.runFork(effect.pipe(Effect.provideService(Logger.LogToStderr, true), Effect.provideService(Console.Console, Stderr.console)))
  let signalled: ShutdownSignal | undefined
  const onSignal = (signal: ShutdownSignal) => {
    if (signalled !== undefined) return
    signalled = signal
    Effect.runFork(Fiber.interrupt(fiber))
  }
  for (const signal of SHUTDOWN_SIGNALS) {
    if (signal === "SIGHUP") process.on(signal, onSignal)
    else process.once(signal, onSignal)
  }
  // Whoever reads our output may be gone (an editor that exited, `| head`): a failed write to
  // stdout or stderr must not end the process before its shutdown has run.
  process.stdout.on("error", () => {})
  process.stderr.on("error", () => {})
  fiber.addObserver((exit) => {
    let code: number
    if (Exit.isSuccess(exit)) {
      code = exit.value
    } else if (Cause.hasInterruptsOnly(exit.cause)) {
      code = signalled !== undefined ? exitCodeAfter(signalled, signalExitCode) : 1
    } else {
      const error = Cause.squash(exit.cause)
      const known = describe(error)
      if (known !== undefined) {
        Stderr.write(`skein: ${known.message}\n`)
        code = known.usage ? 2 : 1
      } else {
        Stderr.write(`skein: ${Cause.pretty(exit.cause)}\n`)
        code = 1
      }
    }
    process.exitCode = code
    // Nothing is left to do; leave even if a stray handle would keep Node alive.
    setImmediate(() => process.exit(code))
  })
}

const main = async () => {
  const [name, ...rest] = process.argv.slice(2)
  if (name === "--version" || name === "-v") {
    process.stdout.write(`${VERSION}\n`)
    return
  }
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    process.stdout.write(Options.HELP)
    return
  }
  const load = commands[name]
  if (load === undefined) {
    process.stderr.write(`skein: unknown command "${name}"\n\n${Options.HELP}`)
    process.exitCode = 2
    return
  }
  const command = await load()
  // What this process was started with beyond stdio (an editor's descriptors) is not Skein's:
  // closed before its first child, so no command, hook or server inherits it.
  Descriptors.own()
  // With an OTLP endpoint in the environment, the command's spans, metrics and logs are
  // exported (flushed when it ends); without one, the exporter is never loaded.
  const run = command.run(rest)
  runMain(Telemetry.enabled(process.env) ? Effect.provide(run, Telemetry.layer(process.env)) : run, command.signalExitCode)
}

void main()
