/**
 * Which provider and model answer: from the environment the vendors' SDKs
 * already use, `$SKEIN_HOME/config.json`, and `--provider` / `--model`
 * (`SKEIN_PROVIDER` / `SKEIN_MODEL`).
 *
 * Three providers are built in, named after their dialects and configured by
 * environment alone: `openai-responses` and `openai-chat` (`OPENAI_API_KEY`,
 * `OPENAI_BASE_URL`), `anthropic-messages` (`ANTHROPIC_API_KEY`,
 * `ANTHROPIC_BASE_URL`). The config file adds providers and describes models.
 *
 * `setup` only reads (no network) and never fails: `skein doctor` prints it.
 * `resolve` turns it into a `Provider` — one that routes each call to the
 * provider of the session's model — or, when nothing usable is configured, the
 * unconfigured provider whose answer says what to do.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import type { HttpClient } from "effect/http/HttpClient"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Secrets from "../secrets/Secrets.ts"
import type * as Http from "./Http.ts"
import * as Models from "./Models.ts"
import type { Provider, StreamPart } from "./Provider.ts"
import * as ProviderConfig from "./ProviderConfig.ts"
import * as Retry from "./Retry.ts"
import * as Unconfigured from "./Unconfigured.ts"

export type Env = Readonly<Record<string, string | undefined>>

export interface Options {
  /** `$SKEIN_HOME`. */
  readonly home: string
  readonly env: Env
  /** `--provider` or `SKEIN_PROVIDER`. */
  readonly provider?: string | undefined
  /** `--model` or `SKEIN_MODEL`: a model id, or `provider/id`. */
  readonly model?: string | undefined
  /** The HTTP client the providers use; Effect's fetch client when not given. */
  readonly httpClient?: HttpClient | undefined
  /** The config file as if read (`skein setup` tries one before it writes it); else `<home>/config.json` is read. */
  readonly loadedConfig?: ProviderConfig.Loaded | undefined
}

export interface ProviderSetup {
  readonly target: Http.Target
  readonly builtin: boolean
  readonly declared: boolean
  readonly keyRequired: boolean
  /** Why this provider cannot answer yet (a missing key), in words the user can act on. */
  readonly problem: string | undefined
}

type CatalogEntry = Models.CatalogEntry

interface Choice {
  readonly provider: ProviderSetup
  /** The model's catalog key, when one is chosen. */
  readonly model: string | undefined
  /** Why this provider: `--provider`, `SKEIN_PROVIDER`, `config.json`, `ANTHROPIC_API_KEY is set`… */
  readonly why: string
}

export interface Setup {
  readonly config: ProviderConfig.Loaded
  readonly providers: ReadonlyArray<ProviderSetup>
  readonly catalog: ReadonlyArray<CatalogEntry>
  readonly choice: Choice | undefined
  /** Problems that should stop start-up: an invalid config file, an unknown provider. */
  readonly errors: ReadonlyArray<string>
  /** When the choice cannot answer: what every prompt is told instead. */
  readonly unconfigured: string | undefined
}

export class RegistryError extends Schema.TaggedError<RegistryError>()("RegistryError", {
  reason: Schema.Literals(["invalid_config", "unknown_provider"]),
  message: Schema.String
}) {}

/** Environment variables Skein reads (keys are reported as set or not, never shown). */
export const ENV_VARS = [
  "OPENAI_API_KEY",
  "OPENAI_BASE_URL",
  "OPENAI_ORG_ID",
  "OPENAI_PROJECT_ID",
  "ANTHROPIC_API_KEY",
  "ANTHROPIC_AUTH_TOKEN",
  "ANTHROPIC_BASE_URL",
  "SKEIN_PROVIDER",
  "SKEIN_MODEL",
  "SKEIN_IDLE_TIMEOUT_MS"
] as const

const OPENAI_URL = "https://api.openai.com/v1"
const ANTHROPIC_URL = "https://api.anthropic.com"

/** Models used when a built-in provider is chosen without one. */
export const DEFAULT_MODELS: Partial<Record<Models.Dialect, string>> = {
  "openai-responses": "gpt-5",
  "anthropic-messages": "claude-sonnet-4-5"
}

const get = (env: Env, name: string): string | undefined => {
  const value = env[name]
  return value === undefined || value.trim() === "" ? undefined : value.trim()
}

const hostOf = (url: string): string | undefined => {
  try {
    return new URL(url).host
  } catch {
    return undefined
  }
}

/** What the environment alone says about a dialect's built-in provider. */
const envDefaults = (dialect: Models.Dialect, env: Env) => {
  if (dialect === "anthropic-messages") {
    const apiKey = get(env, "ANTHROPIC_API_KEY")
    const token = apiKey === undefined ? get(env, "ANTHROPIC_AUTH_TOKEN") : undefined
    return {
      baseUrl: get(env, "ANTHROPIC_BASE_URL") ?? ANTHROPIC_URL,
      apiKey,
      keySource: token !== undefined ? "ANTHROPIC_AUTH_TOKEN" : "ANTHROPIC_API_KEY",
      headers: token !== undefined ? { authorization: `Bearer ${token}` } : {} as Record<string, string>,
      vendorHost: "api.anthropic.com",
      hasKey: apiKey !== undefined || token !== undefined
    }
  }
  const org = get(env, "OPENAI_ORG_ID")
  const project = get(env, "OPENAI_PROJECT_ID")
  const apiKey = get(env, "OPENAI_API_KEY")
  return {
    baseUrl: get(env, "OPENAI_BASE_URL") ?? OPENAI_URL,
    apiKey,
    keySource: "OPENAI_API_KEY",
    headers: { ...(org !== undefined ? { "openai-organization": org } : {}), ...(project !== undefined ? { "openai-project": project } : {}) } as Record<string, string>,
    vendorHost: "api.openai.com",
    hasKey: apiKey !== undefined
  }
}

const dialectEfforts = (dialect: Models.Dialect) => (dialect === "anthropic-messages" ? ["off", "low", "medium", "high"] : ["low", "medium", "high"])

/** A declared model over what the table knows of it. */
const modelInfo = (dialect: Models.Dialect, decl: string | ProviderConfig.ModelDecl): Models.ModelInfo => {
  if (typeof decl === "string") return Models.builtin(dialect, decl)
  const base = Models.builtin(dialect, decl.id)
  const reasoning = decl.reasoning
  const efforts = reasoning === undefined ? undefined : reasoning === false ? [] : reasoning === true ? (base.efforts.length > 0 ? base.efforts : dialectEfforts(dialect)) : reasoning
  return Models.merge(base, {
    name: decl.name,
    contextWindow: decl.contextWindow,
    maxOutput: decl.maxOutput,
    images: decl.images,
    price: decl.price,
    ...(efforts !== undefined
      ? { efforts, reasoning: reasoning !== false, defaultEffort: decl.defaultEffort ?? (efforts.includes("medium") ? "medium" : efforts[0]) }
      : decl.defaultEffort !== undefined ? { defaultEffort: decl.defaultEffort } : {})
  })
}

const numberEnv = (env: Env, name: string): number | undefined => {
  const raw = get(env, name)
  const n = raw === undefined ? NaN : Number(raw)
  return Number.isInteger(n) && n > 0 ? n : undefined
}

const providerSetup = (
  name: string,
  decl: ProviderConfig.ProviderDecl | undefined,
  file: ProviderConfig.ConfigFile,
  configPath: string,
  env: Env
): ProviderSetup | string => {
  const builtinDialect = Models.isDialect(name) ? name : undefined
  const dialect = decl?.dialect ?? builtinDialect
  if (dialect === undefined) return `Provider "${name}" in ${configPath} needs a "dialect" (${Models.dialects.join(", ")})`
  const defaults = envDefaults(dialect, env)
  // A custom provider with its own base URL never gets the vendor's key from the environment.
  const inheritsEnv = builtinDialect !== undefined || decl?.baseUrl === undefined
  const baseUrl = decl?.baseUrl ?? defaults.baseUrl
  let apiKey: string | undefined
  let keySource: string | undefined
  let headers: Record<string, string> = {}
  if (decl?.apiKey !== undefined) {
    apiKey = decl.apiKey
    keySource = `the apiKey of provider "${name}" in ${configPath}`
  } else if (decl?.apiKeyEnv !== undefined) {
    apiKey = get(env, decl.apiKeyEnv)
    keySource = decl.apiKeyEnv
  } else if (inheritsEnv) {
    apiKey = defaults.apiKey
    keySource = defaults.keySource
    headers = { ...defaults.headers }
  }
  headers = { ...headers, ...(decl?.headers ?? {}) }
  const hasKey = apiKey !== undefined || headers.authorization !== undefined || headers["x-api-key"] !== undefined
  const keyRequired = decl?.apiKeyEnv !== undefined || hostOf(baseUrl) === defaults.vendorHost
  const models = new Map<string, Models.ModelInfo>()
  for (const m of decl?.models ?? []) {
    const info = modelInfo(dialect, m)
    models.set(info.id, info)
  }
  const firstDeclared = models.keys().next()
  const defaultModel = firstDeclared.done === true ? (builtinDialect !== undefined || inheritsEnv ? DEFAULT_MODELS[dialect] : undefined) : firstDeclared.value
  const idleTimeoutMs = numberEnv(env, "SKEIN_IDLE_TIMEOUT_MS") ?? decl?.idleTimeoutMs ?? file.idleTimeoutMs ?? Models.DEFAULT_IDLE_TIMEOUT_MS
  const problem = keyRequired && !hasKey
    ? `Provider ${name} needs an API key: set ${keySource ?? "its apiKeyEnv variable"}${
      keySource === "OPENAI_API_KEY" ? " (or point OPENAI_BASE_URL at a local server such as Ollama)" : ""
    }.`
    : hostOf(baseUrl) === undefined
    ? `Provider ${name} has an invalid base URL; fix it in ${keySource === undefined ? configPath : "its configuration"}.`
    : undefined
  return {
    target: {
      name,
      dialect,
      baseUrl,
      apiKey,
      keySource,
      headers,
      idleTimeoutMs,
      retry: decl?.maxAttempts !== undefined ? { ...Retry.defaultPolicy, maxAttempts: decl.maxAttempts } : Retry.defaultPolicy,
      models,
      defaultModel
    },
    builtin: builtinDialect !== undefined,
    declared: decl !== undefined,
    keyRequired,
    problem
  }
}

/** The provider to use when none is named: the config's default, else what the environment suggests. */
const autoChoose = (providers: ReadonlyMap<string, ProviderSetup>, options: Options): { name: string; why: string } | undefined => {
  const { env } = options
  const model = options.model
  if (model !== undefined) {
    const slash = model.indexOf("/")
    if (slash > 0 && providers.has(model.slice(0, slash))) return { name: model.slice(0, slash), why: `the model ${model} names it` }
    const owners = [...providers.values()].filter((p) => p.target.models.has(model))
    if (owners.length === 1) return { name: owners[0]!.target.name, why: `it declares model ${model}` }
  }
  if (get(env, "ANTHROPIC_API_KEY") !== undefined || get(env, "ANTHROPIC_AUTH_TOKEN") !== undefined) {
    return { name: "anthropic-messages", why: "ANTHROPIC_API_KEY is set" }
  }
  const openaiBase = get(env, "OPENAI_BASE_URL")
  const local = openaiBase !== undefined && hostOf(openaiBase) !== "api.openai.com"
  if (get(env, "OPENAI_API_KEY") !== undefined) {
    return local ? { name: "openai-chat", why: "OPENAI_BASE_URL points at an OpenAI-compatible server" } : { name: "openai-responses", why: "OPENAI_API_KEY is set" }
  }
  if (local) return { name: "openai-chat", why: "OPENAI_BASE_URL is set" }
  const declared = [...providers.values()].filter((p) => p.declared)
  if (declared.length === 1) return { name: declared[0]!.target.name, why: "it is the only provider in config.json" }
  return undefined
}

/** The catalog key of a model for a provider. */
const keyOf = (provider: string, id: string) => `${provider}/${id}`

/** Reads the configuration: no network, never fails. */
export const setup = Effect.fn("Registry.setup")(function*(options: Options) {
  const config = options.loadedConfig ?? (yield* ProviderConfig.load(options.home))
  const file = config.file
  const errors: Array<string> = []
  if (config.status._tag === "invalid") errors.push(config.status.message)
  const providers = new Map<string, ProviderSetup>()
  const declared = file.providers ?? {}
  for (const name of [...Models.dialects, ...Object.keys(declared).filter((n) => !Models.isDialect(n))]) {
    const made = providerSetup(name, declared[name], file, config.path, options.env)
    if (typeof made === "string") errors.push(made)
    else providers.set(name, made)
  }

  // Every key in play is a secret from now on, wherever it would show up.
  ProviderConfig.registerSecrets(file, options.env)
  for (const provider of providers.values()) {
    Secrets.registry().addValue(provider.target.apiKey)
    for (const [name, value] of Object.entries(provider.target.headers)) Secrets.registry().addConfigured(name, value)
  }

  const named = options.provider ?? file.provider
  let choice: Choice | undefined
  if (named !== undefined) {
    const provider = providers.get(named)
    if (provider === undefined) {
      errors.push(`Unknown provider "${named}" (available: ${[...providers.keys()].join(", ")}, scripted)`)
    } else {
      choice = {
        provider,
        model: undefined,
        why: options.provider !== undefined ? (get(options.env, "SKEIN_PROVIDER") === options.provider ? "SKEIN_PROVIDER" : "--provider") : `"provider" in ${config.path}`
      }
    }
  } else {
    const auto = autoChoose(providers, options)
    if (auto !== undefined) choice = { provider: providers.get(auto.name)!, model: undefined, why: auto.why }
  }

  let unconfigured: string | undefined
  if (choice !== undefined) {
    const name = choice.provider.target.name
    const fileModel = file.model !== undefined && (file.provider === undefined || file.provider === name) ? file.model : undefined
    const raw = options.model ?? fileModel ?? choice.provider.target.defaultModel
    const id = raw !== undefined && raw.startsWith(`${name}/`) ? raw.slice(name.length + 1) : raw
    choice = { ...choice, model: id !== undefined ? keyOf(name, id) : undefined }
    unconfigured = choice.provider.problem ??
      (id === undefined
        ? `Provider ${name} has no model chosen: start Skein with --model ID (or set SKEIN_MODEL), or list models for it in ${config.path}.`
        : undefined)
  } else {
    unconfigured = Unconfigured.MESSAGE
  }

  // The catalog: the chosen model first, then every declared model, then the defaults of usable built-ins.
  const catalog: Array<CatalogEntry> = []
  const seen = new Set<string>()
  const add = (provider: ProviderSetup, id: string) => {
    const key = keyOf(provider.target.name, id)
    if (seen.has(key)) return
    seen.add(key)
    catalog.push({ key, provider: provider.target.name, info: Models.modelOf(provider.target, id)! })
  }
  if (choice?.model !== undefined) add(choice.provider, choice.model.slice(choice.provider.target.name.length + 1))
  for (const provider of providers.values()) {
    if (provider.problem !== undefined) continue
    for (const id of provider.target.models.keys()) add(provider, id)
  }
  for (const provider of providers.values()) {
    const hasKey = provider.target.apiKey !== undefined || Object.keys(provider.target.headers).includes("authorization")
    if (provider.problem === undefined && provider.builtin && provider.keyRequired && hasKey && provider.target.defaultModel !== undefined) {
      add(provider, provider.target.defaultModel)
    }
  }

  return { config, providers: [...providers.values()], catalog, choice, errors, unconfigured } satisfies Setup
})

/** Where a model key (or bare id) is served: its provider and the id the provider sends. */
const route = (s: Setup, model: string | undefined): { readonly provider: ProviderSetup; readonly id: string | undefined } | undefined => {
  if (s.choice === undefined) return undefined
  if (model === undefined) {
    return { provider: s.choice.provider, id: s.choice.model?.slice(s.choice.provider.target.name.length + 1) }
  }
  const entry = s.catalog.find((e) => e.key === model)
  if (entry !== undefined) return { provider: s.providers.find((p) => p.target.name === entry.provider)!, id: entry.info.id }
  const slash = model.indexOf("/")
  const named = slash > 0 ? s.providers.find((p) => p.target.name === model.slice(0, slash)) : undefined
  if (named !== undefined) return { provider: named, id: model.slice(slash + 1) }
  return { provider: s.choice.provider, id: model }
}

/** What is known of a model key (for the context window, the price, the efforts). */
const info = (s: Setup, model: string | undefined): Models.ModelInfo | undefined => {
  const routed = route(s, model)
  return routed === undefined ? undefined : Models.modelOf(routed.provider.target, routed.id)
}

const failure = (message: string): Stream.Stream<StreamPart> => Stream.succeed({ _tag: "Failure", message, retryable: false })

/**
 * The provider for a setup: routes each call to the provider of its model; the
 * unconfigured one when nothing can answer. The HTTP stack loads on the first
 * call, or with `warm`, so start-up does not pay for it.
 */
const provider = (s: Setup, client?: HttpClient): Provider => {
  if (s.choice === undefined || s.unconfigured !== undefined) return Unconfigured.make(s.unconfigured ?? Unconfigured.MESSAGE)
  const made = new Map<string, Provider>()
  let http = client
  // Done when the first call starts: a warm-up still running then has nothing left to do.
  const called = Deferred.makeUnsafe<void>()
  const providerOf = (p: ProviderSetup) =>
    Effect.gen(function*() {
      yield* Deferred.succeed(called, undefined)
      const existing = made.get(p.target.name)
      if (existing !== undefined) return existing
      const Dialects = yield* Effect.promise(() => import("./Dialects.ts"))
      http ??= yield* Dialects.httpClient
      const created = Dialects.make(p.target, http)
      made.set(p.target.name, created)
      return created
    })
  const chosen = s.choice.provider
  return {
    name: chosen.target.name,
    // The chosen provider's: loads the HTTP stack and runs its path once (no model is called),
    // before the first call only; a call that starts meanwhile ends it.
    warm: Effect.suspend(() => {
      if (Deferred.isDoneUnsafe(called)) return Effect.void
      const warmUp = Effect.gen(function*() {
        const Dialects = yield* Effect.promise(() => import("./Dialects.ts"))
        http ??= yield* Dialects.httpClient
        yield* Dialects.warm(chosen.target)
      })
      return Effect.raceFirst(warmUp, Deferred.await(called))
    }),
    stream: (request) =>
      Stream.unwrap(Effect.suspend(() => {
        const routed = route(s, request.model)!
        if (routed.provider.problem !== undefined) return Effect.succeed(failure(routed.provider.problem))
        return Effect.map(providerOf(routed.provider), (p) => p.stream({ ...request, model: routed.id }))
      }))
  }
}

export interface Resolved {
  readonly setup: Setup
  readonly provider: Provider
  /** The default model's catalog key. */
  readonly model: string | undefined
  /** The models on offer (the `model` config option) and what is known of each. */
  readonly models: Models.Catalog
}

/** Reads the configuration (no network) and builds the provider; fails only for an invalid config file or an unknown provider. */
export const resolve = Effect.fn("Registry.resolve")(function*(options: Options) {
  const s = yield* setup(options)
  if (s.errors.length > 0) {
    const reason = s.config.status._tag === "invalid" ? "invalid_config" : "unknown_provider"
    return yield* new RegistryError({ reason, message: s.errors.join("; ") })
  }
  return {
    setup: s,
    provider: provider(s, options.httpClient),
    model: s.choice?.model,
    models: { entries: s.catalog, defaultModel: s.choice?.model, info: (model) => info(s, model) }
  } satisfies Resolved
})

