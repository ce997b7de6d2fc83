/**
 * What `skein setup` offers and how it reads the answers: the providers, a name for an
 * endpoint, a base URL, a variable name, a model from a list. Pure; the questions themselves
 * are in `setup.ts`.
 */
import { DEFAULT_MODELS } from "../providers/Registry.ts"
import { dialects, type Dialect } from "../providers/Models.ts"

export interface ProviderKind {
  readonly label: string
  /** The built-in provider it configures; undefined: an OpenAI-compatible endpoint, named by the user. */
  readonly builtin: Dialect | undefined
  /** The variable the vendor's tools read the key from. */
  readonly keyEnv: string
}

export const PROVIDERS: ReadonlyArray<ProviderKind> = [
  { label: "Anthropic (Claude)", builtin: "anthropic-messages", keyEnv: "ANTHROPIC_API_KEY" },
  { label: "OpenAI", builtin: "openai-responses", keyEnv: "OPENAI_API_KEY" },
  {
    label: "An OpenAI-compatible server: a local one (Ollama, LM Studio, llama.cpp, vLLM) or a service (OpenRouter, Groq, …)",
    builtin: undefined,
    keyEnv: "OPENAI_API_KEY"
  }
]

/** The base URL a local server such as Ollama answers at. */
export const LOCAL_URL = "http://127.0.0.1:11434/v1"

/** A base URL as typed: an absolute http(s) URL without query or fragment, its trailing slashes dropped. */
export const baseUrl = (input: string): { readonly url: string } | { readonly problem: string } => {
  const text = input.trim()
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return { problem: "That is not a URL (it starts with http:// or https://)" }
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return { problem: "Only http:// and https:// URLs are supported" }
  if (url.username !== "" || url.password !== "") return { problem: "Leave credentials out of the URL: the key is asked for next" }
  if (url.search !== "" || url.hash !== "") return { problem: "Leave out the query and fragment: the base URL is where /chat/completions is found" }
  return { url: text.replace(/\/+$/, "") }
}

const isLoopback = (host: string) => host === "localhost" || host.startsWith("127.") || host === "[::1]" || host === "0.0.0.0"

/** A name for an endpoint in config.json: `local` on this machine, else after its host (`openrouter.ai` → `openrouter`). */
export const suggestName = (url: string): string => {
  const host = new URL(url).hostname
  if (isLoopback(host)) return "local"
  const labels = host.split(".").filter((label) => !["api", "www", "openai", "v1"].includes(label))
  const name = (labels.length > 1 ? labels[labels.length - 2]! : labels[0] ?? "custom").toLowerCase().replace(/[^a-z0-9-]/g, "")
  return nameProblem(name) === undefined ? name : "custom"
}

/** Why `name` cannot name an endpoint; undefined when it can. */
export const nameProblem = (name: string): string | undefined => {
  if (!/^[a-z0-9][a-z0-9._-]{0,63}$/i.test(name)) return "Use letters, digits, '.', '_' or '-' (up to 64)"
  if ((dialects as ReadonlyArray<string>).includes(name) || name === "scripted") return `"${name}" is the name of a built-in provider`
  return undefined
}

/** Whether `name` can be an environment variable's name. */
export const isEnvName = (name: string): boolean => /^[A-Za-z_][A-Za-z0-9_]*$/.test(name)

/** The model offered first: the built-in default when the list has it (or there is no list), else the list's first. */
export const defaultModel = (kind: ProviderKind, listed: ReadonlyArray<string> | undefined): string | undefined => {
  const builtin = kind.builtin === undefined ? undefined : DEFAULT_MODELS[kind.builtin]
  if (listed === undefined || listed.length === 0) return builtin
  return builtin !== undefined && listed.includes(builtin) ? builtin : listed[0]
}

type Pick =
  | { readonly _tag: "chosen"; readonly id: string }
  /** Not one model: these are the ones that contain what was typed. */
  | { readonly _tag: "narrowed"; readonly ids: ReadonlyArray<string> }
  | { readonly _tag: "again"; readonly problem: string }

/**
 * A model from what was typed: Enter for the default, a number of the list shown, an id of the
 * list, or text that narrows the list. Without a list, any id is taken as it is.
 */
export const pickModel = (input: string, shown: ReadonlyArray<string> | undefined, fallback: string | undefined): Pick => {
  const text = input.trim()
  if (text === "") return fallback !== undefined ? { _tag: "chosen", id: fallback } : { _tag: "again", problem: "Type a model id" }
  if (shown === undefined || shown.length === 0) return { _tag: "chosen", id: text }
  if (/^\d+$/.test(text)) {
    const n = Number(text)
    return n >= 1 && n <= shown.length ? { _tag: "chosen", id: shown[n - 1]! } : { _tag: "again", problem: `Choose 1 to ${shown.length}` }
  }
  if (shown.includes(text)) return { _tag: "chosen", id: text }
  const matches = shown.filter((id) => id.toLowerCase().includes(text.toLowerCase()))
  if (matches.length === 1) return { _tag: "chosen", id: matches[0]! }
  // Not listed and matching nothing: a model the server has but does not list (an alias) is still allowed.
  if (matches.length === 0) return /^[\w./:@-]+$/.test(text) ? { _tag: "chosen", id: text } : { _tag: "again", problem: "No listed model has that in its name" }
  return { _tag: "narrowed", ids: matches }
}

/** How many models are listed at once; a longer list is narrowed by typing part of a name. */
export const LIST_AT_ONCE = 30
