/**
 * stderr without secrets. Effect's logger writes through the `Console` it
 * finds in context; the CLI provides `console` from here, so every log line,
 * cause and stack trace is redacted (known secrets, and anything shaped like a
 * key) before it is written. The CLI's own messages use `write`.
 */
import type * as Console from "effect/Console"
import { formatWithOptions } from "node:util"
import * as Secrets from "./Secrets.ts"

/** Writes text to stderr, redacted. */
export const write = (text: string): void => {
  process.stderr.write(Secrets.redactWithShapes(text))
}

/** Formats like `console.error` does, then writes it, redacted. */
export const print = (...args: ReadonlyArray<unknown>): void => write(`${formatWithOptions({ colors: false }, ...args)}\n`)

/** The global console, with everything it would write to stderr redacted. */
export const console: Console.Console = {
  ...(globalThis.console as unknown as Console.Console),
  error: print,
  warn: print
}
