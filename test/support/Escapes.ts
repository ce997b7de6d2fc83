/**
 * Ways a command's processes try to outlive it, and how a test finds the ones that did.
 *
 * Each escape starts a `sleep <arg>` whose argument is unique to the test, so that
 * `survivors(arg)` (a search of /proc/<pid>/cmdline) finds exactly its processes and nobody
 * else's; the process writes its pid to a file first, so a test knows it really ran. A command
 * made with `escapeCommand` starts the escapes and waits until all of them run.
 */
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import * as Cgroup from "../../src/tools/process/Cgroup.ts"

export const DAEMON = join(import.meta.dirname, "..", "fixtures", "process", "daemon.sh")

const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`

/** `sh` that writes its pid to `pidfile`, then becomes `sleep arg`. */
const sleeper = (pidfile: string, arg: string) => `sh -c 'echo $$ > "$0"; exec sleep ${arg}' ${q(pidfile)}`

export interface Escape {
  readonly name: string
  readonly command: (pidfile: string, arg: string) => string
  /** Escapes the environment marker too: only a cgroup holds it. */
  readonly cgroupOnly?: boolean
}

export const ESCAPES: ReadonlyArray<Escape> = [
  { name: "setsid", command: (f, a) => `setsid ${sleeper(f, a)} &` },
  { name: "a double fork whose parent exits", command: (f, a) => `(setsid ${sleeper(f, a)} &)` },
  { name: "nohup and disown", command: (f, a) => `nohup ${sleeper(f, a)} >/dev/null 2>&1 & disown` },
  { name: "a daemon that closes its stdio", command: (f, a) => `sh ${q(DAEMON)} ${q(f)} sleep ${a}` },
  { name: "setsid with a cleared environment", command: (f, a) => `(setsid env -i ${sleeper(f, a)} &)`, cgroupOnly: true }
]

let counter = 0
/** A sleep argument no other test (or engineer) uses: 98 followed by 7 random digits. */
export const uniqueArg = (): string => `98${String(Math.floor(Math.random() * 1e5)).padStart(5, "0")}${String(++counter % 100).padStart(2, "0")}`

/** Starts each escape (pid files in `dir`) and waits until each of them is `sleep <arg>`. */
export const escapeCommand = (dir: string, escapes: ReadonlyArray<{ readonly escape: Escape; readonly arg: string }>): string => {
  const files = escapes.map((_, i) => join(dir, `escape-${i}.pid`))
  const start = escapes.map(({ escape, arg }, i) => escape.command(files[i]!, arg)).join("\n")
  // The pid file is written just before `exec sleep`: wait for the exec too.
  const ready = escapes.map(({ arg }, i) => `is ${q(files[i]!)} ${arg}`).join(" && ")
  const is = `is() { [ -s "$1" ] && [ "$(tr '\\0' ' ' < /proc/$(cat "$1")/cmdline 2>/dev/null)" = "sleep $2 " ]; }`
  return `${start}\n${is}\nuntil ${ready}; do sleep 0.01; done\necho started`
}

/** The pid written by escape `i` in `dir` (0 if none yet). */
export const escapePid = (dir: string, i: number): number => {
  try {
    return Number(readFileSync(join(dir, `escape-${i}.pid`), "utf8").trim()) || 0
  } catch {
    return 0
  }
}

/** Live (not zombie) processes whose command line is exactly `sleep <arg>`. */
export const survivors = (arg: string): Array<number> => {
  const wanted = `sleep\0${arg}\0`
  const out: Array<number> = []
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "latin1") !== wanted) continue
      const stat = readFileSync(`/proc/${entry}/stat`, "latin1")
      const state = stat.slice(stat.lastIndexOf(")") + 2)[0]
      if (state !== "Z" && state !== "X") out.push(Number(entry))
    } catch {
      // gone meanwhile
    }
  }
  return out
}

/** Cleanup after a failed test: SIGKILL what survived, by pid (the argument is the test's own). */
export const killSurvivors = (args: ReadonlyArray<string>): void => {
  for (const arg of args) {
    for (const pid of survivors(arg)) {
      try {
        process.kill(pid, "SIGKILL")
      } catch {
        // gone
      }
    }
  }
}

/**
 * Whether this user can make and use a cgroup v2 subtree here (the probe Skein itself runs,
 * under a name of its own, removed at once).
 */
export const cgroupsWritable = (): boolean => {
  if (process.platform !== "linux") return false
  const base = Cgroup.baseDirectory(`skein-test-probe-${process.pid}`)
  if (base === undefined || !Cgroup.makeBase(base)) return false
  Cgroup.remove(base)
  return true
}

/** The cgroup v2 path of a process (the `0::` line), or undefined. */
export const cgroupOf = (pid: number): string | undefined => {
  try {
    return readFileSync(`/proc/${pid}/cgroup`, "utf8").split("\n").find((l) => l.startsWith("0::"))?.slice(3)
  } catch {
    return undefined
  }
}
