/**
 * git for the checkpoints' shadow repositories: a process group waited for (nothing left
 * running), bounded in time and output, with no configuration but Skein's own.
 *
 * - No system or user configuration (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL=/dev/null`):
 *   no filter, diff driver, hook or signing program of anyone's runs; GitGuard's overrides on
 *   top (no fsmonitor, no hooks, no pager), and no automatic gc or maintenance.
 * - Nothing in the environment points it elsewhere: every `GIT_DIR`-like variable is dropped
 *   and only the caller's (`GIT_DIR`, `GIT_WORK_TREE`, `GIT_INDEX_FILE`) are set.
 * - The user's default ignore file (`$XDG_CONFIG_HOME/git/ignore`, `~/.config/git/ignore`)
 *   still applies: it is a list of names, read, never run.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Secrets from "../secrets/Secrets.ts"
import * as GitGuard from "../tools/commands/GitGuard.ts"
import * as ProcessGroup from "../tools/process/ProcessGroup.ts"

export class GitError extends Schema.TaggedError<GitError>()("GitError", { message: Schema.String }) {}

/** A call longer than this is stopped (adding a very large tree the first time is the slow one). */
const TIMEOUT_MS = 300_000
/** What a call may print (the listing of a very large tree fits). */
const MAX_OUTPUT_BYTES = 64 * 1024 * 1024

const EXTRA_CONFIG: ReadonlyArray<readonly [string, string]> = [
  ["gc.auto", "0"],
  ["maintenance.auto", "false"],
  ["commit.gpgSign", "false"],
  ["core.quotePath", "false"],
  ["core.autocrlf", "false"],
  ["core.symlinks", "true"],
  ["advice.addEmbeddedRepo", "false"],
  ["init.defaultBranch", "skein"]
]

const LOCATING = /^GIT_/

const environment = (extra: Readonly<Record<string, string>>): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(Secrets.childEnv())) if (!LOCATING.test(name)) env[name] = value
  Object.assign(env, GitGuard.environment(env))
  const start = Number(env["GIT_CONFIG_COUNT"])
  EXTRA_CONFIG.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${start + i}`] = key
    env[`GIT_CONFIG_VALUE_${start + i}`] = value
  })
  env["GIT_CONFIG_COUNT"] = String(start + EXTRA_CONFIG.length)
  return {
    ...env,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_AUTHOR_NAME: "Skein",
    GIT_AUTHOR_EMAIL: "skein@localhost",
    GIT_COMMITTER_NAME: "Skein",
    GIT_COMMITTER_EMAIL: "skein@localhost",
    ...extra
  }
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

/** Runs git in `cwd` with `env` (and `input` on its stdin) and waits; its process tree is gone when this returns. */
export const run = (
  args: ReadonlyArray<string>,
  options: { readonly cwd: string; readonly env: Readonly<Record<string, string>>; readonly input?: string | undefined }
): Effect.Effect<Ran, GitError> =>
  Effect.acquireUseRelease(
    ProcessGroup.spawnProgram({ file: "git", args, cwd: options.cwd, env: environment(options.env), stdin: options.input === undefined ? "ignore" : "pipe" }).pipe(
      Effect.mapError(({ code }) =>
        new GitError({ message: code === "ENOENT" ? "git could not be started: it is not installed or not on the PATH" : `git could not be started (${code ?? "unknown error"})` })
      )
    ),
    (group) =>
      Effect.gen(function*() {
        const out: Array<Buffer> = []
        const err: Array<Buffer> = []
        let size = 0
        const collect = (into: Array<Buffer>) => (chunk: Buffer) => {
          size += chunk.length
          if (size <= MAX_OUTPUT_BYTES) into.push(chunk)
        }
        group.stdout.on("data", collect(out))
        group.stderr.on("data", collect(err))
        if (options.input !== undefined) group.stdin?.end(options.input)
        if (!(yield* ProcessGroup.awaitFor(group.exited, TIMEOUT_MS))) {
          return yield* new GitError({ message: `git ${args[0]} did not finish within ${TIMEOUT_MS / 1000} s and was stopped` })
        }
        yield* ProcessGroup.awaitFor(group.drained, 1_000)
        if (size > MAX_OUTPUT_BYTES) return yield* new GitError({ message: `git ${args[0]} printed more than ${MAX_OUTPUT_BYTES / 1024 / 1024} MiB` })
        return { code: group.exitStatus()?.code ?? null, stdout: Buffer.concat(out), stderr: Buffer.concat(err).toString("utf8") }
      }),
    (group) => ProcessGroup.release(group)
  )

/** Runs git; a non-zero exit fails saying `what` failed and what git said. Gives stdout as text. */
export const git = (what: string, args: ReadonlyArray<string>, options: Parameters<typeof run>[1]): Effect.Effect<string, GitError> =>
  Effect.flatMap(run(args, options), (ran) =>
    ran.code === 0 ? Effect.succeed(ran.stdout.toString("utf8")) : Effect.fail(new GitError({ message: `${what} failed: ${said(ran)}` })))

/** NUL-separated output, without the empty last field. */
export const fields = (text: string): Array<string> => {
  const out = text.split("\0")
  if (out[out.length - 1] === "") out.pop()
  return out
}
