/**
 * git for the checkpoints' shadow repositories, run as `GitProcess` runs it (a process group
 * waited for, bounded in time and output, GitGuard's overrides), and with no configuration but
 * Skein's own:
 *
 * - No system or user configuration (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL=/dev/null`):
 *   no filter, diff driver, hook or signing program of anyone's runs.
 * - Nothing in the environment points it elsewhere: every `GIT_*` variable is dropped and only
 *   the caller's (`GIT_DIR`, `GIT_WORK_TREE`, `GIT_INDEX_FILE`) are set.
 * - The user's default ignore file (`$XDG_CONFIG_HOME/git/ignore`, `~/.config/git/ignore`)
 *   still applies: it is a list of names, read, never run.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as GitProcess from "../tools/commands/GitProcess.ts"

export class GitError extends Schema.TaggedError<GitError>()("GitError", { message: Schema.String }) {}

const PROFILE: GitProcess.Profile = {
  // Adding a very large tree the first time is the slow one; the listing of one fits.
  timeoutMs: 300_000,
  maxOutputBytes: 64 * 1024 * 1024,
  config: [
    ["core.autocrlf", "false"],
    ["core.symlinks", "true"],
    ["advice.addEmbeddedRepo", "false"],
    ["init.defaultBranch", "skein"]
  ],
  drop: /^GIT_/,
  env: {
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_AUTHOR_NAME: "Skein",
    GIT_AUTHOR_EMAIL: "skein@localhost",
    GIT_COMMITTER_NAME: "Skein",
    GIT_COMMITTER_EMAIL: "skein@localhost"
  }
}

export type Ran = GitProcess.Ran

const failed = (message: string) => new GitError({ message })

/** Runs git in `cwd` with `env` (and `input` on its stdin) and waits; its process tree is gone when this returns. */
export const run = (args: ReadonlyArray<string>, options: GitProcess.Call): Effect.Effect<Ran, GitError> =>
  Effect.mapError(GitProcess.run(PROFILE, args, options), failed)

/** Runs git; a non-zero exit fails saying `what` failed and what git said. Gives stdout as text. */
export const git = (what: string, args: ReadonlyArray<string>, options: GitProcess.Call): Effect.Effect<string, GitError> =>
  Effect.mapError(GitProcess.git(PROFILE, what, args, options), failed)

/** NUL-separated output, without the empty last field. */
export const fields = (text: string): Array<string> => {
  const out = text.split("\0")
  if (out[out.length - 1] === "") out.pop()
  return out
}
