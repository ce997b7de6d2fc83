/**
 * Folding canonical events into the provider-neutral conversation history.
 *
 * A History is owned by exactly one session (its actor, or a loader) and is
 * folded incrementally: each canonical event is applied once, in O(1), as it
 * is logged or read back. Providers receive a read-only view.
 */
import type { Message } from "../Vocabulary.ts"
import type { AssistantPart, CanonicalBody, PermissionRule } from "./Event.ts"

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
  /**
   * What the model call in progress streamed so far, from its `model_partial` events; none once
   * its `model_response` is logged. Left at the end of a log, it is a call a crash interrupted:
   * recovery makes it the call's answer (`Recovery.closing`).
   */
  partial: { readonly call: number; readonly parts: Array<AssistantPart> } | undefined
  /** Child sessions (subagents) started so far. */
  subagents: number
}

export const make = (): History => ({
  messages: [],
  toolNames: new Map(),
  turns: 0,
  openToolCalls: new Map(),
  announced: new Map(),
  mode: undefined,
  config: new Map(),
  rules: [],
  partial: undefined,
  subagents: 0
})

/** Appends streamed text to parts the way the stream built them: a part of the same kind goes on from the last. */
export const appendPart = (parts: Array<AssistantPart>, type: "text" | "thinking", text: string, signature?: string): void => {
  const last = parts[parts.length - 1]
  if (last !== undefined && last.type === "text" && type === "text") {
    parts[parts.length - 1] = { type, text: last.text + text }
  } else if (last !== undefined && last.type === "thinking" && type === "thinking") {
    const sig = signature ?? last.signature
    parts[parts.length - 1] = sig === undefined ? { type, text: last.text + text } : { type, text: last.text + text, signature: sig }
  } else if (type === "thinking" && signature !== undefined) {
    parts.push({ type, text, signature })
  } else {
    parts.push({ type, text })
  }
}

/** Applies one canonical event to the history. */
export const apply = (history: History, event: CanonicalBody): void => {
  switch (event.type) {
    case "turn_start":
      history.turns++
      history.partial = undefined
      history.messages.push({ role: "user", content: event.data.content })
      return
    case "model_partial": {
      // The model sees none of it until the call's model_response (or recovery) says what it answered.
      if (history.partial === undefined || history.partial.call !== event.data.call) history.partial = { call: event.data.call, parts: [] }
      for (const part of event.data.parts) appendPart(history.partial.parts, part.type, part.text, part.type === "thinking" ? part.signature : undefined)
      return
    }
    case "model_response": {
      history.partial = undefined
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
      history.partial = undefined
      return
    case "permission":
      if (event.data.rule !== undefined) history.rules.push(event.data.rule)
      return
    case "tool_call":
      history.announced.set(event.data.id, event.data.title)
      return
    case "subagent":
      if (event.data.event === "spawned") history.subagents++
      // Only the results given to the model as its next input are part of its conversation.
      if (event.data.event === "input" && event.data.text !== undefined) {
        history.messages.push({ role: "user", content: [{ type: "text", text: event.data.text }] })
      }
      return
    case "plan":
    case "notice":
    case "mcp_servers":
      return
  }
}
