/**
 * What Linux's /proc says about processes: state, parent, group, start time,
 * and whether a process's environment holds a given entry. Everything here is
 * synchronous and cheap enough to call in the exit hook; every read tolerates
 * the process vanishing under it. Elsewhere (no /proc) the answers are empty.
 */
import * as NodeFs from "node:fs"

interface Stat {
  readonly pid: number
  /** The state letter: R, S, D, T, Z (zombie), X (dead), … */
  readonly state: string
  readonly ppid: number
  readonly pgrp: number
  /** When the process started, in clock ticks since boot (field 22). */
  readonly start: number
  /** The kernel's flags of the task (field 9): `PF_EXITING` among them. */
  readonly flags: number
}

/** /proc/<pid>/stat, parsed after the parenthesised name (which may hold spaces). */
export const stat = (pid: number | string): Stat | undefined => {
  try {
    const text = NodeFs.readFileSync(`/proc/${pid}/stat`, "latin1")
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ")
    return { pid: Number(pid), state: fields[0] ?? "", ppid: Number(fields[1]), pgrp: Number(fields[2]), flags: Number(fields[6]), start: Number(fields[19]) }
  } catch {
    return undefined
  }
}

/** Set from the moment a task starts to exit: it runs none of its own code again and forks nothing. */
const PF_EXITING = 0x4

/**
 * Whether the task can still run code of its own: not a zombie (exited, not yet reaped), not a
 * dead entry, and not on its way out (`PF_EXITING`: it has closed or is closing its files and
 * leaving its cgroup; a pid namespace's init is in this state while the kernel ends the rest).
 */
const isLive = (s: Stat): boolean => s.state !== "Z" && s.state !== "X" && (s.flags & PF_EXITING) === 0

/** Whether task `tid` (a process or a thread) can still run (see `isLive`); false when it is gone. */
export const canRun = (tid: number | string): boolean => {
  const s = stat(tid)
  return s !== undefined && isLive(s)
}

/** Whether the process is the init of a pid namespace nested in ours: pid 1 in its innermost one (`NSpid`). */
const namespaceInit = (pid: number): boolean => {
  try {
    const ids = /^NSpid:\s*(.*)$/m.exec(NodeFs.readFileSync(`/proc/${pid}/status`, "latin1"))?.[1]?.trim().split(/\s+/) ?? []
    return ids.length > 1 && ids[ids.length - 1] === "1"
  } catch {
    return false
  }
}

/**
 * Whether every one of `tids` (the live tasks of a tree) is the init of a pid namespace with no
 * child among them: such an init (a sandbox's) exits on its own once its last child has, a
 * moment after the process that started it did. False for an empty list.
 */
export const onlyChildlessInits = (tids: ReadonlyArray<number>): boolean => {
  if (tids.length === 0) return false
  const parents = new Set(tids.map((tid) => stat(tid)?.ppid))
  return tids.every((tid) => namespaceInit(tid) && !parents.has(tid))
}

/** The numeric entries of /proc, as strings (empty without /proc). */
const pids = (): Array<string> => {
  let entries: Array<string>
  try {
    entries = NodeFs.readdirSync("/proc")
  } catch {
    return []
  }
  return entries.filter((entry) => {
    const c = entry.charCodeAt(0)
    return c >= 48 && c <= 57
  })
}

/**
 * Whether the process's initial environment holds `entry` (`NAME=value`) as a
 * whole entry. A zombie's environment reads as empty; a process of another
 * user cannot be read (and could not be signalled either).
 */
export const environHas = (pid: number | string, entry: string): boolean => {
  let bytes: Buffer
  try {
    bytes = NodeFs.readFileSync(`/proc/${pid}/environ`)
  } catch {
    return false
  }
  const needle = Buffer.from(`${entry}\0`, "latin1")
  for (let at = bytes.indexOf(needle); at >= 0; at = bytes.indexOf(needle, at + 1)) {
    if (at === 0 || bytes[at - 1] === 0) return true
  }
  return false
}

const readNumber = (file: string, pick: (text: string) => string | undefined): number | undefined => {
  try {
    const value = Number(pick(NodeFs.readFileSync(file, "latin1")))
    return Number.isInteger(value) ? value : undefined
  } catch {
    return undefined
  }
}

/** The pid the kernel allocated last (in this pid namespace), from /proc/loadavg. */
const lastPid = () => readNumber("/proc/loadavg", (text) => text.trim().split(" ")[4])
/** Tasks (processes and threads) created since boot: each took a pid. */
const forks = () => readNumber("/proc/stat", (text) => /^processes (\d+)$/m.exec(text)?.[1])
let pidMax: number | undefined
const maxPid = () => (pidMax ??= readNumber("/proc/sys/kernel/pid_max", (text) => text.trim()))

/** Where pid allocation stood just after a tree's leader was created. */
export interface Epoch {
  readonly leader: number
  readonly last: number
  readonly forks: number
}

export const epoch = (leader: number): Epoch | undefined => {
  const last = lastPid()
  const count = forks()
  return last === undefined || count === undefined ? undefined : { leader, last, forks: count }
}

/**
 * Whether every pid allocated since the epoch is above the leader's: pids go
 * up from `last` and wrap only after `pid_max - last` more allocations, and
 * there have been at most as many allocations as forks.
 */
const noWrapSince = (e: Epoch | undefined): boolean => {
  if (e === undefined || e.last < e.leader) return false
  const now = forks()
  const max = maxPid()
  return now !== undefined && max !== undefined && now - e.forks < max - e.last
}

let scans = 0
/** How many times `members` has looked through /proc (for tests and diagnostics). */
export const scanCount = (): number => scans

/**
 * Live processes that are in group `pgrp`, or that started no earlier than
 * `since` (a descendant cannot be older than its ancestor) and carry `marker`
 * in their environment. Skein itself is never one of them.
 *
 * Descendants of the leader (group members included: a process cannot join a
 * group of another session) were created after it, so while pid allocation
 * has not wrapped around since (see `noWrapSince`), their pids are above the
 * leader's and only those are read: a few files instead of one per process
 * of the system. Otherwise, or without an epoch, all are read.
 */
export const members = (epoch: Epoch | undefined, pgrp: number, marker: string | undefined, since: number): Array<number> => {
  scans++
  const floor = noWrapSince(epoch) ? epoch!.leader : 0
  const out: Array<number> = []
  for (const entry of pids()) {
    if (Number(entry) < floor) continue
    const s = stat(entry)
    if (s === undefined || !isLive(s) || s.pid === process.pid) continue
    if (s.pgrp === pgrp || (marker !== undefined && s.start >= since && environHas(entry, marker))) out.push(s.pid)
  }
  return out
}
