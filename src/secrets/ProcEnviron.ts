/**
 * Keeps Skein's secret variables out of `/proc/<skein pid>/environ` (Linux).
 *
 * That file shows the environment block the process was started with, as it
 * lies in its memory: deleting or changing a variable (`delete process.env.X`,
 * which is `unsetenv`) leaves the block as it was, so any process of the same
 * user can still read every key there. What works without a native addon:
 * overwrite the secret values inside the block through `/proc/self/mem` (a
 * process may always write its own memory), after setting each variable again
 * so that `getenv` (and `process.env`) reads a copy on the heap instead. The
 * block then shows `NAME=****`; the program sees the real value.
 *
 * It costs two small reads and a write for each secret, and nothing when no
 * variable is secret; it is done before the first command or MCP server starts. Anything unexpected (another OS, no `/proc`, a kernel
 * that refuses) leaves the environment as it is: this is a second line of
 * defence behind the redactor.
 *
 * `/proc/<pid>/mem` cannot be protected this way: the key is also on the heap,
 * where it must be to be used. Only a non-dumpable process (`prctl`, which Node
 * does not expose) or the kernel's Yama `ptrace_scope` ≥ 1 keeps other
 * processes of the same user out of it. See the README, "Secrets".
 */
import * as fs from "node:fs"
import * as Secrets from "./Secrets.ts"

/** Names already blanked (a name is done once). */
const hidden = new Set<string>()

interface Region {
  readonly start: number
  readonly end: number
}

/** Where the environment block lies: fields 50 and 51 of `/proc/self/stat` (Linux 3.5+). */
const region = (): Region | undefined => {
  const stat = fs.readFileSync("/proc/self/stat", "latin1")
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  const start = Number(fields[50 - 3])
  const end = Number(fields[51 - 3])
  return Number.isSafeInteger(start) && Number.isSafeInteger(end) && start > 0 && end > start && end - start < 16 * 1024 * 1024
    ? { start, end }
    : undefined
}

/**
 * Blanks, in the environment block, the values of the variables `isSecret`
 * names. Returns the names blanked by this call.
 */
const hide = (isSecret: (name: string, value: string) => boolean): ReadonlyArray<string> => {
  if (process.platform !== "linux") return []
  const wanted: Array<string> = []
  for (const name in process.env) {
    const value = process.env[name]
    if (value !== undefined && value.length > 0 && !hidden.has(name) && isSecret(name, value)) wanted.push(name)
  }
  if (wanted.length === 0) return []
  let fd: number | undefined
  try {
    const where = region()
    if (where === undefined) return []
    fd = fs.openSync("/proc/self/mem", "r+")
    const block = Buffer.alloc(where.end - where.start)
    fs.readSync(fd, block, 0, block.length, where.start)
    const done: Array<string> = []
    for (const name of wanted) {
      const prefix = Buffer.from(`${name}=`, "utf8")
      const value = process.env[name]!
      let blanked = false
      for (let at = 0; at < block.length;) {
        const end = block.indexOf(0, at)
        const entryEnd = end === -1 ? block.length : end
        if (entryEnd - at > prefix.length && block.compare(prefix, 0, prefix.length, at, at + prefix.length) === 0) {
          const from = at + prefix.length
          // First a copy on the heap for getenv, then the block: the value is never lost.
          if (!blanked) process.env[name] = value
          blanked = true
          fs.writeSync(fd, Buffer.alloc(entryEnd - from, "*"), 0, entryEnd - from, where.start + from)
        }
        at = entryEnd + 1
      }
      hidden.add(name)
      if (blanked) done.push(name)
    }
    return done
  } catch {
    return []
  } finally {
    if (fd !== undefined) fs.closeSync(fd)
  }
}

let scanned: number | undefined

/**
 * Blanks every variable the process's registry holds secret (`Secrets.isSecretVariable`).
 * Called before a command or an MCP server starts, so that start-up never pays for it; it
 * looks at the environment again only when the registry learned something since.
 */
export const hideSecrets = (): ReadonlyArray<string> => {
  const registry = Secrets.registry()
  if (scanned === registry.version()) return []
  scanned = registry.version()
  return hide(registry.isSecretVariable)
}
