/**
 * Folding canonical events into the provider-neutral conversation history.
 *
 * A History is owned by exactly one session (its actor, or a loader) and is
 * folded incrementally: each canonical event is applied once, in O(1), as it
 * is logged or read back. Providers receive a read-only view.
 */
import type { Message } from "../providers/Provider.ts"
import type { CanonicalBody, PermissionRule } from "./Event.ts"

export interface History {
  readonly messages: Array<Message>
  /** Tool names by call id, to label tool results. */
  readonly toolNames: Map<string, string>
  /** Number of turns started so far. */
  turns: number
  /** Tool call ids of the last model response that have no result yet. */
  readonly openToolCalls: Map<string, string>
  /** Open tool calls that were announced (`tool_call` logged), with their titles. */
  readonly announced: Map<string, string>
  mode: string | undefined
  readonly config: Map<string, string>
  /** Permission rules made by "always" answers, oldest first. */
  readonly rules: Array<PermissionRule>
}

export const make = (): History => ({
  messages: [],
  toolNames: new Map(),
  turns: 0,
  openToolCalls: new Map(),
  announced: new Map(),
  mode: undefined,
  config: new Map(),
  rules: []
})

/** Applies one canonical event to the history. */
export const apply = (history: History, event: CanonicalBody): void => {
  switch (event.type) {
    case "turn_start":
      history.turns++
      history.messages.push({ role: "user", content: event.data.content })
      return
    case "model_response": {
      if (event.data.parts.length === 0) return
      for (const part of event.data.parts) {
        if (part.type === "tool_call") {
          history.toolNames.set(part.id, part.name)
          history.openToolCalls.set(part.id, part.name)
        }
      }
      history.messages.push({ role: "assistant", parts: event.data.parts })
      return
    }
    case "tool_result":
      history.openToolCalls.delete(event.data.id)
      history.announced.delete(event.data.id)
      history.messages.push({
        role: "tool",
        id: event.data.id,
        name: history.toolNames.get(event.data.id) ?? "unknown",
        ok: event.data.ok,
        content: event.data.content
      })
      return
    case "mode_changed":
      history.mode = event.data.mode
      return
    case "config_changed":
      history.config.set(event.data.id, event.data.value)
      return
    case "turn_end":
      history.openToolCalls.clear()
      history.announced.clear()
      return
    case "permission":
      if (event.data.rule !== undefined) history.rules.push(event.data.rule)
      return
    case "tool_call":
      history.announced.set(event.data.id, event.data.title)
      return
    case "plan":
    case "notice":
    case "mcp_servers":
      return
  }
}
