/**
 * Which shell commands may run without asking, and what an "always" answer
 * for a command covers. Pure; the file system half is `commands/Confine.ts`.
 *
 * A command is read-only when the lexer (`commands/Shell.ts`) understands
 * all of it and every stage is on the allowlist (`commands/Allowlist.ts`)
 * with options that neither write, nor run programs, nor follow links out of
 * a tree. That is necessary, not sufficient: the words it opens must still
 * resolve inside the workspace, which only the file system can tell. A false
 * "no" costs a question; a false "yes" costs the user's files.
 */
import { type Check, ruleFor } from "./commands/Allowlist.ts"
import { parsePipeline, type Segment, type Word } from "./commands/Shell.ts"

/** One stage of a read-only pipeline and what must be checked before it runs. */
interface Stage {
  readonly program: string
  readonly check: Check
  /** Files read through `< file`, relative to the shell's directory. */
  readonly inputs: ReadonlyArray<Word>
}

const PROGRAM = /^[A-Za-z0-9][A-Za-z0-9._+-]*$/

const stageOf = (segment: Segment): Stage | undefined => {
  const [program, ...rest] = segment.words
  if (program === undefined || program.glob || !PROGRAM.test(program.text)) return undefined
  const check = ruleFor(program.text)?.(rest)
  return check === undefined ? undefined : { program: program.text, check, inputs: segment.inputs }
}

/** The stages of a command made only of allowed programs and options, or undefined. */
export const analyze = (command: string): ReadonlyArray<Stage> | undefined => {
  const segments = parsePipeline(command)
  if (segments === undefined || segments.length === 0) return undefined
  const stages: Array<Stage> = []
  for (const segment of segments) {
    const stage = stageOf(segment)
    if (stage === undefined) return undefined
    stages.push(stage)
  }
  return stages
}

/**
 * True for a command that the allowlist calls read-only: a single command or
 * a pipeline of them, with options that neither write nor run other programs,
 * and no redirection but `< file`, output to /dev/null and duplicating or
 * closing descriptors. Whether its paths stay inside the workspace is checked
 * separately (`Confine.check`).
 */
export const isReadOnlyCommand = (command: string): boolean => analyze(command) !== undefined

/** A stage that only filters its input: no files, no repository. */
const isFilter = (segment: Segment): boolean => {
  const stage = stageOf(segment)
  return stage !== undefined && !stage.check.git && stage.check.paths.length === 0 && stage.inputs.length === 0
}

// ---------------------------------------------------------------------------
// Command prefixes (what an "always" answer for bash covers)
// ---------------------------------------------------------------------------

/** Programs whose first argument names what they do (`npm test`, `git commit`, `npx vitest`). */
const MULTI_LEVEL = new Set([
  "npm", "pnpm", "yarn", "bun", "npx", "pnpx", "bunx", "git", "cargo", "go", "docker", "podman", "kubectl", "gh",
  "deno", "uv", "poetry", "pip", "pip3", "brew", "apt", "apt-get", "dotnet", "mvn", "gradle", "make", "rustup",
  "terraform", "helm", "systemctl", "composer", "bundle", "mix", "swift", "zig", "just", "nx", "turbo"
])
/** Subcommands that only run something named next (`npm run build`, `uv run pytest`). */
const RUNNERS = new Set(["run", "run-script", "exec", "dlx", "x"])
const SUBCOMMAND = /^[@A-Za-z0-9][\w:.@/+-]*$/

/**
 * The prefix an "always allow" covers: the program, plus its subcommand for
 * well-known multi-level tools (and the script for `npm run …`).
 */
export const commandPrefix = (command: string): string => {
  const line = command.trim().split("\n")[0] ?? ""
  const words = line.split(/[ \t]+/)
  const first = words[0] ?? ""
  const program = /^[^;&|<>()$`'"\\]+/.exec(first)?.[0]
  if (program === undefined || program !== first) return line.slice(0, 80)
  const name = program.slice(program.lastIndexOf("/") + 1)
  if (!MULTI_LEVEL.has(name)) return program
  const sub = words[1]
  if (sub === undefined || !SUBCOMMAND.test(sub)) return program
  const script = words[2]
  if (RUNNERS.has(sub) && script !== undefined && SUBCOMMAND.test(script)) return `${program} ${sub} ${script}`
  return `${program} ${sub}`
}

/**
 * Whether `command` is covered by a remembered prefix: it starts with the
 * prefix's words and is otherwise a simple command (no `;`, `&&`, `$(…)`,
 * redirection into a file), piped only into read-only filters (which open no
 * file of their own: the rule covers the command, not reads elsewhere).
 */
export const matchesCommandPrefix = (command: string, prefix: string): boolean => {
  const segments = parsePipeline(command)
  const want = prefix.trim().split(/[ \t]+/)
  if (segments === undefined || segments.length === 0 || want.length === 0 || want[0] === "") return false
  const [first, ...rest] = segments
  const words = first!.words.map((w) => w.text)
  return want.every((w, i) => words[i] === w) && first!.inputs.length === 0 && rest.every(isFilter)
}
