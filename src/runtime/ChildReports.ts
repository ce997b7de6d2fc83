/**
 * What a turn keeps of each of its children, and what it tells the model of them: pure. The
 * spawning, driving, waiting and closing are `Children.ts`.
 */
import type * as Cause from "effect/Cause"
import type * as Deferred from "effect/Deferred"
import type * as Fiber from "effect/Fiber"
import type * as Scope from "effect/Scope"
import * as Definitions from "../agents/Definitions.ts"
import * as Worktree from "../agents/Worktree.ts"
import type { ChildState, SessionEvent } from "../log/Event.ts"
import type { Session } from "../session/Protocol.ts"
import type { ChildReport, WorkflowRequest } from "../tools/Delegation.ts"
import type { StopReason, UserBlock } from "../Vocabulary.ts"
import type { AnnouncedCall } from "../session/TurnContract.ts"

/** Characters of an answer given at once; the rest is read with `offset`. */
const ANSWER_CHARS = 8_000

export interface Child {
  readonly id: string
  readonly agent: Definitions.AgentDefinition
  readonly task: string
  readonly toolCallId: string
  readonly workspace: "shared" | "isolated"
  readonly session: Session
  readonly scope: Scope.Closeable
  readonly worktree: Worktree.Worktree | undefined
  readonly timeoutMs: number
  state: ChildState
  stopReason: StopReason | undefined
  answer: string | undefined
  error: string | undefined
  branch: string | undefined
  diff: string | undefined
  /** Whether the model has read its latest result. */
  reported: boolean
  /** Completed when its current prompt has ended. */
  done: Deferred.Deferred<void>
  driver: Fiber.Fiber<void> | undefined
}

export const text = (value: string): ReadonlyArray<UserBlock> => [{ type: "text", text: value }]

/** An answer from `offset` on, at most `ANSWER_CHARS` of it, saying where to read on. */
const page = (child: Child, answer: string, offset: number): string => {
  const end = offset + ANSWER_CHARS
  if (offset === 0 && answer.length <= ANSWER_CHARS) return answer
  const shown = answer.slice(offset, end)
  return end >= answer.length
    ? shown
    : `${shown}\n[… ${answer.length - end} more characters of ${answer.length}: call wait_agent with {"ids": ["${child.id}"], "offset": ${end}} to read on]`
}

export const report = (child: Child, offset = 0): ChildReport => ({
  id: child.id,
  agent: child.agent.name,
  task: child.task,
  state: child.state,
  workspace: child.workspace,
  ...(child.stopReason !== undefined ? { stopReason: child.stopReason } : {}),
  ...(child.answer !== undefined ? { answer: page(child, child.answer, offset) } : {}),
  ...(child.error !== undefined ? { error: child.error } : {}),
  ...(child.branch !== undefined ? { branch: child.branch } : {}),
  ...(child.diff !== undefined ? { diff: child.diff } : {})
})

/** The text a model call answered with (its text parts). */
export const responseText = (event: SessionEvent): string | undefined =>
  event.type === "model_response"
    ? event.data.parts.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("")
    : undefined

/** Creating an isolated workspace, as the parent's gate is shown it: on the spawning call, naming the branch. */
export const worktreeCall = (toolCallId: string, agent: string, plan: Worktree.Plan): AnnouncedCall => ({
  id: toolCallId,
  name: Worktree.change.name,
  args: plan,
  title: `Create the git branch ${plan.branch} and its worktree (an isolated workspace for ${agent})`,
  kind: "other",
  locations: [{ path: plan.repository }]
})

/** Why a child's turn stream failed: its session's own error (its log refused its turn's end), or that it closed. */
export const failureText = (cause: Cause.Cause<unknown>): string => {
  for (const reason of cause.reasons) {
    if (reason._tag === "Fail" && typeof reason.error === "object" && reason.error !== null && "message" in reason.error && typeof reason.error.message === "string") {
      return reason.error.message
    }
  }
  return "The child session closed before its task ended"
}

/** Whether a child's prompt ended with what it was asked (for a workflow step). */
export const succeeded = (child: Child) => child.state === "idle" && child.stopReason === "end_turn" && child.error === undefined

/**
 * The agent a new child runs as, or why none may start: past the depth, the running children
 * or the session's children the limits allow, or an agent nobody defined.
 */
export const admit = (at: {
  readonly depth: number
  readonly limits: Definitions.Limits
  /** Children of this turn running now. */
  readonly running: number
  /** Children the session started, this turn's included. */
  readonly started: number
  readonly definitions: ReadonlyArray<Definitions.AgentDefinition>
  readonly name: string
}): Definitions.AgentDefinition | string => {
  const { limits } = at
  if (at.depth > limits.maxDepth) return `Children may not start children of their own beyond depth ${limits.maxDepth}; do this task yourself`
  if (at.running >= limits.maxRunning) return `${limits.maxRunning} children are running already (the limit): wait for some with wait_agent, then start more`
  if (at.started >= limits.maxPerSession) return `This session has started ${limits.maxPerSession} children (the limit per session); do the rest yourself`
  return Definitions.find(at.definitions, at.name) ?? `Unknown agent "${at.name}". Agents: ${at.definitions.map((d) => d.name).join(", ")}`
}

/** Why a call names no child of this turn (the id cut short: it comes from the model). */
export const noChild = (id: string, known: ReadonlyArray<string>): string =>
  `No child ${JSON.stringify(id.slice(0, 80))} in this turn${known.length > 0 ? ` (children: ${known.join(", ")})` : ""}`

/** Why a workflow's steps cannot run as given (two steps with one id, a dependency that is not a step, a cycle), if so. */
export const workflowProblem = (steps: WorkflowRequest["steps"]): string | undefined => {
  const ids = new Set<string>()
  for (const step of steps) {
    if (ids.has(step.id)) return `Two steps are named "${step.id}"; step ids must be unique`
    ids.add(step.id)
  }
  for (const step of steps) {
    for (const dep of step.depends_on ?? []) {
      if (!ids.has(dep)) return `Step "${step.id}" depends on "${dep}", which is not a step`
    }
  }
  // Kahn's order: what is left over is on a cycle.
  const indegree = new Map(steps.map((s) => [s.id, (s.depends_on ?? []).length] as const))
  const ready = steps.filter((s) => indegree.get(s.id) === 0).map((s) => s.id)
  let ordered = 0
  while (ready.length > 0) {
    const id = ready.pop()!
    ordered++
    for (const s of steps) {
      if ((s.depends_on ?? []).includes(id)) {
        const n = indegree.get(s.id)! - 1
        indegree.set(s.id, n)
        if (n === 0) ready.push(s.id)
      }
    }
  }
  return ordered < steps.length ? "The steps' depends_on form a cycle; a workflow must be a graph without cycles" : undefined
}
