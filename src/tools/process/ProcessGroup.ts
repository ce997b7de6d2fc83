/**
 * A child process in its own process group, and the guarantee that all it
 * started (grandchildren, `setsid` and double-forked daemons included) is dead
 * before we say it is. Which processes belong to it, and how they are killed,
 * is Containment.ts's business (a cgroup, or a marker in the environment, plus
 * the group); this module spawns, waits and escalates.
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
import type { Readable, Writable } from "node:stream"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Containment from "./Containment.ts"
import * as Descriptors from "./Descriptors.ts"
import * as ShellLevel from "./ShellLevel.ts"

/** SIGTERM first; SIGKILL if anything of the tree is still alive after this. */
const TERM_GRACE_MS = 200
/** After SIGKILL, how long we wait for the kernel to finish the tree off. */
const KILL_WAIT_MS = 250
/**
 * A tree that ends with its leader (`endsWithLeader`): how long what is left after the
 * leader's exit may take to end by itself before it is signalled like any other leftover.
 */
const SETTLE_MS = 1_000

/**
 * How long to wait before the `n`th look (from 0) at a tree we wait on: soon at first (a tree
 * that was signalled, or is winding down, is usually gone within a millisecond or two), then
 * every 10 ms. A fixed 10 ms made every such wait cost at least 10 ms.
 */
export const pollDelay = (n: number): number => Math.min(10, 2 ** n)

/** How long a pid namespace's init, left alone with no child, may take to exit before it counts as left behind. */
const INIT_SETTLE_MS = 200

export interface LeaderExit {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

export interface Group {
  readonly pid: number
  /** Resolved when the group leader has exited. */
  readonly exited: Deferred.Deferred<LeaderExit>
  /** How the leader exited, once it has. */
  readonly exitStatus: () => LeaderExit | undefined
  /** Resolved when both output pipes reached EOF (every writer is gone). */
  readonly drained: Deferred.Deferred<void>
  readonly stdout: Readable
  readonly stderr: Readable
  /** The child's stdin when it was asked for (`stdin: "pipe"`). */
  readonly stdin: Writable | undefined
  readonly tree: Containment.Tree
  /** See `ProgramOptions.endsWithLeader`. */
  readonly endsWithLeader: boolean
}

/** The leaders of the trees this process still owns (for tests and diagnostics). */
export const liveGroups = (): ReadonlySet<number> => Containment.liveLeaders()

/**
 * Resolves when `done()` holds or `ms` have passed, polling on native time (`delay`, by
 * default `pollDelay`). `watch`: a file whose change is a reason to look at once (a cgroup's
 * `cgroup.events`, which changes when the cgroup empties); the polls go on beside it.
 */
export const pollUntil = (
  done: () => boolean,
  ms: number,
  options: { readonly watch?: string | undefined; readonly delay?: ((n: number) => number) | undefined } = {}
): Effect.Effect<boolean> =>
  Effect.callback<boolean>((resume) => {
    if (done()) return resume(Effect.succeed(true))
    const delay = options.delay ?? pollDelay
    const deadline = performance.now() + ms
    let looks = 0
    let finished = false
    let timer: ReturnType<typeof setTimeout> | undefined
    let watcher: NodeFs.FSWatcher | undefined
    const finish = (result: boolean) => {
      if (finished) return
      finished = true
      clearTimeout(timer)
      watcher?.close()
      resume(Effect.succeed(result))
    }
    const look = () => {
      if (finished) return
      if (done()) return finish(true)
      if (performance.now() >= deadline) return finish(false)
    }
    const tick = () => {
      look()
      if (!finished) timer = setTimeout(tick, Math.min(delay(++looks), Math.max(1, deadline - performance.now())))
    }
    if (options.watch !== undefined) {
      try {
        watcher = NodeFs.watch(options.watch, { persistent: false }, look)
        watcher.on("error", () => watcher?.close())
      } catch {
        // Gone already, or not watchable here: the polls alone.
      }
    }
    timer = setTimeout(tick, Math.min(delay(0), ms))
    return Effect.sync(() => {
      finished = true
      clearTimeout(timer)
      watcher?.close()
    })
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

interface ProgramOptions {
  readonly file: string
  readonly args: ReadonlyArray<string>
  readonly cwd: string
  readonly env: Readonly<Record<string, string>>
  /** "pipe" gives the child a stdin to write to; by default it is closed. */
  readonly stdin?: "ignore" | "pipe" | undefined
  /** Gets stdout and stderr in arrival order; without it the caller reads `stdout`/`stderr`. */
  readonly onOutput?: ((chunk: Uint8Array) => void) | undefined
  /**
   * Open descriptors the child inherits as 3, 4, … (a sandbox's filter); `"ignore"` puts
   * nothing there. It inherits nothing else: `/dev/null` goes over whatever this process was
   * started with (`Descriptors.ts`). The program is then named by its path: it is not looked up.
   */
  readonly fds?: ReadonlyArray<number | "ignore"> | undefined
  /**
   * The tree winds down by itself once its leader has exited: a sandboxed command, whose PID
   * namespace's init exits a moment after bubblewrap, the leader, has reported the command's
   * exit, unless the command left something running (the init then waits for it). An init
   * with nothing left to wait for is winding down, not left behind: it is given `SETTLE_MS`
   * to end before it is signalled; what the command left is signalled and reported at once.
   */
  readonly endsWithLeader?: boolean | undefined
  /**
   * No process of the tree but its leader can leave the tree's cgroup, so that the cgroup alone
   * says what of it still runs (no scan of /proc for its process group: see
   * `Containment.make`). A sandboxed command: everything it starts is in its PID namespace,
   * whose cgroup namespace is rooted at the command's cgroup (a process can move only within
   * it), on a read-only cgroup file system, without capabilities.
   */
  readonly confined?: boolean | undefined
}

/** Why a program could not start: the errno code when there is one. */
interface CannotStart {
  readonly code: string | undefined
}

/**
 * Spawns `file args` as the leader of a new process group (and session:
 * `detached` calls setsid, so no controlling terminal can prompt), contained
 * (see Containment.ts), stdout and stderr piped, with a `SHLVL` that keeps bash
 * from reading `~/.bashrc` (see ShellLevel.ts). Fails when it cannot start.
 */
export const spawnProgram = (options: ProgramOptions): Effect.Effect<Group, CannotStart> =>
  Effect.callback<Group, CannotStart>((resume) => {
    const exited = Deferred.makeUnsafe<LeaderExit>()
    const drained = Deferred.makeUnsafe<void>()
    const tree = Containment.make({ confined: options.confined })
    const cannot = (code: string | undefined) => {
      tree.release()
      resume(Effect.fail({ code }))
    }
    let file = options.file
    if (tree.wraps) {
      // The wrapper `exec`s the program: find it first, so that a missing one fails as without it.
      const found = Containment.resolveProgram(file, options.env, options.cwd)
      if ("code" in found) return cannot(found.code)
      file = found.path
    }
    const argv = tree.argv(file, options.args)
    let child: NodeChildProcess.ChildProcess
    try {
      child = NodeChildProcess.spawn(argv.file, [...argv.args], {
        cwd: options.cwd,
        // No bash of the tree reads the user's ~/.bashrc (see ShellLevel.ts).
        env: ShellLevel.nested({ ...options.env, ...tree.env }),
        detached: true,
        stdio: Descriptors.stdio([options.stdin ?? "ignore", "pipe", "pipe"], options.fds),
        windowsHide: true
      })
    } catch (error) {
      return cannot((error as NodeJS.ErrnoException | undefined)?.code)
    }
    // A pid means the program runs (exec succeeded): tracked at once, not a tick later on
    // "spawn", so that Skein dying in between cannot leave it unknown to the watchdog.
    if (child.pid !== undefined) tree.attach(child.pid)
    const stdout = child.stdout!
    const stderr = child.stderr!
    let open = 2
    const onClose = () => {
      if (--open === 0) Deferred.doneUnsafe(drained, Effect.void)
    }
    for (const stream of [stdout, stderr]) {
      if (options.onOutput !== undefined) stream.on("data", options.onOutput)
      stream.once("close", onClose)
      stream.on("error", () => {})
    }
    // A write to a child that is gone fails with EPIPE; its exit is what callers report.
    child.stdin?.on("error", () => {})
    let exitStatus: LeaderExit | undefined
    child.once("exit", (code, signal) => {
      exitStatus = { code, signal }
      Deferred.doneUnsafe(exited, Effect.succeed(exitStatus))
    })
    child.on("error", (error: NodeJS.ErrnoException) => {
      // Before "spawn" this is a failure to start; later ones (a failed kill) are ignored.
      if (child.pid === undefined) cannot(error.code)
    })
    child.once("spawn", () => {
      resume(Effect.succeed({
        pid: child.pid!,
        exited,
        exitStatus: () => exitStatus,
        drained,
        stdout,
        stderr,
        stdin: child.stdin ?? undefined,
        tree,
        endsWithLeader: options.endsWithLeader === true
      }))
    })
  })

interface SpawnOptions {
  readonly shell: string
  readonly command: string
  readonly cwd: string
  readonly env: Record<string, string>
  readonly onOutput: (chunk: Uint8Array) => void
}

/** `shell -c command` (see `spawnProgram`), stdin closed. Fails with a message when the shell cannot start. */
export const spawn = (options: SpawnOptions): Effect.Effect<Group, string> =>
  spawnProgram({ file: options.shell, args: ["-c", options.command], cwd: options.cwd, env: options.env, onOutput: options.onOutput }).pipe(
    Effect.mapError(({ code }) => `Cannot start ${options.shell}${code !== undefined ? ` (${code})` : ""}`)
  )

/**
 * Kills what is left of the tree: SIGTERM, then SIGKILL after the grace, and
 * waits until no member can run. Returns the signal that ended it, or null if
 * the tree was already gone (or, for a tree that ends with its leader, ended by
 * itself once the leader had exited). Safe to call more than once.
 */
export const terminate = (group: Group): Effect.Effect<NodeJS.Signals | null> =>
  Effect.gen(function*() {
    const tree = group.tree
    if (!tree.isAlive()) return null
    // A tree that ends with its leader, once the leader has exited: if all that runs is its pid
    // namespace's init with no child (or an init already exiting), the sandbox is winding down,
    // and only the cgroup's emptying is watched (a small read), then the whole tree is looked
    // at. An init that still has children waits for what the command left running: that is
    // signalled and reported below, as for any tree. Nothing new can start meanwhile: an init
    // forks nothing once its first child has exited.
    if (
      group.endsWithLeader && group.exitStatus() !== undefined && !tree.leftBehind() &&
      (yield* pollUntil(() => !tree.inCgroup() && !tree.isAlive(), SETTLE_MS, { watch: tree.events }))
    ) return null
    // A sandbox's init outlives the process Skein started by a moment (bubblewrap's leaves once
    // it has reaped the command): that is not something the command left running.
    if (tree.settling() && (yield* pollUntil(() => !tree.isAlive(), INIT_SETTLE_MS))) return null
    tree.signal("SIGTERM")
    if (yield* pollUntil(() => !tree.isAlive(), TERM_GRACE_MS)) return "SIGTERM" as const
    // Again at every poll: a process may fork between the scan that finds it and the signal.
    yield* pollUntil(() => {
      tree.signal("SIGKILL")
      return !tree.isAlive()
    }, KILL_WAIT_MS)
    return "SIGKILL" as const
  }).pipe(Effect.uninterruptible)

/** Final cleanup: the tree is dead, the pipes are closed, the tree is forgotten. */
export const release = (group: Group): Effect.Effect<void> =>
  Effect.gen(function*() {
    yield* terminate(group)
    // The leader's exit event follows its death by a tick; do not let it dangle.
    yield* awaitFor(group.exited, KILL_WAIT_MS)
    // A process we could not find (it cleared its environment) may still hold the pipes: stop reading.
    yield* awaitFor(group.drained, 50)
    group.stdout.destroy()
    group.stderr.destroy()
    group.stdin?.destroy()
    group.tree.release()
  }).pipe(Effect.uninterruptible)
