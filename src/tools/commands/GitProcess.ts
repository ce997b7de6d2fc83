/**
 * git as Skein itself runs it (the checkpoints' shadow repositories, child sessions'
 * worktrees): in a contained process group (ProcessGroup.ts) that is waited for and gone when
 * the call returns, bounded in time and in what it prints, with GitGuard's overrides (no
 * fsmonitor, no hooks, no pager, no network, no submodule recursion) and no automatic gc or
 * maintenance and no signing on top. Each caller's `Profile` says its bounds, any further
 * configuration, which of Skein's own `GIT_*` variables are dropped (so that nothing points git
 * at another repository, index or object store than the one asked for) and what is set last.
 *
 * Failures are messages (`string`), each caller words them as its own error.
 */
import * as NodeFs from "node:fs"
import * as Effect from "effect/Effect"
import * as Secrets from "../../secrets/Secrets.ts"
import * as ProcessGroup from "../process/ProcessGroup.ts"
import * as GitGuard from "./GitGuard.ts"

export interface Profile {
  /** A call longer than this is stopped. */
  readonly timeoutMs: number
  /** What a call may print, stdout and stderr together; more is a failure. */
  readonly maxOutputBytes: number
  /** Configuration on top of GitGuard's and `BASE_CONFIG`. */
  readonly config?: ReadonlyArray<readonly [string, string]> | undefined
  /** Variables of Skein's environment left out. */
  readonly drop: RegExp
  /** Variables set last, over everything else (a call's own `env` aside). */
  readonly env?: Readonly<Record<string, string>> | undefined
}

/** Nothing left running behind a call (no automatic gc or maintenance), nothing signed, paths as they are. */
const BASE_CONFIG: ReadonlyArray<readonly [string, string]> = [
  ["gc.auto", "0"],
  ["maintenance.auto", "false"],
  ["commit.gpgSign", "false"],
  ["core.quotePath", "false"]
]

/** The environment of a call: Skein's (secrets removed, `drop` left out), GitGuard's, the configuration, then `extra`. */
const environment = (profile: Profile, extra: Readonly<Record<string, string>>): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(Secrets.childEnv())) if (!profile.drop.test(name)) env[name] = value
  Object.assign(env, GitGuard.environment(env))
  const config = [...BASE_CONFIG, ...(profile.config ?? [])]
  const start = Number(env["GIT_CONFIG_COUNT"])
  config.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${start + i}`] = key
    env[`GIT_CONFIG_VALUE_${start + i}`] = value
  })
  env["GIT_CONFIG_COUNT"] = String(start + config.length)
  return { ...env, ...profile.env, ...extra }
}

export interface Ran {
  readonly code: number | null
  readonly stdout: Buffer
  readonly stderr: string
}

/** What git said on failure, briefly: its first line. */
const said = (ran: Ran): string => {
  const line = ran.stderr.split("\n").map((l) => l.trim()).find((l) => l !== "") ?? `exit code ${ran.code ?? "none"}`
  return line.replace(/^(?:fatal|error): /, "").slice(0, 300)
}

export interface Call {
  readonly cwd: string
  /** Variables of this call (`GIT_DIR`, `GIT_INDEX_FILE`, …), set last. */
  readonly env?: Readonly<Record<string, string>> | undefined
  /** Written to git's stdin, which is closed after it. */
  readonly input?: string | undefined
}

/** Runs git in `cwd` and waits; its process tree is gone when this returns. */
export const run = (profile: Profile, args: ReadonlyArray<string>, call: Call): Effect.Effect<Ran, string> =>
  Effect.acquireUseRelease(
    ProcessGroup.spawnProgram({ file: "git", args, cwd: call.cwd, env: environment(profile, call.env ?? {}), stdin: call.input === undefined ? "ignore" : "pipe" }).pipe(
      Effect.mapError(({ code }) =>
        code === "ENOENT" && NodeFs.existsSync(call.cwd) ? "git could not be started: it is not installed or not on the PATH" : `git could not be started in ${call.cwd} (${code ?? "unknown error"})`
      )
    ),
    (group) =>
      Effect.gen(function*() {
        const out: Array<Buffer> = []
        const err: Array<Buffer> = []
        let size = 0
        const collect = (into: Array<Buffer>) => (chunk: Buffer) => {
          size += chunk.length
          if (size <= profile.maxOutputBytes) into.push(chunk)
        }
        group.stdout.on("data", collect(out))
        group.stderr.on("data", collect(err))
        if (call.input !== undefined) group.stdin?.end(call.input)
        if (!(yield* ProcessGroup.awaitFor(group.exited, profile.timeoutMs))) {
          return yield* Effect.fail(`git ${args[0]} did not finish within ${profile.timeoutMs / 1000} s and was stopped`)
        }
        yield* ProcessGroup.awaitFor(group.drained, 1_000)
        if (size > profile.maxOutputBytes) return yield* Effect.fail(`git ${args[0]} printed more than ${bytes(profile.maxOutputBytes)}`)
        return { code: group.exitStatus()?.code ?? null, stdout: Buffer.concat(out), stderr: Buffer.concat(err).toString("utf8") }
      }),
    (group) => ProcessGroup.release(group)
  )

/** Runs git; a non-zero exit fails saying `what` failed and what git said. Gives stdout as text. */
export const git = (profile: Profile, what: string, args: ReadonlyArray<string>, call: Call): Effect.Effect<string, string> =>
  Effect.flatMap(run(profile, args, call), (ran) => (ran.code === 0 ? Effect.succeed(ran.stdout.toString("utf8")) : Effect.fail(`${what} failed: ${said(ran)}`)))

const bytes = (n: number): string => (n >= 1024 * 1024 ? `${n / 1024 / 1024} MiB` : `${n} bytes`)
