/**
 * A permission question as a card: what the tool call would do (its input, the change it would
 * make) and, where the monitor may answer (`--web-approve`), one button per option. The answer
 * races fairly with the editor's: the first one wins, and the other side sees the question
 * withdrawn.
 */
import type { Question } from "../Wire.ts"
import * as Diff from "./diff.ts"
import { h, json, sessionHref, setText, time } from "./dom.ts"

export interface Card {
  readonly element: HTMLElement
  /** The question is no longer open: `answered` here or elsewhere, or withdrawn. */
  readonly close: (how: string) => void
}

const answer = async (q: Question, optionId: string): Promise<string> => {
  try {
    const response = await fetch("/api/answer", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ sessionId: q.sessionId, requestId: q.requestId, optionId })
    })
    if (response.ok) return "Answered here."
    const body = (await response.json().catch(() => undefined)) as { message?: unknown } | undefined
    return typeof body?.message === "string" ? body.message : `Not answered (HTTP ${response.status}).`
  } catch {
    return "Not answered: the monitor could not be reached."
  }
}

export const card = (q: Question, options: { readonly approve: boolean; readonly session?: { readonly label: string } }): Card => {
  const status = h("div", { class: "status" })
  const buttons = q.options.map((option) => {
    const button = h("button", { class: `option ${option.kind}`, data: { option: option.optionId } }, option.name)
    button.type = "button"
    button.addEventListener("click", () => {
      for (const b of buttons) b.disabled = true
      setText(status, "Answering…")
      void answer(q, option.optionId).then((said) => setText(status, said))
    })
    return button
  })
  const changes = (q.toolCall.content ?? []).map((change) => Diff.view(change))
  const element = h(
    "article",
    { class: "question", data: { key: q.key, request: q.requestId } },
    h(
      "div",
      { class: "asked" },
      options.session !== undefined ? h("a", { href: sessionHref(q.sessionId) }, options.session.label) : undefined,
      ` turn ${q.turn ?? "–"} · asked ${time(q.askedAt)}`
    ),
    h("div", { class: "tool" }, h("span", { class: "kind" }, q.toolCall.kind), " ", q.toolCall.title),
    h("pre", { class: "input" }, json(q.toolCall.rawInput)),
    ...changes,
    options.approve ? h("div", { class: "options" }, ...buttons) : h("div", { class: "readonly" }, "Read-only monitor: answer in the editor (or start the monitor with --web-approve)."),
    status
  )
  return {
    element,
    close: (how) => {
      element.classList.add("closed")
      for (const b of buttons) b.disabled = true
      setText(status, how)
    }
  }
}
