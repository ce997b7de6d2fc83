/**
 * Reading the folders of definitions (agents, skills, commands; `Confined.ts` reads them): a
 * missing folder, or a file where a folder was expected, is no problem (there is nothing to
 * read); anything else is named by its error code for the warning that reports it. Most folders
 * looked at do not exist, so they are ruled out with a synchronous look before any asynchronous
 * read.
 */
import * as nodeFs from "node:fs"
import type * as PlatformError from "effect/PlatformError"

/** The system error code (`EACCES`, `ENOTDIR`…) of a platform error, when it has one. */
const errorCode = (error: PlatformError.PlatformError): string | undefined => {
  const cause = error.reason._tag === "BadArgument" ? undefined : (error.reason.cause as { readonly code?: unknown } | undefined)
  return typeof cause?.code === "string" ? cause.code : undefined
}

/** A missing folder, or a file where one was expected: nothing to read, and no problem. */
export const absent = (error: PlatformError.PlatformError): boolean => error.reason._tag === "NotFound" || errorCode(error) === "ENOTDIR"

/** The error as a warning names it: its code, else its kind. */
export const describe = (error: PlatformError.PlatformError): string => errorCode(error) ?? error.reason._tag

/**
 * Whether there may be something to read at `path`: a quick synchronous look (microseconds)
 * before an asynchronous read, since most of the folders looked at for definitions do not
 * exist and each asynchronous miss costs a round trip. An error other than "missing" says yes,
 * so the read that follows reports it.
 */
export const mayExist = (path: string): boolean => {
  try {
    // A missing path is the common case (opening a session looks for a dozen folders that are
    // not there): `undefined` rather than a thrown error, which costs several times the stat.
    return nodeFs.statSync(path, { throwIfNoEntry: false }) !== undefined
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    return code !== "ENOENT" && code !== "ENOTDIR"
  }
}
