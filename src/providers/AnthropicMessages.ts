/**
 * `anthropic-messages`: Anthropic's Messages API, streaming, with `tool_use`,
 * extended thinking (signed thinking blocks go back as they came), and prompt
 * cache breakpoints on the stable prefix: the tools, the system prompt, and
 * the end of the conversation so far.
 */
import type { HttpClient } from "effect/http/HttpClient"
import type { AssistantPart, Message, Usage } from "../Vocabulary.ts"
import * as Content from "./Content.ts"
import * as Errors from "./Errors.ts"
import * as Http from "./Http.ts"
import * as Models from "./Models.ts"
import type { Provider, StreamPart } from "./Provider.ts"

type Json = Record<string, unknown>

const API_VERSION = "2023-06-01"

const CACHE = { type: "ephemeral" } as const

/** Thinking budgets by effort; `off` (or none) leaves thinking disabled. */
const budgets: Record<string, number> = { low: 2_048, medium: 8_192, high: 24_576 }

const thinkingBlock = (part: Extract<AssistantPart, { type: "thinking" }>): Json | undefined => {
  if (!Content.isAnthropicSignature(part.signature)) return undefined
  return part.signature.startsWith(Content.REDACTED_PREFIX)
    ? { type: "redacted_thinking", data: part.signature.slice(Content.REDACTED_PREFIX.length) }
    : { type: "thinking", thinking: part.text, signature: part.signature }
}

const assistantBlocks = (parts: ReadonlyArray<AssistantPart>): Array<Json> => {
  const blocks: Array<Json> = []
  for (const part of parts) {
    if (part.type === "thinking") {
      const block = thinkingBlock(part)
      if (block !== undefined) blocks.push(block)
    } else if (part.type === "text") {
      if (part.text.length > 0) blocks.push({ type: "text", text: part.text })
    } else {
      const input = typeof part.args === "object" && part.args !== null && !Array.isArray(part.args) ? part.args : {}
      blocks.push({ type: "tool_use", id: part.id, name: part.name, input })
    }
  }
  return blocks
}

/** The conversation as Messages turns; consecutive turns of one role are merged (tool results first). */
const messages = (history: ReadonlyArray<Message>, images: boolean): Array<{ role: "user" | "assistant"; content: Array<Json> }> => {
  const out: Array<{ role: "user" | "assistant"; content: Array<Json> }> = []
  const push = (role: "user" | "assistant", blocks: Array<Json>) => {
    if (blocks.length === 0) return
    const last = out[out.length - 1]
    if (last !== undefined && last.role === role) last.content.push(...blocks)
    else out.push({ role, content: blocks })
  }
  for (const message of history) {
    switch (message.role) {
      case "user":
        push(
          "user",
          Content.pieces(message.content, images).map((p) =>
            p.type === "text" ? { type: "text", text: p.text } : { type: "image", source: { type: "base64", media_type: p.mimeType, data: p.data } }
          )
        )
        break
      case "assistant":
        push("assistant", assistantBlocks(message.parts))
        break
      case "tool":
        push("user", [{
          type: "tool_result",
          tool_use_id: message.id,
          content: message.content.length > 0 ? message.content : "(no output)",
          ...(message.ok ? {} : { is_error: true })
        }])
        break
    }
  }
  return out
}

/**
 * With thinking on, the last assistant turn of a tool loop must start with a
 * thinking block; a history from another model may not, so thinking is then
 * left off for this call.
 */
const thinkingAllowed = (out: ReadonlyArray<{ role: string; content: ReadonlyArray<Json> }>): boolean => {
  const last = out[out.length - 1]
  const previous = out[out.length - 2]
  if (last === undefined || previous === undefined || previous.role !== "assistant") return true
  if (!last.content.some((b) => b.type === "tool_result")) return true
  const first = previous.content[0]
  return first !== undefined && (first.type === "thinking" || first.type === "redacted_thinking")
}

const body = (call: Http.Call): Json => {
  const { request, model } = call
  const maxTokens = model.maxOutput ?? Models.ANTHROPIC_DEFAULT_MAX_OUTPUT
  const msgs = messages(request.messages, model.images)
  // A breakpoint on the last block of the conversation: the next call reads this prefix from the cache.
  const lastMessage = msgs[msgs.length - 1]
  if (lastMessage !== undefined) {
    const i = lastMessage.content.length - 1
    const block = lastMessage.content[i]!
    if (block.type !== "thinking" && block.type !== "redacted_thinking") lastMessage.content[i] = { ...block, cache_control: CACHE }
  }
  const effort = model.reasoning ? Models.effortFor(model, request.reasoningEffort) : undefined
  const budget = effort !== undefined ? Math.min(budgets[effort] ?? 0, maxTokens - 1_024) : 0
  const thinking = budget >= 1_024 && thinkingAllowed(msgs)
  const tools = request.tools.map((t, i): Json => ({
    name: t.name,
    description: t.description,
    input_schema: t.parameters,
    ...(i === request.tools.length - 1 ? { cache_control: CACHE } : {})
  }))
  return {
    model: model.id,
    max_tokens: maxTokens,
    stream: true,
    ...(request.system.length > 0 ? { system: [{ type: "text", text: request.system, cache_control: CACHE }] } : {}),
    messages: msgs,
    ...(tools.length > 0 ? { tools } : {}),
    ...(thinking ? { thinking: { type: "enabled", budget_tokens: budget } } : {})
  }
}

const num = (u: unknown): number | undefined => (typeof u === "number" && Number.isFinite(u) ? u : undefined)
const obj = (u: unknown): Json => (typeof u === "object" && u !== null ? (u as Json) : {})

const stopOf = (reason: unknown): Extract<StreamPart, { _tag: "Finish" }>["stop"] => {
  switch (reason) {
    case "tool_use":
      return "tool_use"
    case "max_tokens":
    case "model_context_window_exceeded":
      return "max_tokens"
    case "refusal":
      return "refusal"
    default:
      return "end_turn"
  }
}

interface Block {
  readonly type: string
  readonly id?: string
  readonly name?: string
  json: string
  signature?: string
}

const decoder = (call: Http.Call): Http.Decoder => {
  const blocks = new Map<number, Block>()
  const usage = { input: 0, cacheRead: 0, cacheWrite: 0, output: 0 }
  let sawUsage = false
  let stop: unknown
  let finished = false

  const readUsage = (u: Json) => {
    sawUsage = true
    usage.input = num(u.input_tokens) ?? usage.input
    usage.cacheRead = num(u.cache_read_input_tokens) ?? usage.cacheRead
    usage.cacheWrite = num(u.cache_creation_input_tokens) ?? usage.cacheWrite
    usage.output = num(u.output_tokens) ?? usage.output
  }

  return {
    event: (event) => {
      if (finished) return []
      const data = Http.json(event, call.who)
      if (data instanceof Errors.ProviderError) return [data]
      switch (data.type) {
        case "message_start":
          readUsage(obj(obj(data.message).usage))
          return []
        case "content_block_start": {
          const index = num(data.index) ?? blocks.size
          const block = obj(data.content_block)
          const type = String(block.type)
          blocks.set(index, {
            type,
            json: "",
            ...(typeof block.id === "string" ? { id: block.id } : {}),
            ...(typeof block.name === "string" ? { name: block.name } : {})
          })
          if (type === "text" && typeof block.text === "string" && block.text.length > 0) return [{ _tag: "TextDelta", text: block.text }]
          if (type === "thinking" && typeof block.thinking === "string" && block.thinking.length > 0) {
            return [{ _tag: "ThinkingDelta", text: block.thinking }]
          }
          if (type === "redacted_thinking" && typeof block.data === "string") {
            return [{ _tag: "ThinkingDelta", text: "", signature: Content.REDACTED_PREFIX + block.data }]
          }
          return []
        }
        case "content_block_delta": {
          const delta = obj(data.delta)
          const block = blocks.get(num(data.index) ?? -1)
          switch (delta.type) {
            case "text_delta":
              return typeof delta.text === "string" && delta.text.length > 0 ? [{ _tag: "TextDelta", text: delta.text }] : []
            case "thinking_delta":
              return typeof delta.thinking === "string" && delta.thinking.length > 0 ? [{ _tag: "ThinkingDelta", text: delta.thinking }] : []
            case "signature_delta":
              if (block !== undefined && typeof delta.signature === "string") block.signature = (block.signature ?? "") + delta.signature
              return []
            case "input_json_delta":
              if (block !== undefined && typeof delta.partial_json === "string") block.json += delta.partial_json
              return []
            default:
              return []
          }
        }
        case "content_block_stop": {
          const block = blocks.get(num(data.index) ?? -1)
          if (block?.type === "tool_use") {
            return [{
              _tag: "ToolCall",
              id: block.id ?? `toolu_${call.request.turn}_${call.request.call}_${num(data.index) ?? 0}`,
              name: block.name ?? "",
              args: Http.parseArgs(block.json)
            }]
          }
          if (block?.type === "thinking" && block.signature !== undefined) return [{ _tag: "ThinkingDelta", text: "", signature: block.signature }]
          return []
        }
        case "message_delta":
          stop = obj(data.delta).stop_reason
          if (typeof data.usage === "object" && data.usage !== null) readUsage(data.usage as Json)
          return []
        case "message_stop": {
          finished = true
          const input = usage.input + usage.cacheRead + usage.cacheWrite
          const u: Usage = { input, output: usage.output, ...(usage.cacheRead > 0 ? { cached: usage.cacheRead } : {}) }
          return [...(sawUsage ? [{ _tag: "Usage", usage: u } as const] : []), { _tag: "Finish", stop: stopOf(stop) }]
        }
        case "error":
          return [Errors.fromEvent(Errors.detailOf(data), call.who)]
        default:
          return []
      }
    },
    end: () => finished ? [] : [Errors.make("network", call.who, { cause: "the stream ended early", lost: true })]
  }
}

export const dialect: Http.Dialect = {
  name: "anthropic-messages",
  path: "/v1/messages",
  headers: (target): Record<string, string> => ({
    "anthropic-version": API_VERSION,
    ...(target.apiKey !== undefined ? { "x-api-key": target.apiKey } : {})
  }),
  body,
  decoder
}

export const make = (target: Http.Target, client: HttpClient): Provider => Http.make(dialect, target, client)
