/**
 * What a person is shown of the delegation tools' results (`details.output`): the model reads
 * the JSON reports, a card shows a few readable lines instead. Pure.
 */
import type { AgentInfo, ChildReport, StepReport, WorkflowReport } from "./agents.ts"

const firstLine = (text: string, n = 100) => {
  const line = text.trim().split("\n", 1)[0]!.trim()
  return line.length > n ? `${line.slice(0, n - 1)}…` : line
}

/** A child as a card names it: its agent and the start of its id. */
const named = (child: Pick<ChildReport, "agent" | "id">) => `${child.agent} ${child.id.slice(0, 8)}`

const mark = (state: ChildReport["state"]) =>
  state === "idle" ? "✓" : state === "running" ? "…" : state === "closed" ? "•" : "✗"

/** One child in a line: what became of it, and the start of its answer or error. */
const child = (report: ChildReport): string => {
  const state = report.state === "idle" ? "done" : report.state.replace("_", " ")
  const said = report.error ?? report.answer
  const branch = report.branch !== undefined ? ` (its changes are on ${report.branch})` : ""
  return `${mark(report.state)} ${named(report)} ${state}${said !== undefined && said.trim().length > 0 ? ` — ${firstLine(said)}` : ""}${branch}`
}

export const spawned = (report: ChildReport): string => `Started ${named(report)} on its task; it works in parallel.`

export const waited = (reports: { readonly children: ReadonlyArray<ChildReport> }): string =>
  reports.children.length === 0 ? "No subagents to wait for." : reports.children.map(child).join("\n")

export const sent = (report: ChildReport): string => `${named(report)} has its next prompt and works on it.`

export const closed = (report: ChildReport): string =>
  `Closed ${named(report)}${report.branch !== undefined ? `; its changes are on ${report.branch}` : ""}.`

export const listed = (list: { readonly children: ReadonlyArray<ChildReport>; readonly agents: ReadonlyArray<AgentInfo> }): string =>
  [
    ...(list.children.length > 0 ? ["Subagents of this turn:", ...list.children.map(child), ""] : ["No subagents in this turn.", ""]),
    "Agents that can be started:",
    ...list.agents.map((a) => `- ${a.name} — ${firstLine(a.description, 80)}`)
  ].join("\n")

const step = (s: StepReport): string => {
  const mark = s.outcome === "succeeded" ? "✓" : s.outcome === "skipped" ? "–" : "✗"
  const why = s.outcome === "succeeded" ? s.child?.answer : s.reason
  return `${mark} ${s.step} ${s.outcome}${why !== undefined && why.trim().length > 0 ? ` — ${firstLine(why)}` : ""}`
}

export const workflow = (report: WorkflowReport): string => {
  const good = report.steps.filter((s) => s.outcome === "succeeded").length
  return [`Workflow ${report.outcome}: ${good} of ${report.steps.length} steps succeeded.`, ...report.steps.map(step)].join("\n")
}
