/**
 * A session's events as people read them in a terminal, written as they arrive: the model's
 * answer on stdout (Markdown rendered when stdout is a terminal, see `Markdown.ts`), and on
 * stderr everything around it (thinking, each tool call with the running output of commands,
 * the diff of edits and a one-line summary of its result, the plan, notices, the error of a
 * failed turn). The status line (`Spinner.ts`) runs for the whole turn.
 */
import { absurd } from "effect/Function"
import type { SessionEvent } from "../../log/Event.ts"
import type { ToolDetails } from "../../Vocabulary.ts"
import * as Diff from "../../text/Diff.ts"
import * as Markdown from "./Markdown.ts"
import * as OutputTail from "./OutputTail.ts"
import type { Spinner } from "./Spinner.ts"
import { summary as resultSummary } from "./Summary.ts"
import * as Terminal from "./Terminal.ts"

interface Usage {
  readonly used: number
  readonly size: number
  readonly cost?: number | undefined
}

export interface View {
  /** Shows one event of the turn. */
  readonly event: (event: SessionEvent) => void
  /** The prompt was sent: waiting for the model (the turn's clock starts). */
  readonly begin: () => void
  /** A question was answered: the status line comes back. */
  readonly waiting: () => void
  /** Something else takes the terminal (a question): the spinner stops and a line is started. */
  readonly pause: () => void
  /** The proposed diff of this tool call was shown in its question: its result does not repeat it. */
  readonly diffShown: (toolCallId: string) => void
  /** The latest context use and cost, when the provider told them. */
  readonly usage: () => Usage | undefined
  /** Writes out text held back for rendering (before something else is shown). */
  readonly flush: () => void
}

/** `12.3k` for people. */
const tokens = (n: number) => (n >= 10_000 ? `${Math.round(n / 1000)}k` : n >= 1000 ? `${(n / 1000).toFixed(1)}k` : `${n}`)

/** "context 12% (24.1k of 200k) · $0.0421" */
export const usageText = (u: Usage): string => {
  const context = `context ${Math.round((u.used / Math.max(1, u.size)) * 100)}% (${tokens(u.used)} of ${tokens(u.size)})`
  return u.cost === undefined ? context : `${context} · $${u.cost.toFixed(u.cost < 1 ? 4 : 2)}`
}

/** A diff as indented, coloured lines for stderr. */
export const diffText = (path: string, oldText: string | null, newText: string): string => {
  const lines = Diff.unified(oldText, newText)
  const out = [Terminal.dim("err", `    ${oldText === null ? "new file " : ""}${Terminal.oneLine(path)}`)]
  for (const line of lines) {
    const text = Terminal.clean(line.text)
    switch (line.kind) {
      case "hunk":
        out.push(Terminal.cyan("err", `    ${text}`))
        break
      case "removed":
        out.push(Terminal.red("err", `    -${text}`))
        break
      case "added":
        out.push(Terminal.green("err", `    +${text}`))
        break
      case "context":
        out.push(Terminal.dim("err", `     ${text}`))
        break
      case "more":
        out.push(Terminal.dim("err", `    ${text}`))
        break
    }
  }
  return `${out.join("\n")}\n`
}

/** Command output, indented; `atLineStart` tells whether its first line is a new one. */
const indentOutput = (text: string, atLineStart: boolean): string =>
  Terminal.clean(text).replace(/(^|\n)(?=.)/g, (_, nl: string, offset: number) => (offset === 0 && !atLineStart ? nl : `${nl}    `))

/**
 * `markdown`: the parser, when the answer is rendered (stdout is a terminal); without it the
 * answer is written as it comes.
 */
export const make = (spinner: Spinner, markdown?: Markdown.Lexer | undefined): View => {
  let usage: Usage | undefined
  let thinking = false
  const titles = new Map<string, string>()
  const names = new Map<string, string>()
  const outputs = new Map<string, OutputTail.Seen>()
  const shownDiffs = new Set<string>()
  const rendered = markdown === undefined
    ? undefined
    : Markdown.stream(markdown, Terminal.colours("out") ? Markdown.ansi : Markdown.plain, (text) => Terminal.write(text, text.replace(/\x1b\[[0-9;]*m/g, "")))

  const endThinking = () => {
    if (!thinking) return
    thinking = false
    Terminal.newline("err")
  }

  /** Before anything but the answer is shown: the answer's held text goes out first. */
  const flush = () => {
    rendered?.flush()
  }

  const text = (s: string) => {
    endThinking()
    spinner.start("writing")
    const cleaned = Terminal.clean(s)
    if (rendered !== undefined) rendered.push(cleaned)
    else Terminal.write(cleaned)
  }

  const output = (id: string, latest: string) => {
    const step = OutputTail.next(outputs.get(id) ?? OutputTail.start, latest)
    outputs.set(id, step.seen)
    if (step.text.length === 0) return
    const indented = indentOutput(step.text, Terminal.lineStart("err"))
    Terminal.note(Terminal.dim("err", indented), indented)
  }

  const result = (id: string, ok: boolean, content: string, details: ToolDetails | undefined) => {
    if (details?.output !== undefined && details.terminalId === undefined) output(id, details.output)
    Terminal.newline("err")
    const line = resultSummary(names.get(id), content, details)
    const mark = ok ? Terminal.green("err", "  ✓") : Terminal.red("err", "  ✗")
    Terminal.note(`${mark} ${Terminal.dim("err", Terminal.oneLine(line))}\n`, "\n")
    if (details?.diff !== undefined && !shownDiffs.has(id)) {
      for (const d of details.diff) Terminal.note(diffText(d.path, d.oldText, d.newText), "\n")
    }
    outputs.delete(id)
    titles.delete(id)
    names.delete(id)
  }

  const event = (e: SessionEvent) => {
    if (e.type !== "text_delta") flush()
    switch (e.type) {
      case "text_delta":
        return text(e.data.text)
      case "thinking_delta": {
        spinner.start("thinking")
        if (!thinking) Terminal.newline("out")
        thinking = true
        const cleaned = Terminal.clean(e.data.text)
        return Terminal.note(Terminal.dim("err", cleaned), cleaned)
      }
      case "tool_call":
        endThinking()
        titles.set(e.data.id, e.data.title)
        names.set(e.data.id, e.data.name)
        Terminal.newline("out")
        spinner.start(`running ${Terminal.oneLine(e.data.title)}`)
        return Terminal.noteLine(`${Terminal.cyan("err", "→")} ${Terminal.oneLine(e.data.title)}`)
      case "tool_running":
        return spinner.start(`running ${Terminal.oneLine(titles.get(e.data.id) ?? "the tool")}`)
      case "tool_progress":
        return output(e.data.id, e.data.output)
      case "tool_result":
        result(e.data.id, e.data.ok, e.data.content, e.data.details)
        return spinner.start("thinking")
      case "plan": {
        const marks = { completed: "✓", in_progress: "▸", pending: "○" } as const
        const lines = e.data.entries.map((entry) => `  ${marks[entry.status]} ${Terminal.oneLine(entry.content)}`)
        return Terminal.noteLine(Terminal.dim("err", ["Plan", ...lines].join("\n")))
      }
      case "usage":
        usage = e.data
        return
      case "mode_changed":
        return Terminal.noteLine(`[mode: ${Terminal.oneLine(e.data.mode)}]`, Terminal.dim)
      case "notice":
        return Terminal.noteLine(Terminal.clean(e.data.text))
      case "hook": {
        const shown = [e.data.message, e.data.stop].filter((line) => line !== undefined)
        return shown.length === 0 ? undefined : Terminal.noteLine(Terminal.clean(shown.join("\n")))
      }
      case "compacting":
        return spinner.start("compacting the conversation")
      case "compaction":
        Terminal.newline("out")
        return Terminal.noteLine(
          Terminal.dim("err", `Compacted the conversation (about ${tokens(e.data.usageBefore)} → ${tokens(e.data.usageAfter)} tokens of context).`)
        )
      case "turn_input":
        Terminal.newline("out")
        return Terminal.noteLine(Terminal.dim("err", `[steered] ${Terminal.oneLine(e.data.content.map((b) => (b.type === "text" ? b.text : `[${b.type}]`)).join(" "))}`))
      case "turn_end":
        spinner.end()
        thinking = false
        Terminal.newline("out")
        if (e.data.error !== undefined) Terminal.noteLine(`Error: ${Terminal.clean(e.data.error)}`, Terminal.red)
        return
      case "turn_start":
      case "model_response":
      case "model_partial":
      case "config_changed":
      case "permission":
      case "mcp_servers":
      case "subagent":
      case "skill_activation":
      case "undo":
      case "permission_asked":
      case "client_call":
      case "question_withdrawn":
      case "tool_terminal":
      case "child_event":
      case "turn_aborted":
      case "checkpoint":
      case "rewound":
        return
      default:
        return absurd(e)
    }
  }

  return {
    event,
    begin: () => {
      spinner.reset()
      spinner.start("thinking")
    },
    waiting: () => spinner.resume(),
    pause: () => {
      flush()
      spinner.stop()
      thinking = false
      Terminal.newline("out")
      Terminal.newline("err")
    },
    diffShown: (id) => {
      shownDiffs.add(id)
    },
    usage: () => usage,
    flush
  }
}
