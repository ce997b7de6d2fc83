/**
 * `openai-responses`: OpenAI's Responses API, streaming, with function tools.
 * Stateless (`store: false`): every call sends the whole conversation, and the
 * reasoning of earlier calls travels back as encrypted reasoning items (kept in
 * the log as the thinking part's `signature`). Reasoning summaries stream as
 * thoughts; `prompt_cache_key` keeps a session on one prompt cache.
 */
import type { HttpClient } from "effect/http/HttpClient"
import type { Message, Usage } from "../Vocabulary.ts"
import * as Content from "./Content.ts"
import * as Errors from "./Errors.ts"
import * as Http from "./Http.ts"
import * as Models from "./Models.ts"
import type { Provider } from "./Provider.ts"

type Json = Record<string, unknown>

/** The conversation as Responses input items. */
const input = (history: ReadonlyArray<Message>, images: boolean): Array<Json> => {
  const out: Array<Json> = []
  for (const message of history) {
    switch (message.role) {
      case "user": {
        const content = Content.pieces(message.content, images).map((p) =>
          p.type === "text" ? { type: "input_text", text: p.text } : { type: "input_image", image_url: Content.dataUrl(p), detail: "auto" }
        )
        if (content.length > 0) out.push({ role: "user", content })
        break
      }
      case "assistant": {
        let text = ""
        const flush = () => {
          if (text.length > 0) out.push({ role: "assistant", content: text })
          text = ""
        }
        for (const part of message.parts) {
          if (part.type === "text") {
            text += part.text
            continue
          }
          flush()
          if (part.type === "thinking") {
            // Only reasoning this API produced can go back, and only with its encrypted content (store: false).
            const item = Content.parseResponsesSignature(part.signature)
            if (item?.encrypted_content !== undefined) {
              out.push({
                type: "reasoning",
                summary: part.text.length > 0 ? [{ type: "summary_text", text: part.text }] : [],
                encrypted_content: item.encrypted_content
              })
            }
          } else {
            out.push({ type: "function_call", call_id: part.id, name: part.name, arguments: Http.argsText(part.args) })
          }
        }
        flush()
        break
      }
      case "tool":
        out.push({ type: "function_call_output", call_id: message.id, output: message.content })
        break
    }
  }
  return out
}

/**
 * The models, per target, that refused reasoning summaries: an organization OpenAI has not
 * verified gets a 400 (`param: "reasoning.summary"`) for them. Such a model is asked again, and
 * from then on, without summaries: it still reasons, it just shows no thoughts.
 */
const noSummaries = new WeakMap<Http.Target, Set<string>>()
const summariesOff = (call: Http.Call) => noSummaries.get(call.target)?.has(call.model.id) === true

const degrade = (call: Http.Call, status: number, detail: Errors.Detail): boolean => {
  if (status !== 400 || detail.param !== "reasoning.summary" || !call.model.reasoning || summariesOff(call)) return false
  const models = noSummaries.get(call.target) ?? new Set<string>()
  models.add(call.model.id)
  noSummaries.set(call.target, models)
  return true
}

const body = (call: Http.Call): Json => {
  const { request, model } = call
  const effort = Models.effortFor(model, request.reasoningEffort)
  return {
    model: model.id,
    instructions: request.system,
    input: input(request.messages, model.images),
    stream: true,
    store: false,
    prompt_cache_key: request.sessionId,
    ...(request.tools.length > 0
      ? { tools: request.tools.map((t) => ({ type: "function", name: t.name, description: t.description, parameters: t.parameters, strict: false })) }
      : {}),
    ...(model.reasoning
      ? {
        reasoning: { ...(effort !== undefined ? { effort } : {}), ...(summariesOff(call) ? {} : { summary: "auto" }) },
        include: ["reasoning.encrypted_content"]
      }
      : {}),
    ...(model.maxOutput !== undefined ? { max_output_tokens: model.maxOutput } : {})
  }
}

const num = (u: unknown): number | undefined => (typeof u === "number" && Number.isFinite(u) ? u : undefined)
const obj = (u: unknown): Json => (typeof u === "object" && u !== null ? (u as Json) : {})

const usageOf = (u: Json): Usage => {
  const cached = num(obj(u.input_tokens_details).cached_tokens)
  return { input: num(u.input_tokens) ?? 0, output: num(u.output_tokens) ?? 0, ...(cached !== undefined ? { cached } : {}) }
}

const decoder = (call: Http.Call): Http.Decoder => {
  const calls = new Map<string, { callId: string; name: string; args: string }>()
  /** Summary parts seen per reasoning item, to separate them. */
  const summaries = new Map<string, number>()
  let sawTool = false
  let refused = false
  let finished = false

  const completed = (response: Json, stop: "end_turn" | "max_tokens" | "refusal"): Array<Http.Item> => {
    finished = true
    const parts: Array<Http.Item> = []
    if (typeof response.usage === "object" && response.usage !== null) parts.push({ _tag: "Usage", usage: usageOf(response.usage as Json) })
    parts.push({ _tag: "Finish", stop: sawTool && stop === "end_turn" ? "tool_use" : refused && stop === "end_turn" ? "refusal" : stop })
    return parts
  }

  return {
    event: (event) => {
      if (finished) return []
      const data = Http.json(event, call.who)
      if (data instanceof Errors.ProviderError) return [data]
      switch (data.type) {
        case "response.output_text.delta":
          return typeof data.delta === "string" && data.delta.length > 0 ? [{ _tag: "TextDelta", text: data.delta }] : []
        case "response.refusal.delta":
          refused = true
          return typeof data.delta === "string" && data.delta.length > 0 ? [{ _tag: "TextDelta", text: data.delta }] : []
        case "response.reasoning_summary_text.delta":
        case "response.reasoning_text.delta": {
          if (typeof data.delta !== "string" || data.delta.length === 0) return []
          const key = `${String(data.item_id)}:${data.type}`
          const index = num(data.summary_index) ?? num(data.content_index) ?? 0
          const seen = summaries.get(key)
          summaries.set(key, index)
          const sep = seen !== undefined && seen !== index ? "\n\n" : ""
          return [{ _tag: "ThinkingDelta", text: sep + data.delta }]
        }
        case "response.output_item.added": {
          const item = obj(data.item)
          if (item.type === "function_call" && typeof item.id === "string") {
            calls.set(item.id, { callId: String(item.call_id ?? item.id), name: String(item.name ?? ""), args: typeof item.arguments === "string" ? item.arguments : "" })
          }
          return []
        }
        case "response.function_call_arguments.delta": {
          const c = calls.get(String(data.item_id))
          if (c !== undefined && typeof data.delta === "string") c.args += data.delta
          return []
        }
        case "response.output_item.done": {
          const item = obj(data.item)
          if (item.type === "function_call") {
            sawTool = true
            const c = typeof item.id === "string" ? calls.get(item.id) : undefined
            const args = typeof item.arguments === "string" ? item.arguments : c?.args ?? ""
            return [{
              _tag: "ToolCall",
              id: String(item.call_id ?? c?.callId ?? item.id),
              name: String(item.name ?? c?.name ?? ""),
              args: Http.parseArgs(args)
            }]
          }
          if (item.type === "reasoning" && typeof item.id === "string" && typeof item.encrypted_content === "string") {
            const signature = Content.responsesSignature({ type: "reasoning", id: item.id, encrypted_content: item.encrypted_content })
            return [{ _tag: "ThinkingDelta", text: "", signature }]
          }
          return []
        }
        case "response.completed":
          return completed(obj(data.response), "end_turn")
        case "response.incomplete": {
          const response = obj(data.response)
          const reason = obj(response.incomplete_details).reason
          return completed(response, reason === "content_filter" ? "refusal" : "max_tokens")
        }
        case "response.failed": {
          const response = obj(data.response)
          return [Errors.fromEvent(Errors.detailOf({ error: response.error ?? {} }), call.who)]
        }
        case "error":
          return [Errors.fromEvent(Errors.detailOf(data.error !== undefined ? data : { error: data }), call.who)]
        default:
          return []
      }
    },
    end: () => finished ? [] : [Errors.make("network", call.who, { cause: "the stream ended early", lost: true })]
  }
}

export const dialect: Http.Dialect = {
  name: "openai-responses",
  path: "/responses",
  headers: (target): Record<string, string> => (target.apiKey !== undefined ? { authorization: `Bearer ${target.apiKey}` } : {}),
  body,
  degrade,
  decoder
}

export const make = (target: Http.Target, client: HttpClient): Provider => Http.make(dialect, target, client)
