/**
 * `$SKEIN_HOME/config.json`: the providers and models a user declares.
 *
 * ```json
 * {
 *   "provider": "local",
 *   "model": "qwen3-coder:30b",
 *   "idleTimeoutMs": 120000,
 *   "providers": {
 *     "local": {
 *       "dialect": "openai-chat",
 *       "baseUrl": "http://127.0.0.1:11434/v1",
 *       "models": [{ "id": "qwen3-coder:30b", "contextWindow": 262144, "maxOutput": 16384 }]
 *     },
 *     "openrouter": {
 *       "dialect": "openai-chat",
 *       "baseUrl": "https://openrouter.ai/api/v1",
 *       "apiKeyEnv": "OPENROUTER_API_KEY",
 *       "headers": { "X-Title": "Skein" },
 *       "models": ["anthropic/claude-sonnet-4.5"]
 *     },
 *     "anthropic-messages": {
 *       "models": [{ "id": "claude-sonnet-4-5", "price": { "input": 3, "output": 15, "cachedInput": 0.3 } }]
 *     }
 *   }
 * }
 * ```
 *
 * A provider named after a dialect configures that built-in provider; any
 * other name needs a `dialect`. Keys are best given as `apiKeyEnv` (the name
 * of the variable holding it); `apiKey` is accepted. Prices are USD per
 * million tokens.
 */
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import * as Secrets from "../secrets/Secrets.ts"
import * as Errors from "./Errors.ts"
import { dialects } from "./Models.ts"

const PositiveInt = Schema.Int.check(Schema.isGreaterThan(0))

const Price = Schema.Struct({
  input: Schema.Number,
  output: Schema.Number,
  cachedInput: Schema.optionalKey(Schema.Number)
})

export const ModelDecl = Schema.Struct({
  id: Schema.String,
  name: Schema.optionalKey(Schema.String),
  contextWindow: Schema.optionalKey(PositiveInt),
  maxOutput: Schema.optionalKey(PositiveInt),
  /** `true`: the dialect's efforts; a list: those efforts; `false`: none. */
  reasoning: Schema.optionalKey(Schema.Union([Schema.Boolean, Schema.Array(Schema.String)])),
  defaultEffort: Schema.optionalKey(Schema.String),
  images: Schema.optionalKey(Schema.Boolean),
  price: Schema.optionalKey(Price)
})
export type ModelDecl = typeof ModelDecl.Type

export const ProviderDecl = Schema.Struct({
  dialect: Schema.optionalKey(Schema.Literals(dialects)),
  baseUrl: Schema.optionalKey(Schema.String),
  apiKey: Schema.optionalKey(Schema.String),
  apiKeyEnv: Schema.optionalKey(Schema.String),
  headers: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  idleTimeoutMs: Schema.optionalKey(PositiveInt),
  maxAttempts: Schema.optionalKey(PositiveInt),
  models: Schema.optionalKey(Schema.Array(Schema.Union([Schema.String, ModelDecl])))
})
export type ProviderDecl = typeof ProviderDecl.Type

export const ConfigFile = Schema.Struct({
  /** The default provider. */
  provider: Schema.optionalKey(Schema.String),
  /** The default model (of the default provider). */
  model: Schema.optionalKey(Schema.String),
  idleTimeoutMs: Schema.optionalKey(PositiveInt),
  providers: Schema.optionalKey(Schema.Record(Schema.String, ProviderDecl))
})
export type ConfigFile = typeof ConfigFile.Type

type Status =
  | { readonly _tag: "missing" }
  | { readonly _tag: "ok" }
  | { readonly _tag: "invalid"; readonly message: string }

export interface Loaded {
  readonly path: string
  readonly status: Status
  /** Empty unless the file parsed. */
  readonly file: ConfigFile
}

/** Every string under `apiKey` in a JSON value, to keep them out of error messages. */
const apiKeys = (json: unknown): Array<string> => {
  const found: Array<string> = []
  const walk = (u: unknown) => {
    if (Array.isArray(u)) u.forEach(walk)
    else if (typeof u === "object" && u !== null) {
      for (const [k, v] of Object.entries(u)) {
        if (k === "apiKey" && typeof v === "string") found.push(v)
        else if (k === "headers" && typeof v === "object" && v !== null) found.push(...Object.values(v).filter((x): x is string => typeof x === "string"))
        else walk(v)
      }
    }
  }
  walk(json)
  return found
}

/** Parses the text of a config file; the message names what is wrong, never a value. */
export const parse = (text: string, path: string): { readonly file: ConfigFile; readonly status: Status } => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return { file: {}, status: { _tag: "invalid", message: `${path} is not valid JSON` } }
  }
  const decoded = Schema.decodeUnknownResult(ConfigFile)(json, { onExcessProperty: "ignore" })
  if (decoded._tag === "Success") return { file: decoded.success, status: { _tag: "ok" } }
  const detail = Errors.scrub(decoded.failure.message.replace(/\s+/g, " "), apiKeys(json)).slice(0, 500)
  return { file: {}, status: { _tag: "invalid", message: `${path} is not a valid Skein config: ${detail}` } }
}

/**
 * Makes the keys a config declares known secrets (redacted everywhere, kept out of child
 * environments): literal `apiKey`s, the variables `apiKeyEnv` names and their values, and
 * header values.
 */
export const registerSecrets = (file: ConfigFile, env: Readonly<Record<string, string | undefined>>, registry = Secrets.registry()) => {
  for (const decl of Object.values(file.providers ?? {})) {
    registry.addValue(decl.apiKey)
    if (decl.apiKeyEnv !== undefined) {
      registry.addName(decl.apiKeyEnv)
      registry.addValue(env[decl.apiKeyEnv])
    }
    for (const [name, value] of Object.entries(decl.headers ?? {})) registry.addConfigured(name, value)
  }
}

/** Reads `<home>/config.json`; a missing file is no error. */
const missing: unique symbol = Symbol("missing")
const unreadable: unique symbol = Symbol("unreadable")

export const load = Effect.fn("ProviderConfig.load")(function*(home: string) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const file = path.join(home, "config.json")
  // One read, no separate existence check: start-up pays for every file-system round trip.
  const text = yield* fs.readFileString(file).pipe(
    Effect.catch((error) => Effect.succeed(error.reason._tag === "NotFound" ? missing : unreadable))
  )
  if (text === missing) return { path: file, status: { _tag: "missing" }, file: {} } satisfies Loaded
  if (text === unreadable) return { path: file, status: { _tag: "invalid", message: `${file} cannot be read` }, file: {} } satisfies Loaded
  return { path: file, ...parse(text, file) } satisfies Loaded
})
