/**
 * `skein doctor`'s sections on workspace trust and hooks: where the folder stands, what it
 * ships and what of it is not loaded and why; the hooks a session here runs, and each problem
 * of the settings files. Pure: the caller reads the status and the settings.
 */
import * as NodePath from "node:path"
import type * as HookSettings from "../hooks/Settings.ts"
import * as Match from "../hooks/Match.ts"
import type * as Trust from "../trust/Trust.ts"

const pad = (text: string, width: number) => (text.length >= width ? `${text} ` : text.padEnd(width))

export const trustReport = (status: Trust.Status): ReadonlyArray<string> => {
  const out = [`Workspace trust (${status.project})`]
  const shipped = status.ships.map((file) => NodePath.relative(status.project, file) || file)
  if (shipped.length === 0) out.push("  nothing to trust: the folder ships no hooks, agents, commands, skills, settings or MCP servers")
  else {
    out.push(`  ships     ${shipped.join(", ")}`)
    out.push(status.loads ? `  loaded: ${status.why}` : `  NOT loaded (its hooks, agents, commands, skills, settings and MCP servers): ${status.why}`)
  }
  if (status.problem !== undefined) out.push(`  warning: ${status.problem}`)
  out.push("  (AGENTS.md and CLAUDE.md are text for the model and are read either way; your own definitions always load)")
  return out
}

export const hooksReport = (parsed: HookSettings.Parsed): ReadonlyArray<string> => {
  const out = ["Hooks"]
  if (parsed.hooks.length === 0) out.push("  (none)")
  for (const hook of parsed.hooks) {
    const matcher = hook.matcher === "" ? "*" : hook.matcher
    const compiled = Match.compile(hook.matcher)
    out.push(`  ${pad(hook.event, 18)}${pad(matcher, 14)}${hook.command} (${hook.timeoutMs / 1000} s; ${hook.source})`)
    if (compiled._tag === "invalid") out.push(`  warning: ${hook.source}: the matcher ${JSON.stringify(hook.matcher)} is not a regular expression (${compiled.reason}); it matches nothing`)
  }
  for (const problem of parsed.problems) out.push(`  warning: ${problem.file}: ${problem.message}`)
  return out
}
