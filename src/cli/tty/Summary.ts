/**
 * The one line a terminal shows under a finished tool call. A command's is its status (the
 * last line: the exit code); the agent tools answer the model in JSON, which says nothing at a
 * glance, so they are summarised from it ("started explorer", "2 done, 1 failed", "workflow
 * partial: 2 of 3 steps"); any other result shows its first line that says something.
 */
import type { ToolDetails } from "../../Vocabulary.ts"

const MAX = 160

const clip = (line: string) => (line.length > MAX ? `${line.slice(0, MAX)}…` : line)

const firstLine = (s: string) => clip(s.split("\n").find((line) => line.trim() !== "")?.trim() ?? "")
const lastLine = (s: string) => clip(s.trimEnd().split("\n").pop() ?? "")

interface Child {
  readonly id?: unknown
  readonly agent?: unknown
  readonly state?: unknown
  readonly branch?: unknown
}

const parse = (content: string): unknown => {
  try {
    return JSON.parse(content)
  } catch {
    return undefined
  }
}

const str = (v: unknown, fallback: string) => (typeof v === "string" && v.length > 0 ? v : fallback)

/** "2 done, 1 running": children counted by state, finished ones as done. */
const states = (children: ReadonlyArray<Child>): string => {
  const counts = new Map<string, number>()
  for (const child of children) {
    const state = str(child.state, "unknown")
    const word = state === "idle" ? "done" : state.replace(/_/g, " ")
    counts.set(word, (counts.get(word) ?? 0) + 1)
  }
  return [...counts].map(([word, n]) => `${n} ${word}`).join(", ") || "no subagents"
}

const agentTool = (tool: string, value: unknown): string | undefined => {
  if (typeof value !== "object" || value === null) return undefined
  const v = value as Record<string, unknown>
  const children = Array.isArray(v.children) ? (v.children as ReadonlyArray<Child>) : undefined
  switch (tool) {
    case "spawn_agent":
      return `started ${str(v.agent, "agent")} (${str(v.id, "?")})${typeof v.branch === "string" ? ` on ${v.branch}` : ""}`
    case "wait_agent":
      return children === undefined ? undefined : states(children)
    case "send_input":
      return `sent to ${str(v.agent, "agent")} (${str(v.id, "?")})`
    case "close_agent":
      return `closed ${str(v.agent, "agent")} (${str(v.id, "?")})`
    case "list_agents": {
      const agents = Array.isArray(v.agents) ? v.agents.length : 0
      return `${children === undefined || children.length === 0 ? "no subagents" : states(children)} · ${agents} agent${agents === 1 ? "" : "s"} available`
    }
    case "run_workflow": {
      const steps = Array.isArray(v.steps) ? (v.steps as ReadonlyArray<{ readonly outcome?: unknown }>) : []
      const ok = steps.filter((s) => s.outcome === "succeeded").length
      return `workflow ${str(v.outcome, "ended")}: ${ok} of ${steps.length} step${steps.length === 1 ? "" : "s"} succeeded`
    }
    default:
      return undefined
  }
}

/** The line shown for a finished tool call of `tool`. */
export const summary = (tool: string | undefined, content: string, details: ToolDetails | undefined): string => {
  if (details?.output !== undefined) return lastLine(content)
  const trimmed = content.trim()
  if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
    const value = parse(trimmed)
    if (value !== undefined) {
      const known = tool === undefined ? undefined : agentTool(tool, value)
      if (known !== undefined) return clip(known)
      if (Array.isArray(value)) return `${value.length} item${value.length === 1 ? "" : "s"}`
      if (typeof value === "object" && value !== null) {
        const keys = Object.keys(value)
        return clip(`{ ${keys.slice(0, 6).join(", ")}${keys.length > 6 ? ", …" : ""} }`)
      }
    }
  }
  return firstLine(content)
}
