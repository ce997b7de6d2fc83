/**
 * What a fetched body is and how it reads as text. Pure.
 *
 * - Kind: HTML (`text/html`, `application/xhtml+xml`) becomes Markdown; other text (`text/*`,
 *   JSON, XML, JavaScript, YAML, …) is given as it is; anything else is binary and refused.
 *   Without a `Content-Type`, the bytes decide: a NUL byte early on means binary, a document
 *   that starts like HTML is HTML, the rest is text.
 * - Charset: the `Content-Type`'s `charset`, else (HTML) a `<meta charset>` or
 *   `<meta http-equiv="Content-Type" content="…; charset=…">` early in the page, else a byte
 *   order mark, else UTF-8. A charset this Node does not know is read as UTF-8, and said.
 * - Cut: text longer than the limit keeps its beginning and says how much was left out.
 */

type Kind = "html" | "text" | "binary"

const TEXT_TYPES = /^(?:text\/|application\/(?:json|[\w.+-]*\+json|xml|[\w.+-]*\+xml|javascript|ecmascript|x-javascript|x-sh|x-yaml|yaml|toml|x-toml|sql|graphql|ld\+json|x-www-form-urlencoded|x-ndjson|ndjson)$)/

/** The media type of a `Content-Type` header, lower case, without parameters. */
export const mediaType = (contentType: string | undefined): string => (contentType ?? "").split(";")[0]!.trim().toLowerCase()

const looksBinary = (bytes: Uint8Array): boolean => {
  const n = Math.min(bytes.length, 8192)
  for (let i = 0; i < n; i++) if (bytes[i] === 0) return true
  return false
}

const head = (bytes: Uint8Array, n: number): string => Buffer.from(bytes.subarray(0, n)).toString("latin1")

export const kind = (contentType: string | undefined, bytes: Uint8Array): Kind => {
  const type = mediaType(contentType)
  if (type === "text/html" || type === "application/xhtml+xml") return "html"
  if (TEXT_TYPES.test(type)) return "text"
  if (type !== "" && type !== "application/octet-stream") return "binary"
  if (looksBinary(bytes)) return "binary"
  return /^\s*(?:<!doctype\s+html|<html[\s>]|<head[\s>]|<body[\s>])/i.test(head(bytes, 1024)) ? "html" : type === "" ? "text" : "binary"
}

/** The charset the bytes are written in, as its label (e.g. "utf-8", "windows-1252"). */
export const charset = (contentType: string | undefined, bytes: Uint8Array, html: boolean): string => {
  const declared = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType ?? "")
  if (declared !== null) return declared[1]!.toLowerCase()
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return "utf-8"
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return "utf-16le"
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return "utf-16be"
  if (html) {
    const meta = /<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)/i.exec(head(bytes, 4096))
    if (meta !== null) return meta[1]!.toLowerCase()
  }
  return "utf-8"
}

/** The text of `bytes` in `label`; `unknown` when this Node has no decoder for it (read as UTF-8 then). */
export const decode = (bytes: Uint8Array, label: string): { readonly text: string; readonly unknown: boolean } => {
  const known = (() => {
    try {
      return new TextDecoder(label)
    } catch {
      return undefined
    }
  })()
  return known === undefined ? { text: new TextDecoder("utf-8").decode(bytes), unknown: true } : { text: known.decode(bytes), unknown: false }
}

/** `text` within `max` characters, with a note of what was cut. */
export const cut = (text: string, max: number): { readonly text: string; readonly left: number } => {
  if (text.length <= max) return { text, left: 0 }
  // Never split a surrogate pair.
  const end = /[\uD800-\uDBFF]/.test(text[max - 1] ?? "") ? max - 1 : max
  return { text: text.slice(0, end), left: text.length - end }
}

/** The page's `<title>`, when it has one early on. */
export const title = (html: string): string | undefined => {
  const match = /<title[^>]*>([^<]{1,300})<\/title>/i.exec(html.slice(0, 65_536))
  const text = match?.[1]?.replace(/\s+/g, " ").trim()
  return text === undefined || text === "" ? undefined : text
}

/** A byte count as a person reads it. */
export const size = (bytes: number): string =>
  bytes < 1024 ? `${bytes} bytes` : bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KB` : `${(bytes / 1024 / 1024).toFixed(1)} MB`
