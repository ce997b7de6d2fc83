/**
 * Folding canonical events into the provider-neutral conversation history.
 *
 * A History is owned by exactly one session (its actor, or a loader) and is
 * folded incrementally: each canonical event is applied once, in O(1), as it
 * is logged or read back. Providers receive a read-only view.
 */
import type { AssistantPart, Message, Usage } from "../Vocabulary.ts"
import { title as titleOf } from "./Listing.ts"
import type { CanonicalBody, PermissionRule } from "./Event.ts"

/** An active skill: loaded by the model's `skill` tool; it stays in force through compactions. */
interface ActiveSkill {
  readonly name: string
  readonly path: string
  readonly body: string
}

type PlanEntries = Extract<CanonicalBody, { readonly type: "plan" }>["data"]["entries"]

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
  /** The `seq` of the event each message of `messages` came from (a compaction's for its summary). */
  readonly seqs: Array<number>
  /** The context the last model call used (input and output tokens), as its usage said; after a compaction, its estimate. */
  lastUsed: number | undefined
  /**
   * Every model call's usage so far (a compaction's summary call too), summed by the model it
   * ran with: the `model` setting at the time, `""` for the session's default. What it cost.
   */
  readonly spending: Map<string, Usage>
  /** The context the last usage update showed as used: a call's, or a compaction's estimate after it; a rewind keeps it. */
  shownUsed: number | undefined
  /** The latest plan, which survives compaction. */
  plan: PlanEntries | undefined
  /** Skills the model loaded, by name. */
  readonly skills: Map<string, ActiveSkill>
  /** Compactions so far. */
  compactions: number
  /** The turns started with a key (`turn_start.key`), the latest ones: the seq of their `turn_start`. */
  readonly keys: Map<string, number>
  /** The session's title: its first prompt, shortened (as `session/list` shows it). */
  title: string | undefined
  /** The `seq` of the last `turn_start` (a `UserPromptSubmit` hook that blocks takes its prompt out of the model's view). */
  promptSeq: number | undefined
}

/**
 * The message a compaction puts in place of what it summarised: the summary, then what
 * survives compaction whole (the plan, the active skills).
 */
const summaryMessage = (history: History, summary: string): Message => {
  const sections = [
    `This session continues an earlier conversation that was compacted to save context. A summary of it:\n\n<summary>\n${summary}\n</summary>`
  ]
  if (history.plan !== undefined && history.plan.length > 0) {
    sections.push(`The plan so far:\n${history.plan.map((e) => `- [${e.status}] ${e.content}`).join("\n")}`)
  }
  for (const skill of history.skills.values()) {
    sections.push(`The skill "${skill.name}" (${skill.path}) was loaded earlier and is still in force:\n\n${skill.body}`)
  }
  return { role: "user", content: [{ type: "text", text: sections.join("\n\n") }] }
}

/** How many turn keys a history remembers. */
const KEYS_KEPT = 64

export const make = (): History => ({
  keys: new Map(),
  messages: [],
  toolNames: new Map(),
  turns: 0,
  openToolCalls: new Map(),
  announced: new Map(),
  mode: undefined,
  config: new Map(),
  rules: [],
  partial: undefined,
  subagents: 0,
  seqs: [],
  lastUsed: undefined,
  spending: new Map(),
  shownUsed: undefined,
  plan: undefined,
  skills: new Map(),
  compactions: 0,
  title: undefined,
  promptSeq: undefined
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

/** Adds a call's usage to what the model it ran with has used (cached tokens counted only up to the input). */
const spend = (history: History, usage: Usage): void => {
  const model = history.config.get("model") ?? ""
  const sum = history.spending.get(model) ?? { input: 0, output: 0, cached: 0 }
  const cached = Math.min(usage.cached ?? 0, usage.input)
  history.spending.set(model, { input: sum.input + usage.input, output: sum.output + usage.output, cached: (sum.cached ?? 0) + cached })
}

/**
 * Applies one canonical event to the history. `seq` is the event's (taken from the event
 * itself when it is a logged one): it places the event's messages for compactions.
 */
export const apply = (history: History, event: CanonicalBody, seq?: number): void => {
  const at = seq ?? (event as { readonly seq?: number }).seq ?? 0
  const push = (message: Message) => {
    history.messages.push(message)
    history.seqs.push(at)
  }
  switch (event.type) {
    case "turn_start":
      history.turns++
      if (event.data.key !== undefined) {
        history.keys.set(event.data.key, at)
        // A request is sent again soon or never: the last turns' keys are enough.
        if (history.keys.size > KEYS_KEPT) history.keys.delete(history.keys.keys().next().value!)
      }
      history.partial = undefined
      history.promptSeq = at
      // The title `session/list` shows: the first prompt's.
      if (history.turns === 1) history.title = titleOf(event.data.content)
      // A command the model never sees (`/compact`, `/undo`) is not part of its conversation.
      if (event.data.command?.local !== true) push({ role: "user", content: event.data.content })
      return
    case "model_partial": {
      // The model sees none of it until the call's model_response (or recovery) says what it answered.
      if (history.partial === undefined || history.partial.call !== event.data.call) history.partial = { call: event.data.call, parts: [] }
      for (const part of event.data.parts) appendPart(history.partial.parts, part.type, part.text, part.type === "thinking" ? part.signature : undefined)
      return
    }
    case "model_response": {
      history.partial = undefined
      if (event.data.usage !== undefined) spend(history, event.data.usage)
      // A compaction's call: its answer is the summary its `compaction` event holds.
      if (event.data.compaction !== undefined) return
      if (event.data.usage !== undefined) history.lastUsed = history.shownUsed = event.data.usage.input + event.data.usage.output
      if (event.data.parts.length === 0) return
      for (const part of event.data.parts) {
        if (part.type === "tool_call") {
          history.toolNames.set(part.id, part.name)
          history.openToolCalls.set(part.id, part.name)
        }
      }
      push({ role: "assistant", parts: event.data.parts })
      return
    }
    case "tool_result":
      history.openToolCalls.delete(event.data.id)
      history.announced.delete(event.data.id)
      push({
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
        push({ role: "user", content: [{ type: "text", text: event.data.text }] })
      }
      return
    case "compaction": {
      // The model's view: the summary, then the messages from `keepFromSeq` on.
      let keep = history.seqs.findIndex((s) => s >= event.data.keepFromSeq)
      if (keep < 0) keep = history.messages.length
      history.messages.splice(0, keep, summaryMessage(history, event.data.summaryForModel))
      history.seqs.splice(0, keep, at)
      history.lastUsed = history.shownUsed = event.data.usageAfter
      history.compactions++
      return
    }
    case "skill_activation":
      history.skills.set(event.data.name, { name: event.data.name, path: event.data.path, body: event.data.body })
      return
    case "turn_input":
      push({ role: "user", content: event.data.content })
      return
    case "undo":
      if (event.data.refused === undefined && (event.data.restored.length > 0 || event.data.removed.length > 0)) {
        const files = [...event.data.restored, ...event.data.removed].join(", ")
        push({
          role: "user",
          content: [{ type: "text", text: `The user undid the file changes of turn ${event.data.turn}: ${files} are back as they were before it.` }]
        })
      }
      return
    case "rewound": {
      if (event.data.refused !== undefined) return
      // The model's view goes back to before that turn's prompt; the log keeps it all.
      let from = history.seqs.findIndex((s) => s >= event.data.fromSeq)
      if (from < 0) from = history.messages.length
      history.messages.splice(from)
      history.seqs.splice(from)
      history.lastUsed = undefined
      return
    }
    case "plan":
      history.plan = event.data.entries
      return
    case "hook": {
      const { event: name, decision, reason, context } = event.data
      // A blocked prompt is not answered: it leaves the model's view (as in Claude Code).
      if (name === "UserPromptSubmit" && decision === "block" && history.promptSeq !== undefined) {
        const i = history.seqs.lastIndexOf(history.promptSeq)
        if (i >= 0 && history.messages[i]?.role === "user") {
          history.messages.splice(i, 1)
          history.seqs.splice(i, 1)
        }
      }
      // What the model reads: a Stop hook's reason to go on, a PostToolUse hook's note, added context.
      const said = [
        ...(decision === "block" && (name === "Stop" || name === "PostToolUse") && reason !== undefined ? [reason] : []),
        ...(context !== undefined ? [context] : [])
      ]
      if (said.length === 0) return
      const note = `[${name} hook]\n${said.join("\n")}`
      // A tool event's note goes with the call's result (tool results stay together for every provider).
      const result = event.data.toolCallId === undefined ? -1 : history.messages.findLastIndex((m) => m.role === "tool" && m.id === event.data.toolCallId)
      const found = result >= 0 ? history.messages[result] : undefined
      if (found?.role === "tool") history.messages[result] = { ...found, content: `${found.content}\n\n${note}` }
      else push({ role: "user", content: [{ type: "text", text: note }] })
      return
    }
    case "notice":
    case "mcp_servers":
    case "checkpoint":
      return
    default:
      event satisfies never
  }
}
