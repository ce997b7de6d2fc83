/**
 * The agents a session can delegate to, and the limits on delegation.
 *
 * Where they come from, the first of a name winning:
 *
 * 1. `<cwd>/.skein/agents/*.md`, the project's own;
 * 2. `<cwd>/.claude/agents/*.md`, so a project set up for Claude Code works as it is;
 * 3. `<home>/agents/*.md`, the user's;
 * 4. `<home>/config.json` under `"agents"`: external ACP agents, which Skein runs as a client
 *    (`{"codex": {"acp": {"command": "codex-acp", "args": [], "env": {}}, "description": "…"}}`);
 * 5. the built-ins, `general` and `explorer`.
 *
 * So a project's file shadows the user's of the same name, and any file may replace a built-in.
 * A project's files are read only from inside the cwd, the user's only from inside their
 * folder (`text/Confined.ts`): a file that is a link out of it is a problem, never read.
 * A replaced read-only built-in keeps its `readOnly` and its tools: a model (or a user) that
 * asks for `explorer` is promised an agent that cannot change the workspace, whoever wrote its
 * file, so the file's `tools` can only narrow the built-in's (absent: the built-in's), never
 * add one (a `spawn_agent` or an MCP tool). Read-only holds below it too (`tools/Ceiling.ts`).
 *
 * A Markdown agent is front matter between `---` lines, then the instructions:
 *
 * ```markdown
 * ---
 * name: reviewer
 * description: Reviews a change for bugs; use after editing
 * tools: read, grep, glob
 * model: anthropic-messages/claude-sonnet-4-5
 * ---
 * You review code. …
 * ```
 *
 * `name` (lowercase letters, digits, `-` and `_`, starting with a letter or digit, at most 64
 * characters) and `description` are required; `tools` (a comma-separated string, `[a, b]`, or a
 * block list of `- a` lines; absent: the parent's tools) and `model` (absent: the parent's) are
 * optional. Other keys are ignored (Claude Code's `color`, say). Claude Code's tool names
 * (`Read`, `Edit`, `Bash`, …) are taken as Skein's, and its model aliases (`sonnet`, `opus`,
 * `haiku`, `inherit`) as the parent's model, since they name no Skein model.
 *
 * The front matter is read strictly (`text/FrontMatter.ts`): one `key: value` per line, values
 * plain, `"double"`- or `'single'`-quoted, `[flow, lists]` of such, or a block list below an
 * empty value; blank and `#` lines. Anything else (block scalars `|`/`>`, nested maps, anchors,
 * continued lines) is a problem. A problem names the file and what is wrong, and the file is
 * skipped; nothing here fails.
 */
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Path from "effect/Path"
import * as Confined from "../text/Confined.ts"
import * as FrontMatter from "../text/FrontMatter.ts"
import { absent, describe } from "../text/FileErrors.ts"

export interface AgentDefinition {
  /** How the model and the user name it: `general`, `explorer`, `reviewer`. */
  readonly name: string
  /** For the model: what it does and when to use it. */
  readonly description: string
  /** The tools it may use, by name; undefined: the parent's. */
  readonly tools?: ReadonlyArray<string> | undefined
  /** Its model; undefined: the parent's. */
  readonly model?: string | undefined
  /** Appended to its system prompt (a Markdown file's body). */
  readonly instructions?: string | undefined
  /** It runs read-only, whatever the parent's mode. */
  readonly readOnly: boolean
  /** `"built-in"`, `"config.json"`, or the path of its file. */
  readonly source: string
  /** An external agent Skein runs and speaks ACP to, as its client. */
  readonly acp?: {
    readonly command: string
    readonly args: ReadonlyArray<string>
    readonly env: Readonly<Record<string, string>>
    /** Its process runs in the session's sandbox (and does not start where that cannot be done). */
    readonly sandbox?: boolean | undefined
  } | undefined
}

/** Something wrong with one source; that file or entry (or that value) is skipped. */
interface Problem {
  readonly file: string
  readonly message: string
}

/** How far delegation may go; past one, the delegating tool answers with an error the model reads. */
export interface Limits {
  /** Children of one session running at once. */
  readonly maxRunning: number
  /** Levels of children below a top-level session (0: none may delegate). */
  readonly maxDepth: number
  /** Children one session may start in all. */
  readonly maxPerSession: number
  /** How long one child task may take. */
  readonly timeoutMs: number
}

export const DEFAULT_LIMITS: Limits = { maxRunning: 8, maxDepth: 2, maxPerSession: 64, timeoutMs: 15 * 60_000 }

export const builtins: ReadonlyArray<AgentDefinition> = [
  {
    name: "general",
    description:
      "A general-purpose agent with the same tools as you. Use it for a self-contained task (a change, an investigation, a fix) whose details you do not need to keep in your own context.",
    readOnly: false,
    source: "built-in"
  },
  {
    name: "explorer",
    description:
      "A read-only agent: it only reads and searches files and runs read-only commands, and cannot change anything. Use it to find code, answer questions about the codebase, or gather context, and have it report what it found.",
    tools: ["read", "grep", "glob", "bash"],
    readOnly: true,
    source: "built-in"
  }
]

/** The agent named `name` (as the model may write it: case and surrounding spaces do not matter). */
export const find = (agents: ReadonlyArray<AgentDefinition>, name: string): AgentDefinition | undefined => {
  const wanted = name.trim().toLowerCase()
  return agents.find((agent) => agent.name === wanted)
}

// ---------------------------------------------------------------------------
// Front matter
// ---------------------------------------------------------------------------

const NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/
/** A tool's name: Skein's, or an MCP server's `mcp__server__tool`. */
const TOOL = /^[A-Za-z0-9_.:-]{1,128}$/

/** Claude Code's tool names, as Skein's. */
const CLAUDE_TOOLS: Readonly<Record<string, string>> = {
  Read: "read",
  Write: "write",
  Edit: "edit",
  MultiEdit: "edit",
  Bash: "bash",
  BashOutput: "bash_output",
  KillShell: "kill_shell",
  KillBash: "kill_shell",
  Grep: "grep",
  Glob: "glob",
  LS: "glob",
  TodoWrite: "update_plan"
}
/** Claude Code's model aliases: no Skein model, so the parent's. */
const CLAUDE_MODELS = new Set(["inherit", "sonnet", "opus", "haiku"])

/** Tool names as given, Claude Code's taken as Skein's, each once. */
const toolNames = (found: FrontMatter.Value | undefined): ReadonlyArray<string> | undefined => {
  if (found === undefined || found._tag === "null") return undefined
  if (found._tag === "invalid") throw new FrontMatter.Invalid(found.message)
  let names: ReadonlyArray<string>
  if (found._tag === "list") names = found.items.map((item) => item.trim())
  else if (found.text.trim() === "") names = []
  else {
    names = found.text.split(",").map((item) => item.trim())
    if (names.includes("")) throw new FrontMatter.Invalid(`"tools" has an empty name between commas`)
  }
  const bad = names.find((name) => !TOOL.test(name))
  if (bad !== undefined) throw new FrontMatter.Invalid(`"tools" names ${JSON.stringify(bad.slice(0, 60))}, which is not a tool name`)
  return [...new Set(names.map((name) => (Object.hasOwn(CLAUDE_TOOLS, name) ? CLAUDE_TOOLS[name]! : name)))]
}

/**
 * A Markdown agent file's definition, or why it is not one (a message naming the line or the
 * key). `source` is its path; a built-in of the same name lends it its `readOnly`.
 */
export const parseMarkdown = (content: string, source: string): AgentDefinition | { readonly problem: string } => {
  const { values, body, problem } = FrontMatter.split(content)
  if (problem?.reason === "missing") return { problem: "no front matter: the file must start with a \"---\" line, then name and description, then \"---\"" }
  if (problem !== undefined) return { problem: problem.message }
  return FrontMatter.attempt((): AgentDefinition | { readonly problem: string } => {
    const name = FrontMatter.text(values, "name")
    if (name === undefined) return { problem: "\"name\" is missing" }
    if (!NAME.test(name)) {
      return { problem: `"name" ${JSON.stringify(name.slice(0, 80))} is not valid: use lowercase letters, digits, "-" and "_", starting with a letter or digit, at most 64 characters` }
    }
    const description = FrontMatter.text(values, "description")
    if (description === undefined) return { problem: "\"description\" is missing: the model needs it to know when to use the agent" }
    const model = FrontMatter.text(values, "model")
    const instructions = body.trim()
    const builtin = builtins.find((agent) => agent.name === name)
    const listed = toolNames(values.get("tools"))
    // A read-only built-in's tools bound the file's.
    const bound = builtin?.readOnly === true ? builtin.tools : undefined
    const tools = bound === undefined ? listed : listed === undefined ? bound : listed.filter((tool) => bound.includes(tool))
    return {
      name,
      description,
      tools,
      model: model === undefined || CLAUDE_MODELS.has(model) ? undefined : model,
      instructions: instructions === "" ? undefined : instructions,
      readOnly: builtin?.readOnly ?? false,
      source
    }
  })
}

// ---------------------------------------------------------------------------
// config.json
// ---------------------------------------------------------------------------

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

interface FromConfig {
  readonly agents: ReadonlyArray<AgentDefinition>
  readonly limits: Limits
  readonly problems: ReadonlyArray<Problem>
}

const ENTRY_KEYS = new Set(["acp", "description"])
const ACP_KEYS = new Set(["command", "args", "env", "sandbox"])

/** One `"agents"` entry, or why not; unknown keys are reported and ignored. */
const externalAgent = (name: string, entry: unknown, report: (message: string) => void): AgentDefinition | undefined => {
  const at = `"agents"."${name.slice(0, 64)}"`
  const skip = (message: string): undefined => {
    report(message)
    return undefined
  }
  if (!NAME.test(name)) {
    return skip(`${at}: the name is not valid: use lowercase letters, digits, "-" and "_", starting with a letter or digit, at most 64 characters`)
  }
  if (!isRecord(entry)) return skip(`${at} must be an object with "acp": {"command": …}`)
  for (const key of Object.keys(entry)) if (!ENTRY_KEYS.has(key)) report(`${at}: unknown key "${key.slice(0, 40)}" is ignored`)
  const acp = entry["acp"]
  if (!isRecord(acp)) return skip(`${at}: "acp" must be an object with "command"`)
  for (const key of Object.keys(acp)) if (!ACP_KEYS.has(key)) report(`${at}.acp: unknown key "${key.slice(0, 40)}" is ignored`)
  const command = acp["command"]
  if (typeof command !== "string" || command.trim() === "") return skip(`${at}.acp: "command" must be a non-empty string`)
  const args = acp["args"] ?? []
  if (!Array.isArray(args) || !args.every((arg) => typeof arg === "string")) return skip(`${at}.acp: "args" must be a list of strings`)
  const env = acp["env"] ?? {}
  if (!isRecord(env) || !Object.values(env).every((v) => typeof v === "string")) {
    return skip(`${at}.acp: "env" must be an object of strings`)
  }
  const sandbox = acp["sandbox"]
  if (sandbox !== undefined && typeof sandbox !== "boolean") return skip(`${at}.acp: "sandbox" must be true or false`)
  const description = entry["description"]
  if (description !== undefined && (typeof description !== "string" || description.trim() === "")) {
    return skip(`${at}: "description" must be a non-empty string`)
  }
  return {
    name,
    description: typeof description === "string" ? description.trim() : `An external agent (${command}) that Skein talks to over ACP.`,
    readOnly: false,
    source: "config.json",
    acp: { command, args: args as ReadonlyArray<string>, env: env as Readonly<Record<string, string>>, ...(sandbox === true ? { sandbox } : {}) }
  }
}

/** `subagents` limits: each valid one taken, each invalid one reported and left at its default. */
const limitsOf = (raw: unknown, report: (message: string) => void): Limits => {
  if (raw === undefined) return DEFAULT_LIMITS
  if (!isRecord(raw)) {
    report(`"subagents" must be an object; the default limits apply`)
    return DEFAULT_LIMITS
  }
  const out: { -readonly [K in keyof Limits]: number } = { ...DEFAULT_LIMITS }
  for (const [key, given] of Object.entries(raw)) {
    if (!Object.hasOwn(DEFAULT_LIMITS, key)) {
      report(`"subagents": unknown key "${key.slice(0, 40)}" is ignored (known: ${Object.keys(DEFAULT_LIMITS).join(", ")})`)
      continue
    }
    const name = key as keyof Limits
    const least = name === "maxDepth" ? 0 : 1
    if (typeof given !== "number" || !Number.isSafeInteger(given) || given < least) {
      report(`"subagents"."${name}" must be a whole number of at least ${least}; the default ${DEFAULT_LIMITS[name]} applies`)
      continue
    }
    out[name] = given
  }
  return out
}

/** The external agents and the limits `config.json` declares (its path is `file`, for problems). */
export const parseConfig = (content: string, file: string): FromConfig => {
  const problems: Array<Problem> = []
  const report = (message: string) => problems.push({ file, message })
  let json: unknown
  try {
    json = JSON.parse(content)
  } catch {
    report("not valid JSON: no agents or limits were read from it")
    return { agents: [], limits: DEFAULT_LIMITS, problems }
  }
  if (!isRecord(json)) return { agents: [], limits: DEFAULT_LIMITS, problems }
  const agents: Array<AgentDefinition> = []
  const declared = json["agents"]
  if (declared !== undefined && !isRecord(declared)) report(`"agents" must be an object of agent names`)
  else if (declared !== undefined) {
    for (const [name, entry] of Object.entries(declared)) {
      const agent = externalAgent(name, entry, report)
      if (agent !== undefined) agents.push(agent)
    }
  }
  return { agents, limits: limitsOf(json["subagents"], report), problems }
}

// ---------------------------------------------------------------------------
// Loading
// ---------------------------------------------------------------------------

/** Larger files are not agent definitions (and are not read whole). */
const MAX_FILE_BYTES = 256 * 1024

/**
 * The agents of one folder's `*.md` files, in name order, with the problems of the others.
 * Files are read only from inside `root` (`text/Confined.ts`).
 */
const readFolder = Effect.fnUntraced(function*(folder: { readonly dir: string; readonly root: string }) {
  const path = yield* Path.Path
  const problems: Array<Problem> = []
  const agents: Array<AgentDefinition> = []
  const listing = yield* Confined.list(folder.dir, folder.root)
  if (listing._tag === "refused") problems.push({ file: folder.dir, message: listing.message })
  if (listing._tag !== "entries") return { agents, problems }
  // Read at once (the reads overlap), then taken in name order.
  const names = listing.names.filter((n) => n.endsWith(".md")).sort()
  const contents = yield* Effect.forEach(
    names,
    (name) => Confined.readText(path.join(listing.real, name), folder.root, { maxBytes: MAX_FILE_BYTES }),
    { concurrency: "unbounded" }
  )
  for (const [i, name] of names.entries()) {
    const file = path.join(folder.dir, name)
    const found = contents[i]!
    if (found._tag === "refused") problems.push({ file, message: found.reason === "too_large" ? `larger than ${MAX_FILE_BYTES / 1024} KiB; not an agent definition` : found.message })
    if (found._tag !== "text") continue
    const parsed = parseMarkdown(found.text, file)
    if ("problem" in parsed) {
      problems.push({ file, message: parsed.problem })
      continue
    }
    const earlier = agents.find((agent) => agent.name === parsed.name)
    if (earlier !== undefined) {
      problems.push({ file, message: `"${parsed.name}" is already defined by ${earlier.source}; this file is ignored` })
      continue
    }
    agents.push(parsed)
  }
  return { agents, problems }
})

/**
 * Every agent a session in `cwd` can delegate to (sources in precedence order; a name's first
 * definition wins), the limits from `<home>/config.json`, and the problems found on the way.
 * Never fails: a bad file or entry is a problem and is skipped.
 */
export interface Loaded {
  readonly agents: ReadonlyArray<AgentDefinition>
  readonly problems: ReadonlyArray<Problem>
  readonly limits: Limits
}

export const load = Effect.fn("Definitions.load")(function*(
  options: { readonly cwd: string; readonly home: string }
): Effect.gen.Return<Loaded, never, FileSystem.FileSystem | Path.Path> {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const problems: Array<Problem> = []
  const found: Array<AgentDefinition> = []
  // A project's files stay inside the project; the user's inside their folder.
  const project = yield* Confined.root(options.cwd)
  const user = path.join(options.home, "agents")
  const dirs = [
    { dir: path.join(options.cwd, ".skein", "agents"), root: project },
    { dir: path.join(options.cwd, ".claude", "agents"), root: project },
    { dir: user, root: yield* Confined.root(user) }
  ]
  // The folders are read at once; their agents and problems are taken in precedence order.
  for (const folder of yield* Effect.forEach(dirs, readFolder, { concurrency: "unbounded" })) {
    found.push(...folder.agents)
    problems.push(...folder.problems)
  }
  const configFile = path.join(options.home, "config.json")
  const configText = yield* fs.readFileString(configFile).pipe(
    Effect.catch((error) =>
      Effect.sync(() => {
        if (!absent(error)) problems.push({ file: configFile, message: `cannot read the file (${describe(error)})` })
        return undefined
      })
    )
  )
  const config = configText === undefined ? { agents: [], limits: DEFAULT_LIMITS, problems: [] } : parseConfig(configText, configFile)
  problems.push(...config.problems)
  found.push(...config.agents, ...builtins)
  const seen = new Set<string>()
  const agents = found.filter((agent) => !seen.has(agent.name) && (seen.add(agent.name), true))
  return { agents, problems, limits: config.limits }
})
