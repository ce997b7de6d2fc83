/**
 * Previews of edits for permission requests: the file as it is and as the call would leave
 * it, so an editor can show the change before the user answers. A preview is best-effort and
 * never an error: a path outside the workspace, a directory, a binary or very large file has
 * none (the call is refused or fails on its own when it runs).
 */
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import type * as Path from "effect/Path"
import type { ProposedDiff } from "../Vocabulary.ts"
import * as SafeFs from "../fs/SafeFs.ts"
import * as Workspace from "./Workspace.ts"

/** Files above this size get no preview: the request would be too big to show, or to send. */
const MAX_PREVIEW_BYTES = 1024 * 1024

interface Current {
  /** The resolved absolute path. */
  readonly path: string
  /** The file's text, or null when it does not exist yet. */
  readonly text: string | null
}

/** The file a path argument names, as it is now; undefined when no preview can be made. */
export const current = (input: string, where: Workspace.Roots): Effect.Effect<Current | undefined, never, FileSystem.FileSystem | Path.Path> =>
  Effect.gen(function*() {
    const path = yield* Workspace.resolve(input, where)
    // Read what was checked, as the tools do (a link swapped in is refused, not followed).
    const bytes = yield* SafeFs.readFileBounded(path, yield* SafeFs.realRoots(where.roots), MAX_PREVIEW_BYTES).pipe(
      Effect.catchIf(SafeFs.isNotFound, () => Effect.succeed(null))
    )
    if (bytes === null) return { path, text: null }
    if (bytes === undefined || bytes.subarray(0, 8192).includes(0)) return undefined
    return { path, text: new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes) }
  }).pipe(Effect.catchCause(() => Effect.succeed(undefined)))

export const diff = (path: string, oldText: string | null, newText: string): ProposedDiff => ({ type: "diff", path, oldText, newText })
