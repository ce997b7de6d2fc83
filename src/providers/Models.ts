/**
 * What Skein knows about a model: its context window, output limit, reasoning
 * efforts, whether it accepts images, and its price. From the config file
 * first; for well-known vendor models, from the small table below.
 *
 * Usage convention (`Usage` in the log): `input` counts every prompt token,
 * cached ones included; `cached` is the part read from the provider's cache.
 */
import type { Usage } from "../Vocabulary.ts"

export type Dialect = "openai-responses" | "openai-chat" | "anthropic-messages"
export const dialects: ReadonlyArray<Dialect> = ["openai-responses", "openai-chat", "anthropic-messages"]
export const isDialect = (s: string): s is Dialect => (dialects as ReadonlyArray<string>).includes(s)

/** USD per million tokens. */
export interface Price {
  readonly input: number
  readonly output: number
  /** Cache reads; defaults to `input`. */
  readonly cachedInput?: number | undefined
}

export interface ModelInfo {
  readonly id: string
  readonly name?: string | undefined
  readonly contextWindow?: number | undefined
  /** Sent as the output limit when set (Anthropic requires one; a default is used there). */
  readonly maxOutput?: number | undefined
  /** Reasoning efforts the model accepts, in order; empty when it has none to choose. */
  readonly efforts: ReadonlyArray<string>
  readonly defaultEffort?: string | undefined
  /** Whether it produces reasoning at all (some do without an effort to choose, e.g. deepseek-reasoner). */
  readonly reasoning: boolean
  readonly images: boolean
  readonly price?: Price | undefined
}

const openaiEfforts = ["low", "medium", "high"]
/** `off` leaves extended thinking disabled. */
const anthropicEfforts = ["off", "low", "medium", "high"]

interface Known {
  readonly match: RegExp
  readonly info: Omit<ModelInfo, "id">
}

const known: Record<Dialect, ReadonlyArray<Known>> = {
  "openai-responses": [
    { match: /^gpt-5(?!.*chat)/, info: { contextWindow: 400_000, efforts: openaiEfforts, defaultEffort: "medium", reasoning: true, images: true } },
    { match: /^(o1|o3|o4)/, info: { contextWindow: 200_000, efforts: openaiEfforts, defaultEffort: "medium", reasoning: true, images: true } },
    { match: /^gpt-4\.1/, info: { contextWindow: 1_047_576, efforts: [], reasoning: false, images: true } },
    { match: /^(gpt-4o|gpt-5.*chat|chatgpt)/, info: { contextWindow: 128_000, efforts: [], reasoning: false, images: true } },
    { match: /^gpt-oss/, info: { contextWindow: 131_072, efforts: openaiEfforts, defaultEffort: "medium", reasoning: true, images: false } }
  ],
  "openai-chat": [
    { match: /^gpt-5(?!.*chat)/, info: { contextWindow: 400_000, efforts: openaiEfforts, defaultEffort: "medium", reasoning: true, images: true } },
    { match: /^(o1|o3|o4)/, info: { contextWindow: 200_000, efforts: openaiEfforts, defaultEffort: "medium", reasoning: true, images: true } },
    { match: /^gpt-4\.1/, info: { contextWindow: 1_047_576, efforts: [], reasoning: false, images: true } },
    { match: /^(gpt-4o|gpt-5.*chat)/, info: { contextWindow: 128_000, efforts: [], reasoning: false, images: true } },
    { match: /^deepseek-reasoner/, info: { contextWindow: 128_000, efforts: [], reasoning: true, images: false } },
    { match: /^deepseek-chat/, info: { contextWindow: 128_000, efforts: [], reasoning: false, images: false } }
  ],
  "anthropic-messages": [
    { match: /^claude-(opus-4|4-opus)/, info: { contextWindow: 200_000, maxOutput: 32_000, efforts: anthropicEfforts, defaultEffort: "medium", reasoning: true, images: true } },
    { match: /^claude-(sonnet-4|4-sonnet|haiku-4|3-7-sonnet)/, info: { contextWindow: 200_000, maxOutput: 64_000, efforts: anthropicEfforts, defaultEffort: "medium", reasoning: true, images: true } },
    { match: /^claude-3-5/, info: { contextWindow: 200_000, maxOutput: 8_192, efforts: [], reasoning: false, images: true } },
    { match: /^claude-3/, info: { contextWindow: 200_000, maxOutput: 4_096, efforts: [], reasoning: false, images: true } }
  ]
}

/** The defaults of a dialect for a model id nobody described. */
const fallback: Record<Dialect, Omit<ModelInfo, "id">> = {
  "openai-responses": { efforts: [], reasoning: false, images: true },
  // Local servers (Ollama, llama.cpp, vLLM…) mostly serve text-only models.
  "openai-chat": { efforts: [], reasoning: false, images: false },
  "anthropic-messages": { maxOutput: 8_192, efforts: [], reasoning: false, images: true }
}

/** What the table says of `id` under `dialect`. */
export const builtin = (dialect: Dialect, id: string): ModelInfo => {
  const bare = id.includes("/") ? id.slice(id.lastIndexOf("/") + 1) : id
  const hit = known[dialect].find((k) => k.match.test(bare))
  return { id, ...(hit?.info ?? fallback[dialect]) }
}

/** One model a session may switch to: the value of the `model` config option is its `key`. */
export interface CatalogEntry {
  /** `provider/id`. */
  readonly key: string
  readonly provider: string
  readonly info: ModelInfo
}

/** The models on offer and what is known of them: what the runtime needs for config options and usage. */
export interface Catalog {
  readonly entries: ReadonlyArray<CatalogEntry>
  /** The key of the model new sessions use. */
  readonly defaultModel: string | undefined
  /** What is known of a model key (or bare id): context window, efforts, price… */
  readonly info: (model: string | undefined) => ModelInfo | undefined
}

/** The built-in facts under what the config file declares. */
export const merge = (base: ModelInfo, declared: Partial<ModelInfo>): ModelInfo => {
  const out: Record<string, unknown> = { ...base }
  for (const [key, value] of Object.entries(declared)) if (value !== undefined) out[key] = value
  return out as unknown as ModelInfo
}

/** The model a request names for a provider (its default when none), with what is known of it. */
export const modelOf = (
  provider: { readonly dialect: Dialect; readonly models: ReadonlyMap<string, ModelInfo>; readonly defaultModel: string | undefined },
  id: string | undefined
): ModelInfo | undefined => {
  const chosen = id ?? provider.defaultModel
  if (chosen === undefined) return undefined
  return provider.models.get(chosen) ?? builtin(provider.dialect, chosen)
}

/** The longest silence allowed between two events of a stream, unless configured. */
export const DEFAULT_IDLE_TIMEOUT_MS = 120_000

/** The default output limit sent to Anthropic, which requires one. */
export const ANTHROPIC_DEFAULT_MAX_OUTPUT = 8_192

/** The tokens of the context after a call: its whole prompt and its answer (not a sum over calls). */
export const contextUsed = (usage: Usage): number => usage.input + usage.output

/** The cost of one call in USD, when the model's price is known. */
export const cost = (usage: Usage, price: Price | undefined): number | undefined => {
  if (price === undefined) return undefined
  const cached = Math.min(usage.cached ?? 0, usage.input)
  return ((usage.input - cached) * price.input + cached * (price.cachedInput ?? price.input) + usage.output * price.output) / 1_000_000
}

/** The effort to send: the session's choice if the model accepts it, else the model's default. */
export const effortFor = (model: ModelInfo, chosen: string | undefined): string | undefined =>
  chosen !== undefined && model.efforts.includes(chosen) ? chosen : model.defaultEffort
