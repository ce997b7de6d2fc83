/**
 * The overview: the approvals inbox (every open permission question of every session) and the
 * sessions as a tree (children under their parents), newest first. Fed by `/api/overview`;
 * each batch updates only the rows and cards it names.
 */
import type { Hello, OverviewMessage, Question, Row } from "../Wire.ts"
import { h, sessionHref, setText, time, usd } from "./dom.ts"
import * as Cards from "./question.ts"

interface RowView {
  readonly item: HTMLLIElement
  readonly state: HTMLElement
  readonly link: HTMLAnchorElement
  readonly meta: HTMLElement
  readonly children: HTMLUListElement
}

const unreachable = (value: never): never => {
  throw new Error(`unexpected message ${JSON.stringify(value)}`)
}

export const mount = (root: HTMLElement, header: HTMLElement) => {
  const rows = new Map<string, Row>()
  const views = new Map<string, RowView>()
  const cards = new Map<string, Cards.Card>()
  const questions = new Map<string, Question>()
  let hello: Hello | undefined

  const inboxCount = h("span", { class: "count" })
  const inboxList = h("div", { class: "inbox" })
  const inboxEmpty = h("p", { class: "empty" }, "No question is waiting for an answer.")
  const sessionCount = h("span", { class: "count" })
  const tree = h("ul", { class: "tree" })
  root.append(
    h("section", { class: "approvals" }, h("h2", {}, "Approvals ", inboxCount), inboxEmpty, inboxList),
    h("section", { class: "sessions" }, h("h2", {}, "Sessions ", sessionCount), tree)
  )

  const label = (row: Row | undefined, id: string) => row?.title ?? id

  const viewOf = (id: string): RowView => {
    const known = views.get(id)
    if (known !== undefined) return known
    const state = h("span", { class: "state" })
    const link = h("a", { href: sessionHref(id) })
    const meta = h("span", { class: "meta" })
    const children = h("ul", { class: "children" })
    const item = h("li", { data: { id } }, h("div", { class: "row" }, state, link, meta), children)
    const view = { item, state, link, meta, children }
    views.set(id, view)
    return view
  }

  const paint = (row: Row) => {
    const view = viewOf(row.id)
    const state = row.running ? "running" : row.live ? "idle" : "closed"
    view.state.className = `state ${state}`
    setText(view.state, state)
    setText(view.link, label(row, row.id))
    const parts = [
      row.agent,
      row.cwd,
      row.runner !== undefined ? `runner ${row.runner}` : undefined,
      row.turn !== undefined ? `turn ${row.turn}${row.stopReason !== undefined ? ` ${row.failed === true ? "failed" : row.stopReason}` : ""}` : undefined,
      usd(row.cost),
      time(row.updatedAt)
    ].filter((part) => part !== undefined && part !== "")
    setText(view.meta, parts.join(" · "))
  }

  /** Places every row under its parent (or at the top), newest first at the top, oldest first under a parent. */
  const arrange = () => {
    const byParent = new Map<string | undefined, Array<Row>>()
    for (const row of rows.values()) {
      const parent = row.parent !== undefined && rows.has(row.parent) ? row.parent : undefined
      const list = byParent.get(parent) ?? []
      list.push(row)
      byParent.set(parent, list)
    }
    const place = (container: HTMLUListElement, list: ReadonlyArray<Row>) => {
      list.forEach((row, i) => {
        const item = viewOf(row.id).item
        if (container.children[i] !== item) container.insertBefore(item, container.children[i] ?? null)
      })
      while (container.children.length > list.length) container.lastElementChild!.remove()
    }
    place(tree, (byParent.get(undefined) ?? []).sort((a, b) => b.updatedAt - a.updatedAt || a.id.localeCompare(b.id)))
    for (const [id, view] of views) place(view.children, (byParent.get(id) ?? []).sort((a, b) => a.created - b.created || a.id.localeCompare(b.id)))
    setText(sessionCount, `(${rows.size})`)
  }

  const openCard = (q: Question) => {
    if (cards.has(q.key)) return
    questions.set(q.key, q)
    const card = Cards.card(q, { approve: hello?.approve === true, session: { label: label(rows.get(q.sessionId), q.sessionId) } })
    cards.set(q.key, card)
    inboxList.prepend(card.element)
  }

  const closeCard = (key: string) => {
    const card = cards.get(key)
    if (card === undefined) return
    cards.delete(key)
    questions.delete(key)
    card.close("Answered or withdrawn.")
    // Left in view a moment, so an answer's outcome can be read.
    setTimeout(() => card.element.remove(), 1500)
  }

  const countInbox = () => {
    setText(inboxCount, `(${cards.size})`)
    inboxEmpty.hidden = cards.size > 0
  }

  const apply = (message: OverviewMessage) => {
    switch (message.type) {
      case "hello":
        hello = message
        header.dataset["mode"] = message.mode
        setText(header.querySelector(".mode")!, `${message.mode === "live" ? "live" : "logs only"}${message.approve ? " · answers allowed" : " · read-only"}${message.runner !== undefined ? ` · runner ${message.runner}` : ""}`)
        return
      case "sessions":
        if (message.full) {
          for (const id of [...rows.keys()]) if (!message.rows.some((row) => row.id === id)) rows.delete(id)
        }
        for (const id of message.removed) {
          rows.delete(id)
          views.get(id)?.item.remove()
          views.delete(id)
        }
        for (const row of message.rows) {
          rows.set(row.id, row)
          paint(row)
        }
        arrange()
        return
      case "inbox":
        if (message.full) for (const key of [...cards.keys()]) if (!message.added.some((q) => q.key === key)) closeCard(key)
        for (const key of message.removed) closeCard(key)
        for (const q of message.added) openCard(q)
        countInbox()
        return
      default:
        return unreachable(message)
    }
  }

  countInbox()
  const source = new EventSource("/api/overview")
  source.onmessage = (event) => apply(JSON.parse(event.data) as OverviewMessage)
  source.onerror = () => header.classList.add("offline")
  source.onopen = () => header.classList.remove("offline")
}
