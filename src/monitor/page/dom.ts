/**
 * Building the page: elements and text nodes only. Nothing from the server is ever parsed as
 * markup (no `innerHTML`): a model answer holding `<script>` is shown as those characters.
 */

type Child = Node | string | undefined | false

/** An element with classes, a few safe attributes, and children (strings become text nodes). */
export const h = <K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: { readonly class?: string; readonly title?: string; readonly href?: string; readonly data?: Record<string, string> } = {},
  ...children: ReadonlyArray<Child>
): HTMLElementTagNameMap[K] => {
  const element = document.createElement(tag)
  if (props.class !== undefined) element.className = props.class
  if (props.title !== undefined) element.title = props.title
  if (props.href !== undefined) element.setAttribute("href", localHref(props.href))
  for (const [key, value] of Object.entries(props.data ?? {})) element.dataset[key] = value
  for (const child of children) if (child !== undefined && child !== false) element.append(child)
  return element
}

/** Only links within the monitor: anything else becomes `#`. */
const localHref = (href: string): string => (href.startsWith("/") && !href.startsWith("//") ? href : "#")

/** The link to a session's page. */
export const sessionHref = (id: string) => `/sessions/${encodeURIComponent(id)}`

/** Replaces an element's text. */
export const setText = (element: Element, text: string) => {
  if (element.textContent !== text) element.textContent = text
}

export const time = (ms: number): string => (ms > 0 ? new Date(ms).toLocaleTimeString() : "")

export const usd = (cost: number | undefined): string => (cost === undefined ? "" : `$${cost < 0.01 ? cost.toFixed(4) : cost.toFixed(2)}`)

/** A value as indented JSON, cut to `max` characters. */
export const json = (value: unknown, max = 4000): string => {
  let text: string
  try {
    text = typeof value === "string" ? value : JSON.stringify(value, null, 2) ?? ""
  } catch {
    text = String(value)
  }
  return text.length > max ? `${text.slice(0, max)}\n… [${text.length - max} more characters]` : text
}

/**
 * A text that grows at its end and keeps only its last `max` characters: a long answer or
 * output costs the page `max`, whatever its length. Two parts: what the log holds (`settled`)
 * and what streamed since (`live`, dropped when the log catches up, or when the stream is
 * opened again and the log replays it).
 */
export class Tail {
  readonly element: HTMLElement
  private readonly note = document.createTextNode("")
  private readonly settledNode = document.createTextNode("")
  private readonly liveNode = document.createTextNode("")
  private dropped = 0

  constructor(tag: "pre" | "div", className: string, private readonly max = 64_000) {
    this.element = h(tag, { class: className })
    const note = h("span", { class: "dropped" })
    note.append(this.note)
    this.element.append(note, this.settledNode, this.liveNode)
  }

  private bound() {
    const over = this.settledNode.length + this.liveNode.length - this.max
    if (over <= 0) return
    const fromSettled = Math.min(over, this.settledNode.length)
    if (fromSettled > 0) this.settledNode.deleteData(0, fromSettled)
    if (over > fromSettled) this.liveNode.deleteData(0, over - fromSettled)
    this.dropped += over
    this.note.data = `… ${this.dropped} earlier characters not shown …\n`
  }

  /** Text that streamed live. */
  live(text: string) {
    this.liveNode.appendData(text)
    this.bound()
  }

  /** Text the log holds, which covers everything that streamed before it. */
  settle(text: string) {
    this.liveNode.data = ""
    this.settledNode.appendData(text)
    this.bound()
  }

  /** The whole text, as the log finally holds it. */
  replace(text: string) {
    this.liveNode.data = ""
    this.settledNode.data = text.length > this.max ? text.slice(text.length - this.max) : text
    this.dropped = Math.max(0, text.length - this.max)
    this.note.data = this.dropped > 0 ? `… ${this.dropped} earlier characters not shown …\n` : ""
  }

  /** Forgets what streamed live (the stream is opened again: the log replays it). */
  dropLive() {
    this.liveNode.data = ""
  }

  get empty(): boolean {
    return this.settledNode.length === 0 && this.liveNode.length === 0
  }
}
