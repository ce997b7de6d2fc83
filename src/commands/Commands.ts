/**
 * Slash commands: a prompt with a text block that starts with `/name` of a known command runs
 * it (`locate`: the last such block).
 *
 * Three kinds, in precedence order:
 *
 * 1. the built-ins (`BUILTINS`): `/compact [focus]`, `/init`, `/review [focus]`, `/undo`, `/rewind [N]`; the
 *    runtime carries them out (`/init` and `/review` by giving the model `INIT_PROMPT` and
 *    `REVIEW_PROMPT`);
 * 2. prompt files: `<cwd>/.skein/commands/<name>.md`, `<cwd>/.claude/commands/<name>.md`,
 *    `$SKEIN_HOME/commands/<name>.md`, the first of a name winning. The body is a template
 *    (`expand`); optional front matter gives `description` (absent: the body's first line) and
 *    `argument-hint`. A project's files are read only from inside the cwd, the user's only from
 *    inside their folder: a file that is a link out of it is a problem, never read;
 * 3. the user-invocable skills: `/name args` has the model follow the skill (`forSkill`).
 *
 * A name is a skill's name (lowercase letters, digits and `-`). A file or skill that would
 * redefine a built-in, or a name already taken, is a problem and is left out; nothing here fails.
 * `parse` and `expand` are pure.
 */
import * as Effect from "effect/Effect"
import * as Path from "effect/Path"
import * as Skills from "../skills/Skills.ts"
import * as Confined from "../text/Confined.ts"
import * as FrontMatter from "../text/FrontMatter.ts"

export interface Command {
  /** What the user types after `/`. */
  readonly name: string
  /** For the user, in the editor's command list. */
  readonly description: string
  readonly kind: "builtin" | "prompt" | "skill"
  /** `"built-in"`, the prompt file's path, or the skill's `SKILL.md`. */
  readonly source: string
  /** What arguments it takes, for the editor's hint. */
  readonly argumentHint?: string | undefined
  /** A prompt file's body, for `expand`. */
  readonly template?: string | undefined
  /** The skill a `skill` command runs. */
  readonly skill?: Skills.Skill | undefined
}

/** Something wrong with one file or folder, or a name already taken (`file` is the one left out). */
type Problem = Skills.Problem

export interface Discovered {
  /** The built-ins, then the others in name order. */
  readonly commands: ReadonlyArray<Command>
  readonly problems: ReadonlyArray<Problem>
}

export const BUILTINS: ReadonlyArray<Command> = [
  {
    name: "compact",
    description: "Summarise the conversation so far to free context; optional focus",
    kind: "builtin",
    source: "built-in",
    argumentHint: "[focus]"
  },
  {
    name: "init",
    description: "Explore the project and write an AGENTS.md with its commands, layout and conventions",
    kind: "builtin",
    source: "built-in"
  },
  {
    name: "review",
    description: "Review the uncommitted changes for bugs, risks and missing tests; optional focus",
    kind: "builtin",
    source: "built-in",
    argumentHint: "[focus]"
  },
  {
    name: "undo",
    description: "Revert the file changes made by the last turn's write and edit calls",
    kind: "builtin",
    source: "built-in"
  },
  {
    name: "rewind",
    description: "Go back to before a turn: its files (shell changes too) and the conversation; default the last turn",
    kind: "builtin",
    source: "built-in",
    argumentHint: "[turn]"
  }
]

/** What the model is given for `/init` (arguments, if any, are appended by `expand`). */
export const INIT_PROMPT = `Write an AGENTS.md file at the root of this project: the instructions a coding agent (or a new contributor) needs before changing anything here.

First explore the repository with your tools; do not guess:
- Read the README, the package or build manifests (package.json, Cargo.toml, pyproject.toml, go.mod, Makefile, …), CI configuration, and any existing AGENTS.md, CLAUDE.md, .cursorrules or CONTRIBUTING file.
- List the top-level folders and look inside the main ones to learn what lives where.
- Read a few representative source and test files to learn the conventions actually followed.

Then write AGENTS.md, concise and specific to this project, with:
1. Commands: the exact commands to install, build, run, lint, typecheck and test, including how to run a single test file or test. Only commands you found in the repository.
2. Layout: the main folders and modules, one line each, and where new code or tests should go.
3. Conventions: language version, code style and naming, error handling, how tests are written, anything a linter or formatter enforces, and commit or branch practices if documented.
4. Pitfalls: generated files not to edit, required environment variables, slow or flaky tests, anything surprising.

If AGENTS.md already exists, improve it rather than replace it: keep what is still true, correct what is out of date, and add what is missing. Do not repeat generic advice that applies to any project, and do not invent commands or rules. When you are done, say in a few lines what you wrote or changed.`

/** What the model is given for `/review`; `$ARGUMENTS` (empty when none were given) narrows it. */
export const REVIEW_PROMPT = `Review the uncommitted changes in this repository.

1. Run \`git status\` and \`git diff HEAD\` (or \`git diff\` and \`git diff --staged\` when there is no commit yet) to see what changed. Read the untracked files that \`git status\` lists as well: they are part of the change.
2. Read enough of the surrounding code to understand each change: the callers of a changed function, the tests of a changed module.
3. Look for: bugs and logic errors, unhandled errors and edge cases, security problems (injection, secrets, unchecked input), concurrency and resource leaks, behaviour changes that callers do not expect, and missing or weak tests for what changed.

Do not change any file: this is a review. Report your findings grouped by severity (critical, major, minor, nit), each with its file:line, what is wrong, and a concrete suggestion. Say so plainly if you found nothing worth changing. End with a one-paragraph overall assessment.

Focus of this review, if the user gave one (otherwise review everything): $ARGUMENTS`

// ---------------------------------------------------------------------------
// Parsing and expansion
// ---------------------------------------------------------------------------

const INVOCATION = /^\/([a-z0-9][a-z0-9-]{0,63})(?:\s+([\s\S]*))?$/

/**
 * The command a prompt invokes, when its first non-blank characters are `/name` followed by
 * the end or whitespace; the arguments are the rest, trimmed. Whether the name is a known
 * command is the caller's question.
 */
export const parse = (text: string): { readonly name: string; readonly arguments: string } | undefined => {
  const match = INVOCATION.exec(text.trimStart())
  return match === null ? undefined : { name: match[1]!, arguments: (match[2] ?? "").trim() }
}

/** A block of a prompt, as far as finding a command in it goes. */
export type Block = { readonly type: "text"; readonly text: string } | { readonly type: string }

/** A command a prompt runs: the command, the index of the block that names it, and its arguments. */
interface Located {
  readonly command: Command
  readonly block: number
  readonly arguments: string
}

/**
 * The command a prompt runs: the **last** of its text blocks that starts with `/name` of a
 * known command. The last, because that is what was typed last: a client may send earlier text
 * again in front of it (CodeCompanion resends a stopped prompt before the next one), and a
 * prompt may hold text that was pasted before a command (`see /etc/hosts` does not start with
 * a command, and `/review` after it still runs). Pure.
 */
export const locate = (content: ReadonlyArray<Block>, commands: ReadonlyArray<Command>): Located | undefined => {
  for (let block = content.length - 1; block >= 0; block--) {
    const item = content[block]!
    if (item.type !== "text" || !("text" in item)) continue
    const parsed = parse(item.text)
    const command = parsed === undefined ? undefined : find(commands, parsed.name)
    if (parsed !== undefined && command !== undefined) return { command, block, arguments: parsed.arguments }
  }
  return undefined
}

/** Whether a prompt may name a command (one of its text blocks starts with `/`): worth a fresh look at the commands. */
export const mayName = (content: ReadonlyArray<Block>): boolean =>
  content.some((item) => item.type === "text" && "text" in item && item.text.trimStart().startsWith("/"))

/**
 * A prompt file's template with its arguments: `$ARGUMENTS` is all of them, `$1`…`$9` the
 * whitespace-separated ones (missing: empty). A template that takes no arguments (neither
 * `$ARGUMENTS` nor `$1`…`$9`) has them, if any, appended after a blank line, so they are never
 * lost. Substituted text is not substituted again.
 */
export const expand = (template: string, args: string): string => {
  const positional = args.trim() === "" ? [] : args.trim().split(/\s+/)
  let used = false
  const out = template.replace(/\$(ARGUMENTS|[1-9])/g, (_, which: string) => {
    used = true
    return which === "ARGUMENTS" ? args : positional[Number(which) - 1] ?? ""
  })
  return used || args.trim() === "" ? out : `${out.trimEnd()}\n\nArguments: ${args}`
}

/** What the model sees when the user runs a skill as a command: which skill, its instructions, the arguments. */
export const forSkill = (skill: Skills.Skill, body: string, args: string): string =>
  [
    `The user invoked the skill "${skill.name}" (its folder: ${skill.dir}; paths in it are relative to that folder). Follow its instructions:`,
    "",
    body.trim(),
    ...(args.trim() === "" ? [] : ["", `Arguments: ${args.trim()}`])
  ].join("\n")

// ---------------------------------------------------------------------------
// Prompt files
// ---------------------------------------------------------------------------

/** Larger files are not prompt files (and are not read whole). */
const MAX_FILE_BYTES = 256 * 1024
/** A description taken from the body's first line is cut to this many characters. */
const MAX_DESCRIPTION = 100

const firstLine = (body: string): string | undefined => {
  const line = body.split("\n").map((l) => l.replace(/^#+\s*/, "").trim()).find((l) => l !== "")
  if (line === undefined) return undefined
  return line.length <= MAX_DESCRIPTION ? line : `${line.slice(0, MAX_DESCRIPTION - 1).trimEnd()}…`
}

/**
 * A prompt file's command, or why it is not one. `name` is the file's name without `.md`. Front
 * matter is optional (and read leniently); without it the whole file is the template.
 */
const parsePromptFile = (content: string, name: string, source: string): Command | { readonly problem: string } => {
  if (!Skills.NAME.test(name)) {
    return { problem: `the name ${JSON.stringify(name.slice(0, 80))} is not valid for a command: use lowercase letters, digits and "-", starting with a letter or digit, at most 64 characters` }
  }
  const { values, body, problem } = FrontMatter.split(content, { lenient: true })
  if (problem !== undefined && problem.reason !== "missing") return { problem: problem.message }
  const template = body.trim()
  if (template === "") return { problem: "the prompt is empty" }
  return FrontMatter.attempt((): Command => {
    return {
      name,
      description: FrontMatter.text(values, "description")?.replace(/\s+/g, " ") ?? firstLine(template) ?? `/${name}`,
      kind: "prompt",
      source,
      argumentHint: FrontMatter.asWritten(values, "argument-hint"),
      template
    }
  })
}

/**
 * The commands of one folder's `*.md` files, in name order, with the problems of the others.
 * Files are read only from inside `root` (`text/Confined.ts`).
 */
const readFolder = Effect.fnUntraced(function*(dir: string, root: string) {
  const path = yield* Path.Path
  const problems: Array<Problem> = []
  const commands: Array<Command> = []
  const listing = yield* Confined.list(dir, root)
  if (listing._tag === "refused") problems.push({ file: dir, message: listing.message })
  if (listing._tag !== "entries") return { commands, problems }
  for (const entry of listing.names.filter((n) => n.endsWith(".md")).sort()) {
    const file = path.join(dir, entry)
    const read = yield* Confined.readText(path.join(listing.real, entry), root, { maxBytes: MAX_FILE_BYTES })
    if (read._tag === "refused") problems.push({ file, message: read.reason === "too_large" ? `larger than ${MAX_FILE_BYTES / 1024} KiB; not a prompt file` : read.message })
    if (read._tag !== "text") continue
    const parsed = parsePromptFile(read.text, entry.slice(0, -".md".length), file)
    if ("problem" in parsed) problems.push({ file, message: parsed.problem })
    else commands.push(parsed)
  }
  return { commands, problems }
})

/**
 * Every command a session in `cwd` offers: the built-ins, the prompt files, the user-invocable
 * `skills` (as `Skills.discover` found them), and the problems found on the way. `home` is
 * `$SKEIN_HOME`. Never fails.
 */
export const discover = Effect.fn("Commands.discover")(function*(
  options: { readonly cwd: string; readonly home: string; readonly skills: ReadonlyArray<Skills.Skill>; readonly project?: boolean | undefined }
): Effect.gen.Return<Discovered, never, Path.Path> {
  const path = yield* Path.Path
  const problems: Array<Problem> = []
  const byName = new Map<string, Command>(BUILTINS.map((command) => [command.name, command]))
  const add = (command: Command, file: string) => {
    const taken = byName.get(command.name)
    if (taken === undefined) {
      byName.set(command.name, command)
      return
    }
    const what = command.kind === "skill" ? "the skill stays available to the model, not as a command" : "this file is ignored"
    problems.push({
      file,
      message: taken.kind === "builtin"
        ? `"/${command.name}" is a built-in command, which cannot be redefined; ${what}`
        : `"/${command.name}" is already defined by ${taken.source}; ${what}`
    })
  }
  // A project's files stay inside the project; the user's inside their folder.
  const project = yield* Confined.root(options.cwd)
  const user = path.join(options.home, "commands")
  // A folder not trusted yet (`src/trust`): its commands do not load.
  const folders = [
    ...(options.project === false ? [] : [
      { dir: path.join(options.cwd, ".skein", "commands"), root: project },
      { dir: path.join(options.cwd, ".claude", "commands"), root: project }
    ]),
    { dir: user, root: yield* Confined.root(user) }
  ]
  for (const { dir, root } of folders) {
    const folder = yield* readFolder(dir, root)
    problems.push(...folder.problems)
    for (const command of folder.commands) add(command, command.source)
  }
  for (const skill of options.skills) {
    if (!skill.userInvocable) continue
    add({ name: skill.name, description: skill.description, kind: "skill", source: skill.path, argumentHint: skill.argumentHint, skill }, skill.path)
  }
  const others = [...byName.values()].filter((command) => command.kind !== "builtin").sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  return { commands: [...BUILTINS, ...others], problems }
})

/** The command named `name`, if there is one. */
export const find = (commands: ReadonlyArray<Command>, name: string): Command | undefined => commands.find((command) => command.name === name)
