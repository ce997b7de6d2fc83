/**
 * The one error of the log store. `reason` says what a caller may do about it:
 * `not_found` (no such session), `locked` (another process has it open),
 * `corrupt` (a bad line or header; the message names the file and line),
 * `version` (a format this Skein cannot read), `invalid` (an event its type's Schema
 * refuses: not written), `io` (the disk said no).
 * Messages name files and line numbers, never a line's content.
 */
import * as Schema from "effect/Schema"

export class LogError extends Schema.TaggedError<LogError>()("LogError", {
  reason: Schema.optionalKey(Schema.Literals(["not_found", "locked", "corrupt", "version", "invalid", "io"])),
  message: Schema.String
}) {}
