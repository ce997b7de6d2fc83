/**
 * An MCP server's tool as a Skein `Tool`: its namespaced name, its own JSON
 * Schema, a kind for presenters, whether it mutates (it does unless the server
 * says `readOnlyHint`), and its result as text for the model.
 *
 * The kind is never `edit` or `execute`: those carry permission shortcuts
 * (`acceptEdits`, read-only shell commands) that rely on Skein's own
 * confinement, which an MCP server does not have. A mutating MCP tool has no
 * narrower scope, so an "always" answer covers the whole tool.
 */
import type * as McpSchema from "effect/ai/McpSchema"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { ToolKind } from "../Vocabulary.ts"
import * as Secrets from "../secrets/Secrets.ts"
import * as Tool from "../tools/Tool.ts"

/** The longest tool name providers accept. */
const MAX_NAME = 64
/** What a result may put in front of the model; the middle of a longer one is dropped. */
export const MAX_CONTENT_CHARS = 100_000
const MAX_DESCRIPTION_CHARS = 4_000

const sanitize = (name: string): string => name.replace(/[^A-Za-z0-9_-]/g, "_")

/** FNV-1a, 32 bits, as 8 hex digits: a short stable suffix that keeps cut names apart. */
const hash8 = (text: string): string => {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h.toString(16).padStart(8, "0")
}

/**
 * The name the model sees: `<server>__<tool>`, only `[A-Za-z0-9_-]`, at most
 * 64 characters, and not in `taken` (a cut or clashing name gets a hash suffix).
 */
export const exposedName = (prefix: string, tool: string, taken: ReadonlySet<string>): string => {
  const plain = `${prefix}__${sanitize(tool)}`
  if (plain.length <= MAX_NAME && !taken.has(plain)) return plain
  for (let n = 0;; n++) {
    const candidate = `${plain.slice(0, MAX_NAME - 9)}_${hash8(`${prefix}\u0000${tool}\u0000${n}`)}`
    if (!taken.has(candidate)) return candidate
  }
}

/** A server's prefix: its sanitized name, cut to leave room for tool names, unique in the session. */
export const serverPrefix = (server: string, taken: ReadonlySet<string>): string => {
  const base = sanitize(server).slice(0, 24) || "mcp"
  if (!taken.has(base)) return base
  for (let n = 2;; n++) if (!taken.has(`${base}_${n}`)) return `${base}_${n}`
}

const isReadOnly = (tool: McpSchema.Tool): boolean => tool.annotations?.readOnlyHint === true

const kindOf = (tool: McpSchema.Tool): ToolKind => {
  const name = tool.name.toLowerCase()
  if (isReadOnly(tool)) {
    if (/search|find|grep|query|lookup/.test(name)) return "search"
    if (/fetch|download|http|url|web|browse/.test(name)) return "fetch"
    return "read"
  }
  if (/delete|remove|destroy|drop/.test(name)) return "delete"
  if (/move|rename/.test(name)) return "move"
  return "other"
}

const title = (tool: McpSchema.Tool): string => tool.title ?? tool.annotations?.title ?? tool.name

/** The server's schema as a provider takes it (`$schema` dropped: some APIs refuse it). */
const schemaOf = (tool: McpSchema.Tool): Record<string, unknown> => {
  const { $schema: _ignored, ...rest } = tool.inputSchema as Record<string, unknown>
  return { ...rest, type: "object" }
}

const bytes = (data: Uint8Array | string): number =>
  typeof data === "string" ? Math.floor((data.replace(/=+$/, "").length * 3) / 4) : data.length

const bounded = (text: string): string => {
  if (text.length <= MAX_CONTENT_CHARS) return text
  const half = MAX_CONTENT_CHARS / 2
  return `${text.slice(0, half)}\n[… ${text.length - MAX_CONTENT_CHARS} characters omitted …]\n${text.slice(-half)}`
}

/** A tool result as text: text as is, media as a short marker, links and resources by URI; secrets redacted. */
export const render = (result: McpSchema.CallToolResult): string => {
  const parts: Array<string> = []
  for (const block of result.content) {
    switch (block.type) {
      case "text":
        parts.push(block.text)
        break
      case "image":
      case "audio":
        parts.push(`[${block.type} ${block.mimeType}, ${bytes(block.data)} bytes]`)
        break
      case "resource_link":
        parts.push(`${block.title ?? block.name}: ${block.uri}`)
        break
      case "resource": {
        const resource = block.resource
        parts.push("text" in resource
          ? `<resource uri="${resource.uri}">\n${resource.text}\n</resource>`
          : `[resource ${resource.uri}${resource.mimeType !== undefined ? ` ${resource.mimeType}` : ""}, ${bytes(resource.blob)} bytes]`)
        break
      }
    }
  }
  if (parts.length === 0 && result.structuredContent !== undefined) parts.push(JSON.stringify(result.structuredContent))
  // Redacted before it is cut: a cut must not leave the start of a secret behind.
  return bounded(Secrets.redact(parts.join("\n")))
}

const Arguments = Schema.Record(Schema.String, Schema.Unknown)
export type Arguments = typeof Arguments.Type

interface Binding {
  /** The server's name as the client gave it. */
  readonly server: string
  /** The name the model sees. */
  readonly name: string
  readonly tool: McpSchema.Tool
  /** Calls the tool on its server; never fails (a broken server is a result too). */
  readonly call: (args: Arguments) => Effect.Effect<Tool.ToolOutput>
}

export const make = (binding: Binding): Tool.Tool<Arguments> => {
  const readOnly = isReadOnly(binding.tool)
  const description = Secrets.redact(binding.tool.description ?? title(binding.tool))
  return Tool.define<Arguments>({
    name: binding.name,
    description: description.length > MAX_DESCRIPTION_CHARS ? `${description.slice(0, MAX_DESCRIPTION_CHARS)}…` : description,
    kind: kindOf(binding.tool),
    mutating: !readOnly,
    parameters: Arguments,
    inputSchema: Secrets.redactDeep(schemaOf(binding.tool)),
    title: () => `${binding.server} — ${title(binding.tool)}`,
    locations: () => [],
    execute: (args) => binding.call(args)
  })
}

/**
 * What the model gets for a name of a server that is not (or no longer)
 * serving: a read-only stand-in that runs nothing and says why, so no
 * permission is asked for a call that cannot happen.
 */
export const unavailable = (name: string, server: string, why: string): Tool.Tool<unknown> =>
  Tool.define<unknown>({
    name,
    description: why,
    kind: "other",
    mutating: false,
    parameters: Schema.Unknown,
    title: () => `${server} — ${name}`,
    locations: () => [],
    execute: () => Effect.succeed(Tool.error(why))
  })
