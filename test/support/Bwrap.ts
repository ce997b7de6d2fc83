/**
 * Tests of the real sandbox (bubblewrap; no mocks). A suite runs only where `bwrap` and
 * `nsenter` are installed; elsewhere it is skipped, except under `CI=true`, where a missing
 * bubblewrap fails the suite with a message that says so (`.ci/run` installs it).
 *
 *   Bwrap.describeWithBwrap("sandbox", () => { it.effect("…", () => …) })
 *
 * `run` starts a command the way `bash` does (`prepare`, then `ProcessGroup.spawnProgram`)
 * and gives its exit and output.
 */
import { describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { findTools } from "../../src/sandbox/Detect.ts"
import type { SessionSandbox } from "../../src/tools/Sandboxed.ts"
import * as ProcessGroup from "../../src/tools/process/ProcessGroup.ts"

const tools = findTools()

/** Why the sandbox's suites cannot run here, if they cannot. */
export const missing: string | undefined = "missing" in tools ? tools.missing : undefined

export const describeWithBwrap = (name: string, body: () => void) => {
  if (missing === undefined) return describe(name, body)
  if (process.env["CI"] === "true") {
    return describe(name, () => {
      it("has bubblewrap installed", () => {
        throw new Error(`The sandbox's tests need bubblewrap and nsenter: ${missing}. .ci/run installs them (apt-get install bubblewrap).`)
      })
    })
  }
  return describe.skip(`${name} (skipped: ${missing})`, body)
}

export interface Ran {
  readonly code: number | null
  readonly signal: string | null
  readonly output: string
  /** The pid of the process Skein started (nsenter, then bwrap). */
  readonly pid: number
}

/**
 * Runs `bash -c command` in the session's sandbox (`outside`: as a command the model asked
 * to run outside). Fails with the reason when it cannot run sandboxed.
 */
export const run = (
  sandbox: SessionSandbox,
  command: string,
  options: { readonly cwd: string; readonly readOnly?: boolean; readonly env?: Record<string, string>; readonly outside?: boolean; readonly onExit?: (pid: number) => Effect.Effect<void> }
): Effect.Effect<Ran, string> =>
  Effect.suspend(() => {
  let output = ""
  return sandbox.prepare(
    { file: "/bin/bash", args: ["-c", command], cwd: options.cwd, env: options.env ?? { PATH: process.env["PATH"] ?? "/usr/bin:/bin" } },
    { readOnly: options.readOnly === true, outside: options.outside === true, required: false },
    (launch) =>
      Effect.acquireUseRelease(
        ProcessGroup.spawnProgram({
          file: launch?.file ?? "/bin/bash",
          args: launch?.args ?? ["-c", command],
          cwd: options.cwd,
          env: { ...(launch?.env ?? options.env ?? { PATH: process.env["PATH"] ?? "/usr/bin:/bin" }) },
          fds: launch?.fds,
          onOutput: (chunk) => void (output += Buffer.from(chunk).toString("utf8"))
        }).pipe(Effect.mapError(({ code }) => `cannot start (${code})`)),
        (group) =>
          Effect.gen(function*() {
            yield* ProcessGroup.awaitFor(group.exited, 60_000)
            if (options.onExit !== undefined) yield* options.onExit(group.pid)
            yield* ProcessGroup.awaitFor(group.drained, 500)
            const status = group.exitStatus()
            return { code: status?.code ?? null, signal: status?.signal ?? null, output, pid: group.pid }
          }),
        ProcessGroup.release
      )
  )
  })
