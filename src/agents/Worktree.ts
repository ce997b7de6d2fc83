/**
 * An isolated workspace for a child session: a git worktree of the parent's repository on a
 * branch of its own, starting from what the parent sees now (HEAD plus its uncommitted changes),
 * so the child can change files without touching the parent's, and the parent gets a branch
 * and a diff summary back.
 *
 * How the parent's state is carried over: its index is copied to a temporary index, `git add
 * -A` records the working tree in that copy (staged and unstaged changes to tracked files, and
 * untracked files that are not ignored; binary files, modes, links and deletions alike), and
 * `write-tree` makes a tree of it. If that tree differs from HEAD's, one commit on top of HEAD
 * (`commit-tree`, a fixed identity, never signed) holds it; the worktree's branch starts there.
 * The parent's own index and files are only read. The child's changes are summarized the same
 * way, against that start (`base`).
 *
 * git runs as Skein's auto-allowed commands do (GitGuard's overrides: no hooks, no fsmonitor,
 * no pager, no network, no submodule recursion), plus no automatic gc or maintenance and no
 * signing, inside a contained process group (`GitProcess.ts`) that is gone when the call
 * returns. The programs a repository's *own* configuration can make git run while it checks
 * out or adds files (filter drivers) cannot be switched off by name: such a repository is
 * refused, as GitGuard refuses it for read-only commands; the user's global configuration is
 * the user's and trusted.
 *
 * Creating one is a change like any other: after the checks that need no change, and before
 * anything is written (objects, the branch, the worktree), `approve` is asked with what would be
 * made, as the permission gate asks about an edit (`change` is what the gate is shown).
 *
 * Every failure is a `WorktreeError` whose message the model reads.
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as GitGuard from "../tools/commands/GitGuard.ts"
import * as GitProcess from "../tools/commands/GitProcess.ts"
import type * as Permissions from "../tools/Permissions.ts"

export class WorktreeError extends Schema.TaggedError<WorktreeError>()("WorktreeError", {
  message: Schema.String
}) {}

export interface Worktree {
  /** The worktree's directory: `<home>/worktrees/<id>`. */
  readonly path: string
  /** Its branch: `skein/<id>`. */
  readonly branch: string
  /** The commit it started from: the parent's HEAD, or a commit on it holding the parent's uncommitted changes. */
  readonly base: string
  /** The child's working directory: the parent's cwd, at the same place inside the worktree. */
  readonly cwd: string
  /** The parent's repository (its top-level directory), where the worktree is registered. */
  readonly repository: string
}

interface FileChange {
  readonly path: string
  readonly added: number
  readonly removed: number
  /** git's letter: `A` added, `M` modified, `D` deleted, `T` type changed (a file became a link, say). */
  readonly status: string
}

interface Summary {
  readonly branch: string
  readonly path: string
  /** The worktree's files differ from `base`, or its branch has moved. */
  readonly changed: boolean
  /** The files that differ from `base` (binary ones with 0 added and removed lines). */
  readonly files: ReadonlyArray<FileChange>
  /** For the model and the user, in the manner of `git diff --stat`. */
  readonly text: string
}

const fail = (message: string) => new WorktreeError({ message })

/** What creating a worktree would make, as the permission question shows it. */
export interface Plan {
  readonly repository: string
  readonly branch: string
  readonly path: string
}

/** Creating an isolated workspace, to the permission gate: it changes the repository (a branch, objects). */
export const change: Permissions.Subject<Plan> = {
  name: "isolated_workspace",
  kind: "other",
  mutating: true,
  scope: () => ({ kind: "tool", value: "isolated_workspace", label: "isolated workspaces (a git branch and worktree each)" })
}

// ---------------------------------------------------------------------------
// Running git
// ---------------------------------------------------------------------------

const PROFILE: GitProcess.Profile = {
  // Adding a very large working tree is the slow one; a diff listing of every file of a large change fits.
  timeoutMs: 120_000,
  maxOutputBytes: 32 * 1024 * 1024,
  /** Variables that would point git at another repository, index or object store than the one asked for. */
  drop: /^GIT_(?:DIR|WORK_TREE|INDEX_FILE|OBJECT_DIRECTORY|ALTERNATE_OBJECT_DIRECTORIES|COMMON_DIR|NAMESPACE|PREFIX|IMPLICIT_WORK_TREE|GRAFT_FILE|SHALLOW_FILE|NO_REPLACE_OBJECTS|REPLACE_REF_BASE|CEILING_DIRECTORIES|DISCOVERY_ACROSS_FILESYSTEM)$/
}

const IDENTITY = {
  GIT_AUTHOR_NAME: "Skein",
  GIT_AUTHOR_EMAIL: "skein@localhost",
  GIT_COMMITTER_NAME: "Skein",
  GIT_COMMITTER_EMAIL: "skein@localhost"
}

interface Ran {
  readonly code: number | null
  readonly stdout: string
}

/** Runs git in `cwd` and waits for it; its whole process tree is gone when this returns. */
const run = (args: ReadonlyArray<string>, cwd: string, env?: Readonly<Record<string, string>>): Effect.Effect<Ran, WorktreeError> =>
  GitProcess.run(PROFILE, args, { cwd, env }).pipe(
    Effect.map((ran) => ({ code: ran.code, stdout: ran.stdout.toString("utf8") })),
    Effect.mapError(fail)
  )

/** Runs git; a non-zero exit is a `WorktreeError` saying `what` failed and what git said. */
const git = (what: string, args: ReadonlyArray<string>, cwd: string, env?: Readonly<Record<string, string>>) =>
  Effect.mapError(GitProcess.git(PROFILE, what, args, { cwd, env }), fail)

const lines = (text: string): Array<string> => text.split("\n").filter((line) => line !== "")

const fsCall = <A>(what: string, body: () => Promise<A>): Effect.Effect<A, WorktreeError> =>
  Effect.tryPromise({
    try: body,
    catch: (cause) => fail(`${what} failed (${(cause as NodeJS.ErrnoException | undefined)?.code ?? "unknown error"})`)
  })

const removeQuietly = (file: string) => Effect.promise(() => NodeFs.promises.rm(file, { force: true }).catch(() => undefined))

// ---------------------------------------------------------------------------
// The working state as a tree
// ---------------------------------------------------------------------------

/**
 * The tree of the working state of the work tree at `top`: its index copied to `scratch`,
 * every change added there (untracked files that are not ignored too), written as a tree. The
 * real index is only read; `scratch` is removed.
 */
const workingTree = (top: string, scratch: string) =>
  Effect.gen(function*() {
    const index = lines(yield* git("Locating the index", ["rev-parse", "--path-format=absolute", "--git-path", "index"], top))[0]!
    const env = { GIT_INDEX_FILE: scratch }
    const copied = yield* Effect.tryPromise(() => NodeFs.promises.copyFile(index, scratch)).pipe(
      Effect.as(true),
      Effect.catch(() => Effect.succeed(false))
    )
    // No index yet (nothing was ever checked out): start from HEAD's tree.
    if (!copied) yield* git("Reading HEAD", ["read-tree", "HEAD"], top, env)
    yield* git("Recording the working tree", ["add", "-A", "--", "."], top, env)
    return lines(yield* git("Writing the tree", ["write-tree"], top, env))[0]!
  }).pipe(Effect.ensuring(Effect.andThen(removeQuietly(scratch), removeQuietly(`${scratch}.lock`))))

/** Keys of the repository's own configuration that make `add` or a checkout run a program. */
const runsPrograms = (top: string) =>
  Effect.map(
    git("Reading the configuration", ["config", "--list", "--show-scope", "--includes", "-z"], top),
    (listing) => GitGuard.unsafeKeys(listing).filter((key) => key.startsWith("filter."))
  )

// ---------------------------------------------------------------------------
// The API
// ---------------------------------------------------------------------------

const ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/

/**
 * A worktree of the repository holding `cwd`, at `<home>/worktrees/<id>` on a new branch
 * `skein/<id>`, holding the parent's working state (see the module note).
 */
interface CreateOptions {
  /** The parent's working directory, anywhere inside its repository's work tree. */
  readonly cwd: string
  /** The child's id: names the directory and the branch. */
  readonly id: string
  /** Skein's home; worktrees live under `<home>/worktrees`. */
  readonly home: string
  /** Asked before anything is written; its failure (why not) refuses the worktree. */
  readonly approve?: ((plan: Plan) => Effect.Effect<void, string>) | undefined
}

export const create = Effect.fn("Worktree.create")(function*(options: CreateOptions): Effect.gen.Return<Worktree, WorktreeError> {
  if (!ID.test(options.id)) return yield* fail(`${JSON.stringify(options.id.slice(0, 40))} cannot name a worktree: use letters, digits, "-" and "_"`)
  if (!NodeFs.existsSync(options.cwd)) return yield* fail(`The working directory ${options.cwd} does not exist`)
  const where = yield* run(["rev-parse", "--is-inside-work-tree", "--path-format=absolute", "--show-toplevel", "--show-prefix"], options.cwd)
  const [inside, top, prefix = ""] = where.code === 0 ? where.stdout.split("\n") : []
  if (inside !== "true" || top === undefined || top === "") {
    return yield* fail(`The isolated workspace needs a git repository, and ${options.cwd} is not inside a git work tree. Use workspace "shared" to work in the parent's directory.`)
  }
  const head = yield* run(["rev-parse", "-q", "--verify", "HEAD^{commit}"], top)
  if (head.code !== 0) {
    return yield* fail(`The isolated workspace starts from the repository's HEAD, and the repository at ${top} has no commit yet. Commit once, or use workspace "shared".`)
  }
  const headCommit = lines(head.stdout)[0]!
  const unsafe = yield* runsPrograms(top)
  if (unsafe.length > 0) {
    return yield* fail(`The isolated workspace cannot be made here: the repository's own configuration makes git run programs when it adds or checks out files (${unsafe.slice(0, 3).join(", ")}). Use workspace "shared".`)
  }
  const root = NodePath.join(options.home, "worktrees")
  const path = NodePath.join(root, options.id)
  const branch = `skein/${options.id}`
  if (options.approve !== undefined) yield* options.approve({ repository: top, branch, path }).pipe(Effect.mapError(fail))
  yield* fsCall(`Creating ${root}`, () => NodeFs.promises.mkdir(root, { recursive: true }))
  if (NodeFs.existsSync(path)) return yield* fail(`${path} already exists; a worktree for ${options.id} was made before`)
  const tree = yield* workingTree(top, NodePath.join(root, `.${options.id}.index`))
  const headTree = lines(yield* git("Reading HEAD", ["rev-parse", "HEAD^{tree}"], top))[0]!
  const base = tree === headTree
    ? headCommit
    : lines(yield* git(
      "Recording the parent's uncommitted changes",
      ["commit-tree", "--no-gpg-sign", "-p", headCommit, "-m", "skein: the parent session's uncommitted changes", tree],
      top,
      IDENTITY
    ))[0]!
  // From here a worktree exists: it is made and handed back whole, or not left behind.
  return yield* Effect.uninterruptible(
    Effect.gen(function*() {
      yield* git("Creating the worktree", ["worktree", "add", "-q", "-b", branch, path, base], top)
      const cwd = NodePath.resolve(path, prefix)
      // The parent's directory may hold nothing git records (it is empty, or all ignored).
      yield* fsCall(`Creating ${cwd}`, () => NodeFs.promises.mkdir(cwd, { recursive: true })).pipe(
        Effect.onError(() => Effect.ignore(discard({ path, branch, repository: top })))
      )
      return { path, branch, base, cwd, repository: top } satisfies Worktree
    })
  )
})

/** Names summaries' scratch indexes apart. */
let summaries = 0

/** What the worktree's files (untracked ones too) hold now, against `base`. */
export const summarize = Effect.fn("Worktree.summarize")(function*(worktree: Worktree): Effect.gen.Return<Summary, WorktreeError> {
  if (!NodeFs.existsSync(worktree.path)) return yield* fail(`The worktree ${worktree.path} no longer exists`)
  const name = `skein-summary-${process.pid}-${++summaries}.index`
  const scratch = lines(yield* git("Locating the worktree", ["rev-parse", "--path-format=absolute", "--git-path", name], worktree.path))[0]!
  const tree = yield* workingTree(worktree.path, scratch)
  const tip = yield* run(["rev-parse", "-q", "--verify", `refs/heads/${worktree.branch}^{commit}`], worktree.path)
  const moved = tip.code !== 0 || lines(tip.stdout)[0] !== worktree.base
  const compare = ["diff-tree", "-r", "--no-renames", "-z"]
  const numstat = (yield* git("Comparing", [...compare, "--numstat", worktree.base, tree], worktree.path)).split("\0")
  const statuses = (yield* git("Comparing", [...compare, "--name-status", worktree.base, tree], worktree.path)).split("\0")
  const status = new Map<string, string>()
  for (let i = 0; i + 1 < statuses.length; i += 2) status.set(statuses[i + 1]!, statuses[i]!)
  const files: Array<FileChange & { readonly binary: boolean }> = []
  for (const record of numstat) {
    const match = /^(-|\d+)\t(-|\d+)\t([\s\S]+)$/.exec(record)
    if (match === null) continue
    const binary = match[1] === "-"
    files.push({ path: match[3]!, added: binary ? 0 : Number(match[1]), removed: binary ? 0 : Number(match[2]), status: status.get(match[3]!) ?? "M", binary })
  }
  const changed = files.length > 0 || moved
  return {
    branch: worktree.branch,
    path: worktree.path,
    changed,
    files: files.map(({ binary: _, ...file }) => file),
    text: describe(worktree, files, moved)
  }
})

const SHOWN_FILES = 40

const describe = (worktree: Worktree, files: ReadonlyArray<FileChange & { readonly binary: boolean }>, moved: boolean): string => {
  const where = `branch ${worktree.branch}, worktree ${worktree.path}`
  if (files.length === 0) {
    return moved ? `No file differs from the start, but the branch has moved (${where}).` : `No changes (${where}).`
  }
  const added = files.reduce((n, f) => n + f.added, 0)
  const removed = files.reduce((n, f) => n + f.removed, 0)
  const out = [
    `${files.length} ${files.length === 1 ? "file" : "files"} changed, ${added} ${added === 1 ? "insertion" : "insertions"}(+), ${removed} ${removed === 1 ? "deletion" : "deletions"}(-) (${where}):`
  ]
  for (const file of files.slice(0, SHOWN_FILES)) {
    out.push(` ${file.status} ${file.path} | ${file.binary ? "binary" : `+${file.added} -${file.removed}`}`)
  }
  if (files.length > SHOWN_FILES) out.push(` … and ${files.length - SHOWN_FILES} more (git diff --stat ${worktree.base} in the worktree lists them all)`)
  return out.join("\n")
}

/** Removes the worktree and its branch, whatever they hold. */
const discard = (worktree: Pick<Worktree, "path" | "branch" | "repository">) =>
  Effect.gen(function*() {
    if (NodeFs.existsSync(worktree.path)) {
      yield* git("Removing the worktree", ["worktree", "remove", "--force", worktree.path], worktree.repository)
    } else {
      yield* git("Forgetting the missing worktree", ["worktree", "prune"], worktree.repository)
    }
    const exists = yield* run(["rev-parse", "-q", "--verify", `refs/heads/${worktree.branch}`], worktree.repository)
    if (exists.code === 0) yield* git("Deleting the branch", ["branch", "-D", "-q", worktree.branch], worktree.repository)
  })

/**
 * Removes the worktree and its branch when they hold nothing beyond `base` (ignored files,
 * such as build output, do not count); keeps both otherwise, and says so.
 */
export const remove = Effect.fn("Worktree.remove")(function*(worktree: Worktree): Effect.gen.Return<{ readonly kept: boolean }, WorktreeError> {
  if (!NodeFs.existsSync(worktree.repository)) return yield* fail(`The repository ${worktree.repository} no longer exists`)
  if (NodeFs.existsSync(worktree.path)) {
    if ((yield* summarize(worktree)).changed) return { kept: true }
  } else {
    // The directory is gone: the branch alone says whether anything was made.
    const tip = yield* run(["rev-parse", "-q", "--verify", `refs/heads/${worktree.branch}^{commit}`], worktree.repository)
    if (tip.code === 0 && lines(tip.stdout)[0] !== worktree.base) return { kept: true }
  }
  yield* Effect.uninterruptible(discard(worktree))
  return { kept: false }
})
