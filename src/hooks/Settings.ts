/**
 * Hooks as Claude Code's settings files write them, read leniently:
 *
 * ```json
 * { "hooks": { "PreToolUse": [ { "matcher": "Bash|Write",
 *                                "hooks": [ { "type": "command", "command": "…", "timeout": 60 } ] } ] } }
 * ```
 *
 * The files, in order: the user's `$SKEIN_HOME/settings.json`, then the project's
 * `.claude/settings.json` and `.skein/settings.json` at the repository's root and in the cwd
 * when it is below it (only once the folder is trusted: `src/trust`). Every matching hook of every file runs; the same command under the
 * same event and matcher runs once. A file that is missing is no problem; one that cannot be
 * read, is not JSON or holds a bad entry is a problem (`skein doctor` lists them) and the
 * rest of it still counts. An event Skein does not fire is a problem too, so that a hook
 * that would never run is not silently kept.
 *
 * Pure: `parse` takes a file's text; `read` (the only effectful part) reads the files.
 */
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Path from "effect/Path"

/** The events Skein fires (Claude Code's names). */
const EVENTS = ["PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SessionStart"] as const
export type HookEvent = (typeof EVENTS)[number]

const isEvent = (name: string): name is HookEvent => (EVENTS as ReadonlyArray<string>).includes(name)

/** How long a hook may run when its entry says nothing (seconds, as Claude Code counts). */
const DEFAULT_TIMEOUT_S = 60
/** The longest timeout an entry may ask for (seconds). */
export const MAX_TIMEOUT_S = 600

export interface Hook {
  readonly event: HookEvent
  /** The matcher as written (`""`: every tool; only tool events and SessionStart use it). */
  readonly matcher: string
  readonly command: string
  readonly timeoutMs: number
  /** The file it comes from. */
  readonly source: string
  readonly scope: "user" | "project"
}

export interface Problem {
  readonly file: string
  readonly message: string
}

export interface Parsed {
  readonly hooks: ReadonlyArray<Hook>
  readonly problems: ReadonlyArray<Problem>
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value)

/** The hooks of one settings file's text. Never throws. */
export const parse = (text: string, file: string, scope: Hook["scope"]): Parsed => {
  const problems: Array<Problem> = []
  const hooks: Array<Hook> = []
  const problem = (message: string) => problems.push({ file, message })
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    problem(`not valid JSON (${error instanceof Error ? error.message : "unreadable"}); its hooks are not loaded`)
    return { hooks, problems }
  }
  if (!isRecord(json)) {
    problem("not a JSON object; its hooks are not loaded")
    return { hooks, problems }
  }
  if (json.hooks === undefined) return { hooks, problems }
  if (!isRecord(json.hooks)) {
    problem("\"hooks\" is not an object; no hook of this file is loaded")
    return { hooks, problems }
  }
  for (const [event, groups] of Object.entries(json.hooks)) {
    if (!isEvent(event)) {
      problem(`hooks.${event}: Skein does not fire this event (it fires ${EVENTS.join(", ")}); these hooks are ignored`)
      continue
    }
    if (!Array.isArray(groups)) {
      problem(`hooks.${event} is not a list; ignored`)
      continue
    }
    groups.forEach((group, i) => {
      const at = `hooks.${event}[${i}]`
      if (!isRecord(group)) return problem(`${at} is not an object; ignored`)
      const matcher = group.matcher === undefined ? "" : group.matcher
      if (typeof matcher !== "string") return problem(`${at}.matcher is not a string; ignored`)
      if (!Array.isArray(group.hooks)) return problem(`${at}.hooks is not a list; ignored`)
      group.hooks.forEach((entry, j) => {
        const where = `${at}.hooks[${j}]`
        if (!isRecord(entry)) return problem(`${where} is not an object; ignored`)
        if (entry.type !== "command") {
          return problem(`${where}: only hooks of type "command" run in Skein (this one is ${JSON.stringify(String(entry.type))}); ignored`)
        }
        if (typeof entry.command !== "string" || entry.command.trim().length === 0) return problem(`${where}.command is not a non-empty string; ignored`)
        let timeout = DEFAULT_TIMEOUT_S
        if (entry.timeout !== undefined) {
          if (typeof entry.timeout !== "number" || !Number.isFinite(entry.timeout) || entry.timeout <= 0) {
            problem(`${where}.timeout is not a positive number of seconds; ${DEFAULT_TIMEOUT_S} s is used`)
          } else if (entry.timeout > MAX_TIMEOUT_S) {
            problem(`${where}.timeout is over ${MAX_TIMEOUT_S} s; ${MAX_TIMEOUT_S} s is used`)
            timeout = MAX_TIMEOUT_S
          } else {
            timeout = entry.timeout
          }
        }
        hooks.push({ event, matcher, command: entry.command, timeoutMs: Math.round(timeout * 1000), source: file, scope })
      })
    })
  }
  return { hooks, problems }
}

/** The hooks of several files, in order, with a command under the same event and matcher kept once. */
export const merge = (parsed: ReadonlyArray<Parsed>): Parsed => {
  const seen = new Set<string>()
  const hooks: Array<Hook> = []
  for (const file of parsed) {
    for (const hook of file.hooks) {
      const key = JSON.stringify([hook.event, hook.matcher, hook.command])
      if (seen.has(key)) continue
      seen.add(key)
      hooks.push(hook)
    }
  }
  return { hooks, problems: parsed.flatMap((file) => file.problems) }
}

export interface Where {
  readonly cwd: string
  readonly home: string
  /** Whether the project's files load (its folder is trusted). */
  readonly project: boolean
  /** The repository's root, when the cwd is in one (its files come before the cwd's). */
  readonly root?: string | undefined
}

/** The settings files of a session in `cwd`: the user's, and the project's when `project` is true. */
const files = (options: Where) => {
  const folders = options.root === undefined || options.root === options.cwd ? [options.cwd] : [options.root, options.cwd]
  return [
    { file: `${options.home}/settings.json`, scope: "user" as const },
    ...(options.project
      ? folders.flatMap((dir) => [
        { file: `${dir}/.claude/settings.json`, scope: "project" as const },
        { file: `${dir}/.skein/settings.json`, scope: "project" as const }
      ])
      : [])
  ]
}

/** Reads and merges the settings files (`files`). Never fails: what cannot be read is a problem. */
export const read = Effect.fn("HookSettings.read")(function*(options: Where) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const parsed = yield* Effect.forEach(files(options), ({ file, scope }) => {
    const resolved = path.resolve(file)
    return fs.readFileString(resolved).pipe(
      Effect.map((text) => parse(text, resolved, scope)),
      Effect.catch((error): Effect.Effect<Parsed> =>
        Effect.succeed(
          error._tag === "PlatformError" && error.reason._tag === "NotFound"
            ? { hooks: [], problems: [] }
            : { hooks: [], problems: [{ file: resolved, message: `cannot be read (${error.message}); its hooks are not loaded` }] }
        )
      )
    )
  })
  return merge(parsed)
})
