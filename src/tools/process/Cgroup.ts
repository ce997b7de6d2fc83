/**
 * A cgroup (v2) subtree of Skein's own cgroup, when the user may make one:
 * root, or a delegated subtree (a systemd user session). A process cannot
 * leave a cgroup by forking, `setsid` or double-forking, so a command's
 * cgroup holds every descendant it ever had, and `cgroup.kill` ends them all
 * at once, forks in flight included.
 *
 * Layout: `<own cgroup>/skein-<pid>-<token>/` for this Skein process, one
 * child `c<n>/` per command. Everything is synchronous (small reads and
 * writes of a pseudo-filesystem) so that the exit hook can use it too.
 */
import * as NodeChildProcess from "node:child_process"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import * as Descriptors from "./Descriptors.ts"

/** Where Skein's own cgroup is, from /proc/self/cgroup and the cgroup2 mount; undefined without one. */
export const ownDirectory = (): string | undefined => {
  let self: string
  let mounts: string
  try {
    self = NodeFs.readFileSync("/proc/self/cgroup", "utf8")
    mounts = NodeFs.readFileSync("/proc/self/mountinfo", "utf8")
  } catch {
    return undefined
  }
  // The unified hierarchy's line is `0::<path>` (hybrid systems list v1 controllers too).
  const path = self.split("\n").find((line) => line.startsWith("0::"))?.slice(3)
  if (path === undefined || !path.startsWith("/") || path.split("/").includes("..")) return undefined
  for (const line of mounts.split("\n")) {
    const [left, right] = line.split(" - ")
    if (right === undefined || !right.startsWith("cgroup2 ")) continue
    const fields = left!.split(" ")
    const root = fields[3]
    const mountPoint = fields[4]
    if (root === undefined || mountPoint === undefined) continue
    if (path === root || path.startsWith(root === "/" ? "/" : `${root}/`)) {
      return NodePath.join(mountPoint.replace(/\\040/g, " "), path.slice(root.length))
    }
  }
  return undefined
}

/** Where this Skein process's subtree goes (`<own cgroup>/<name>`), if there is a cgroup v2. */
export const baseDirectory = (name: string): string | undefined => {
  const own = ownDirectory()
  return own === undefined ? undefined : NodePath.join(own, name)
}

/**
 * Makes this Skein process's subtree and proves that a process can be moved
 * into it (mkdir alone does not prove delegation): a short-lived `sh` writes
 * its own pid into it. False (nothing is left behind) when cgroups are not
 * available to this user.
 */
export const makeBase = (base: string): boolean => {
  let stdio: ReturnType<typeof Descriptors.stdio>
  try {
    stdio = Descriptors.stdio(["ignore", "ignore", "ignore"])
    NodeFs.mkdirSync(base)
  } catch {
    return false
  }
  const probe = NodeChildProcess.spawnSync("/bin/sh", ["-c", "echo $$ > \"$0\"", NodePath.join(base, "cgroup.procs")], { stdio, timeout: 5_000 })
  if (probe.status !== 0) {
    remove(base)
    return false
  }
  return true
}

const STALE = /^skein-(\d+)-[0-9a-f]+$/

/**
 * Removes the empty subtrees of Skein processes that are gone (their watchdog
 * was killed too). One that still holds processes is left alone: its owner
 * may be alive in another pid namespace.
 */
export const removeStale = (own: string): void => {
  let names: Array<string>
  try {
    names = NodeFs.readdirSync(own)
  } catch {
    return
  }
  for (const name of names) {
    const pid = Number(STALE.exec(name)?.[1])
    if (!(pid > 0) || pid === process.pid) continue
    try {
      process.kill(pid, 0)
      continue // alive (or EPERM: someone's)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ESRCH") continue
    }
    if (!populated(NodePath.join(own, name))) remove(NodePath.join(own, name))
  }
}

/** Creates a command's cgroup; undefined if that failed. */
export const make = (base: string, name: string): string | undefined => {
  const dir = NodePath.join(base, name)
  try {
    NodeFs.mkdirSync(dir)
    return dir
  } catch {
    return undefined
  }
}

const subdirectories = (dir: string): Array<string> => {
  try {
    return NodeFs.readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => NodePath.join(dir, e.name))
  } catch {
    return []
  }
}

/** Every process (`cgroup.procs`) or task (`cgroup.threads`) in the cgroup and its descendants (a command may make sub-cgroups). */
const listed = (dir: string, file: "cgroup.procs" | "cgroup.threads"): Array<number> => {
  const out: Array<number> = []
  try {
    for (const line of NodeFs.readFileSync(NodePath.join(dir, file), "latin1").split("\n")) {
      if (line !== "") out.push(Number(line))
    }
  } catch {
    // gone
  }
  for (const sub of subdirectories(dir)) out.push(...listed(sub, file))
  return out
}

const procs = (dir: string): Array<number> => listed(dir, "cgroup.procs")

/** Every task (thread) of the subtree: those still on their way out are listed until they have left it. */
export const threads = (dir: string): Array<number> => listed(dir, "cgroup.threads")

/**
 * Whether the subtree holds a task (zombies have left it already; one on its way out has not
 * yet: `threads` and `ProcTable.canRun` tell them apart).
 */
export const populated = (dir: string): boolean => {
  try {
    return NodeFs.readFileSync(NodePath.join(dir, "cgroup.events"), "latin1").includes("populated 1")
  } catch {
    return false
  }
}

/** Sends a signal to every process of the subtree. */
export const signal = (dir: string, sig: NodeJS.Signals): void => {
  if (sig === "SIGKILL") {
    try {
      // Linux 5.14+: the kernel kills the whole subtree, processes forking meanwhile included.
      NodeFs.writeFileSync(NodePath.join(dir, "cgroup.kill"), "1")
      return
    } catch {
      // older kernels: one by one below (the caller repeats until the cgroup is empty)
    }
  }
  for (const pid of procs(dir)) {
    try {
      process.kill(pid, sig)
    } catch {
      // gone already
    }
  }
}

/** Removes the subtree (deepest first); false if a cgroup in it still holds a process. */
export const remove = (dir: string): boolean => {
  for (const sub of subdirectories(dir)) remove(sub)
  try {
    NodeFs.rmdirSync(dir)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ENOENT"
  }
}
