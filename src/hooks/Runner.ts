/**
 * Runs one hook command: `sh -c command` in the session's cwd, through the session's sandbox
 * like every command Skein starts (`SessionSandbox.prepare`; without a sandbox, or where
 * `auto` finds none, as Skein runs — hooks are the user's own or a trusted folder's), with the
 * event as JSON on stdin and the secrets Skein knows taken out of its environment.
 *
 * Bounds: it is killed with everything it started when its timeout passes (Effect time, so a
 * test drives it with `TestClock`), or when the turn is interrupted; stdout and stderr are each
 * kept to their first and last {@link HALF_BYTES} bytes. It never fails: whatever happens is a
 * `Raw` that `Decision.decide` reads.
 */
import * as NodeFs from "node:fs"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Secrets from "../secrets/Secrets.ts"
import * as OutputBuffer from "../tools/process/OutputBuffer.ts"
import * as ProcessGroup from "../tools/process/ProcessGroup.ts"
import type { Launch, SessionSandbox } from "../tools/Sandboxed.ts"
import type { Raw } from "./Decision.ts"

/** Each of stdout and stderr keeps this many bytes at its start and as many at its end. */
export const HALF_BYTES = 16 * 1024
/** How long buffered output may take to arrive once the hook exited. */
const DRAIN_MS = 100

export interface RunOptions {
  readonly command: string
  readonly timeoutMs: number
  /** The event, written to stdin as one line of JSON. */
  readonly input: unknown
  readonly cwd: string
  /** The project's root (`CLAUDE_PROJECT_DIR`, `SKEIN_PROJECT_DIR`; default: the cwd). */
  readonly projectDir?: string | undefined
  readonly sandbox?: SessionSandbox | undefined
}

const shell = (): string => (NodeFs.existsSync("/bin/bash") ? "/bin/bash" : "/bin/sh")

const collect = (group: ProcessGroup.Group) => {
  const out = OutputBuffer.make(HALF_BYTES, HALF_BYTES)
  const err = OutputBuffer.make(HALF_BYTES, HALF_BYTES)
  group.stdout.on("data", (chunk: Uint8Array) => out.push(chunk))
  group.stderr.on("data", (chunk: Uint8Array) => err.push(chunk))
  return { stdout: () => Secrets.redact(out.render().text), stderr: () => Secrets.redact(err.render().text) }
}

const started = (options: RunOptions, launch: Launch | undefined, env: Record<string, string>) =>
  ProcessGroup.spawnProgram(
    launch !== undefined
      ? { ...launch, cwd: options.cwd, stdin: "pipe" }
      : { file: shell(), args: ["-c", options.command], cwd: options.cwd, env, stdin: "pipe" }
  ).pipe(Effect.mapError(({ code }) => `it could not start${code !== undefined ? ` (${code})` : ""}`))

const supervise = (options: RunOptions, group: ProcessGroup.Group): Effect.Effect<Raw> =>
  Effect.gen(function*() {
    const output = collect(group)
    // A hook that does not read its stdin must not block Skein: the write is fire-and-forget,
    // and an EPIPE is ignored (ProcessGroup listens for it).
    group.stdin?.end(`${JSON.stringify(options.input)}\n`)
    const exit = yield* Deferred.await(group.exited).pipe(Effect.raceFirst(Effect.as(Effect.sleep(options.timeoutMs), undefined)))
    if (exit === undefined) {
      yield* ProcessGroup.terminate(group)
      yield* ProcessGroup.awaitFor(group.drained, DRAIN_MS)
      return { _tag: "timedOut", timeoutMs: options.timeoutMs, stdout: output.stdout(), stderr: output.stderr() } as const
    }
    yield* ProcessGroup.awaitFor(group.drained, DRAIN_MS)
    if (exit.code === null) return { _tag: "failed", reason: `it was killed by ${exit.signal ?? "a signal"}` } as const
    return { _tag: "exited", code: exit.code, stdout: output.stdout(), stderr: output.stderr() } as const
  })

/** Runs the hook to its end (or its timeout); never fails. */
export const run = (options: RunOptions): Effect.Effect<Raw> => {
  const projectDir = options.projectDir ?? options.cwd
  const env: Record<string, string> = { ...Secrets.childEnv(), CLAUDE_PROJECT_DIR: projectDir, SKEIN_PROJECT_DIR: projectDir }
  const spawnAndWait = (launch: Launch | undefined) =>
    Effect.acquireUseRelease(started(options, launch, env), (group) => supervise(options, group), ProcessGroup.release)
  const program = { file: shell(), args: ["-c", options.command], cwd: options.cwd, env }
  const ran: Effect.Effect<Raw, string> = options.sandbox === undefined
    ? spawnAndWait(undefined)
    : options.sandbox.prepare(program, { readOnly: false, outside: false, required: false }, spawnAndWait)
  return ran.pipe(Effect.catch((reason: string) => Effect.succeed<Raw>({ _tag: "failed", reason })))
}
