/**
 * A toolkit whose tools change while a session runs: the built-in tools plus
 * a live set (a session's MCP tools). Each `specs()`, `get()` and `tools` read
 * looks at the live set again, so tools discovered in the background reach
 * the model at the next model call, and withdrawn ones leave it.
 *
 * Built-in names win: a live tool never shadows one (MCP names always contain
 * `__`, which no built-in has, so this is a guard, not a policy).
 */
import * as Tool from "../tools/Tool.ts"
import type { Toolkit } from "../tools/Toolkit.ts"
import type { ToolSpec } from "../Vocabulary.ts"

interface LiveTools {
  /** The current tools; a new array after each change (specs are cached per array). */
  readonly tools: () => ReadonlyArray<Tool.Tool>
  /** A tool by name, possibly one not in `tools()` (a stand-in for a withdrawn tool). */
  readonly get?: ((name: string) => Tool.Tool | undefined) | undefined
}

const spec = (tool: Tool.Tool<any, any>): ToolSpec => ({ name: tool.name, description: tool.description, parameters: Tool.jsonSchema(tool) })

export const make = <R>(base: Toolkit<R>, live: LiveTools): Toolkit<R> => {
  let seen: ReadonlyArray<Tool.Tool> | undefined
  let combined: ReadonlyArray<Tool.Tool<any, R>> = base.tools
  let specs: ReadonlyArray<ToolSpec> = base.specs()
  const refresh = () => {
    const current = live.tools()
    if (current === seen) return
    seen = current
    const extra = current.filter((tool) => base.get(tool.name) === undefined)
    combined = extra.length === 0 ? base.tools : [...base.tools, ...extra]
    specs = extra.length === 0 ? base.specs() : [...base.specs(), ...extra.map(spec)]
  }
  return {
    get tools() {
      refresh()
      return combined
    },
    get: (name) => base.get(name) ?? live.get?.(name) ?? live.tools().find((tool) => tool.name === name),
    specs: () => {
      refresh()
      return specs
    }
  }
}
