/**
 * The one error of the log store. `reason` says what a caller may do about it:
 * `not_found` (no such session), `locked` (another process has it open; on a write: another
 * Skein took the session over, and nothing more may be written),
 * `corrupt` (a bad line or header; the message names the file and line),
 * `version` (a format this Skein cannot read), `invalid` (an event its type's Schema
 * refuses: not written), `io` (the disk or the database said no: it may work again later;
 * `code`, when a system call failed, is its error code: `ENOSPC`, `EACCES`…), `cursor` (a
 * listing's cursor this store never gave).
 * Messages name files and line numbers, never a line's content; callers decide by `reason`
 * and `code`, never by the message.
 */
import * as Schema from "effect/Schema"

export class LogError extends Schema.TaggedError<LogError>()("LogError", {
  reason: Schema.optionalKey(Schema.Literals(["not_found", "locked", "corrupt", "version", "invalid", "io", "cursor"])),
  message: Schema.String,
  code: Schema.optionalKey(Schema.String)
}) {}

/** What the system's error codes that stop a log from being written mean, in words. */
const meanings: Record<string, string> = {
  ENOSPC: "the disk is full",
  EDQUOT: "the disk quota is used up",
  EROFS: "the file system is read-only",
  EIO: "the disk reported an I/O error",
  EACCES: "permission denied",
  EPERM: "permission denied",
  EFBIG: "the file is too large",
  EMFILE: "too many open files",
  ENFILE: "too many open files"
}

const codeOf = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "code" in error && typeof error.code === "string" ? error.code : undefined

/** A system error's code as a reader understands it: `the disk is full (ENOSPC)`; the code alone when it has no meaning here. */
export const describeCode = (error: unknown): string => {
  const code = codeOf(error)
  if (code === undefined) return "error"
  const meaning = meanings[code]
  return meaning === undefined ? code : `${meaning} (${code})`
}

/** An `io` failure of a system call: `what` could not be done, why in words, and the system's code kept as `code`. */
export const ioFailure = (what: string, error: unknown): LogError => {
  const code = codeOf(error)
  return new LogError({ reason: "io", message: `${what}: ${describeCode(error)}`, ...(code !== undefined ? { code } : {}) })
}

/** Whether a failure of the log is the disk (or the quota) being full. */
export const isFull = (error: LogError): boolean => error.reason === "io" && (error.code === "ENOSPC" || error.code === "EDQUOT")
