/**
 * A child process in its own process group, and the guarantee that the whole
 * group (grandchildren included) is dead before we say it is.
 *
 * Why node:child_process and not `effect/process`: Effect's spawner does kill
 * detached groups, but its wait after each signal is fixed inside (1 s), it
 * reports a death by signal as an error instead of a value, it has no
 * process-exit safety net, and on Linux it counts zombies as alive (a PID 1
 * that does not reap, as in many containers, makes it wait the full second).
 * Owning the code here gives a bounded kill we can test (SIGTERM, ≤ 200 ms,
 * SIGKILL, everything gone within ~450 ms) and the synchronous `exit` hook.
 *
 * The waits here run on native timers on purpose (as Effect's own spawner
 * does): they measure the OS, not domain time, and must not hang when a test
 * runs under `TestClock`.
 */
import * as NodeChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import type { Readable } from "node:stream"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"

/** SIGTERM first; SIGKILL if anything of the group is still alive after this. */
export const TERM_GRACE_MS = 200
/** After SIGKILL, how long we wait for the kernel to finish the group off. */
const KILL_WAIT_MS = 250
const POLL_MS = 10

export interface LeaderExit {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

export interface Group {
  readonly pid: number
  /** Resolved when the group leader (the shell) has exited. */
  readonly exited: Deferred.Deferred<LeaderExit>
  /** Resolved when both output pipes reached EOF (every writer is gone). */
  readonly drained: Deferred.Deferred<void>
  readonly stdout: Readable
  readonly stderr: Readable
}

// ---------------------------------------------------------------------------
// The safety net: the one global here, because the process is global. Every
// live group is in this set until it is known dead; when Skein exits (however
// it exits, short of SIGKILL), each remaining group gets SIGKILL synchronously.
// ---------------------------------------------------------------------------

const live = new Set<number>()
let hooked = false

const killAllNow = () => {
  for (const pgid of live) signalGroup(pgid, "SIGKILL")
  live.clear()
}

const ensureExitHook = () => {
  if (hooked) return
  hooked = true
  process.once("exit", killAllNow)
}

/** The process groups this process still owns (for tests and diagnostics). */
export const liveGroups = (): ReadonlySet<number> => live

const signalGroup = (pgid: number, signal: NodeJS.Signals): void => {
  try {
    process.kill(-pgid, signal)
  } catch {
    // ESRCH: nothing left to signal. EPERM: only zombies remain (macOS).
  }
}

const WATCHDOG_NAME = "skein-watchdog"

const isWatchdog = (pid: number): boolean => {
  try {
    return NodeFs.readFileSync(`/proc/${pid}/cmdline`, "latin1").includes(`\0${WATCHDOG_NAME}\0`)
  } catch {
    return false
  }
}

/**
 * On Linux the command runs through a shell that first starts a watchdog in
 * its group: it polls Skein's pid (the shell's parent) and kills the whole
 * group once Skein is gone. The exit hook covers every ordinary exit; the
 * watchdog covers `kill -9` of Skein, which runs no code at all. Its stdio is
 * /dev/null, so it never holds the output pipes open; the shell then `exec`s
 * the command, so the group leader's pid and exit status are the command's.
 * `isGroupAlive` does not count it, and `release` kills it.
 */
const WATCHDOG =
  `"$0" -c 'while kill -0 "$1" 2>/dev/null; do sleep 0.5; done; kill -KILL 0' ${WATCHDOG_NAME} "$PPID" </dev/null >/dev/null 2>&1 & exec "$0" -c "$1"`

/** The state letter of /proc/<pid>/stat (after the parenthesised name). */
const procState = (pid: string): { readonly state: string; readonly ppid: number; readonly pgrp: number } | undefined => {
  try {
    const stat = NodeFs.readFileSync(`/proc/${pid}/stat`, "latin1")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return { state: fields[0] ?? "", ppid: Number(fields[1]), pgrp: Number(fields[2]) }
  } catch {
    return undefined
  }
}

/**
 * Whether any member of the group can still run. A zombie (dead, not yet
 * reaped by its new parent) does not count: on Linux `kill(-pgid, 0)` still
 * succeeds for it, so we look at /proc when the signal test says "alive".
 */
export const isGroupAlive = (pgid: number): boolean => {
  try {
    process.kill(-pgid, 0)
  } catch {
    return false // ESRCH: gone; EPERM: only zombies (macOS)
  }
  if (process.platform !== "linux") return true
  let entries: Array<string>
  try {
    entries = NodeFs.readdirSync("/proc")
  } catch {
    return true
  }
  // The watchdog (see WATCHDOG) and its `sleep` are not the command's processes.
  const members: Array<{ readonly pid: number; readonly ppid: number }> = []
  for (const entry of entries) {
    const c = entry.charCodeAt(0)
    if (c < 48 || c > 57) continue
    const info = procState(entry)
    if (info !== undefined && info.pgrp === pgid && info.state !== "Z" && info.state !== "X") {
      members.push({ pid: Number(entry), ppid: info.ppid })
    }
  }
  const watchdogs = new Set(members.filter((m) => isWatchdog(m.pid)).map((m) => m.pid))
  return members.some((m) => !watchdogs.has(m.pid) && !watchdogs.has(m.ppid))
}

/** Whether one process can still run (a zombie counts as dead). */
export const isProcessAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  if (process.platform !== "linux") return true
  const info = procState(String(pid))
  return info !== undefined && info.state !== "Z" && info.state !== "X"
}

/** Resolves when `done()` holds or `ms` have passed, polling on native time. */
const pollUntil = (done: () => boolean, ms: number): Effect.Effect<boolean> =>
  Effect.callback<boolean>((resume) => {
    if (done()) return resume(Effect.succeed(true))
    const deadline = performance.now() + ms
    let timer: ReturnType<typeof setTimeout>
    const tick = () => {
      if (done()) return resume(Effect.succeed(true))
      if (performance.now() >= deadline) return resume(Effect.succeed(false))
      timer = setTimeout(tick, POLL_MS)
    }
    timer = setTimeout(tick, POLL_MS)
    return Effect.sync(() => clearTimeout(timer))
  })

/** Sleeps on native time (see the module note), interruptibly. */
const nativeSleep = (ms: number): Effect.Effect<void> =>
  Effect.callback<void>((resume) => {
    const timer = setTimeout(() => resume(Effect.void), ms)
    return Effect.sync(() => clearTimeout(timer))
  })

/** Waits for a Deferred at most `ms` of native time; true if it completed. */
export const awaitFor = <A>(deferred: Deferred.Deferred<A>, ms: number): Effect.Effect<boolean> =>
  Deferred.await(deferred).pipe(Effect.as(true), Effect.raceFirst(nativeSleep(ms).pipe(Effect.as(false))))

export interface SpawnOptions {
  readonly shell: string
  readonly command: string
  readonly cwd: string
  readonly env: Record<string, string>
  readonly onOutput: (chunk: Uint8Array) => void
}

/**
 * Spawns `shell -c command` as the leader of a new process group (and
 * session: `detached` calls setsid, so no controlling terminal can prompt),
 * stdin closed, stdout and stderr piped into `onOutput` in arrival order.
 * Fails with a message when the shell cannot start.
 */
export const spawn = (options: SpawnOptions): Effect.Effect<Group, string> =>
  Effect.callback<Group, string>((resume) => {
    const exited = Deferred.makeUnsafe<LeaderExit>()
    const drained = Deferred.makeUnsafe<void>()
    let child: NodeChildProcess.ChildProcess
    try {
      const args = process.platform === "linux" ? ["-c", WATCHDOG, options.shell, options.command] : ["-c", options.command]
      child = NodeChildProcess.spawn(options.shell, args, {
        cwd: options.cwd,
        env: options.env,
        detached: true,
        stdio: ["ignore", "pipe", "pipe"],
        windowsHide: true
      })
    } catch (error) {
      const code = (error as NodeJS.ErrnoException | undefined)?.code
      return resume(Effect.fail(`Cannot start ${options.shell}${code ? ` (${code})` : ""}`))
    }
    const stdout = child.stdout!
    const stderr = child.stderr!
    let open = 2
    const onClose = () => {
      if (--open === 0) Deferred.doneUnsafe(drained, Effect.void)
    }
    for (const stream of [stdout, stderr]) {
      stream.on("data", options.onOutput)
      stream.once("close", onClose)
      stream.on("error", () => {})
    }
    child.once("exit", (code, signal) => Deferred.doneUnsafe(exited, Effect.succeed({ code, signal })))
    child.on("error", (error: NodeJS.ErrnoException) => {
      // Before "spawn" this is a failure to start; later ones (a failed kill) are ignored.
      if (child.pid === undefined) resume(Effect.fail(`Cannot start ${options.shell}${error.code ? ` (${error.code})` : ""}`))
    })
    child.once("spawn", () => {
      const pid = child.pid!
      ensureExitHook()
      live.add(pid)
      resume(Effect.succeed({ pid, exited, drained, stdout, stderr }))
    })
  })

/**
 * Kills what is left of the group: SIGTERM, then SIGKILL after the grace, and
 * waits until no member can run. Returns the signal that ended it, or null if
 * the group was already gone. Safe to call more than once.
 */
export const terminate = (group: Group): Effect.Effect<NodeJS.Signals | null> =>
  Effect.gen(function*() {
    if (!isGroupAlive(group.pid)) return null
    signalGroup(group.pid, "SIGTERM")
    if (yield* pollUntil(() => !isGroupAlive(group.pid), TERM_GRACE_MS)) return "SIGTERM" as const
    signalGroup(group.pid, "SIGKILL")
    yield* pollUntil(() => !isGroupAlive(group.pid), KILL_WAIT_MS)
    return "SIGKILL" as const
  }).pipe(Effect.uninterruptible)

/** Final cleanup: the group is dead, the pipes are closed, the pgid is forgotten. */
export const release = (group: Group): Effect.Effect<void> =>
  Effect.gen(function*() {
    yield* terminate(group)
    // The leader's exit event follows its death by a tick; do not let it dangle.
    yield* awaitFor(group.exited, KILL_WAIT_MS)
    // A process that left the group (setsid) may still hold the pipes: stop reading.
    yield* awaitFor(group.drained, 50)
    // The watchdog is all that can be left: it goes with the group.
    signalGroup(group.pid, "SIGKILL")
    group.stdout.destroy()
    group.stderr.destroy()
    live.delete(group.pid)
  }).pipe(Effect.uninterruptible)
