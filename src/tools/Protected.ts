/**
 * Files whose edit is always asked for, whatever the mode's or the rules'
 * allowances (except `bypassPermissions`): the ones that make the next git
 * command run code. See adr/0012.
 *
 * - anything under a `.git` directory, and a `.git` file (it names the
 *   repository git will use, config and hooks included);
 * - the files of a git directory that is not called `.git` (a bare
 *   repository, a submodule's or worktree's git directory): a directory
 *   holding `HEAD` and one of `config`, `objects`, `refs`, `commondir`,
 *   `gitdir`, counting the file being written;
 * - git configuration read from a home directory: `.gitconfig` and
 *   `.config/git/config` (when a workspace is, or holds, a home directory).
 *
 * Both the path as given and where it lands (symlinks resolved) are judged.
 */
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Path from "effect/Path"
import { resolvePhysical } from "./commands/Paths.ts"

const GIT_DIR_MARKS = ["config", "objects", "refs", "commondir", "gitdir"]
const IGNORABLE = /[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]/g

/** Why a path is protected by its name alone, or undefined. */
const byName = (absolute: string): string | undefined => {
  // Case-insensitive file systems, and the code points HFS+ ignores in names, as git itself does.
  const parts = absolute.toLowerCase().replace(IGNORABLE, "").split("/").filter((p) => p !== "")
  if (parts.some((p) => p === ".git" || p === "git~1")) return "a git repository's own files"
  const last = parts.at(-1)
  if (last === ".gitconfig") return "git configuration"
  if (parts.length >= 3 && parts.at(-3) === ".config" && parts.at(-2) === "git" && (last === "config" || last === "attributes")) {
    return "git configuration"
  }
  return undefined
}

/**
 * Why an edit of `target` (absolute) must be asked for, or undefined.
 * `roots` (real paths) bound the search for git directories above it.
 */
export const reason = Effect.fnUntraced(function*(target: string, roots: ReadonlyArray<string>) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const named = byName(target)
  if (named !== undefined) return named
  const landed = yield* resolvePhysical("/", target)
  if (landed === undefined) return "a path that cannot be resolved"
  const landedName = byName(landed)
  if (landedName !== undefined) return landedName
  const exists = (p: string) => fs.exists(p).pipe(Effect.orElseSucceed(() => false))
  let below = path.basename(landed)
  for (let dir = path.dirname(landed); ; dir = path.dirname(dir)) {
    if (!roots.some((root) => dir === root || dir.startsWith(root.endsWith("/") ? root : `${root}/`))) break
    const has = (name: string) => below === name ? Effect.succeed(true) : exists(path.join(dir, name))
    if (yield* has("HEAD")) {
      for (const mark of GIT_DIR_MARKS) if (yield* has(mark)) return "a git directory's files"
    }
    if (dir === path.dirname(dir)) break
    below = path.basename(dir)
  }
  return undefined
})
