/**
 * The prompts typed in one folder, recalled with ↑/↓ in `skein run` and kept across runs:
 * `$SKEIN_HOME/history/<hash of the folder>.jsonl`, one JSON string per line (a prompt may have
 * several lines), mode 0600.
 *
 * Bounded: the newest `MAX_ENTRIES` are kept (the file is rewritten when it holds twice as
 * many). Known secrets and anything shaped like a key or a token are replaced before a prompt
 * is written. A history that cannot be read or written is not an error: the prompt works
 * without it.
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import * as Secrets from "../../secrets/Secrets.ts"

const MAX_ENTRIES = 500
const MAX_ENTRY_CHARS = 64 * 1024

export interface History {
  /** Oldest first. */
  readonly entries: () => ReadonlyArray<string>
  readonly add: (entry: string) => void
}

/** FNV-1a, 64 bits, in hex: a name for a folder (node:crypto would load at every start). */
const fnv = (text: string): string => {
  let h = 0xcbf29ce484222325n
  for (const byte of Buffer.from(text, "utf8")) h = ((h ^ BigInt(byte)) * 0x100000001b3n) & 0xffffffffffffffffn
  return h.toString(16).padStart(16, "0")
}

const fileFor = (home: string, cwd: string): string => {
  let dir = cwd
  try {
    dir = fs.realpathSync(cwd)
  } catch {}
  const key = `${nodePath.basename(dir).replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 40)}-${fnv(dir)}`
  return nodePath.join(home, "history", `${key}.jsonl`)
}

const parse = (text: string): Array<string> => {
  const out: Array<string> = []
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue
    try {
      const value: unknown = JSON.parse(line)
      if (typeof value === "string") out.push(value)
    } catch {
      // A torn line (two runs writing at once, a crash): skipped.
    }
  }
  return out
}

const write = (file: string, entries: ReadonlyArray<string>) => {
  const tmp = `${file}.${process.pid}.tmp`
  fs.writeFileSync(tmp, entries.map((e) => `${JSON.stringify(e)}\n`).join(""), { mode: 0o600 })
  fs.renameSync(tmp, file)
}

export const open = (home: string, cwd: string): History => {
  const file = fileFor(home, cwd)
  let entries: Array<string> = []
  try {
    entries = parse(fs.readFileSync(file, "utf8"))
    if (entries.length > 2 * MAX_ENTRIES) {
      entries = entries.slice(-MAX_ENTRIES)
      write(file, entries)
    }
  } catch {}
  return {
    entries: () => entries,
    add: (raw) => {
      if (raw.trim() === "" || raw.length > MAX_ENTRY_CHARS) return
      const entry = Secrets.redactWithShapes(raw)
      entries = [...entries.filter((e) => e !== entry), entry].slice(-2 * MAX_ENTRIES)
      try {
        fs.mkdirSync(nodePath.dirname(file), { recursive: true, mode: 0o700 })
        fs.appendFileSync(file, `${JSON.stringify(entry)}\n`, { mode: 0o600 })
      } catch {}
    }
  }
}

/** A history kept in memory only (tests, or a home that cannot be written). */
export const memory = (initial: ReadonlyArray<string> = []): History => {
  let entries = [...initial]
  return {
    entries: () => entries,
    add: (entry) => {
      if (entry.trim() !== "") entries = [...entries.filter((e) => e !== entry), entry]
    }
  }
}
