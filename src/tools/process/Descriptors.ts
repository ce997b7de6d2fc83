/**
 * The descriptors every process Skein starts inherits: its stdio, what its caller hands it
 * (a sandbox's filter), and nothing else.
 *
 * Node opens all of its own descriptors close-on-exec (its IPC channel too), but its spawn
 * closes none it was not told about: what a child would inherit besides its stdio is what
 * this process was itself started with without close-on-exec (an editor's pipes, a wrapper's
 * files, a directory). That is a way around the sandbox (a directory's descriptor reaches
 * every file below it whatever the mount namespace shows; a file's is read or written
 * whatever is hidden), and a secret for any command, hook or server.
 *
 * - The `skein` command owns its descriptors (`own`): what it inherited is closed the first
 *   time it starts a process (none of it is Skein's to use). Nothing is left to hand on, and a
 *   spawn's descriptor table stays as short as its stdio.
 * - A host that embeds Skein keeps its descriptors: every spawn puts `/dev/null` in each of
 *   those places instead (`stdio`), so the child holds its stdio and, at most, `/dev/null`.
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

let owned = false
let found: ReadonlyArray<number> | undefined
let blank: number | undefined

/**
 * This process owns its descriptors (the `skein` command, not a host embedding Skein): what it
 * inherited is closed before it first starts a process. Called before any process is started.
 */
export const own = (): void => {
  owned = true
}

/** The descriptors beyond stdio this process holds without close-on-exec (none where /proc cannot say). */
const scan = (): Array<number> => {
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
  return out.sort((a, b) => a - b)
}

/** What a child would inherit beyond its stdio: found once; for a process that owns its descriptors, closed then, so none. */
export const inherited = (): ReadonlyArray<number> => {
  if (found !== undefined) return found
  const fds = scan()
  if (!owned) return (found = fds)
  const kept: Array<number> = []
  for (const fd of fds) {
    try {
      NodeFs.closeSync(fd)
    } catch {
      kept.push(fd)
    }
  }
  return (found = kept)
}

/**
 * What a child gets at 3, 4, …: `given` in order, then `blank` at every `inherited` number
 * (where `given` puts nothing, too), and `"ignore"` (nothing put there: what this process
 * holds there closes on `exec`) between.
 */
export const slots = (given: ReadonlyArray<number | "ignore">, inherited: ReadonlyArray<number>, blank: number): Array<number | "ignore"> => {
  const out: Array<number | "ignore"> = [...given]
  for (const fd of inherited) {
    const at = fd - 3
    if (at < out.length) {
      if (out[at] === "ignore") out[at] = blank
      continue
    }
    while (out.length < at) out.push("ignore")
    out.push(blank)
  }
  return out
}

type Slot = number | "ignore" | "pipe"

/**
 * A spawn's `stdio`: `base` (0, 1 and 2), `given` at 3, 4, …, and `/dev/null` over every
 * descriptor this process inherited. Throws when `/dev/null` cannot be opened (out of
 * descriptors): then the spawn must not happen.
 */
export const stdio = (base: readonly [Slot, Slot, Slot], given: ReadonlyArray<number | "ignore"> = []): Array<Slot> => {
  const leaks = inherited()
  if (leaks.length === 0) return [...base, ...given]
  blank ??= NodeFs.openSync("/dev/null", "r+")
  return [...base, ...slots(given, leaks, blank)]
}
