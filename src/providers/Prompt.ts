/**
 * The system prompt: who the agent is, its tools, the cwd, the platform, the
 * date, and the project's own instructions (`AGENTS.md`, and `CLAUDE.md` if
 * present, from the repository root down to the cwd).
 *
 * The files are read only from inside the repository root (the cwd outside one): an
 * `AGENTS.md` that is a link out of it, a FIFO or a device is not read (`instructions` says
 * why, for `skein doctor`).
 *
 * `load` reads the project once per session (`Effect.cached`); `render` is
 * pure. The date has day resolution and is taken once, and the mode — the one
 * part that can change during a session — comes last, so the prefix a
 * provider caches stays byte-identical from call to call.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Path from "effect/Path"
import * as Secrets from "../secrets/Secrets.ts"
import * as Confined from "../text/Confined.ts"
import { mayExist } from "../text/FileErrors.ts"

const INSTRUCTION_FILES = ["AGENTS.md", "CLAUDE.md"] as const
/** Longest instructions file kept (characters); the rest is cut with a note. */
export const MAX_FILE_CHARS = 32_000

export interface Instructions {
  readonly path: string
  readonly text: string
}

export interface Project {
  readonly cwd: string
  /** The repository root (the nearest directory up from the cwd holding `.git`), if any. */
  readonly root: string | undefined
  readonly platform: string
  /** `YYYY-MM-DD`, local time, when the session's prompt was first built. */
  readonly date: string
  /** Outermost first: the repository root's, then those of directories nearer the cwd. */
  readonly instructions: ReadonlyArray<Instructions>
}

const pad = (n: number) => String(n).padStart(2, "0")
const day = (millis: number): string => {
  const d = new Date(millis)
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`
}

/** An instructions file that was not read, and why. */
export interface Problem {
  readonly file: string
  readonly message: string
}

/** Bytes read of one instructions file: enough for `MAX_FILE_CHARS` characters of any UTF-8 text. */
const MAX_FILE_BYTES = MAX_FILE_CHARS * 4

/**
 * The project's root and its instruction files, outermost first, and the files that were not
 * read: each is read only from inside the repository root (the cwd outside a repository), as
 * the `read` tool would (`text/Confined.ts`), and only its first `MAX_FILE_CHARS` characters.
 */
export const instructions = Effect.fn("Prompt.instructions")(function*(cwd: string) {
  const path = yield* Path.Path
  // The directories from the cwd up to the repository root; just the cwd outside a repository.
  const chain: Array<string> = []
  let root: string | undefined
  for (let dir = path.resolve(cwd); ; dir = path.dirname(dir)) {
    chain.push(dir)
    if (mayExist(path.join(dir, ".git"))) {
      root = dir
      break
    }
    if (path.dirname(dir) === dir) break
  }
  const dirs = root === undefined ? [path.resolve(cwd)] : chain.reverse()
  const bound = yield* Confined.root(dirs[0]!)

  const found: Array<Instructions> = []
  const problems: Array<Problem> = []
  const seen = new Set<string>()
  for (const dir of dirs) {
    for (const name of INSTRUCTION_FILES) {
      const file = path.join(dir, name)
      if (!mayExist(file)) continue
      const read = yield* Confined.readText(file, bound, { maxBytes: MAX_FILE_BYTES, truncate: true })
      if (read._tag === "refused") problems.push({ file, message: read.message })
      if (read._tag !== "text") continue
      // The model sees no secret, from a project file either.
      const trimmed = Secrets.redact(read.text.trim())
      // CLAUDE.md is often a copy of (or a link to) AGENTS.md.
      if (trimmed.length === 0 || seen.has(trimmed)) continue
      seen.add(trimmed)
      found.push({
        path: file,
        text: trimmed.length > MAX_FILE_CHARS || read.truncated
          ? `${trimmed.slice(0, MAX_FILE_CHARS)}\n[… ${file} is longer; the rest was left out]`
          : trimmed
      })
    }
  }
  return { root, instructions: found, problems }
})

/** Reads what the prompt needs of a project: its root and its instruction files. */
export const load = Effect.fn("Prompt.load")(function*(cwd: string, options: { readonly platform?: string } = {}) {
  const { root, instructions: found } = yield* instructions(cwd)
  const now = yield* Clock.currentTimeMillis
  return { cwd, root, platform: options.platform ?? process.platform, date: day(now), instructions: found } satisfies Project
})

const modeText = (mode: string) =>
  mode === "plan"
    ? "Mode: plan. You may read and search, but not change files or run commands; propose a plan instead."
    : mode === "bypassPermissions"
    ? "Mode: bypassPermissions. Tools run without asking the user."
    : mode === "acceptEdits"
    ? "Mode: acceptEdits. File edits in the workspace run without asking; commands may need the user's permission."
    : `Mode: ${mode}. Edits and commands may need the user's permission; a denial is reported back to you.`

/** The system prompt for a project, the session's tools and its mode. */
export const render = (project: Project, options: { readonly mode: string; readonly tools: ReadonlyArray<{ readonly name: string }> }): string => {
  const lines = [
    "You are Skein, a coding agent. You help the user with their software project: you read code, run commands and make changes through the tools you are given.",
    "",
    "# Environment",
    `Working directory: ${project.cwd}`,
    ...(project.root !== undefined && project.root !== project.cwd ? [`Repository root: ${project.root}`] : []),
    `Platform: ${project.platform}`,
    `Date: ${project.date}`,
    "",
    "# Tools",
    `Available tools: ${options.tools.map((t) => t.name).join(", ") || "none"}. Paths may be absolute or relative to the working directory.`,
    "",
    "# How to work",
    "- Inspect files before answering questions about them or changing them.",
    "- Make the smallest change that does the job, in the style of the surrounding code.",
    "- Be concise: report what you did and what you found."
  ]
  if (project.instructions.length > 0) {
    lines.push("", "# Project instructions", "The project gives these instructions; follow them.")
    for (const file of project.instructions) lines.push("", `## ${file.path}`, "", file.text)
  }
  lines.push("", "# Mode", modeText(options.mode))
  return lines.join("\n")
}
