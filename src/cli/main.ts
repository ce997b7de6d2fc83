/**
 * The `skein` command. Keeps start-up small: argument parsing is Node's own,
 * and each command builds only the layers it needs.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Logger from "effect/Logger"
import { VERSION } from "../version.ts"
import * as Acp from "./acp.ts"
import * as Options from "./Options.ts"

type Command = (args: ReadonlyArray<string>) => Effect.Effect<number, unknown>

export interface CommandModule {
  readonly run: Command
  /** Exit code after SIGINT/SIGTERM: `acp` shuts down cleanly (0), `run` was interrupted (130). */
  readonly signalExitCode: number
}

// `acp` is imported statically; every other command loads when it runs, so `acp` never
// evaluates their modules (the launcher's code cache makes loading them later cheap).
const commands: Record<string, () => Promise<CommandModule>> = {
  acp: () => Promise.resolve(Acp),
  run: () => import("./run.ts"),
  sessions: () => import("./sessions.ts"),
  replay: () => import("./replay.ts"),
  doctor: () => import("./doctor.ts")
}

/** Reasons of the runtime's and the log's errors that are the user's to fix: a usage error (exit 2). */
const usageReasons: ReadonlySet<string> = new Set(["invalid_cwd", "invalid_mode", "invalid_request", "not_found", "invalid_config", "unknown_provider"])

/**
 * A failure people read as one line: a usage error, or one of Skein's own errors (they carry a
 * message meant for people). Anything else is a defect and keeps its trace.
 */
const describe = (error: unknown): { readonly message: string; readonly usage: boolean } | undefined => {
  if (error instanceof Options.UsageError) return { message: error.message, usage: true }
  if (typeof error !== "object" || error === null || !("_tag" in error) || !("message" in error)) return undefined
  if (!["RuntimeError", "LogError", "SessionError", "RegistryError"].includes(String(error._tag))) return undefined
  const reason = "reason" in error ? String(error.reason) : ""
  return { message: String(error.message), usage: usageReasons.has(reason) }
}

/** Runs a command effect; SIGINT/SIGTERM interrupt it and shut everything down cleanly. */
const runMain = (effect: Effect.Effect<number, unknown>, signalExitCode: number) => {
  const fiber = Effect.runFork(effect.pipe(Effect.provideService(Logger.LogToStderr, true)))
  let signalled = false
  const onSignal = () => {
    if (signalled) return
    signalled = true
    Effect.runFork(Fiber.interrupt(fiber))
  }
  process.once("SIGINT", onSignal)
  process.once("SIGTERM", onSignal)
  fiber.addObserver((exit) => {
    let code: number
    if (Exit.isSuccess(exit)) {
      code = exit.value
    } else if (Cause.hasInterruptsOnly(exit.cause)) {
      code = signalled ? signalExitCode : 1
    } else {
      const error = Cause.squash(exit.cause)
      const known = describe(error)
      if (known !== undefined) {
        process.stderr.write(`skein: ${known.message}\n`)
        code = known.usage ? 2 : 1
      } else {
        process.stderr.write(`skein: ${Cause.pretty(exit.cause)}\n`)
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
  runMain(command.run(rest), command.signalExitCode)
}

void main()
