/**
 * Everything a child process (a bash command, an MCP server) ever starts, and
 * how to find and kill all of it: the process group alone misses `setsid`,
 * double-forked daemons and `nohup … &` whose shell has exited.
 *
 * One mechanism per Skein process, chosen on first use:
 * - `cgroup`: a cgroup v2 per child under Skein's own cgroup (see Cgroup.ts).
 *   A `sh` wrapper writes its own pid into it and then `exec`s the child, so
 *   the child is inside before it can fork; nothing escapes by forking.
 * - `marker` (Linux without a usable cgroup, or `SKEIN_NO_CGROUP=1`): a unique
 *   environment entry per child, `SKEIN_TREE_<token>=<n>`, which every
 *   descendant inherits; the tree is the process group plus every process
 *   whose /proc/<pid>/environ holds the entry (reparented daemons included).
 * - `group` (no /proc: macOS): the process group only.
 * In every mechanism the process group is signalled too, and the child gets
 * the marker. The watchdog (Watchdog.ts) covers Skein's own sudden death;
 * an exit hook covers every exit of Skein that runs code.
 */
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import * as Cgroup from "./Cgroup.ts"
import * as ProcTable from "./ProcTable.ts"
import * as Watchdog from "./Watchdog.ts"

export type Mechanism = "cgroup" | "marker" | "group"

interface Setup {
  readonly mechanism: Mechanism
  readonly cgroup: string | undefined
  /** The environment variable's name, unique to this Skein process. */
  readonly name: string
  readonly watchdog: Watchdog.Options
}

let setup: Setup | undefined
let counter = 0

/** `SKEIN_NO_CGROUP=1` forces the fallback (to test it, or where cgroups misbehave). */
const cgroupsDisabled = () => {
  const value = process.env["SKEIN_NO_CGROUP"]
  return value !== undefined && value !== "" && value !== "0"
}

const init = (): Setup => {
  if (setup !== undefined) return setup
  const token = NodeCrypto.randomBytes(6).toString("hex")
  const name = `SKEIN_TREE_${token}`
  if (process.platform !== "linux") {
    setup = { mechanism: "group", cgroup: undefined, name, watchdog: { cgroup: undefined, marker: `${name}=` } }
    return setup
  }
  const candidate = cgroupsDisabled() ? undefined : Cgroup.baseDirectory(`skein-${process.pid}-${token}`)
  // The watchdog first: from the moment the subtree exists, Skein's death must sweep it.
  const watchdog = { cgroup: candidate, marker: `${name}=` }
  Watchdog.ensure(watchdog)
  if (candidate !== undefined) Cgroup.removeStale(NodePath.dirname(candidate))
  const cgroup = candidate !== undefined && Cgroup.makeBase(candidate) ? candidate : undefined
  setup = { mechanism: cgroup !== undefined ? "cgroup" : "marker", cgroup, name, watchdog }
  return setup
}

/** The mechanism this process uses (decided, and the cgroup made, on first call). */
export const mechanism = (): Mechanism => init().mechanism

// ---------------------------------------------------------------------------
// The safety net (one global, because the process is global): every tree not
// yet known dead is SIGKILLed synchronously when Skein exits.
// ---------------------------------------------------------------------------

const live = new Map<number, Tree>()
let hooked = false
const killAllNow = () => {
  for (const tree of live.values()) tree.signal("SIGKILL")
}

/** The leader pids of the trees this process still owns (for tests and diagnostics). */
export const liveLeaders = (): ReadonlySet<number> => new Set(live.keys())

// ---------------------------------------------------------------------------

export interface Tree {
  /** Environment entries the child must get. */
  readonly env: Readonly<Record<string, string>>
  /** The command line to spawn instead of `file args` (the cgroup wrapper), or the same. */
  readonly argv: (file: string, args: ReadonlyArray<string>) => { readonly file: string; readonly args: ReadonlyArray<string> }
  /** Whether `argv` wraps (the wrapper cannot report a missing program as Node does). */
  readonly wraps: boolean
  /** The child runs as leader of group `pid`: track it from now on (call as soon as the pid is known). */
  readonly attach: (pid: number) => void
  /** Whether any process of the tree can still run (zombies, and processes already exiting, are dead). */
  readonly isAlive: () => boolean
  /**
   * Whether the tree's cgroup still holds a process (false without a cgroup): one small read,
   * where `isAlive` may scan /proc. A process that has left its cgroup by exiting is in its
   * last moments; one that moved itself out is found by `isAlive` only.
   */
  readonly inCgroup: () => boolean
  /** The cgroup's `cgroup.events`, which changes when the cgroup empties (undefined without a cgroup). */
  readonly events: string | undefined
  /**
   * Whether all that still runs of the tree is the init of a pid namespace with no child left
   * (a sandbox's, which exits on its own a moment after the process Skein started has).
   */
  readonly settling: () => boolean
  /**
   * Whether something of the tree can still run that is not such an init: what a command
   * left running (in a sandbox, the children its init still waits for).
   */
  readonly leftBehind: () => boolean
  readonly signal: (sig: NodeJS.Signals) => void
  /** Forget the tree (after it is dead, or when the spawn failed) and remove its cgroup. */
  readonly release: () => void
}

const killQuietly = (pid: number, sig: NodeJS.Signals) => {
  try {
    process.kill(pid, sig)
  } catch {
    // ESRCH: gone. EPERM: only zombies remain (macOS), or not ours.
  }
}

/** Whether a process group has a member that can run (a zombie does not count). */
const isGroupAlive = (pgid: number, epoch?: ProcTable.Epoch): boolean => {
  try {
    process.kill(-pgid, 0)
  } catch {
    return false
  }
  // On Linux `kill(-pgid, 0)` succeeds for zombies too (a PID 1 that does not reap): ask /proc.
  return process.platform !== "linux" || ProcTable.members(epoch, pgid, undefined, 0).length > 0
}

/**
 * Whether the leader of group `pgid` can still run: the one process of a confined tree that may
 * be outside its cgroup (before its wrapper has joined it). While the group exists its number
 * is not given to another process, and `kill` says whether it exists.
 */
const leaderRuns = (pgid: number): boolean => {
  try {
    process.kill(-pgid, 0)
  } catch {
    return false
  }
  return ProcTable.canRun(pgid)
}

/** The tasks of a cgroup that can still run (not those on their way out, which it lists a moment longer). */
const runningIn = (cgroup: string): Array<number> => Cgroup.populated(cgroup) ? Cgroup.threads(cgroup).filter(ProcTable.canRun) : []

/** Cgroups whose removal failed while a task was still leaving them: tried again at the next command. */
const lingering = new Set<string>()
const removeLingering = () => {
  for (const dir of lingering) if (Cgroup.remove(dir)) lingering.delete(dir)
}

/**
 * Enters the cgroup, then becomes the child. Entering can only fail once the
 * cgroup is gone (Skein died and the watchdog swept it): then nothing runs.
 */
const WRAPPER = `{ echo $$ > "$0"; } 2>/dev/null || { echo "skein: the command's cgroup is gone; not running it" >&2; exit 125; }
exec "$@"`

/**
 * A tree for one child about to be spawned. `confined`: no process of the tree but its leader
 * (before its wrapper has joined the cgroup) can be outside its cgroup (a sandboxed command:
 * see `ProcessGroup.spawnProgram`), so the cgroup and the leader say what of it runs, without a
 * scan of /proc for the process group (several ms on a busy machine, at each look at a tree).
 * Without a cgroup it changes nothing.
 */
export const make = (options: { readonly confined?: boolean | undefined } = {}): Tree => {
  const { mechanism, cgroup: base, name, watchdog } = init()
  const n = ++counter
  const marker = `${name}=${n}`
  removeLingering()
  const cgroup = base !== undefined ? Cgroup.make(base, `c${n}`) : undefined
  // The watchdog runs before the child does: Skein may be killed the moment after the fork.
  // A new one (the first, or one someone killed) learns every group still open.
  if (mechanism !== "group" && Watchdog.ensure(watchdog)) {
    for (const leader of live.keys()) Watchdog.watch(leader)
  }
  // Without a cgroup of its own (none here, or mkdir failed), the marker finds the tree.
  const scan = cgroup === undefined && mechanism !== "group"
  const confined = options.confined === true && cgroup !== undefined
  let pgid = 0
  let since = 0
  let epoch: ProcTable.Epoch | undefined
  // Once no process of the tree is left, none can appear: nothing is left to fork.
  let dead = false

  /** The tree's tasks that can still run (undefined where they cannot be told apart: no /proc). */
  const liveTasks = (): ReadonlyArray<number> | undefined => {
    if (pgid === 0 || dead || mechanism === "group") return undefined
    if (confined) return [...new Set([...runningIn(cgroup!), ...(leaderRuns(pgid) ? [pgid] : [])])]
    return cgroup !== undefined
      ? [...new Set([...runningIn(cgroup), ...ProcTable.members(epoch, pgid, undefined, 0)])]
      : ProcTable.members(epoch, pgid, marker, since)
  }

  const tree: Tree = {
    env: { [name]: String(n) },
    wraps: cgroup !== undefined,
    argv: (file, args) =>
      cgroup === undefined ? { file, args } : { file: "/bin/sh", args: ["-c", WRAPPER, NodePath.join(cgroup, "cgroup.procs"), file, ...args] },
    attach: (pid) => {
      pgid = pid
      since = ProcTable.stat(pid)?.start ?? 0
      if (mechanism !== "group") epoch = ProcTable.epoch(pid)
      if (!hooked) {
        hooked = true
        process.once("exit", killAllNow)
      }
      live.set(pid, tree)
      Watchdog.watch(pid)
    },
    isAlive: () => {
      if (pgid === 0 || dead) return false
      const alive = (cgroup !== undefined && runningIn(cgroup).length > 0) ||
        (confined ? leaderRuns(pgid) : scan ? ProcTable.members(epoch, pgid, marker, since).length > 0 : isGroupAlive(pgid, epoch))
      dead = !alive
      return alive
    },
    inCgroup: () => cgroup !== undefined && !dead && Cgroup.populated(cgroup),
    events: cgroup === undefined ? undefined : NodePath.join(cgroup, "cgroup.events"),
    settling: () => {
      const running = liveTasks()
      return running !== undefined && ProcTable.onlyChildlessInits(running)
    },
    leftBehind: () => {
      const running = liveTasks()
      return running !== undefined && running.length > 0 && !ProcTable.onlyChildlessInits(running)
    },
    signal: (sig) => {
      if (pgid === 0) return
      killQuietly(-pgid, sig)
      if (cgroup !== undefined) Cgroup.signal(cgroup, sig)
      if (scan) for (const pid of ProcTable.members(epoch, pgid, marker, since)) killQuietly(pid, sig)
    },
    release: () => {
      if (pgid !== 0) {
        live.delete(pgid)
        Watchdog.forget(pgid)
      }
      // Still populated if a task is still leaving it (tried again at the next command), or if
      // something outlived SIGKILL (stuck in the kernel): the watchdog removes the whole
      // subtree when Skein exits.
      if (cgroup !== undefined && !Cgroup.remove(cgroup)) lingering.add(cgroup)
    }
  }
  return tree
}

/** Where a program named without a slash is found (as execvp would), or why not. */
export const resolveProgram = (file: string, env: Readonly<Record<string, string | undefined>>, cwd: string): { readonly path: string } | { readonly code: string } => {
  const candidates = file.includes("/")
    ? [NodePath.resolve(cwd, file)]
    : (env["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(":").map((dir) => NodePath.resolve(cwd, dir === "" ? "." : dir, file))
  let code = "ENOENT"
  for (const candidate of candidates) {
    try {
      if (!NodeFs.statSync(candidate).isFile()) continue
      NodeFs.accessSync(candidate, NodeFs.constants.X_OK)
      return { path: candidate }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EACCES") code = "EACCES"
    }
  }
  return { code }
}
