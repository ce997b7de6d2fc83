/**
 * What the delegation tools (`agents.ts`) ask of a session's children, and what they are told
 * back: the contract between those tools and whoever supervises the children
 * (`runtime/Children.ts`). Types only, so that the tool contract (`Tool.ts`) can name it
 * without importing the tools.
 */
import type * as Effect from "effect/Effect"
import type { ChildState } from "../log/Event.ts"

/** One child as the model is told about it. */
export interface ChildReport {
  readonly id: string
  readonly agent: string
  readonly task: string
  readonly state: ChildState
  readonly workspace: "shared" | "isolated"
  readonly stopReason?: string | undefined
  /** Its final answer (maybe truncated, saying so and how to read on). */
  readonly answer?: string | undefined
  readonly error?: string | undefined
  /** An isolated child's branch and a summary of its changes. */
  readonly branch?: string | undefined
  readonly diff?: string | undefined
}

export interface SpawnRequest {
  readonly task: string
  readonly agent?: string | undefined
  readonly workspace?: "shared" | "isolated" | undefined
  readonly timeoutMs?: number | undefined
  /** The tool call that asks. */
  readonly toolCallId: string
}

interface WorkflowStep {
  readonly id: string
  readonly task: string
  readonly agent?: string | undefined
  readonly depends_on?: ReadonlyArray<string> | undefined
  readonly workspace?: "shared" | "isolated" | undefined
}

export interface WorkflowRequest {
  readonly steps: ReadonlyArray<WorkflowStep>
  readonly maxConcurrency?: number | undefined
  readonly timeoutMs?: number | undefined
  readonly toolCallId: string
}

export interface StepReport {
  readonly step: string
  readonly outcome: "succeeded" | "failed" | "skipped"
  readonly child?: ChildReport | undefined
  /** Why it failed or was skipped. */
  readonly reason?: string | undefined
}

export interface WorkflowReport {
  readonly outcome: "complete" | "partial" | "failed"
  readonly steps: ReadonlyArray<StepReport>
}

export interface AgentInfo {
  readonly name: string
  readonly description: string
  readonly source: string
}

/** A session's children, as these tools use them. Failures are messages for the model. */
export interface Agents {
  readonly spawn: (request: SpawnRequest) => Effect.Effect<ChildReport, string>
  /** Waits until every child named (default: every running one) has stopped, or `timeoutMs` passed. */
  readonly wait: (ids: ReadonlyArray<string> | undefined, timeoutMs: number | undefined, offset: number | undefined) => Effect.Effect<ReadonlyArray<ChildReport>, string>
  readonly send: (id: string, message: string) => Effect.Effect<ChildReport, string>
  readonly close: (id: string) => Effect.Effect<ChildReport, string>
  readonly list: Effect.Effect<{ readonly children: ReadonlyArray<ChildReport>; readonly agents: ReadonlyArray<AgentInfo> }, string>
  readonly workflow: (request: WorkflowRequest) => Effect.Effect<WorkflowReport, string>
}
