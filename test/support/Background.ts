/**
 * For the tests of background commands: a real dev server (`fixtures/process/http-server.cjs`)
 * and a client for it (run from `Visible.ts`: a sandboxed command sees them wherever the
 * checkout is), the processes whose command line carries a test's own tag, and a wait
 * for a condition on native time (it works under `TestClock` too) with a generous deadline
 * that only turns a hang into a failure: no test asserts on how long anything takes.
 */
import * as Effect from "effect/Effect"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import * as Visible from "./Visible.ts"

const SERVER = join(import.meta.dirname, "..", "fixtures", "process", "http-server.cjs")
const GET = join(import.meta.dirname, "..", "fixtures", "process", "http-get.cjs")

/** A tag no other test uses: the server carries it in its command line and its answers. */
export const uniqueTag = (): string => `bgtag${process.pid}x${Math.random().toString(36).slice(2, 10)}`

/** Starts the dev server; it writes its port to `portFile` (relative to the command's cwd). */
export const serverCommand = (portFile: string, tag: string): string => `exec ${Visible.node()} ${Visible.file(SERVER)} ${portFile} ${tag}`

/** Fetches `path` from the server whose port is in `portFile`; prints the answer. */
export const getCommand = (portFile: string, path = "/"): string => `${Visible.node()} ${Visible.file(GET)} ${portFile} ${path}`

/** Live (not zombie) processes whose command line has `tag` as one of its arguments. */
export const processesWith = (tag: string): Array<number> => {
  const out: Array<number> = []
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (!readFileSync(`/proc/${entry}/cmdline`, "latin1").split("\0").includes(tag)) continue
      const stat = readFileSync(`/proc/${entry}/stat`, "latin1")
      const state = stat.slice(stat.lastIndexOf(")") + 2)[0]
      if (state !== "Z" && state !== "X") out.push(Number(entry))
    } catch {
      // gone meanwhile
    }
  }
  return out
}

/** Cleanup after a failed test: SIGKILL what carries the tag. */
export const killTagged = (tag: string): void => {
  for (const pid of processesWith(tag)) {
    try {
      process.kill(pid, "SIGKILL")
    } catch {
      // gone
    }
  }
}

const nativeSleep = (ms: number) =>
  Effect.callback<void>((resume) => {
    const timer = setTimeout(() => resume(Effect.void), ms)
    return Effect.sync(() => clearTimeout(timer))
  })

/** Runs `check` until it gives a value, every 20 ms of native time; fails after `ms` (a hang, not a timing target). */
export const eventually = <A, E, R>(what: string, check: Effect.Effect<A | undefined, E, R>, ms = 60_000): Effect.Effect<A, E | Error, R> =>
  Effect.gen(function*() {
    const deadline = performance.now() + ms
    for (;;) {
      const value = yield* check
      if (value !== undefined) return value
      if (performance.now() > deadline) return yield* Effect.fail(new Error(`timed out waiting for ${what}`))
      yield* nativeSleep(20)
    }
  })

/** Polls a plain condition on native time (for tests outside Effect). */
export const until = async (what: string, check: () => boolean, ms = 60_000): Promise<void> => {
  const deadline = performance.now() + ms
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
