/**
 * The turn's edges a tool may use besides the environment, as services the turn provides
 * (`runtime/TurnServices.ts` builds them once per turn): where its progress and the plan go
 * (`Emit`), the session's children (`Delegation`), its skills (`Skills`), and its files and
 * terminals (`Files.ts`, `Terminals.ts`). A tool names what it uses in its type
 * (`Tool<A, R>`); a toolkit's type is the union of its tools'; `Services` is all of them.
 *
 * Each has an implementation for "there is none here" (no children, no skills), so a tool
 * never branches on whether an edge exists: it asks, and is told why not.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type { Agents } from "./Delegation.ts"
import type { Files } from "./Files.ts"
import type { Terminals } from "./Terminals.ts"
import * as Tool from "./Tool.ts"

/** What a tool tells presenters while it runs (`tool_progress`), and the model's plan (`plan`, logged). Never fails. */
export class Emit extends Context.Service<Emit, {
  /** Partial output of the call `toolCallId` (e.g. a running command's). */
  readonly progress: (toolCallId: string, output: string) => Effect.Effect<void>
  /** The model's plan, the full list. */
  readonly plan: (entries: ReadonlyArray<Tool.PlanEntry>) => Effect.Effect<void>
}>()("skein/tools/Emit") {}

const noDelegation = Effect.fail("Delegation is not available here (this session may not start subagents).")

/** The session's children, as the agent tools use them. Failures are messages for the model. */
export class Delegation extends Context.Service<Delegation, Agents>()("skein/tools/Delegation") {
  /** A session that may not start children: every call says so. */
  static readonly none: Agents = {
    spawn: () => noDelegation,
    wait: () => noDelegation,
    send: () => noDelegation,
    close: () => noDelegation,
    list: noDelegation,
    workflow: () => noDelegation
  }
}

/** Loads a skill for the `skill` tool: its answer for the model, the activation logged. */
export class Skills extends Context.Service<Skills, {
  readonly activate: (name: string) => Effect.Effect<Tool.ToolOutput>
}>()("skein/tools/Skills") {
  /** A session without skills. */
  static readonly none: Skills["Service"] = { activate: () => Effect.succeed(Tool.error("No skills are available in this session.")) }
}

/** Every service a turn provides its tools. */
export type Services = Emit | Delegation | Skills | Files | Terminals
