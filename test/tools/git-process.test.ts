/**
 * `GitProcess`: the one way Skein runs git for itself (checkpoints, worktrees), against real
 * git: each profile's configuration on top of GitGuard's, Skein's own `GIT_*` variables dropped
 * as the profile says and the call's set last, output over the bound refused, a missing
 * directory named, stdin written and closed.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { execFileSync } from "node:child_process"
import { mkdtempSync, realpathSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as GitProcess from "../../src/tools/commands/GitProcess.ts"

const profile: GitProcess.Profile = {
  timeoutMs: 60_000,
  maxOutputBytes: 1024 * 1024,
  config: [["core.autocrlf", "false"]],
  drop: /^GIT_(?:DIR|INDEX_FILE)$/,
  env: { GIT_AUTHOR_NAME: "Profile" }
}

const repo = () => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "skein-git-process-")))
  execFileSync("git", ["init", "-q", dir])
  return dir
}

/** Runs `body` with `name` set in Skein's environment. */
const withVariable = <A, E>(name: string, value: string, body: Effect.Effect<A, E>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const before = process.env[name]
      process.env[name] = value
      return before
    }),
    () => body,
    (before) => Effect.sync(() => (before === undefined ? delete process.env[name] : (process.env[name] = before)))
  )

describe("GitProcess", () => {
  it.live("applies the base configuration, GitGuard's and the profile's", () =>
    Effect.gen(function*() {
      const cwd = repo()
      const get = (key: string) => Effect.map(GitProcess.git(profile, "Reading", ["config", "--get", key], { cwd }), (s) => s.trim())
      assert.strictEqual(yield* get("gc.auto"), "0")
      assert.strictEqual(yield* get("commit.gpgSign"), "false")
      assert.strictEqual(yield* get("core.hooksPath"), "/dev/null")
      assert.strictEqual(yield* get("core.autocrlf"), "false")
    }))

  it.live("drops the variables the profile names from Skein's environment; the call's own are set last", () =>
    Effect.gen(function*() {
      const cwd = repo()
      const elsewhere = repo()
      const gitDir = (env?: Record<string, string>) =>
        Effect.map(GitProcess.git(profile, "Locating", ["rev-parse", "--absolute-git-dir"], { cwd, env }), (s) => s.trim())
      // A GIT_DIR in Skein's environment does not point git elsewhere…
      assert.strictEqual(yield* withVariable("GIT_DIR", join(elsewhere, ".git"), gitDir()), join(cwd, ".git"))
      // …the call's does.
      assert.strictEqual(yield* gitDir({ GIT_DIR: join(elsewhere, ".git") }), join(elsewhere, ".git"))
      const ident = (env?: Record<string, string>) => Effect.map(GitProcess.git(profile, "Naming", ["var", "GIT_AUTHOR_IDENT"], { cwd, env }), (s) => s.split(" <")[0])
      assert.strictEqual(yield* ident(), "Profile")
      assert.strictEqual(yield* ident({ GIT_AUTHOR_NAME: "Call" }), "Call")
    }))

  it.live("refuses output over the bound, names a missing directory, writes stdin", () =>
    Effect.gen(function*() {
      const cwd = repo()
      const small = { ...profile, maxOutputBytes: 8 }
      const over = yield* Effect.flip(GitProcess.run(small, ["--version"], { cwd }))
      assert.strictEqual(over, "git --version printed more than 8 bytes")
      const missing = yield* Effect.flip(GitProcess.run(profile, ["status"], { cwd: join(cwd, "gone") }))
      assert.include(missing, `git could not be started in ${join(cwd, "gone")}`)
      const hashed = yield* GitProcess.git(profile, "Hashing", ["hash-object", "--stdin"], { cwd, input: "hello\n" })
      assert.strictEqual(hashed.trim(), "ce013625030ba8dba906f756967f9e9ca394464a")
      const failed = yield* Effect.flip(GitProcess.git(profile, "Reading a ref", ["rev-parse", "--verify", "no-such-ref"], { cwd }))
      assert.strictEqual(failed, "Reading a ref failed: Needed a single revision")
    }))
})
