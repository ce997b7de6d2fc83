/**
 * The set of tools a session offers the model, looked up by name.
 */
import type { ToolSpec } from "../Vocabulary.ts"
import type * as Edges from "./Edges.ts"
import { tools as agentTools } from "./agents.ts"
import { tools as backgroundTools } from "./background.ts"
import { bash } from "./bash.ts"
import { edit } from "./edit.ts"
import { glob } from "./glob.ts"
import { grep } from "./grep.ts"
import { read } from "./read.ts"
import * as Tool from "./Tool.ts"
import { skill } from "./skill.ts"
import { update_plan } from "./update_plan.ts"
import { web_fetch } from "./web_fetch.ts"
import { write } from "./write.ts"

/**
 * Tools that use the turn's services `R` at most (`Edges.Services` unless said otherwise: a
 * session provides them all).
 */
export interface Toolkit<R = Edges.Services> {
  readonly tools: ReadonlyArray<Tool.Tool<any, R>>
  readonly get: (name: string) => Tool.Tool<any, R> | undefined
  /** The tools as the model sees them (name, description, JSON Schema). */
  readonly specs: () => ReadonlyArray<ToolSpec>
}

export const make = <R = Edges.Services>(tools: ReadonlyArray<Tool.Tool<any, R>>): Toolkit<R> => {
  const byName = new Map(tools.map((tool) => [tool.name, tool] as const))
  let specs: ReadonlyArray<ToolSpec> | undefined
  return {
    tools,
    get: (name) => byName.get(name),
    specs: () =>
      (specs ??= tools.map((tool) => ({ name: tool.name, description: tool.description, parameters: Tool.jsonSchema(tool) })))
  }
}

/** The built-in tools: the workspace's, and those that delegate to subagents. */
export const builtin = (): Toolkit => make<Edges.Services>([read, write, edit, bash, ...backgroundTools, grep, glob, update_plan, web_fetch, skill, ...agentTools])

/** The same tools without some (a child that may not delegate, an agent with a tool list). */
export const only = <R>(toolkit: Toolkit<R>, keep: (name: string) => boolean): Toolkit<R> => ({
  // A view, not a copy: a toolkit that changes (MCP tools discovered later) changes here too.
  get tools() {
    return toolkit.tools.filter((tool) => keep(tool.name))
  },
  get: (name) => (keep(name) ? toolkit.get(name) : undefined),
  specs: () => toolkit.specs().filter((spec) => keep(spec.name))
})
