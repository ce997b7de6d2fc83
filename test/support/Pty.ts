/**
 * Drives a command in a pseudo-terminal, as a person at a keyboard would (through
 * `pty_bridge.py`, on python3's `pty` module):
 *
 *   const term = spawnPty([NODE, SKEIN, "run", "--home", home], { cwd })
 *   await term.waitFor("> ")          // the next occurrence after the last one waited for
 *   term.type("hello\r")              // "\r" is Enter, "\x03" Ctrl-C, "\x04" Ctrl-D
 *   expect(await term.exit).toBe(0)
 *
 * Output is kept with escape sequences removed and line ends as "\n" (`text()`).
 */
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from "node:child_process"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const BRIDGE = path.join(path.dirname(fileURLToPath(import.meta.url)), "pty_bridge.py")

/** Whether python3 with its `pty` module is here (the tests that need it are skipped otherwise). */
export const ptyAvailable = spawnSync("python3", ["-c", "import pty, termios"], { encoding: "utf8" }).status === 0

// CSI and OSC sequences, and the other escapes readline and the spinner write.
// eslint-disable-next-line no-control-regex
const ESCAPES = /\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][0-9A-Za-z]|\x1b[=>78]/g

export const plain = (raw: string): string => raw.replace(ESCAPES, "").replace(/\r+\n/g, "\n")

export interface Pty {
  readonly child: ChildProcessWithoutNullStreams
  /** Everything written so far, without escape sequences. */
  readonly text: () => string
  /** Everything written so far, as written. */
  readonly raw: () => string
  /** Resolves once `pattern` appears after the end of the last match waited for; fails after `timeoutMs`. */
  readonly waitFor: (pattern: string | RegExp, timeoutMs?: number) => Promise<string>
  readonly type: (keys: string) => void
  /** The command's exit code (128 + N for a signal). */
  readonly exit: Promise<number | null>
}

export const spawnPty = (argv: ReadonlyArray<string>, options: { readonly cwd: string; readonly env?: Record<string, string> }): Pty => {
  const child = spawn("python3", [BRIDGE, "120", "40", ...argv], {
    cwd: options.cwd,
    env: { ...process.env, TERM: "xterm-256color", ...options.env }
  })
  let raw = ""
  let cursor = 0
  const listeners = new Set<() => void>()
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    raw += chunk
    for (const listener of [...listeners]) listener()
  })
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    raw += `[bridge] ${chunk}`
  })
  const exit = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)))
  const text = () => plain(raw)
  const waitFor = (pattern: string | RegExp, timeoutMs = 15_000) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const rest = text().slice(cursor)
        const match = typeof pattern === "string"
          ? (rest.includes(pattern) ? { index: rest.indexOf(pattern), length: pattern.length } : undefined)
          : (() => {
            const m = pattern.exec(rest)
            return m === null ? undefined : { index: m.index, length: m[0].length }
          })()
        if (match === undefined) return false
        const seen = rest.slice(0, match.index + match.length)
        cursor += match.index + match.length
        listeners.delete(check)
        clearTimeout(timer)
        resolve(seen)
        return true
      }
      const timer = setTimeout(() => {
        listeners.delete(check)
        reject(new Error(`timed out waiting for ${String(pattern)}; output after the last match:\n${text().slice(cursor)}`))
      }, timeoutMs)
      if (!check()) {
        listeners.add(check)
        void exit.then(() => {
          if (listeners.has(check) && !check()) {
            listeners.delete(check)
            clearTimeout(timer)
            reject(new Error(`exited before ${String(pattern)} appeared; output after the last match:\n${text().slice(cursor)}`))
          }
        })
      }
    })
  return { child, text, raw: () => raw, waitFor, type: (keys) => child.stdin.write(keys), exit }
}
