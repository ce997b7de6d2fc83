/**
 * The descriptors a sandboxed command's chain inherits. bubblewrap hands every descriptor it
 * gets on to the command, and Node's spawn closes none it was not told about; Node opens all
 * of its own close-on-exec, so what a child would inherit besides its stdio is what this
 * process was itself started with (an editor's pipes, a wrapper's files) — a way out of the
 * sandbox for a command that writes to it. A sandboxed launch puts `/dev/null` in each of
 * those places (`slots`), so the command holds its stdio and, at most, `/dev/null`.
 *
 * Found once per process: nothing this process opens later lacks close-on-exec.
 */
import * as NodeFs from "node:fs"

/** `O_CLOEXEC` in the `flags:` line of `/proc/<pid>/fdinfo/<fd>` (octal). */
const O_CLOEXEC = 0o2000000

/** Whether an fdinfo text says the descriptor survives `exec` (undefined when it does not say). */
export const inheritable = (fdinfo: string): boolean | undefined => {
  const flags = /^flags:\s*([0-7]+)\s*$/m.exec(fdinfo)?.[1]
  return flags === undefined ? undefined : (parseInt(flags, 8) & O_CLOEXEC) === 0
}

let found: ReadonlyArray<number> | undefined

/** The descriptors beyond stdio this process holds without close-on-exec (none where /proc cannot say). */
export const inherited = (): ReadonlyArray<number> => {
  if (found !== undefined) return found
  const out: Array<number> = []
  let names: Array<string> = []
  try {
    names = NodeFs.readdirSync("/proc/self/fdinfo")
  } catch {
    // No /proc: nothing to find.
  }
  for (const name of names) {
    const fd = Number(name)
    if (!Number.isInteger(fd) || fd < 3) continue
    try {
      if (inheritable(NodeFs.readFileSync(`/proc/self/fdinfo/${fd}`, "latin1")) === true) out.push(fd)
    } catch {
      // Closed meanwhile (the directory's own descriptor among them).
    }
  }
  found = out.sort((a, b) => a - b)
  return found
}

/**
 * What a child gets at 3, 4, …: `given` in order, then `blank` at every `inherited` number
 * beyond them, and `"ignore"` (nothing put there: what this process holds there closes on
 * `exec`) between.
 */
export const slots = (given: ReadonlyArray<number>, inherited: ReadonlyArray<number>, blank: number): Array<number | "ignore"> => {
  const out: Array<number | "ignore"> = [...given]
  for (const fd of inherited) {
    const at = fd - 3
    if (at < out.length) continue
    while (out.length < at) out.push("ignore")
    out.push(blank)
  }
  return out
}
