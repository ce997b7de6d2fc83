/**
 * One session's page: its turns as they stream — the prompt, the model's thinking and text,
 * tool calls with their input, running output, diffs and results, the plan, permission
 * questions, children (links to their pages), usage and cost, and how each turn ended. Fed by
 * `/api/sessions/ID/events`, folded here event by event.
 *
 * Bounded whatever the session's length: each text keeps its last 64,000 characters (`Tail`),
 * and only the last `MAX_TURNS` turns stay on the page.
 */
import type { SessionEvent } from "../../log/Event.ts"
import type { Question, SessionMessage } from "../Wire.ts"
import * as Diff from "./diff.ts"
import { h, json, sessionHref, setText, Tail, time, usd } from "./dom.ts"
import * as Cards from "./question.ts"

const MAX_TURNS = 30

interface CallView {
  readonly element: HTMLElement
  thinking: Tail | undefined
  text: Tail | undefined
}

interface ToolView {
  readonly element: HTMLElement
  readonly status: HTMLElement
  readonly body: HTMLElement
  progress: Tail | undefined
}

interface TurnView {
  readonly element: HTMLElement
  readonly body: HTMLElement
  readonly footer: HTMLElement
  readonly calls: Map<number, CallView>
  /** The call text and thinking stream into until the log names it. */
  live: CallView | undefined
  plan: HTMLElement | undefined
}

const unreachable = (value: never): never => {
  throw new Error(`unexpected event ${JSON.stringify(value)}`)
}

const promptText = (content: ReadonlyArray<{ readonly type: string; readonly text?: string; readonly uri?: string; readonly name?: string }>) =>
  content.map((block) => (block.type === "text" ? block.text ?? "" : block.type === "image" ? "[image]" : `[${block.name ?? block.uri ?? block.type}]`)).join("\n")

export const mount = (root: HTMLElement, header: HTMLElement, sessionId: string) => {
  let approve = false
  const title = h("h2", {}, sessionId)
  const facts = h("div", { class: "facts" })
  const usage = h("span", { class: "usage" })
  const earlier = h("p", { class: "earlier", }, "")
  earlier.hidden = true
  const turnsEl = h("div", { class: "turns" })
  root.append(h("section", { class: "session" }, h("a", { href: "/", class: "back" }, "← all sessions"), title, facts, usage, earlier, turnsEl))

  const turns = new Map<number, TurnView>()
  const tools = new Map<string, ToolView>()
  const cards = new Map<string, Cards.Card>()
  let dropped = 0
  let running = false

  const turnOf = (n: number | null): TurnView => {
    const key = n ?? 0
    const known = turns.get(key)
    if (known !== undefined) return known
    const body = h("div", { class: "body" })
    const footer = h("div", { class: "footer" })
    const element = h("article", { class: "turn", data: { turn: String(key) } }, body, footer)
    const view: TurnView = { element, body, footer, calls: new Map(), live: undefined, plan: undefined }
    turns.set(key, view)
    turnsEl.append(element)
    while (turns.size > MAX_TURNS) {
      const [oldest, old] = turns.entries().next().value!
      turns.delete(oldest)
      old.element.remove()
      dropped++
      earlier.hidden = false
      setText(earlier, `${dropped} earlier turn${dropped === 1 ? "" : "s"} not shown.`)
    }
    return view
  }

  const line = (turn: TurnView, cls: string, ...children: ReadonlyArray<Node | string>) => turn.body.append(h("div", { class: `line ${cls}` }, ...children))

  /** The call that streams now; its number is known once the log names it. */
  const callFor = (turn: TurnView, call: number | undefined): CallView => {
    if (call !== undefined) {
      const known = turn.calls.get(call)
      if (known !== undefined) return known
      if (turn.live !== undefined) {
        const live = turn.live
        turn.live = undefined
        turn.calls.set(call, live)
        return live
      }
    } else if (turn.live !== undefined) {
      return turn.live
    }
    const view: CallView = { element: h("div", { class: "call" }), thinking: undefined, text: undefined }
    turn.body.append(view.element)
    if (call === undefined) turn.live = view
    else turn.calls.set(call, view)
    return view
  }

  const part = (view: CallView, kind: "thinking" | "text"): Tail => {
    const known = kind === "thinking" ? view.thinking : view.text
    if (known !== undefined) return known
    const tail = new Tail("div", kind)
    if (kind === "thinking") {
      view.thinking = tail
      view.element.prepend(h("details", { class: "thinking" }, h("summary", {}, "Thinking"), tail.element))
    } else {
      view.text = tail
      view.element.append(tail.element)
    }
    return tail
  }

  const openQuestion = (q: Question) => {
    if (cards.has(q.requestId)) return
    const card = Cards.card(q, { approve })
    cards.set(q.requestId, card)
    const tool = tools.get(q.toolCall.toolCallId)
    if (tool !== undefined) tool.element.append(card.element)
    else turnOf(q.turn).body.append(card.element)
  }

  const apply = (event: SessionEvent) => {
    switch (event.type) {
      case "turn_start": {
        const turn = turnOf(event.turn)
        running = true
        turn.body.prepend(
          h("div", { class: "prompt" }, h("span", { class: "who" }, `Turn ${event.turn ?? ""} · ${time(event.ts)}${event.data.command !== undefined ? ` · /${event.data.command.name}` : ""}`), h("pre", {}, promptText(event.data.content)))
        )
        return
      }
      case "turn_input":
        line(turnOf(event.turn), "steer", "Steered: ", promptText(event.data.content))
        return
      case "text_delta":
        part(callFor(turnOf(event.turn), undefined), "text").live(event.data.text)
        return
      case "thinking_delta":
        part(callFor(turnOf(event.turn), undefined), "thinking").live(event.data.text)
        return
      case "model_partial": {
        const view = callFor(turnOf(event.turn), event.data.call)
        for (const p of event.data.parts) part(view, p.type).settle(p.text)
        return
      }
      case "model_response": {
        const turn = turnOf(event.turn)
        const view = callFor(turn, event.data.call)
        const texts = { text: "", thinking: "" }
        for (const p of event.data.parts) if (p.type === "text" || p.type === "thinking") texts[p.type] += p.text
        if (texts.thinking.length > 0 || view.thinking !== undefined) part(view, "thinking").replace(texts.thinking)
        if (texts.text.length > 0 || view.text !== undefined) part(view, "text").replace(texts.text)
        if (event.data.usage !== undefined) view.element.append(h("div", { class: "tokens" }, `${event.data.usage.input} tokens in · ${event.data.usage.output} out`))
        if (event.data.error !== undefined) view.element.append(h("div", { class: "error" }, event.data.error))
        if (event.data.compaction !== undefined) view.element.classList.add("compaction-call")
        return
      }
      case "tool_call": {
        const status = h("span", { class: "status pending" }, "pending")
        const body = h("div", { class: "tool-body" }, h("pre", { class: "input" }, json(event.data.args)))
        const element = h("details", { class: "tool", data: { tool: event.data.id } }, h("summary", {}, h("span", { class: "kind" }, event.data.kind), " ", event.data.title, " ", status), body)
        ;(element as HTMLDetailsElement).open = true
        tools.set(event.data.id, { element, status, body, progress: undefined })
        turnOf(event.turn).body.append(element)
        return
      }
      case "tool_running": {
        const tool = tools.get(event.data.id)
        if (tool !== undefined) {
          tool.status.className = "status running"
          setText(tool.status, "running")
        }
        return
      }
      case "tool_progress": {
        const tool = tools.get(event.data.id)
        if (tool === undefined) return
        tool.progress ??= new Tail("pre", "output")
        if (!tool.progress.element.isConnected) tool.body.append(tool.progress.element)
        tool.progress.replace(event.data.output)
        return
      }
      case "tool_terminal": {
        const tool = tools.get(event.data.id)
        if (tool !== undefined) tool.body.append(h("div", { class: "note" }, "Runs in the editor's terminal."))
        return
      }
      case "tool_result": {
        const tool = tools.get(event.data.id)
        if (tool === undefined) return
        tool.status.className = `status ${event.data.ok ? "ok" : "failed"}`
        // How it ended, in words: "done", "failed", "denied", "cancelled", "not run"…
        setText(tool.status, event.data.status.replace("_", " "))
        tool.progress?.element.remove()
        const details = event.data.details
        for (const change of details?.diff ?? []) tool.body.append(Diff.view(change))
        if (details?.output !== undefined) {
          const output = new Tail("pre", "output")
          output.replace(details.output)
          tool.body.append(output.element)
        }
        if (details?.exitCode !== undefined) tool.body.append(h("div", { class: "note" }, `exit code ${details.exitCode ?? "none"}`))
        const result = new Tail("pre", `result ${event.data.ok ? "" : "failed"}`)
        result.replace(event.data.content)
        tool.body.append(result.element)
        return
      }
      case "plan": {
        const turn = turnOf(event.turn)
        const plan = h("ol", { class: "plan" }, ...event.data.entries.map((entry) => h("li", { class: entry.status }, `[${entry.status}] ${entry.content}`)))
        if (turn.plan !== undefined) turn.plan.replaceWith(plan)
        else turn.body.append(plan)
        turn.plan = plan
        return
      }
      case "permission_asked":
        openQuestion({ key: `${event.sessionId} ${event.data.requestId}`, sessionId: event.sessionId, requestId: event.data.requestId, turn: event.turn, askedAt: event.ts, toolCall: event.data.toolCall, options: event.data.options })
        return
      case "question_withdrawn":
        cards.get(event.data.requestId)?.close(event.data.answered === true ? "Answered." : "Withdrawn.")
        cards.delete(event.data.requestId)
        return
      case "permission": {
        const tool = tools.get(event.data.toolCallId)
        const said = h("div", { class: `note permission ${event.data.outcome}` }, `Permission: ${event.data.outcome.replace("_", " ")}${event.data.rule !== undefined ? ` (${event.data.rule.label})` : ""}`)
        if (tool !== undefined) tool.body.append(said)
        else turnOf(event.turn).body.append(said)
        return
      }
      case "usage":
        setText(usage, `context ${event.data.used} of ${event.data.size} tokens${event.data.cost !== undefined ? ` · ${usd(event.data.cost)}` : ""}`)
        return
      case "notice":
        line(turnOf(event.turn), "notice", event.data.text)
        return
      case "mode_changed":
        line(turnOf(event.turn), "setting", `Mode: ${event.data.mode}`)
        return
      case "config_changed":
        line(turnOf(event.turn), "setting", `${event.data.id}: ${event.data.value}`)
        return
      case "mcp_servers":
        line(turnOf(event.turn), "setting", `MCP servers: ${event.data.servers.map((s) => s.name).join(", ") || "none"}`)
        return
      case "subagent": {
        const d = event.data
        const turn = turnOf(event.turn)
        if (d.event === "spawned") line(turn, "child", "Child ", h("a", { href: sessionHref(d.id) }, `${d.agent ?? "agent"}: ${d.task ?? d.id}`), d.workspace === "isolated" ? ` (isolated${d.branch !== undefined ? `, ${d.branch}` : ""})` : "")
        else if (d.event === "result") line(turn, "child", h("a", { href: sessionHref(d.id) }, d.id), ` ${d.state ?? ""}${d.error !== undefined ? `: ${d.error}` : ""}`)
        else if (d.event === "closed") line(turn, "child", h("a", { href: sessionHref(d.id) }, d.id), " closed")
        else if (d.event === "state") line(turn, "child", h("a", { href: sessionHref(d.id) }, d.id), ` ${d.state ?? "running"}`)
        else line(turn, "child", "Children's results given to the model.")
        return
      }
      case "child_event":
        // A child's own page shows its events; the parent shows where it started (`subagent`).
        return
      case "compacting":
        line(turnOf(event.turn), "compaction", "Compacting the conversation…")
        return
      case "compaction":
        turnOf(event.turn).body.append(h("details", { class: "compaction" }, h("summary", {}, `Compacted the conversation (${event.data.trigger})`), h("pre", {}, event.data.summaryForUser)))
        return
      case "skill_activation":
        line(turnOf(event.turn), "skill", `Loaded the skill ${event.data.name}`)
        return
      case "undo":
        line(turnOf(event.turn), "undo", event.data.refused !== undefined ? `Undo refused: ${event.data.refused}` : `Undid turn ${event.data.turn}: ${[...event.data.restored, ...event.data.removed].join(", ") || "nothing"}`)
        return
      case "hook":
        line(turnOf(event.turn), "hook", `Hook ${event.data.event}: ${event.data.command} (${event.data.decision})`)
        return
      case "checkpoint":
        line(turnOf(event.turn), "checkpoint", `Checkpoint ${event.data.at} turn ${event.data.turn}${event.data.skipped !== undefined && event.data.skipped.length > 0 ? ` (${event.data.skipped.length} large file(s) left out)` : ""}`)
        return
      case "rewound":
        line(turnOf(event.turn), "rewind", event.data.refused !== undefined ? `Rewind refused: ${event.data.refused}` : `Rewound to before turn ${event.data.toTurn}: ${[...event.data.restored, ...event.data.removed].join(", ") || "no file changed"}`)
        return
      case "client_call":
        return
      case "turn_end":
      // A turn whose end the log refused: it ended, failed, saying why.
      case "turn_aborted": {
        const turn = turnOf(event.turn)
        running = false
        turn.live = undefined
        turn.footer.className = `footer ${event.data.error !== undefined ? "failed" : event.data.stopReason}`
        setText(turn.footer, `Ended: ${event.data.stopReason}${event.data.error !== undefined ? ` — ${event.data.error}` : ""}`)
        for (const [requestId, card] of cards) {
          if (card.element.closest(".turn") === turn.element) {
            card.close("The turn ended.")
            cards.delete(requestId)
          }
        }
        return
      }
      default:
        return unreachable(event)
    }
  }

  const receive = (message: SessionMessage) => {
    switch (message.type) {
      case "hello":
        approve = message.approve
        setText(header.querySelector(".mode")!, `${message.mode === "live" ? "live" : "logs only"}${message.approve ? " · answers allowed" : " · read-only"}`)
        return
      case "session": {
        const row = message.row
        if (row !== undefined) {
          setText(title, row.title ?? sessionId)
          document.title = `${row.title ?? sessionId} · Skein monitor`
          const parent = row.parent !== undefined ? h("a", { href: sessionHref(row.parent) }, "parent session") : undefined
          facts.replaceChildren(
            h("span", {}, [row.agent, row.cwd, row.runner !== undefined ? `runner ${row.runner}` : undefined, row.live ? "live" : "not live"].filter(Boolean).join(" · ")),
            ...(parent !== undefined ? [" · ", parent] : [])
          )
        }
        for (const q of message.questions) openQuestion(q)
        return
      }
      case "events":
        for (const event of message.events) apply(event)
        root.dataset["state"] = running ? "running" : "idle"
        return
      case "gone":
        source.close()
        turnsEl.append(h("p", { class: "error" }, message.message))
        return
      default:
        return unreachable(message)
    }
  }

  let lost = false
  const source = new EventSource(`/api/sessions/${encodeURIComponent(sessionId)}/events`)
  source.onmessage = (event) => receive(JSON.parse(event.data) as SessionMessage)
  source.onerror = () => {
    lost = true
    header.classList.add("offline")
  }
  source.onopen = () => {
    header.classList.remove("offline")
    if (!lost) return
    lost = false
    // Opened again from the last logged event: the log replays what had only streamed.
    for (const turn of turns.values()) {
      for (const call of [...turn.calls.values(), ...(turn.live !== undefined ? [turn.live] : [])]) {
        call.text?.dropLive()
        call.thinking?.dropLive()
      }
    }
  }
}
