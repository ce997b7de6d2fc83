/**
 * A project's own MCP servers: `mcpServers` of `.mcp.json` and `.skein/config.json` in the
 * session's folder and each folder above it up to the repository's root (the folders workspace
 * trust covers, `Trust.folders`), read with the user's parser (`Config.fromJson`: the same
 * problems, the same `${VAR}` expansion from Skein's environment).
 *
 * On a name clash the nearest folder wins; in one folder `.skein/config.json` (Skein's own)
 * wins over `.mcp.json`. They are code from the repository: a session starts them only once the
 * folder is trusted (the runtime asks `loadsProject`), as it loads the folder's hooks. They are
 * read (to tell whether a folder has servers waiting for trust) before that, so as the other
 * files of a repository (`text/Confined.ts`): only a regular file inside the project (a link out
 * of it, a FIFO or a device is a problem, never followed or waited on), at most 1 MiB.
 */
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Confined from "../text/Confined.ts"
import type { McpServer } from "../Vocabulary.ts"
import * as Trust from "../trust/Trust.ts"
import * as Config from "./Config.ts"

const MAX_FILE_BYTES = 1024 * 1024

/** Where a project's MCP settings are, relative to each of its folders, the weaker first. */
const FILES = [".mcp.json", ".skein/config.json"] as const

export interface File {
  readonly file: string
  readonly servers: ReadonlyArray<McpServer>
  readonly problems: ReadonlyArray<string>
}

export interface Found {
  /** The files with servers or problems, nearest folder first (in a folder, `.skein/config.json` first). */
  readonly files: ReadonlyArray<File>
  /** The servers a session starts from them, merged (the nearest wins). */
  readonly servers: ReadonlyArray<McpServer>
}

/** One file's servers and problems; a missing one has neither. */
const readFile = (file: string, root: string, env: Config.Env): Effect.Effect<File> =>
  Effect.map(Confined.readText(file, root, { maxBytes: MAX_FILE_BYTES }), (read): File => {
    switch (read._tag) {
      case "missing":
        return { file, servers: [], problems: [] }
      case "directory":
        return { file, servers: [], problems: [`${file} is a folder, not a settings file`] }
      case "refused":
        return { file, servers: [], problems: [`${file}: ${read.message}`] }
      case "text":
        return { file, ...Config.fromText(read.text, file, env) }
      default:
        return read satisfies never
    }
  })

/** The project's MCP settings seen from `cwd` (`userHome` is not a project). Never fails. */
export const read = (cwd: string, options: { readonly userHome?: string | undefined; readonly env?: Config.Env | undefined } = {}): Effect.Effect<Found> =>
  Effect.gen(function*() {
    const env = options.env ?? process.env
    const folders = Trust.folders(cwd, options.userHome)
    if (folders.length === 0) return { files: [], servers: [] }
    const root = yield* Confined.root(folders.at(-1)!)
    // Farthest folder first, the weaker file first: each source wins over the ones before it.
    const weakestFirst = [...folders].reverse().flatMap((dir) => FILES.map((name) => NodePath.join(dir, name)))
    const files = (yield* Effect.forEach(weakestFirst, (file) => readFile(file, root, env)))
      .filter((found) => found.servers.length > 0 || found.problems.length > 0)
    return { files: [...files].reverse(), servers: Config.mergeAll(...files.map((found) => found.servers)) }
  })
