/**
 * The one watchdog of a Skein process: what kills Skein's commands when
 * Skein is killed outright (`kill -9`, an uncaught signal such as SIGHUP)
 * and runs no code of its own.
 *
 * It is a small `sh` started once, on first use (before Skein's cgroup
 * subtree exists), outside every command's process group and cgroup (so no
 * command can be mistaken for it, or kill it by killing its group). It blocks
 * reading a pipe from Skein: Skein
 * tells it each process group it starts (`+pgid`) and releases (`-pgid`).
 * When Skein dies, however it dies, the kernel closes Skein's end of the pipe
 * and `read` returns: the watchdog SIGKILLs the groups still listed, kills and
 * removes Skein's cgroup subtree, and SIGKILLs every process whose
 * environment carries Skein's marker. No polling while Skein lives: a command
 * costs one short write to the pipe.
 *
 * Skein's end of the pipe is close-on-exec, so no command inherits it (which
 * would keep the watchdog waiting after Skein's death).
 */
import * as NodeChildProcess from "node:child_process"
import type { Writable } from "node:stream"
import * as Descriptors from "./Descriptors.ts"

export interface Options {
  /** Skein's cgroup subtree, when it has one. */
  readonly cgroup: string | undefined
  /** The `NAME=` prefix every descendant's environment carries. */
  readonly marker: string
}

/**
 * $1: the cgroup subtree (it may not exist) or "", $2: the marker. After EOF, repeated a few
 * times, because a process may fork between the scan that finds it and the
 * signal that kills it.
 */
const SCRIPT = `
groups=
while read -r op id; do
  case "$op" in
    +) groups="$groups $id" ;;
    -) kept=; for g in $groups; do [ "$g" = "$id" ] || kept="$kept $g"; done; groups=$kept ;;
  esac
done
for g in $groups; do kill -KILL "-$g" 2>/dev/null; done
i=0
while [ $i -lt 20 ]; do
  found=
  if [ -n "$1" ] && [ -d "$1" ]; then
    echo 1 > "$1/cgroup.kill" 2>/dev/null ||
      for p in $(cat $(find "$1" -name cgroup.procs 2>/dev/null) 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
    find "$1" -depth -type d -exec rmdir {} + 2>/dev/null
    [ -d "$1" ] && found=1
  fi
  [ -n "$2" ] && for f in $(grep -lsaF "$2" /proc/[0-9]*/environ 2>/dev/null); do
    p=\${f#/proc/}; kill -KILL "\${p%/environ}" 2>/dev/null && found=1
  done
  # Twice at least: a child Skein forked just before it died may not have exec'd yet.
  [ -z "$found" ] && [ $i -gt 0 ] && exit 0
  i=$((i + 1))
  sleep 0.05
done
`

let current: { readonly stdin: Writable | undefined; alive: boolean } | undefined

const start = (options: Options): { readonly stdin: Writable | undefined; alive: boolean } => {
  let child: NodeChildProcess.ChildProcess
  try {
    child = NodeChildProcess.spawn("/bin/sh", ["-c", SCRIPT, "skein-watchdog", options.cgroup ?? "", options.marker], {
      // Its own group and session: a Ctrl-C meant for Skein's group does not reach it.
      detached: true,
      stdio: Descriptors.stdio(["pipe", "ignore", "ignore"]),
      // Skein's marker is not in Skein's own environment, so the watchdog does not find itself.
      env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" }
    })
  } catch {
    // No watchdog (out of processes or descriptors): the next command tries again.
    return { stdin: undefined, alive: false }
  }
  const state = { stdin: child.stdin ?? undefined, alive: child.pid !== undefined }
  // It must never keep Skein alive, nor fail it: a write after its death is ignored.
  child.unref()
  ;(child.stdin as unknown as { unref?: () => void } | null)?.unref?.()
  const dead = () => {
    state.alive = false
  }
  child.stdin?.on("error", dead)
  child.on("error", dead)
  child.once("exit", dead)
  return state
}

const send = (line: string): void => {
  const stdin = current?.alive === true ? current.stdin : undefined
  if (stdin !== undefined && !stdin.destroyed) stdin.write(line)
}

/** Starts the watchdog on first use, and again if someone killed it; true if it (re)started. */
export const ensure = (options: Options): boolean => {
  if (current !== undefined && current.alive) return false
  current = start(options)
  return true
}

/** A new group to kill if Skein dies. */
export const watch = (pgid: number): void => send(`+ ${pgid}\n`)

/** The group is dead and released: its pgid may be reused, so the watchdog must not kill it. */
export const forget = (pgid: number): void => send(`- ${pgid}\n`)
