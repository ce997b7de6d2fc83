/**
 * The one error of the log store. `reason` says what a caller may do about it:
 * `not_found` (no such session), `locked` (another process has it open; on a write: another
 * Skein took the session over, and nothing more may be written),
 * `corrupt` (a bad line or header; the message names the file and line),
 * `version` (a format this Skein cannot read), `invalid` (an event its type's Schema
 * refuses: not written), `io` (the disk or the database said no: it may work again later).
 * Messages name files and line numbers, never a line's content.
 */
import * as Schema from "effect/Schema"

export class LogError extends Schema.TaggedError<LogError>()("LogError", {
  reason: Schema.optionalKey(Schema.Literals(["not_found", "locked", "corrupt", "version", "invalid", "io"])),
  message: Schema.String
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

/** A system error's code as a reader understands it: `the disk is full (ENOSPC)`; the code alone when it has no meaning here. */
export const describeCode = (error: unknown): string => {
  const code = typeof error === "object" && error !== null && "code" in error && typeof error.code === "string" ? error.code : undefined
  if (code === undefined) return "error"
  const meaning = meanings[code]
  return meaning === undefined ? code : `${meaning} (${code})`
}
