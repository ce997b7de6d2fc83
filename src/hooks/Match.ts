/**
 * Which hooks a tool call fires: Claude Code's matchers, against Skein's tool names and the
 * names Claude Code gives the same tools.
 *
 * - `""`, `"*"` or no matcher: every tool.
 * - Names and `|` alternations (`Bash`, `Edit|Write`): one of the names, exactly.
 * - Anything else is a regular expression that must match the whole name (`Notebook.*`,
 *   `mcp__github__.*`). One that does not compile matches nothing (`skein doctor` says so).
 *
 * Case counts, as in Claude Code. A call matches when its Skein name (`bash`, `write`) or its
 * Claude Code name (`Bash`, `Write`) does, so settings written for Claude Code work as they
 * are, and so do matchers written with Skein's names.
 */

/** Claude Code's name for each of Skein's tools that has a counterpart. */
const CLAUDE_NAMES: Readonly<Record<string, ReadonlyArray<string>>> = {
  read: ["Read"],
  write: ["Write"],
  edit: ["Edit", "MultiEdit"],
  bash: ["Bash"],
  grep: ["Grep"],
  glob: ["Glob"],
  update_plan: ["TodoWrite"],
  web_fetch: ["WebFetch"],
  spawn_agent: ["Task"],
  skill: ["Skill"],
  bash_output: ["BashOutput"],
  kill_shell: ["KillShell"]
}

/** The names a tool answers to in matchers: Skein's first. */
export const namesOf = (tool: string): ReadonlyArray<string> => [tool, ...(CLAUDE_NAMES[tool] ?? [])]

/** The name hooks are told (`tool_name`): Claude Code's where it has one, so its scripts work unchanged. */
export const hookName = (tool: string): string => CLAUDE_NAMES[tool]?.[0] ?? tool

const SIMPLE = /^[A-Za-z0-9_\-|]+$/

/** A compiled matcher, or why it cannot be used. */
export type Matcher =
  | { readonly _tag: "all" }
  | { readonly _tag: "names"; readonly names: ReadonlySet<string> }
  | { readonly _tag: "regex"; readonly regex: RegExp }
  | { readonly _tag: "invalid"; readonly reason: string }

export const compile = (matcher: string): Matcher => {
  const trimmed = matcher.trim()
  if (trimmed === "" || trimmed === "*") return { _tag: "all" }
  if (SIMPLE.test(trimmed)) return { _tag: "names", names: new Set(trimmed.split("|").filter((name) => name.length > 0)) }
  try {
    return { _tag: "regex", regex: new RegExp(`^(?:${trimmed})$`) }
  } catch (error) {
    return { _tag: "invalid", reason: error instanceof Error ? error.message : "not a regular expression" }
  }
}

/** Whether `matcher` fires for a value with these names (a tool's `namesOf`, or a SessionStart source). */
export const matches = (matcher: string, names: ReadonlyArray<string>): boolean => {
  const compiled = compile(matcher)
  switch (compiled._tag) {
    case "all":
      return true
    case "names":
      return names.some((name) => compiled.names.has(name))
    case "regex":
      return names.some((name) => compiled.regex.test(name))
    case "invalid":
      return false
  }
}
