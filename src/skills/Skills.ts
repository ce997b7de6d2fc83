/**
 * Skills, in the Agent Skills format: a folder holding a `SKILL.md` (front matter, then the
 * instructions) and whatever files those instructions mention.
 *
 * ```markdown
 * ---
 * name: release-notes
 * description: Writes release notes from the git history; use when asked for a changelog
 * argument-hint: [version]
 * ---
 * Read `git log` since the last tag, then …
 * ```
 *
 * `description` is required. `name` (lowercase letters, digits and `-`, starting with a letter or
 * digit, at most 64 characters) defaults to the folder's name. `user-invocable` (default true:
 * the skill is also a `/name` command) and `disable-model-invocation` (default false: the model
 * sees it in its catalog and may load it) are `true` or `false`; `argument-hint` is shown with the
 * command; `allowed-tools` and other keys are accepted and ignored. The front matter is read
 * leniently (`text/FrontMatter.ts`): block scalars and continued lines are fine, and a key that
 * cannot be read only matters when it is one of these.
 *
 * Where they come from, nearest first, the first of a name winning:
 *
 * 1. `.agents/skills/<name>/SKILL.md` and `.claude/skills/<name>/SKILL.md` in the cwd, then in
 *    each directory above it up to the repository root (the nearest holding `.git`; just the
 *    cwd outside a repository): the project's;
 * 2. `~/.agents/skills`, `~/.claude/skills` and `$SKEIN_HOME/skills`: the user's.
 *
 * Folders and files are read only from inside their root (`text/Confined.ts`): the repository
 * root (the cwd outside one) for the project's, the `skills` folder itself for the user's; a
 * skill folder or `SKILL.md` that is a link out of it is a problem, never read.
 *
 * A skill shadowed by a nearer one of the same name is a problem naming both files. A skill that
 * cannot be read or parsed is a problem and is left out; a missing folder is none; nothing here
 * fails. The model sees the catalog (name, description, path) in its system prompt, within a
 * budget; `activate` reads a skill's instructions when the model or the user asks for them.
 */
import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import { createHash } from "node:crypto"
import * as Confined from "../text/Confined.ts"
import * as FrontMatter from "../text/FrontMatter.ts"
import { mayExist } from "../text/FileErrors.ts"

export interface Skill {
  /** How the model and the user name it: `release-notes`. */
  readonly name: string
  /** For the model: what it does and when to use it (on one line). */
  readonly description: string
  /** Its folder, absolute. */
  readonly dir: string
  /** Its `SKILL.md`, absolute. */
  readonly path: string
  readonly scope: "project" | "user"
  /**
   * The real path of the folder its files must stay inside: the repository root (or the cwd)
   * for a project's skill, its `skills` folder for the user's.
   */
  readonly root: string
  /** The user may run it as a `/name` command. */
  readonly userInvocable: boolean
  /** It is in the model's catalog, and the model may load it. */
  readonly modelInvocable: boolean
  /** Shown with the command: what arguments it takes. */
  readonly argumentHint?: string | undefined
}

/** Something wrong with one file or folder, or a skill shadowed by another (`file` is the one left out). */
export interface Problem {
  readonly file: string
  readonly message: string
}

export interface Discovered {
  /** In name order. */
  readonly skills: ReadonlyArray<Skill>
  readonly problems: ReadonlyArray<Problem>
}

/** A skill's name, and a command's. */
export const NAME = /^[a-z0-9][a-z0-9-]{0,63}$/

/** Larger files are not skills (and are not read whole). */
export const MAX_FILE_BYTES = 256 * 1024

const FILE_NAME = "SKILL.md"

/** A skill's instructions could not be read when it was asked for. The message names the file. */
class SkillError extends Schema.TaggedError<SkillError>()("SkillError", {
  reason: Schema.Literals(["not_found", "unreadable", "too_large"]),
  message: Schema.String
}) {}

// ---------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------

/** A key's value, or its default with a problem when it is not `true` or `false`. */
const flagOr = (values: ReadonlyMap<string, FrontMatter.Value>, key: string, fallback: boolean, problems: Array<string>): boolean => {
  const read = FrontMatter.attempt(() => FrontMatter.flag(values, key))
  if (typeof read === "object") {
    problems.push(`${read.problem}; the default (${fallback}) applies`)
    return fallback
  }
  return read ?? fallback
}

/**
 * A `SKILL.md`'s skill, or why it is not one; `problems` may also hold what was wrong but did not
 * keep it out (a flag that is not `true` or `false`).
 */
const parse = (
  content: string,
  where: { readonly dir: string; readonly path: string; readonly scope: Skill["scope"]; readonly folder: string; readonly root: string }
): { readonly skill?: Skill | undefined; readonly problems: ReadonlyArray<string> } => {
  const { values, problem } = FrontMatter.split(content, { lenient: true })
  if (problem?.reason === "missing") {
    return { problems: [`no front matter: ${FILE_NAME} must start with a "---" line, then at least a description, then "---"`] }
  }
  if (problem !== undefined) return { problems: [problem.message] }
  const problems: Array<string> = []
  const result = FrontMatter.attempt(() => {
    const given = FrontMatter.text(values, "name")
    const name = given ?? where.folder
    if (!NAME.test(name)) {
      const what = given === undefined ? `the folder's name ${JSON.stringify(name.slice(0, 80))} (there is no "name")` : `"name" ${JSON.stringify(name.slice(0, 80))}`
      return { problem: `${what} is not valid: use lowercase letters, digits and "-", starting with a letter or digit, at most 64 characters` }
    }
    const description = FrontMatter.text(values, "description")?.replace(/\s+/g, " ")
    if (description === undefined) return { problem: "\"description\" is missing: the model needs it to know when to use the skill" }
    const skill: Skill = {
      name,
      description,
      dir: where.dir,
      path: where.path,
      scope: where.scope,
      root: where.root,
      userInvocable: flagOr(values, "user-invocable", true, problems),
      modelInvocable: !flagOr(values, "disable-model-invocation", false, problems),
      argumentHint: FrontMatter.asWritten(values, "argument-hint")
    }
    return skill
  })
  return "problem" in result ? { problems: [...problems, result.problem] } : { skill: result, problems }
}

// ---------------------------------------------------------------------------
// Discovery
// ---------------------------------------------------------------------------

/**
 * The skills of one `skills` folder (one per subfolder, in name order), with the problems of
 * the others. Every folder and file is read only from inside `bound` (`text/Confined.ts`).
 */
const readRoot = Effect.fnUntraced(function*(folder: { readonly root: string; readonly bound: string; readonly scope: Skill["scope"] }) {
  const path = yield* Path.Path
  const problems: Array<Problem> = []
  const skills: Array<Skill> = []
  const listing = yield* Confined.list(folder.root, folder.bound)
  if (listing._tag === "refused") problems.push({ file: folder.root, message: listing.message })
  if (listing._tag !== "entries") return { skills, problems }
  for (const name of [...listing.names].sort()) {
    if (name.startsWith(".")) continue
    const dir = path.join(folder.root, name)
    const found = yield* Confined.kind(path.join(listing.real, name), folder.bound)
    if (found._tag === "outside") problems.push({ file: dir, message: Confined.outsideMessage(folder.bound) })
    if (found._tag === "error") problems.push({ file: dir, message: `cannot read the folder (${found.code})` })
    if (found._tag !== "directory") continue
    const file = path.join(dir, FILE_NAME)
    const read = yield* Confined.readText(path.join(found.real, FILE_NAME), folder.bound, { maxBytes: MAX_FILE_BYTES })
    switch (read._tag) {
      case "missing":
        problems.push({ file: dir, message: `no ${FILE_NAME} in the folder, so it is not a skill` })
        continue
      case "directory":
        problems.push({ file, message: "not a file" })
        continue
      case "refused":
        problems.push({ file, message: read.reason === "too_large" ? `larger than ${MAX_FILE_BYTES / 1024} KiB; not read as a skill` : read.message })
        continue
      case "text":
        break
      default:
        return read satisfies never
    }
    const parsed = parse(read.text, { dir, path: file, scope: folder.scope, folder: name, root: folder.bound })
    for (const message of parsed.problems) problems.push({ file, message })
    if (parsed.skill !== undefined) skills.push(parsed.skill)
  }
  return { skills, problems }
})

/**
 * The `skills` folders to search, nearest first, each with its scope and the bound its files
 * must stay inside: the repository root (the cwd outside a repository) for the project's, the
 * folder itself for the user's.
 */
const roots = Effect.fnUntraced(function*(options: { readonly cwd: string; readonly home: string; readonly userHome: string; readonly project?: boolean | undefined }) {
  const path = yield* Path.Path
  const cwd = path.resolve(options.cwd)
  // The directories from the cwd up to the repository root; just the cwd outside a repository.
  const chain: Array<string> = []
  let inRepository = false
  for (let dir = cwd; ; dir = path.dirname(dir)) {
    chain.push(dir)
    if (mayExist(path.join(dir, ".git"))) {
      inRepository = true
      break
    }
    if (path.dirname(dir) === dir) break
  }
  const project = inRepository ? chain : [cwd]
  const projectBound = yield* Confined.root(project.at(-1)!)
  const user = [path.join(options.userHome, ".agents", "skills"), path.join(options.userHome, ".claude", "skills"), path.join(options.home, "skills")]
  return [
    // A folder not trusted yet (`src/trust`): its skills do not load.
    ...(options.project === false ? [] : project).flatMap((dir) => [path.join(dir, ".agents", "skills"), path.join(dir, ".claude", "skills")]).map((root) => ({
      root,
      bound: projectBound,
      scope: "project" as const
    })),
    ...(yield* Effect.forEach(user, (root) =>
      Effect.map(Confined.root(root), (bound) => ({ root: path.resolve(root), bound, scope: "user" as const }))))
  ]
})

/**
 * Every skill a session in `cwd` can use, and the problems found on the way. `home` is
 * `$SKEIN_HOME`; `userHome` the user's home directory. Never fails.
 */
export const discover = Effect.fn("Skills.discover")(function*(
  options: { readonly cwd: string; readonly home: string; readonly userHome: string; readonly project?: boolean | undefined }
): Effect.gen.Return<Discovered, never, Path.Path> {
  const problems: Array<Problem> = []
  const byName = new Map<string, Skill>()
  const seen = new Set<string>()
  for (const folder of yield* roots(options)) {
    // The user's home may be the repository root, or a folder of the chain: read each folder once, as the project's.
    if (seen.has(folder.root)) continue
    seen.add(folder.root)
    const found = yield* readRoot(folder)
    problems.push(...found.problems)
    for (const skill of found.skills) {
      const winner = byName.get(skill.name)
      if (winner === undefined) byName.set(skill.name, skill)
      else {
        problems.push({
          file: skill.path,
          message: `the skill "${skill.name}" is shadowed by ${winner.path} (${winner.scope === skill.scope ? "nearer" : `${winner.scope} over ${skill.scope}`}); this one is ignored`
        })
      }
    }
  }
  const skills = [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  return { skills, problems }
})

// ---------------------------------------------------------------------------
// The catalog
// ---------------------------------------------------------------------------

const CATALOG_HEADER = [
  "# Skills",
  "Skills are folders of instructions (and sometimes scripts or other files) for particular tasks. When a task matches a skill's description, call the `skill` tool with its name to load its instructions before you start, and follow them."
]

/** Descriptions are not shortened below this many characters; skills are left out instead. */
const MIN_DESCRIPTION = 60

/** `text` in at most `limit` characters, cut at a word's end when one is near, with "…". */
const shorten = (text: string, limit: number) => {
  if (text.length <= limit) return text
  const cut = text.slice(0, Math.max(0, limit - 1))
  const space = cut.lastIndexOf(" ")
  return `${(space >= cut.length - 15 && space > 0 ? cut.slice(0, space) : cut).trimEnd()}…`
}

const entry = (skill: Skill, limit: number) => `- ${skill.name}: ${shorten(skill.description.replace(/\s+/g, " ").trim(), limit)} (${skill.path})`

const omittedLine = (omitted: number) =>
  `(${omitted} more skill${omitted === 1 ? " is" : "s are"} not listed here, for lack of room.)`

const render = (skills: ReadonlyArray<Skill>, limit: number, omitted: number) =>
  [...CATALOG_HEADER, ...skills.map((skill) => entry(skill, limit)), ...(omitted > 0 ? [omittedLine(omitted)] : [])].join("\n")

/** The longest description limit in `[low, high]` at which `fits`, or undefined when not even `low` does. */
const largest = (low: number, high: number, fits: (limit: number) => boolean): number | undefined => {
  if (!fits(low)) return undefined
  while (low < high) {
    const mid = Math.ceil((low + high) / 2)
    if (fits(mid)) low = mid
    else high = mid - 1
  }
  return low
}

/**
 * The system prompt's section listing the skills the model may load (name, description and
 * path, in name order), at most `budgetChars` long: descriptions are shortened first, then skills
 * are left out from the end of the list, and a last line says how many. No such skills: "".
 */
export const catalog = (skills: ReadonlyArray<Skill>, budgetChars: number): { readonly text: string; readonly omitted: number } => {
  const listed = skills.filter((skill) => skill.modelInvocable).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  if (listed.length === 0) return { text: "", omitted: 0 }
  const longest = Math.max(...listed.map((skill) => skill.description.length))
  const full = render(listed, longest, 0)
  if (full.length <= budgetChars) return { text: full, omitted: 0 }
  const fitsAll = largest(Math.min(MIN_DESCRIPTION, longest), longest, (limit) => render(listed, limit, 0).length <= budgetChars)
  if (fitsAll !== undefined) return { text: render(listed, fitsAll, 0), omitted: 0 }
  // How many fit with the shortest descriptions: the lengths add up, so no need to render each count.
  const floor = Math.min(MIN_DESCRIPTION, longest)
  const base = CATALOG_HEADER.join("\n").length
  let kept = 0
  let length = base
  for (const skill of listed) {
    const next = length + 1 + entry(skill, floor).length
    if (next + 1 + omittedLine(listed.length - kept - 1).length > budgetChars) break
    length = next
    kept++
  }
  const omitted = listed.length - kept
  if (base + 1 + omittedLine(omitted).length > budgetChars) return { text: "", omitted: listed.length }
  const some = listed.slice(0, kept)
  const limit = largest(floor, longest, (l) => render(some, l, omitted).length <= budgetChars) ?? floor
  return { text: render(some, limit, omitted), omitted }
}

/** The catalog's budget in characters: 2% of the context window (at 4 characters a token), at least 2,000; 8,000 when the window is not known. */
export const budget = (contextWindow: number | undefined): number =>
  contextWindow === undefined || !Number.isFinite(contextWindow) || contextWindow <= 0 ? 8_000 : Math.max(2_000, Math.floor(contextWindow * 4 * 0.02))

// ---------------------------------------------------------------------------
// Activation
// ---------------------------------------------------------------------------

/**
 * A skill's instructions as they are now: its `SKILL.md` without the front matter (trimmed),
 * and the sha256 (hex) of that text, for the log. Read as discovery reads it: only from inside
 * the skill's root, so a `SKILL.md` swapped for a link since is refused, not followed.
 */
export const activate = Effect.fn("Skills.activate")(function*(
  skill: Skill
): Effect.gen.Return<{ readonly body: string; readonly sha256: string }, SkillError> {
  const read = yield* Confined.readText(skill.path, skill.root, { maxBytes: MAX_FILE_BYTES })
  switch (read._tag) {
    case "missing":
    case "directory":
      return yield* new SkillError({ reason: "not_found", message: `The skill "${skill.name}" is gone: ${skill.path} does not exist any more` })
    case "refused":
      return yield* new SkillError(
        read.reason === "too_large"
          ? { reason: "too_large", message: `The skill "${skill.name}" is too large: ${skill.path} is over ${MAX_FILE_BYTES / 1024} KiB` }
          : { reason: "unreadable", message: `The skill "${skill.name}" cannot be read: ${skill.path}: ${read.message}` }
      )
    case "text": {
      const body = FrontMatter.split(read.text, { lenient: true }).body.trim()
      return { body, sha256: createHash("sha256").update(body, "utf8").digest("hex") }
    }
    default:
      return read satisfies never
  }
})

/**
 * The skills' folders the model's reading tools may read without asking: each one's real path
 * (links followed), unless it is outside the skill's root (it was swapped for a link since it
 * was found), a filesystem root, or holds the user's home (a skill folder that is a link to `/`
 * or `~` must not open them up). Those are left out: reading there asks as anywhere outside the
 * workspace.
 */
export const readableFolders = (skills: ReadonlyArray<Skill>, userHome: string): ReadonlyArray<string> => {
  // Asked at every turn's start: without skills, no file system call at all.
  if (skills.length === 0) return []
  const home = realOrSelf(userHome)
  const out: Array<string> = []
  for (const skill of skills) {
    const real = realOrSelf(skill.dir)
    if (!Confined.inside(skill.root, real)) continue
    if (nodePath.dirname(real) === real) continue
    if (home === real || home.startsWith(real.endsWith(nodePath.sep) ? real : real + nodePath.sep)) continue
    out.push(real)
  }
  return out
}

const realOrSelf = (path: string): string => {
  try {
    return nodeFs.realpathSync(path)
  } catch {
    return nodePath.resolve(path)
  }
}
