/**
 * What makes an auto-allowed git command unable to run code or read outside
 * the workspace (see adr/0012).
 *
 * - It runs with `environment()`: command-scope configuration through
 *   `GIT_CONFIG_COUNT` (which outranks every file) that turns off fsmonitor,
 *   hooks, pagers, bare-repository discovery, network transports and
 *   submodule recursion; and `GIT_OPTIONAL_LOCKS=0`, so `git status` does
 *   not rewrite the index.
 * - Programs configured under names git cannot know in advance (diff drivers'
 *   `textconv`/`command`, filters' `clean`/`smudge`/`process`, `gpg.*`) cannot
 *   be switched off that way. `inspect()` reads the effective configuration
 *   (`git config --list --show-scope --includes`, which runs nothing) and
 *   asks when the repository's own configuration sets any of them; the
 *   user's global and system configuration is the user's, and trusted.
 * - The repository (work tree, git directory, common directory) must lie
 *   inside the workspace, without alternates, and its `.gitmodules` must not
 *   set `ignore` (which would outrank `diff.ignoreSubmodules`).
 */
import * as NodeChildProcess from "node:child_process"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Path from "effect/Path"
import * as Descriptors from "../process/Descriptors.ts"
import { inside } from "./Paths.ts"

/** Command-scope configuration for an auto-allowed git. */
const OVERRIDES: ReadonlyArray<readonly [string, string]> = [
  ["core.fsmonitor", "false"],
  ["core.hooksPath", "/dev/null"],
  ["core.pager", "cat"],
  ["safe.bareRepository", "explicit"],
  ["protocol.allow", "never"],
  ["submodule.recurse", "false"],
  ["diff.ignoreSubmodules", "all"],
  ["status.submoduleSummary", "false"]
]

/** The variables an auto-allowed command runs with, on top of its environment `base`. */
export const environment = (base: Readonly<Record<string, string | undefined>>): Record<string, string> => {
  const existing = Number(base["GIT_CONFIG_COUNT"] ?? "0")
  const start = Number.isSafeInteger(existing) && existing >= 0 ? existing : 0
  const out: Record<string, string> = {
    GIT_CONFIG_COUNT: String(start + OVERRIDES.length),
    GIT_OPTIONAL_LOCKS: "0",
    GIT_PAGER: "cat",
    PAGER: "cat",
    GIT_TERMINAL_PROMPT: "0"
  }
  OVERRIDES.forEach(([key, value], i) => {
    out[`GIT_CONFIG_KEY_${start + i}`] = key
    out[`GIT_CONFIG_VALUE_${start + i}`] = value
  })
  return out
}

/**
 * Keys that make a read-only git command run a program, read a file they
 * name (`check-ignore -v` prints the line of an excludes file), or recurse
 * where the overrides cannot reach, when the repository's own configuration
 * sets them.
 */
const UNSAFE_KEY =
  /^(?:diff\.external|(?:diff|merge|filter)\..+\..+|filter\..+|gpg\..+|credential\..+|submodule\..+\.(?:ignore|update)|core\.(?:alternaterefscommand|sshcommand|askpass|gitproxy|editor|excludesfile|attributesfile)|mailmap\.file|blame\.ignorerevsfile|.+\.(?:textconv|command|program|cmd|helper|hook))$/
const TRUSTED_SCOPES = new Set(["system", "global", "command"])

/** The keys of `git config --list --show-scope -z` output that untrusted scopes set and that are unsafe. */
export const unsafeKeys = (listing: string): ReadonlyArray<string> => {
  const tokens = listing.split("\0")
  const found: Array<string> = []
  for (let i = 0; i + 1 < tokens.length; i += 2) {
    const scope = tokens[i]!
    const key = tokens[i + 1]!.split("\n")[0]!.toLowerCase()
    if (!TRUSTED_SCOPES.has(scope) && UNSAFE_KEY.test(key)) found.push(key)
  }
  return found
}

interface Ran {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

const GIT_TIMEOUT_MS = 5_000

const GIT_MAX_OUTPUT = 4 * 1024 * 1024

/**
 * Runs git with the overrides; never fails (a spawn error, a timeout or too much output is
 * code null). Its descriptors are its stdio only (`Descriptors.stdio`).
 */
const git = (args: ReadonlyArray<string>, cwd: string, env: Record<string, string>): Effect.Effect<Ran> =>
  Effect.callback<Ran>((resume) => {
    let child: NodeChildProcess.ChildProcess
    try {
      child = NodeChildProcess.spawn("git", [...args], { cwd, env, stdio: Descriptors.stdio(["ignore", "pipe", "pipe"]), windowsHide: true })
    } catch {
      return resume(Effect.succeed({ code: null, stdout: "", stderr: "" }))
    }
    const out = { stdout: [] as Array<Buffer>, stderr: [] as Array<Buffer>, size: 0, failed: false }
    const stop = () => {
      out.failed = true
      child.kill("SIGKILL")
    }
    const timer = setTimeout(stop, GIT_TIMEOUT_MS)
    for (const name of ["stdout", "stderr"] as const) {
      child[name]?.on("data", (chunk: Buffer) => {
        out.size += chunk.length
        if (out.size > GIT_MAX_OUTPUT) stop()
        else out[name].push(chunk)
      })
    }
    let finished = false
    const finish = (code: number | null) => {
      if (finished) return
      finished = true
      clearTimeout(timer)
      resume(Effect.succeed({
        code: out.failed ? null : code,
        stdout: Buffer.concat(out.stdout).toString("utf8"),
        stderr: Buffer.concat(out.stderr).toString("utf8")
      }))
    }
    // Not started (no git, out of processes): "error", and maybe "close" after it.
    child.once("error", () => {
      out.failed = true
      finish(null)
    })
    child.once("close", finish)
    return Effect.sync(() => {
      clearTimeout(timer)
      child.kill("SIGKILL")
    })
  })

export type Verdict = { readonly ok: true } | { readonly ok: false; readonly reason: string }

const refuse = (reason: string): Verdict => ({ ok: false, reason })

/**
 * Whether git, run in `dir` (a real path inside the workspace) with the
 * overrides, would stay inside `roots` (real paths) and run none of the
 * repository's programs.
 */
export const inspect = Effect.fnUntraced(function*(dir: string, roots: ReadonlyArray<string>, base: Readonly<Record<string, string | undefined>>) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(base)) if (value !== undefined) env[name] = value
  Object.assign(env, environment(base))
  const where = yield* git(["rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir", "--show-toplevel"], dir, env)
  if (where.code === null) return refuse("git did not answer")
  const lines = where.stdout.split("\n").filter((line) => line !== "")
  // Not a repository (or one git refuses, as a bare one found without --git-dir): the command fails the same way.
  if (where.code !== 0 && lines.length === 0) return { ok: true } as Verdict
  const noWorkTree = where.code !== 0 && lines.length === 2 && where.stderr.includes("work tree")
  if (where.code !== 0 && !noWorkTree) return refuse("git could not locate the repository")
  for (const found of lines) {
    const real = yield* fs.realPath(found).pipe(Effect.orElseSucceed(() => undefined))
    if (real === undefined || !roots.some((root) => inside(path, root, real))) {
      return refuse("the repository lies outside the workspace")
    }
  }
  /** A small regular file's text, "" when there is none, undefined for anything else (a FIFO would block). */
  const small = (file: string) =>
    fs.stat(file).pipe(
      Effect.flatMap((info) =>
        info.type === "File" && info.size < 1_000_000n ? fs.readFileString(file) : Effect.succeed(undefined)
      ),
      Effect.catch((error) => Effect.succeed(error.reason._tag === "NotFound" ? "" : undefined))
    )
  const alternates = yield* small(path.join(lines[1]!, "objects", "info", "alternates"))
  if (alternates === undefined || alternates.trim() !== "") return refuse("the repository borrows objects from elsewhere (alternates)")
  if (lines[2] !== undefined) {
    const modules = yield* small(path.join(lines[2], ".gitmodules"))
    if (modules === undefined || /ignore/i.test(modules)) return refuse("the repository's .gitmodules sets which submodule changes to ignore")
  }
  const config = yield* git(["config", "--list", "--show-scope", "--includes", "-z"], dir, env)
  if (config.code !== 0) return refuse("git could not read the repository's configuration")
  const keys = unsafeKeys(config.stdout)
  if (keys.length > 0) return refuse(`the repository's configuration can run programs or read files (${keys.slice(0, 3).join(", ")})`)
  return { ok: true } as Verdict
})
