/**
 * A web page's HTML as Markdown, for `web_fetch`, with turndown (and its DOM, domino).
 * It runs on the tool worker: a page of megabytes takes seconds to convert, and the thread
 * that serves the protocol must not stop for that. Loaded on the first page, never before.
 *
 * What a reader of the page would not see is left out: scripts, styles, templates, frames,
 * embedded objects and drawings, the document's head. Links and images point where the page
 * means (relative ones made absolute against the page's address); `javascript:` links keep only
 * their text. Tables become Markdown tables of their cells' text.
 */
import TurndownService from "turndown"

/** What the rules read of a DOM element (domino's, in the worker). */
interface Element {
  readonly nodeName: string
  readonly textContent: string | null
  readonly childNodes: ArrayLike<Element>
  readonly getAttribute: (name: string) => string | null
}

/** The rows of a table (its own, not a nested table's), each a list of cell texts. */
const rows = (table: Element): Array<Array<string>> => {
  const out: Array<Array<string>> = []
  const walk = (node: Element) => {
    for (const child of Array.from(node.childNodes)) {
      if (child.nodeName === "TR") {
        out.push(
          Array.from(child.childNodes)
            .filter((cell) => cell.nodeName === "TD" || cell.nodeName === "TH")
            .map((cell) => (cell.textContent ?? "").replace(/\s+/g, " ").trim().replace(/\|/g, "\\|"))
        )
      } else if (child.nodeName === "THEAD" || child.nodeName === "TBODY" || child.nodeName === "TFOOT") walk(child)
    }
  }
  walk(table)
  return out
}

/** A table as a GitHub-flavoured Markdown table (cells as plain text), its first row the header. */
const table = (node: Element): string => {
  const all = rows(node).filter((row) => row.length > 0)
  if (all.length === 0) return ""
  const width = Math.max(...all.map((row) => row.length))
  const line = (row: ReadonlyArray<string>) => `| ${Array.from({ length: width }, (_, i) => row[i] ?? "").join(" | ")} |`
  return `\n\n${[line(all[0]!), `|${" --- |".repeat(width)}`, ...all.slice(1).map(line)].join("\n")}\n\n`
}

const HIDDEN = ["script", "style", "noscript", "template", "iframe", "object", "embed", "svg", "canvas", "head", "link", "meta"] as const

/** `href` against `base`, when it is a web address a reader can follow; undefined otherwise. */
const absolute = (href: string, base: string): string | undefined => {
  try {
    const url = new URL(href.trim(), base)
    return url.protocol === "http:" || url.protocol === "https:" || url.protocol === "mailto:" ? url.href : undefined
  } catch {
    return undefined
  }
}

const destination = (url: string): string => {
  const escaped = url.replace(/([<>()])/g, "\\$1")
  return escaped.includes(" ") ? `<${escaped}>` : escaped
}

const titlePart = (title: string | null): string => {
  const clean = (title ?? "").replace(/(\n+\s*)+/g, "\n").trim()
  return clean === "" ? "" : ` "${clean.replace(/"/g, "\\\"")}"`
}

const make = (base: string): TurndownService => {
  const service = new TurndownService({ headingStyle: "atx", codeBlockStyle: "fenced", bulletListMarker: "-", emDelimiter: "_" })
  service.remove([...HIDDEN])
  service.addRule("link", {
    filter: (node) => node.nodeName === "A" && node.getAttribute("href") !== null,
    replacement: (content, node) => {
      const element = node as Element
      const url = absolute(element.getAttribute("href") ?? "", base)
      return url === undefined || content.trim() === "" ? content : `[${content}](${destination(url)}${titlePart(element.getAttribute("title"))})`
    }
  })
  service.addRule("table", { filter: "table", replacement: (_content, node) => table(node as unknown as Element) })
  service.addRule("image", {
    filter: "img",
    replacement: (_content, node) => {
      const element = node as Element
      const url = absolute(element.getAttribute("src") ?? "", base)
      const alt = (element.getAttribute("alt") ?? "").replace(/(\n+\s*)+/g, " ").replace(/([[\]\\])/g, "\\$1")
      return url === undefined ? alt : `![${alt}](${destination(url)}${titlePart(element.getAttribute("title"))})`
    }
  })
  return service
}

/** The `<base href>` of a document, if it has one, resolved against where it came from. */
const baseOf = (html: string, url: string): string => {
  const match = /<base\s[^>]*href\s*=\s*["']?([^"'\s>]+)/i.exec(html.slice(0, 65_536))
  return match === null ? url : absolute(match[1]!, url) ?? url
}

/** The page `html`, fetched from `url`, as Markdown. */
export const toMarkdown = (html: string, url: string): string =>
  make(baseOf(html, url)).turndown(html).replace(/\n{3,}/g, "\n\n").trim()
