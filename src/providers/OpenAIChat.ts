/**
 * `openai-chat`: OpenAI-compatible Chat Completions, streaming, with function
 * tools (parallel calls too). The lowest common denominator that Ollama, vLLM,
 * llama.cpp's server, LM Studio, OpenRouter, Groq and DeepSeek all speak, so
 * it sends only what they all accept and reads the common extensions
 * (`reasoning_content` / `reasoning` deltas, DeepSeek's cache counters).
 */
import type { HttpClient } from "effect/http/HttpClient"
import type { Message, Usage } from "../Vocabulary.ts"
import * as Content from "./Content.ts"
import * as Errors from "./Errors.ts"
import * as Http from "./Http.ts"
import * as Models from "./Models.ts"
import type { Provider, StreamPart } from "./Provider.ts"

type Json = Record<string, unknown>

const userContent = (message: Extract<Message, { role: "user" }>, images: boolean): string | Array<Json> => {
  const pieces = Content.pieces(message.content, images)
  if (pieces.every((p) => p.type === "text")) return pieces.map((p) => (p.type === "text" ? p.text : "")).join("\n")
  return pieces.map((p) => (p.type === "text" ? { type: "text", text: p.text } : { type: "image_url", image_url: { url: Content.dataUrl(p) } }))
}

/** The conversation as Chat Completions messages (reasoning is not sent back: several servers refuse it). */
const messages = (system: string, history: ReadonlyArray<Message>, images: boolean): Array<Json> => {
  const out: Array<Json> = system.length > 0 ? [{ role: "system", content: system }] : []
  for (const message of history) {
    switch (message.role) {
      case "user":
        out.push({ role: "user", content: userContent(message, images) })
        break
      case "assistant": {
        const text = message.parts.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("")
        const calls = message.parts.flatMap((p) =>
          p.type === "tool_call" ? [{ id: p.id, type: "function", function: { name: p.name, arguments: Http.argsText(p.args) } }] : []
        )
        if (text.length === 0 && calls.length === 0) break
        out.push({ role: "assistant", content: text.length > 0 ? text : null, ...(calls.length > 0 ? { tool_calls: calls } : {}) })
        break
      }
      case "tool":
        out.push({ role: "tool", tool_call_id: message.id, content: message.content })
        break
    }
  }
  return out
}

const isOpenAI = (baseUrl: string) => {
  try {
    return new URL(baseUrl).host === "api.openai.com"
  } catch {
    return false
  }
}

const body = (call: Http.Call): Json => {
  const { request, model } = call
  const effort = Models.effortFor(model, request.reasoningEffort)
  return {
    model: model.id,
    messages: messages(request.system, request.messages, model.images),
    stream: true,
    stream_options: { include_usage: true },
    ...(request.tools.length > 0
      ? { tools: request.tools.map((t) => ({ type: "function", function: { name: t.name, description: t.description, parameters: t.parameters } })) }
      : {}),
    // OpenAI's own API wants `max_completion_tokens` (its reasoning models refuse `max_tokens`); compatible servers know `max_tokens`.
    ...(model.maxOutput !== undefined ? { [isOpenAI(call.target.baseUrl) ? "max_completion_tokens" : "max_tokens"]: model.maxOutput } : {}),
    ...(effort !== undefined ? { reasoning_effort: effort } : {})
  }
}

const num = (u: unknown): number | undefined => (typeof u === "number" && Number.isFinite(u) ? u : undefined)

const usageOf = (u: Json): Usage => {
  const details = (u.prompt_tokens_details ?? {}) as Json
  const cached = num(details.cached_tokens) ?? num(u.prompt_cache_hit_tokens)
  return { input: num(u.prompt_tokens) ?? 0, output: num(u.completion_tokens) ?? 0, ...(cached !== undefined ? { cached } : {}) }
}

const stopOf = (reason: string | undefined, sawTools: boolean): Extract<StreamPart, { _tag: "Finish" }>["stop"] => {
  if (sawTools) return "tool_use"
  if (reason === "length") return "max_tokens"
  if (reason === "content_filter") return "refusal"
  return "end_turn"
}

interface PendingCall {
  id: string | undefined
  name: string
  args: string
}

const decoder = (call: Http.Call): Http.Decoder => {
  const calls = new Map<number, PendingCall>()
  let finishReason: string | undefined
  let usage: Usage | undefined
  let finished = false

  const finish = (): Array<Http.Item> => {
    finished = true
    const parts: Array<Http.Item> = []
    const ordered = [...calls.entries()].sort(([a], [b]) => a - b)
    ordered.forEach(([index, c]) => {
      parts.push({
        _tag: "ToolCall",
        id: c.id ?? `call_${call.request.turn}_${call.request.call}_${index + 1}`,
        name: c.name,
        args: Http.parseArgs(c.args)
      })
    })
    if (usage !== undefined) parts.push({ _tag: "Usage", usage })
    parts.push({ _tag: "Finish", stop: stopOf(finishReason, calls.size > 0) })
    return parts
  }

  /** Which call a delta continues: by `index`, else by `id` (servers that omit the index), else the last one. */
  const keyOf = (delta: Json, position: number): number => {
    const index = num(delta.index)
    if (index !== undefined) return index
    const last = calls.size === 0 ? undefined : Math.max(...calls.keys())
    if (typeof delta.id === "string" && delta.id.length > 0) {
      for (const [key, c] of calls) if (c.id === delta.id) return key
      return last === undefined ? position : last + 1
    }
    return last ?? position
  }

  const toolDelta = (delta: Json, position: number) => {
    const key = keyOf(delta, position)
    const fn = (delta.function ?? {}) as Json
    const current = calls.get(key) ?? { id: undefined, name: "", args: "" }
    if (typeof delta.id === "string" && delta.id.length > 0) current.id = delta.id
    // Names come whole (or in pieces); a server that repeats the whole name must not double it.
    if (typeof fn.name === "string" && fn.name !== current.name) current.name += fn.name
    if (typeof fn.arguments === "string") current.args += fn.arguments
    else if (fn.arguments !== undefined && fn.arguments !== null) current.args = JSON.stringify(fn.arguments)
    calls.set(key, current)
  }

  return {
    event: (event) => {
      if (finished) return []
      if (event.data.trim() === "[DONE]") return finish()
      const data = Http.json(event, call.who)
      if (data instanceof Errors.ProviderError) return [data]
      if (data.error !== undefined && data.error !== null) return [Errors.fromEvent(Errors.detailOf(data), call.who)]
      if (typeof data.usage === "object" && data.usage !== null) usage = usageOf(data.usage as Json)
      const parts: Array<Http.Item> = []
      const choices = Array.isArray(data.choices) ? (data.choices as Array<Json>) : []
      const choice = choices[0]
      if (choice === undefined) return parts
      const delta = (choice.delta ?? {}) as Json
      const reasoning = typeof delta.reasoning_content === "string" ? delta.reasoning_content : typeof delta.reasoning === "string" ? delta.reasoning : undefined
      if (reasoning !== undefined && reasoning.length > 0) parts.push({ _tag: "ThinkingDelta", text: reasoning })
      if (typeof delta.content === "string" && delta.content.length > 0) parts.push({ _tag: "TextDelta", text: delta.content })
      if (Array.isArray(delta.tool_calls)) (delta.tool_calls as Array<Json>).forEach(toolDelta)
      if (typeof choice.finish_reason === "string") finishReason = choice.finish_reason
      return parts
    },
    end: () => {
      if (finished) return []
      // Some servers close the stream without `[DONE]` once the choice finished.
      if (finishReason !== undefined) return finish()
      return [Errors.make("network", call.who, { cause: "the stream ended early", lost: true })]
    }
  }
}

export const dialect: Http.Dialect = {
  name: "openai-chat",
  path: "/chat/completions",
  headers: (target): Record<string, string> => (target.apiKey !== undefined ? { authorization: `Bearer ${target.apiKey}` } : {}),
  body,
  decoder
}

export const make = (target: Http.Target, client: HttpClient): Provider => Http.make(dialect, target, client)
