/**
 * The few git objects and refs a checkpoint writes itself, in the shadow repository, instead of
 * starting a git process for each (`mktree`, `commit-tree`, `update-ref`, `for-each-ref`): a
 * checkpoint is taken twice in every turn that changes files, and each contained git process
 * costs tens of milliseconds (hundreds on a busy machine), most of a checkpoint's time.
 *
 * - Objects in git's loose format (SHA-1, the format of the repository `git init` made): the
 *   zlib-deflated `<type> <size>\0<body>`, at `objects/<2 hex>/<38 hex>`, written to a
 *   temporary file and renamed (a reader never sees half of one).
 * - Refs as loose refs (`refs/skein/<name>`: the commit and a newline), written the same way;
 *   listed from the loose files and `packed-refs` (where `git gc` moves them), a loose one
 *   winning. Deleting them stays git's (`update-ref --stdin`, which updates both).
 */
import * as NodeCrypto from "node:crypto"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import type * as NodeZlib from "node:zlib"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { GitError } from "./Git.ts"

/** Loaded at the first checkpoint, not at start-up (`test/e2e/startup.test.ts`). */
const zlib = () => process.getBuiltinModule("node:zlib") as typeof NodeZlib

const HEX = /^[0-9a-f]{40}$/

const failed = (what: string) => (cause: unknown) =>
  new GitError({ message: `${what} failed (${(cause as NodeJS.ErrnoException | undefined)?.code ?? "unknown error"})` })

/** Writes `content` at `file` whole: a temporary file renamed over it. */
const writeWhole = (file: string, content: Uint8Array | string): Promise<void> => {
  const temporary = `${file}.${process.pid}.${NodeCrypto.randomBytes(4).toString("hex")}.tmp`
  return NodeFs.promises.mkdir(NodePath.dirname(file), { recursive: true })
    .then(() => NodeFs.promises.writeFile(temporary, content))
    .then(() => NodeFs.promises.rename(temporary, file))
    .catch((error: unknown) => NodeFs.promises.rm(temporary, { force: true }).then(() => Promise.reject(error)))
}

/** Stores an object of `type` with `body`; its id. */
const store = (gitDir: string, type: "tree" | "commit", body: Buffer): Effect.Effect<string, GitError> => {
  const raw = Buffer.concat([Buffer.from(`${type} ${body.length}\0`, "latin1"), body])
  const id = NodeCrypto.createHash("sha1").update(raw).digest("hex")
  const file = NodePath.join(gitDir, "objects", id.slice(0, 2), id.slice(2))
  return Effect.tryPromise({
    try: () => NodeFs.existsSync(file) ? Promise.resolve() : writeWhole(file, zlib().deflateSync(raw)),
    catch: failed(`Writing the checkpoint's ${type}`)
  }).pipe(Effect.as(id))
}

/** The tree that holds tree `trees[i]` as its folder `i` (git's order: names compared as `name/`). */
export const writeFolders = (gitDir: string, trees: ReadonlyArray<readonly [number, string]>): Effect.Effect<string, GitError> => {
  const sorted = [...trees].sort(([a], [b]) => (`${a}/` < `${b}/` ? -1 : 1))
  return store(gitDir, "tree", Buffer.concat(sorted.map(([i, tree]) => Buffer.concat([Buffer.from(`40000 ${i}\0`, "latin1"), Buffer.from(tree, "hex")]))))
}

/** A commit of `tree` (no parent) with `message`, by Skein, now. */
export const writeCommit = (gitDir: string, tree: string, message: string): Effect.Effect<string, GitError> =>
  Effect.flatMap(Clock.currentTimeMillis, (millis) => {
    const who = `Skein <skein@localhost> ${Math.floor(millis / 1000)} +0000`
    return store(gitDir, "commit", Buffer.from(`tree ${tree}\nauthor ${who}\ncommitter ${who}\n\n${message}\n`, "utf8"))
  })

/** Points `refs/skein/<name>` at `commit`. */
export const writeRef = (gitDir: string, name: string, commit: string): Effect.Effect<void, GitError> =>
  Effect.tryPromise({ try: () => writeWhole(NodePath.join(gitDir, "refs", "skein", name), `${commit}\n`), catch: failed("Keeping the checkpoint") })

/** Every `refs/skein/` ref and its commit (loose ones over packed ones), by name. */
export const readRefs = (gitDir: string): Effect.Effect<ReadonlyMap<string, string>> =>
  Effect.promise(() => {
    const out = new Map<string, string>()
    const dir = NodePath.join(gitDir, "refs", "skein")
    return NodeFs.promises.readFile(NodePath.join(gitDir, "packed-refs"), "utf8").catch(() => "").then((packed) => {
      for (const line of packed.split("\n")) {
        const [id, name] = line.split(" ")
        if (id !== undefined && HEX.test(id) && name?.startsWith("refs/skein/") === true) out.set(name, id)
      }
      return NodeFs.promises.readdir(dir).catch(() => [] as Array<string>)
    }).then((names) =>
      Promise.all(names.filter((name) => !name.endsWith(".tmp") && !name.endsWith(".lock")).map((name) =>
        NodeFs.promises.readFile(NodePath.join(dir, name), "utf8").then((text) => {
          const id = text.trim()
          if (HEX.test(id)) out.set(`refs/skein/${name}`, id)
        }, () => undefined)
      ))
    ).then(() => out)
  })
