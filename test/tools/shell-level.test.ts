/**
 * `SHLVL` and the user's `~/.bashrc`, against bash itself: `ShellLevel.topLevel` says, for each
 * value, what bash decides (it reads `~/.bashrc` for `bash -c` when it thinks sshd started it),
 * and a process started by `ProcessGroup.spawnProgram` with a pipe as stdin, whatever `SHLVL`
 * it is given, is a bash that reads no `~/.bashrc`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import { spawnSync } from "node:child_process"
import { existsSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as ProcessGroup from "../../src/tools/process/ProcessGroup.ts"
import * as ShellLevel from "../../src/tools/process/ShellLevel.ts"
import * as TempDir from "../support/TempDir.ts"

const BASHRC = "echo 'hello from .bashrc'\necho ran >> \"$HOME/bashrc-ran\"\n"

/** A home whose `.bashrc` prints and leaves a mark; `ran()` says whether something read it since the last look. */
const home = Effect.map(TempDir.make("skein-shlvl-"), (dir) => {
  writeFileSync(join(dir, ".bashrc"), BASHRC)
  const mark = join(dir, "bashrc-ran")
  return {
    dir,
    ran: () => {
      const was = existsSync(mark)
      rmSync(mark, { force: true })
      return was
    }
  }
})

const VALUES: ReadonlyArray<string | undefined> = [undefined, "", "0", "-1", "-5", "1", "2", " 3 ", "+4", "05", "x", "1x", "1.5", "997", "998", "999", "1000", "123456"]

const withShlvl = (env: Record<string, string>, value: string | undefined) => (value === undefined ? env : { ...env, SHLVL: value })

describe.skipIf(!existsSync("/bin/bash"))("SHLVL and ~/.bashrc", () => {
  it.effect("topLevel says what bash decides, for every kind of value", () =>
    Effect.gen(function*() {
      const { dir, ran } = yield* home
      for (const value of VALUES) {
        // SSH_CLIENT makes bash think sshd started it, stdin or not; its level decides.
        const env = withShlvl({ PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: dir, SSH_CLIENT: "10.0.0.1 5000 22" }, value)
        spawnSync("/bin/bash", ["-c", "true"], { env, stdio: "ignore" })
        assert.strictEqual(ran(), ShellLevel.topLevel(value), `SHLVL=${JSON.stringify(value)}`)
      }
    }).pipe(Effect.scoped))

  it.effect("a bash -c that spawnProgram starts with a pipe as stdin reads no ~/.bashrc, and a nested SHLVL is kept", () =>
    Effect.gen(function*() {
      const { dir, ran } = yield* home
      for (const value of VALUES) {
        const env = withShlvl({ PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: dir }, value)
        const out: Array<Uint8Array> = []
        const said = yield* Effect.acquireUseRelease(
          ProcessGroup.spawnProgram({ file: "/bin/bash", args: ["-c", "read line; echo \"$line at $SHLVL\""], cwd: dir, env, stdin: "pipe", onOutput: (chunk) => out.push(chunk) }),
          (group) =>
            Effect.gen(function*() {
              group.stdin!.end("input\n")
              yield* Deferred.await(group.exited)
              yield* Deferred.await(group.drained)
              return Buffer.concat(out).toString("utf8")
            }),
          ProcessGroup.release
        )
        const level = ShellLevel.topLevel(value) ? 2 : Number(value) + 1
        assert.strictEqual(said, `input at ${level}\n`, `SHLVL=${JSON.stringify(value)}`)
        assert.isFalse(ran(), `SHLVL=${JSON.stringify(value)}`)
      }
    }).pipe(Effect.scoped))

  it("nested returns the same environment when bash would not count itself top-level", () => {
    const env = { SHLVL: "3", A: "b" }
    assert.strictEqual(ShellLevel.nested(env), env)
    assert.deepStrictEqual(ShellLevel.nested({ A: "b" }), { A: "b", SHLVL: "1" })
    assert.deepStrictEqual(ShellLevel.nested({ SHLVL: "999" }), { SHLVL: "1" })
  })
})
