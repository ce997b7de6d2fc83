/**
 * Provider errors as data: one `ProviderError` with a `reason`, a message the
 * user can act on, and whether trying again may help.
 *
 * Messages are built from the status, the provider's own error code and a
 * short, scrubbed excerpt of its error text. They never contain the API key,
 * an auth header, or anything that looks like one (Invariant 6).
 */
import * as Schema from "effect/Schema"
import * as Secrets from "../secrets/Secrets.ts"

export const Reason = Schema.Literals([
  "auth",
  "rate_limit",
  "quota",
  "context_overflow",
  "invalid_request",
  "not_found",
  "server",
  "network",
  "timeout",
  "protocol"
])
export type Reason = typeof Reason.Type

export class ProviderError extends Schema.TaggedError<ProviderError>()("ProviderError", {
  reason: Reason,
  /** What the user sees: what went wrong and what to do. Scrubbed of secrets. */
  message: Schema.String,
  retryable: Schema.Boolean,
  status: Schema.optionalKey(Schema.Number),
  /** How long the provider asked us to wait (`retry-after`), in milliseconds. */
  retryAfterMs: Schema.optionalKey(Schema.Number)
}) {}

/** Who was called, for messages: never the key itself. */
export interface Who {
  /** The provider's name as the user configured it, e.g. `openai-chat`. */
  readonly provider: string
  readonly model: string
  /** A base URL safe to show (no user info, no query). */
  readonly baseUrl: string
  /** Where the key comes from, e.g. `OPENAI_API_KEY`; undefined when the provider has none. */
  readonly keySource: string | undefined
  /** Values to scrub from anything echoed: the key, header values. */
  readonly secrets: ReadonlyArray<string>
}

// ---------------------------------------------------------------------------
// Scrubbing
// ---------------------------------------------------------------------------

/** Removes every known secret, `secrets`, and anything shaped like a key or a bearer token. */
export const scrub = (text: string, secrets: ReadonlyArray<string> = []): string => Secrets.redactWithShapes(text, secrets)

/** A base URL without user info, query or fragment. */
export const safeUrl = (url: string): string => {
  try {
    const u = new URL(url)
    return `${u.protocol}//${u.host}${u.pathname}`.replace(/\/$/, "")
  } catch {
    return "(an invalid URL)"
  }
}

const excerpt = (text: string, secrets: ReadonlyArray<string>, max = 300): string => {
  const clean = scrub(text, secrets).replace(/\s+/g, " ").trim()
  return clean.length > max ? `${clean.slice(0, max)}…` : clean
}

// ---------------------------------------------------------------------------
// Reading an error body
// ---------------------------------------------------------------------------

/** The provider's own description of an error: its code or type, and its message. */
export interface Detail {
  readonly code: string | undefined
  readonly message: string | undefined
  /** The request field the provider objected to (OpenAI's `error.param`), when it says. */
  readonly param?: string | undefined
}

const str = (u: unknown): string | undefined => (typeof u === "string" && u.length > 0 ? u : typeof u === "number" ? String(u) : undefined)

/** Reads `{error: {message, type, code}}` (OpenAI, Anthropic, OpenRouter), `{error: "…"}` (Ollama), `{message, type}` (vLLM). */
export const detailOf = (json: unknown): Detail => {
  if (typeof json !== "object" || json === null) return { code: undefined, message: undefined }
  const o = json as Record<string, unknown>
  const error = o.error
  if (typeof error === "string") return { code: undefined, message: error }
  if (typeof error === "object" && error !== null) {
    const e = error as Record<string, unknown>
    const param = str(e.param)
    return { code: str(e.code) ?? str(e.type), message: str(e.message), ...(param !== undefined ? { param } : {}) }
  }
  return { code: str(o.code) ?? (o.type !== "error" ? str(o.type) : undefined), message: str(o.message) ?? str(o.detail) }
}

export const parseDetail = (body: string): Detail => {
  try {
    return detailOf(JSON.parse(body))
  } catch {
    const text = body.trim()
    return { code: undefined, message: text.length > 0 && !text.startsWith("<") ? text : undefined }
  }
}

const overflow =
  /context[_ ]length|context[_ ]window|maximum context|prompt is too long|input is too long|too many (?:input |prompt )?tokens|reduce the length of the (?:messages|prompt|input)|exceeds? the model'?s? (?:maximum )?context/i
const quota = /insufficient_quota|quota|billing|credit balance|out of credits|payment required/i

// ---------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------

const said = (detail: Detail, who: Who) => detail.message === undefined ? "" : ` The provider said: "${excerpt(detail.message, who.secrets)}"`

const keyHint = (who: Who) =>
  who.keySource === undefined ? "configure an API key for it in $SKEIN_HOME/config.json (apiKeyEnv)" : `check ${who.keySource}`

export const make = (reason: Reason, who: Who, options: {
  readonly status?: number | undefined
  readonly detail?: Detail | undefined
  readonly retryAfterMs?: number | undefined
  readonly cause?: string | undefined
  /** A network error after the response started: the connection broke mid-answer. */
  readonly lost?: boolean | undefined
} = {}): ProviderError => {
  const status = options.status
  const http = status !== undefined ? ` (HTTP ${status})` : ""
  const detail = options.detail ?? { code: undefined, message: undefined }
  const p = who.provider
  let message: string
  let retryable = false
  switch (reason) {
    case "auth":
      message = status === 403
        ? `Provider ${p} refused access${http}: ${keyHint(who)} and that it may use model "${who.model}".`
        : `Authentication failed for provider ${p}${http}: ${keyHint(who)}.`
      break
    case "rate_limit":
      retryable = true
      message = `Provider ${p} is rate limiting requests${http}. Wait a little and try again, or choose another model.`
      break
    case "quota":
      message = `Provider ${p} refused the request${http}: the account is out of quota or credits. Check its billing.`
      break
    case "context_overflow":
      message = `The conversation is too long for model "${who.model}"${http}: its context window is full. Start a new session, or choose a model with a larger context window.`
      break
    case "invalid_request":
      message = `Provider ${p} rejected the request${http}. Check the model "${who.model}" and the provider's settings.`
      break
    case "not_found":
      message = `Provider ${p} answered "not found"${http} for model "${who.model}" at ${who.baseUrl}: check the model id (--model) and the base URL.`
      break
    case "server":
      retryable = true
      message = `Provider ${p} had a server error${http}. Try again later, or choose another model.`
      break
    case "network":
      retryable = true
      message = options.lost === true
        ? `The connection to provider ${p} broke before the answer was complete${options.cause !== undefined ? ` (${options.cause})` : ""}. Try again.`
        : `Could not reach provider ${p} at ${who.baseUrl}${options.cause !== undefined ? ` (${options.cause})` : ""}. Check the base URL, that the server is running, and your network.`
      break
    case "timeout":
      retryable = true
      message = `Provider ${p} sent nothing for ${options.cause ?? "too long"}, so the call was abandoned. Try again; a slow local model may need a longer idle timeout (idleTimeoutMs in config.json, or SKEIN_IDLE_TIMEOUT_MS).`
      break
    case "protocol":
      message = `Provider ${p} sent a response Skein could not read${options.cause !== undefined ? ` (${options.cause})` : ""}. Check that its dialect matches its API.`
      break
  }
  return new ProviderError({
    reason,
    message: scrub(`${message}${said(detail, who)}`, who.secrets),
    retryable,
    ...(status !== undefined ? { status } : {}),
    ...(options.retryAfterMs !== undefined ? { retryAfterMs: options.retryAfterMs } : {})
  })
}

/** The reason of an error code or type a provider put in its body or in a stream event. */
const reasonOfCode = (code: string | undefined, message: string | undefined): Reason | undefined => {
  const text = `${code ?? ""} ${message ?? ""}`
  if (code !== undefined) {
    if (/insufficient_quota|billing/i.test(code)) return "quota"
    if (/context_length|context_window|too_long/i.test(code)) return "context_overflow"
    if (/rate_limit|too_many_requests/i.test(code)) return "rate_limit"
    if (/overloaded|server_error|api_error|internal|unavailable|timeout/i.test(code)) return "server"
    if (/authentication|invalid_api_key|unauthorized|permission/i.test(code)) return "auth"
    if (/not_found|model_not_found/i.test(code)) return "not_found"
  }
  if (overflow.test(text)) return "context_overflow"
  if (code !== undefined && /invalid_request|invalid_prompt|bad_request/i.test(code)) return "invalid_request"
  return undefined
}

/** Classifies an HTTP error response. */
export const fromStatus = (status: number, body: string, who: Who, retryAfterMs: number | undefined): ProviderError => {
  const detail = parseDetail(body)
  const byCode = reasonOfCode(detail.code, detail.message)
  const text = `${detail.code ?? ""} ${detail.message ?? ""}`
  let reason: Reason
  if (status === 401 || status === 403) reason = "auth"
  else if (status === 402 || ((status === 429 || status === 400 || status === 403) && quota.test(text))) reason = "quota"
  else if (status === 429) reason = "rate_limit"
  else if (byCode === "context_overflow" || status === 413) reason = "context_overflow"
  else if (status === 404) reason = "not_found"
  else if (status === 408) reason = "timeout"
  else if (status >= 500) reason = "server"
  else reason = byCode ?? "invalid_request"
  return make(reason, who, { status, detail, retryAfterMs, cause: reason === "timeout" ? "the provider's own time limit" : undefined })
}

/** Classifies an error a provider reported inside a 200 stream. */
export const fromEvent = (detail: Detail, who: Who): ProviderError =>
  make(reasonOfCode(detail.code, detail.message) ?? "server", who, { detail })

/** A short, key-free description of a transport failure (`ECONNREFUSED`, `socket hang up`…). */
export const transportCause = (cause: unknown): string | undefined => {
  let current: unknown = cause
  for (let depth = 0; depth < 5 && current !== undefined && current !== null; depth++) {
    if (typeof current === "object") {
      const o = current as Record<string, unknown>
      if (typeof o.code === "string" && /^[A-Z_]+$/.test(o.code)) return o.code
      current = o.cause
    } else {
      break
    }
  }
  return undefined
}
