/**
 * A project's own MCP servers: `mcpServers` of `.mcp.json` and `.skein/config.json` in the
 * session's folder and each folder above it up to the repository's root (the folders workspace
 * trust covers, `Trust.folders`), read with the user's parser (`Config.fromJson`: the same
 * problems, the same `${VAR}` expansion from Skein's environment).
 *
 * On a name clash the nearest folder wins; in one folder `.skein/config.json` (Skein's own)
 * wins over `.mcp.json`. They are code from the repository: a session starts them only once the
 * folder is trusted (the runtime asks `loadsProject`), as it loads the folder's hooks.
 */
import * as NodePath from "node:path"
import type { McpServer } from "../Vocabulary.ts"
import * as Trust from "../trust/Trust.ts"
import * as Config from "./Config.ts"

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

/** The project's MCP settings seen from `cwd` (`userHome` is not a project). Never fails. */
export const read = (cwd: string, options: { readonly userHome?: string | undefined; readonly env?: Config.Env | undefined } = {}): Found => {
  const env = options.env ?? process.env
  // Farthest folder first, the weaker file first: each source wins over the ones before it.
  const weakestFirst = [...Trust.folders(cwd, options.userHome)].reverse().flatMap((dir) => FILES.map((name) => NodePath.join(dir, name)))
  const files = weakestFirst
    .map((file): File => ({ file, ...Config.loadFile(file, env) }))
    .filter((found) => found.servers.length > 0 || found.problems.length > 0)
  return { files: [...files].reverse(), servers: Config.mergeAll(...files.map((found) => found.servers)) }
}
