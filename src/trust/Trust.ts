/**
 * Workspace trust: a repository's hooks, agents, commands, skills, settings and MCP servers are
 * code the user did not write. Until the user trusted the folder, none of them loads (the user's own,
 * from Skein's home and `~/.claude`/`~/.agents`, always do; project instructions, AGENTS.md and
 * CLAUDE.md, are text for the model, not code, and load either way).
 *
 * - What a folder ships (`ships`): `.claude/` (commands, agents, skills, settings.json),
 *   `.skein/` (commands, agents, settings.json, config.json), `.agents/skills`, `.mcp.json`,
 *   looked for in the cwd and each folder above it up to its repository's root (skills are
 *   found there too). A folder that ships nothing is never asked about.
 * - The project (`projectOf`): the repository's root, or the cwd outside a repository, after
 *   `realpath`. Answers are remembered per project in `$SKEIN_HOME/trust.json` (mode 0600):
 *   `{"folders": {"/real/path": {"trusted": true, "at": 1700000000000}}}`; an entry for a folder
 *   covers the folders below it, the nearest entry winning.
 * - A `trust.json` that cannot be read trusts nothing (and `skein doctor` says so); the next
 *   answer replaces it, keeping the unreadable file as `trust.json.bad`.
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import * as Effect from "effect/Effect"
import { mayExist } from "../text/FileErrors.ts"

/** What a project may ship, relative to a folder of it. */
const SHIPPED = [
  ".claude/settings.json",
  ".claude/commands",
  ".claude/agents",
  ".claude/skills",
  ".skein/settings.json",
  ".skein/config.json",
  ".skein/commands",
  ".skein/agents",
  ".agents/skills",
  ".mcp.json"
] as const

/**
 * How a Skein decides what it loads from a folder. `ask`: the user is asked at the first
 * session in a folder that ships something (the CLI's default); `all`: every folder is trusted
 * without asking and nothing is remembered (`--trust`, `SKEIN_TRUST=1`, CI).
 */
export type Policy = "ask" | "all"

export interface Entry {
  readonly trusted: boolean
  readonly at: number
}

export type Store = ReadonlyMap<string, Entry>

export type State =
  | { readonly _tag: "trusted"; readonly folder: string; readonly at: number }
  | { readonly _tag: "denied"; readonly folder: string; readonly at: number }
  | { readonly _tag: "unknown" }

export interface Status {
  /** The folder answers are remembered for (the repository's root, or the cwd). */
  readonly project: string
  /** What it ships, as paths under `project` (or the cwd). */
  readonly ships: ReadonlyArray<string>
  readonly state: State
  /** Whether its hooks, agents, commands, skills, settings and MCP servers load. */
  readonly loads: boolean
  /** Why they do or do not, in a sentence. */
  readonly why: string
  /** A problem with `trust.json` (it could not be read). */
  readonly problem?: string | undefined
}

const realpath = (dir: string): string => {
  try {
    return NodeFs.realpathSync(dir)
  } catch {
    return NodePath.resolve(dir)
  }
}

/** The folders from the cwd up to its repository's root, nearest first (just the cwd outside a repository). */
const chain = (cwd: string): { readonly folders: ReadonlyArray<string>; readonly inRepository: boolean } => {
  const folders: Array<string> = []
  for (let dir = realpath(cwd); ; dir = NodePath.dirname(dir)) {
    folders.push(dir)
    if (mayExist(NodePath.join(dir, ".git"))) return { folders, inRepository: true }
    if (NodePath.dirname(dir) === dir) return { folders: [folders[0]!], inRepository: false }
  }
}

/** The folder trust is remembered for. */
export const projectOf = (cwd: string): string => {
  const found = chain(cwd)
  return found.folders.at(-1)!
}

/**
 * The folders a project's files are looked for in: the cwd and each folder above it up to its
 * repository's root, nearest first (the user's home is not a project: its own folders are the user's).
 */
export const folders = (cwd: string, userHome?: string): ReadonlyArray<string> => {
  const home = userHome === undefined ? undefined : realpath(userHome)
  return chain(cwd).folders.filter((dir) => dir !== home)
}

/** What the folder ships, as absolute paths. */
export const ships = (cwd: string, userHome?: string): ReadonlyArray<string> =>
  folders(cwd, userHome)
    .flatMap((dir) => SHIPPED.map((item) => NodePath.join(dir, item)))
    .filter((file) => mayExist(file))

/** The entry that decides for `project`: its own, or the nearest folder above it that has one. */
export const lookup = (store: Store, project: string): State => {
  for (let dir = project; ; dir = NodePath.dirname(dir)) {
    const entry = store.get(dir)
    if (entry !== undefined) return entry.trusted ? { _tag: "trusted", folder: dir, at: entry.at } : { _tag: "denied", folder: dir, at: entry.at }
    if (NodePath.dirname(dir) === dir) return { _tag: "unknown" }
  }
}

/** `trust.json`'s text as a store; a problem when it is not one. */
export const parse = (text: string): { readonly store: Store; readonly problem?: string } => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return { store: new Map(), problem: "it is not valid JSON" }
  }
  const folders = (json as { readonly folders?: unknown } | null)?.folders
  if (typeof folders !== "object" || folders === null || Array.isArray(folders)) return { store: new Map(), problem: "it has no \"folders\" object" }
  const store = new Map<string, Entry>()
  for (const [folder, entry] of Object.entries(folders)) {
    const { trusted, at } = (entry ?? {}) as { readonly trusted?: unknown; readonly at?: unknown }
    if (typeof trusted === "boolean" && NodePath.isAbsolute(folder)) store.set(folder, { trusted, at: typeof at === "number" ? at : 0 })
  }
  return { store }
}

const render = (store: Store): string =>
  `${JSON.stringify({ folders: Object.fromEntries([...store].sort(([a], [b]) => (a < b ? -1 : 1))) }, null, 2)}\n`

const fileOf = (home: string) => NodePath.join(home, "trust.json")

/** Reads `trust.json` (none yet: an empty store). Never fails. */
const read = (home: string): Effect.Effect<{ readonly store: Store; readonly problem?: string | undefined }> =>
  Effect.sync(() => {
    let text: string
    try {
      text = NodeFs.readFileSync(fileOf(home), "utf8")
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      return code === "ENOENT" ? { store: new Map() } : { store: new Map(), problem: `it cannot be read (${code ?? "error"})` }
    }
    return parse(text)
  })

/** Remembers an answer for `project` (written whole to a temporary file, then renamed over `trust.json`). */
export const remember = (home: string, project: string, trusted: boolean, at: number): Effect.Effect<void, string> =>
  Effect.flatMap(read(home), ({ store, problem }) =>
    Effect.try({
      try: () => {
        NodeFs.mkdirSync(home, { recursive: true, mode: 0o700 })
        const file = fileOf(home)
        if (problem !== undefined && NodeFs.existsSync(file)) NodeFs.renameSync(file, `${file}.bad`)
        const next = new Map(store)
        next.set(project, { trusted, at })
        const temp = `${file}.${process.pid}.tmp`
        NodeFs.writeFileSync(temp, render(next), { mode: 0o600 })
        NodeFs.renameSync(temp, file)
      },
      catch: (error) => `could not write ${fileOf(home)} (${(error as NodeJS.ErrnoException).code ?? "error"})`
    }))

let scans = 0
/** How many times `status` has looked at a folder and `trust.json` in this process (for tests: it is read once per session open). */
export const scanCount = (): number => scans

/** Where the folder of `cwd` stands, under `policy` (`undefined`: everything loads, as for an embedding program). */
export const status = (options: { readonly cwd: string; readonly home: string; readonly userHome?: string | undefined; readonly policy: Policy | undefined }) =>
  Effect.map(read(options.home), ({ store, problem }): Status => {
    scans++
    const project = projectOf(options.cwd)
    const shipped = ships(options.cwd, options.userHome)
    const state = lookup(store, project)
    const base = { project, ships: shipped, state, ...(problem !== undefined ? { problem: `${fileOf(options.home)}: ${problem}; no folder is trusted until it is fixed or an answer replaces it` } : {}) }
    if (shipped.length === 0) return { ...base, loads: true, why: "it ships no hooks, agents, commands, skills, settings or MCP servers" }
    if (options.policy === undefined) return { ...base, loads: true, why: "this program loads every folder's definitions" }
    if (options.policy === "all") return { ...base, loads: true, why: "every folder is trusted in this run (--trust or SKEIN_TRUST=1)" }
    switch (state._tag) {
      case "trusted":
        return { ...base, loads: true, why: `${state.folder} was trusted on ${new Date(state.at).toISOString()}` }
      case "denied":
        return { ...base, loads: false, why: `${state.folder} was not trusted on ${new Date(state.at).toISOString()} (its entry in trust.json in Skein's home says so; remove it to be asked again)` }
      case "unknown":
        return { ...base, loads: false, why: "it is not trusted yet: the first prompt of a session there asks (--trust or SKEIN_TRUST=1 trusts every folder)" }
    }
  })
