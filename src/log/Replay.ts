/**
 * Replaying a log, purely: the events as loading sees them (a crashed turn closed), which
 * checkpoints a later response supersedes, and a plain-text transcript for people. What a
 * client is sent on `session/load` is `translate/Replay.ts`.
 */
import * as Diff from "../text/Diff.ts"
import type { Canonical, LogHeader } from "./Event.ts"
import { promptText } from "../Vocabulary.ts"
import * as History from "./History.ts"
import * as Recovery from "./Recovery.ts"
import * as Stamp from "./Stamp.ts"

const DIFF_MARK = { hunk: "", context: " ", removed: "-", added: "+", more: "" } as const

/** An edit's change as a unified diff, indented under its tool call. */
const diffLines = (path: string, oldText: string | null, newText: string): string =>
  [`    ${oldText === null ? "new file " : ""}${path}`, ...Diff.unified(oldText, newText).map((line) => `    ${DIFF_MARK[line.kind]}${line.text}`)].join("\n")

/**
 * The events as `session/load` sees them: a log a crash left mid-turn gets
 * the closing events loading appends (stamped after the last event, at its
 * time), so a replay shows exactly what a load would.
 */
export const withRecovery = (events: ReadonlyArray<Canonical>): ReadonlyArray<Canonical> => {
  if (Recovery.openTurn(events) === undefined) return events
  const history = History.make()
  for (const event of events) History.apply(history, event)
  const closing = Recovery.closing(events, history)
  if (closing === undefined) return events
  const last = events[events.length - 1]!
  return [...events, ...Stamp.after(closing.bodies, { sessionId: last.sessionId, lastSeq: last.seq, ts: last.ts, turn: closing.turn })]
}

/**
 * Whether the event at `index` is a `model_partial` that a later `model_response` of the same
 * call supersedes (that response shows all of its text). Only a log that has checkpoints pays
 * for the scan, from its first one on.
 */
export const supersededPartials = (events: ReadonlyArray<Canonical>) => {
  let answered: Set<string> | undefined
  return (event: Canonical, index: number): boolean => {
    if (event.type !== "model_partial") return false
    if (answered === undefined) {
      answered = new Set()
      for (let i = index; i < events.length; i++) {
        const e = events[i]!
        if (e.type === "model_response") answered.add(`${e.turn}:${e.data.call}`)
      }
    }
    return answered.has(`${event.turn}:${event.data.call}`)
  }
}

const THINKING = "  (thinking) "

const indent = (text: string, prefix: string) => text.split("\n").map((line) => prefix + line).join("\n")

const firstLines = (text: string, max: number) => {
  const lines = text.split("\n")
  return lines.length <= max ? text : `${lines.slice(0, max).join("\n")}\n… (${lines.length - max} more lines)`
}

/** A readable transcript of a session: prompts, answers, thoughts, tool calls and results, plans, modes. */
export const transcript = (header: LogHeader, events: ReadonlyArray<Canonical>): string => {
  const out: Array<string> = []
  out.push(`Session ${header.id}`)
  out.push(`  cwd      ${header.cwd}`)
  if (header.additionalDirectories !== undefined && header.additionalDirectories.length > 0) {
    out.push(`  also     ${header.additionalDirectories.join(", ")}`)
  }
  out.push(`  created  ${new Date(header.created).toISOString()}`)
  if (header.mode !== undefined) out.push(`  mode     ${header.mode}`)
  const titles = new Map<string, string>()
  const superseded = supersededPartials(events)
  for (let i = 0; i < events.length; i++) {
    const event = events[i]!
    if (superseded(event, i)) continue
    switch (event.type) {
      case "turn_start": {
        const command = event.data.command
        out.push("", `── turn ${event.turn} ${"─".repeat(40)}`)
        // A command the model never sees logged the prompt as typed; another, the text it expanded to.
        if (command !== undefined && command.local !== true) out.push(`> /${command.name}${command.arguments.length > 0 ? ` ${command.arguments}` : ""}`)
        out.push(indent(promptText(event.data.content), command !== undefined && command.local !== true ? "  " : "> "))
        break
      }
      case "compaction":
        out.push(`[compacted the conversation (${event.data.trigger}; about ${event.data.usageBefore} → ${event.data.usageAfter} tokens):]`, indent(event.data.summaryForUser, "    "))
        break
      case "skill_activation":
        out.push(`  [skill ${event.data.name} loaded from ${event.data.path}]`)
        break
      case "turn_input":
        out.push(indent(promptText(event.data.content), ">> "))
        break
      case "hook": {
        const said = [event.data.reason, event.data.context, event.data.message, event.data.stop].filter((line) => line !== undefined)
        out.push(`  [${event.data.event} hook \`${event.data.command}\`: ${event.data.decision}${said.length > 0 ? ` — ${said.join("; ")}` : ""}]`)
        break
      }
      case "undo":
        out.push(event.data.refused !== undefined
          ? `  [undo of turn ${event.data.turn} refused: ${event.data.refused}]`
          : `  [undo of turn ${event.data.turn}: restored ${event.data.restored.join(", ") || "nothing"}; removed ${event.data.removed.join(", ") || "nothing"}]`)
        break
      case "model_partial": {
        // A call still streaming (the log of a live session): its checkpoints read as one text.
        const previous = events[i - 1]
        const goesOn = previous?.type === "model_partial" && previous.turn === event.turn && previous.data.call === event.data.call
          ? previous.data.parts.at(-1)?.type
          : undefined
        event.data.parts.forEach((part, j) => {
          const shown = part.type === "thinking" ? indent(part.text, THINKING) : part.text
          if (j === 0 && goesOn === part.type && out.length > 0) out[out.length - 1] += part.type === "thinking" ? shown.slice(THINKING.length) : shown
          else out.push(shown)
        })
        break
      }
      case "model_response":
        // A compaction's summary call: its `compaction` event shows the summary.
        if (event.data.compaction !== undefined) {
          if (event.data.error !== undefined) out.push(`  (the summary call of a compaction failed: ${event.data.error})`)
          break
        }
        for (const part of event.data.parts) {
          if (part.type === "thinking" && part.text.length > 0) out.push(indent(part.text, THINKING))
          if (part.type === "text" && part.text.length > 0) out.push(part.text)
        }
        if (event.data.error !== undefined) out.push(`  (model call ${event.data.call} failed: ${event.data.error})`)
        break
      case "tool_call":
        titles.set(event.data.id, event.data.title)
        out.push(`→ ${event.data.title}`)
        break
      case "tool_result": {
        const mark = event.data.ok ? "✓" : "✗"
        const shown = event.data.details?.output ?? event.data.content
        out.push(`  ${mark} ${titles.get(event.data.id) ?? event.data.id}`)
        for (const diff of event.data.details?.diff ?? []) out.push(diffLines(diff.path, diff.oldText, diff.newText))
        if (shown.length > 0) out.push(indent(firstLines(shown, 20), "    "))
        break
      }
      case "permission":
        out.push(`  [permission: ${event.data.outcome}${event.data.rule !== undefined ? ` — ${event.data.rule.label}` : ""}]`)
        break
      case "plan":
        out.push("  plan:")
        for (const entry of event.data.entries) out.push(`    [${entry.status}] ${entry.content}`)
        break
      case "mode_changed":
        out.push(`[mode: ${event.data.mode}]`)
        break
      case "config_changed":
        out.push(`[${event.data.id}: ${event.data.value}]`)
        break
      case "notice":
        out.push(`[notice] ${event.data.text}`)
        break
      case "mcp_servers":
        out.push(`[MCP servers: ${event.data.servers.map((s) => `${s.name} (${s.transport})`).join(", ") || "none"}]`)
        break
      case "turn_end":
        if (event.data.error !== undefined) out.push(event.data.error)
        out.push(`[${event.data.stopReason}]`)
        break
      case "subagent": {
        const data = event.data
        if (data.event === "spawned") out.push(`  [subagent ${data.id} (${data.agent ?? "agent"}${data.workspace === "isolated" ? `, branch ${data.branch ?? "?"}` : ""}): ${firstLines(data.task ?? "", 3)}]`)
        else if (data.event === "result") {
          out.push(`  [subagent ${data.id} ${data.state ?? "ended"}${data.error !== undefined ? `: ${data.error}` : ""}]`)
          if (data.answer !== undefined && data.answer.length > 0) out.push(indent(firstLines(data.answer, 20), "    "))
        } else if (data.event === "closed" && (data.branch !== undefined || data.diff !== undefined)) {
          out.push(`  [subagent ${data.id} closed${data.branch !== undefined ? `; its changes are on ${data.branch}` : ""}]`)
          if (data.diff !== undefined) out.push(indent(firstLines(data.diff, 20), "    "))
        } else if (data.event === "input") out.push(`  [the results of ${data.id.split(",").length} subagent(s) were given to the model]`)
        break
      }
      case "checkpoint":
        out.push(`  [checkpoint ${event.data.at} turn ${event.data.turn}: ${event.data.id.slice(0, 12)}${event.data.skipped !== undefined && event.data.skipped.length > 0 ? `; too large to keep: ${event.data.skipped.join(", ")}` : ""}]`)
        break
      case "rewound": {
        const data = event.data
        if (data.refused !== undefined) out.push(`  [rewind to before turn ${data.toTurn} refused: ${data.refused}]`)
        else {
          out.push(`  [rewound to before turn ${data.toTurn}: the model no longer sees turns ${data.toTurn}–${event.turn ?? "?"}; restored ${data.restored.join(", ") || "nothing"}; removed ${data.removed.join(", ") || "nothing"}${data.skipped.length > 0 ? `; left as they were ${data.skipped.join(", ")}` : ""}${data.unrestored !== undefined ? `; not restored: what turn ${data.unrestored.join(", ")} changed (no checkpoint before it)` : ""}]`)
        }
        break
      }
      default:
        event satisfies never
    }
  }
  return out.join("\n") + "\n"
}
