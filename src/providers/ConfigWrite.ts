/**
 * Changes to `$SKEIN_HOME/config.json` (see `ProviderConfig.ts` for what it holds): `skein
 * setup` records a provider there, and `logout` forgets the keys stored in it.
 *
 * A change keeps everything it is not about: other providers, other settings (agents, sandbox,
 * keys Skein does not know yet) and their order. It is made to the file's JSON as written, not
 * to what the schema decodes, so nothing is dropped on the way. A file that is not a JSON
 * object is never replaced: the change fails and says so.
 *
 * The file is written whole, atomically (a temporary file beside it, synced, then renamed
 * over it), with mode 0600: it may hold API keys. A `config.json` that is a symbolic link is
 * followed, so the file it points to is the one changed and the link stays.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import type { Dialect } from "./Models.ts"

export type Json = { [key: string]: unknown }

export class ConfigWriteError extends Schema.TaggedError<ConfigWriteError>()("ConfigWriteError", {
  reason: Schema.Literals(["invalid", "io"]),
  /** What went wrong and where; never a value from the file. */
  message: Schema.String
}) {}

/** A provider as `skein setup` records it. */
export interface Choice {
  /** Its name under `providers`: a dialect for a built-in provider, any other name for an endpoint. */
  readonly provider: string
  /** For a provider that is not built in. */
  readonly dialect?: Dialect | undefined
  readonly baseUrl?: string | undefined
  /** How the key is found: stored (`apiKey`), named (`apiKeyEnv`), or none (a local server). */
  readonly key: { readonly _tag: "stored"; readonly value: string } | { readonly _tag: "env"; readonly name: string } | { readonly _tag: "none" }
  /** The default model (of this provider). */
  readonly model: string
}

/** Header names whose values are credentials (compared in lower case). */
const CREDENTIAL_HEADERS = new Set(["authorization", "x-api-key", "api-key", "proxy-authorization"])

const isObject = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

/** The object a config file holds (`{}` for a missing or empty file); why not, when it holds something else. */
export const parseObject = (text: string | undefined, path: string): Json | ConfigWriteError => {
  if (text === undefined || text.trim() === "") return {}
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return new ConfigWriteError({ reason: "invalid", message: `${path} is not valid JSON; fix or move it first (it was left as it is)` })
  }
  return isObject(json)
    ? json
    : new ConfigWriteError({ reason: "invalid", message: `${path} does not hold a JSON object; fix or move it first (it was left as it is)` })
}

/**
 * `config` with `choice` as its default provider and model. The chosen provider's entry keeps
 * its other settings (models, prices, headers); its key is recorded one way only.
 */
export const withChoice = (config: Json, choice: Choice): Json => {
  const providers = isObject(config.providers) ? config.providers : {}
  const { apiKey: _apiKey, apiKeyEnv: _apiKeyEnv, ...kept } = isObject(providers[choice.provider]) ? providers[choice.provider] as Json : {}
  const entry: Json = {
    ...kept,
    ...(choice.dialect !== undefined ? { dialect: choice.dialect } : {}),
    ...(choice.baseUrl !== undefined ? { baseUrl: choice.baseUrl } : {}),
    ...(choice.key._tag === "stored" ? { apiKey: choice.key.value } : choice.key._tag === "env" ? { apiKeyEnv: choice.key.name } : {})
  }
  return { ...config, provider: choice.provider, model: choice.model, providers: { ...providers, [choice.provider]: entry } }
}

/**
 * `config` without the keys stored in it: each provider's `apiKey` and its credential headers.
 * `forgot` names the providers that had some. The names of variables (`apiKeyEnv`) stay: they
 * are no secret, and the variables are the environment's, not Skein's.
 */
export const withoutKeys = (config: Json): { readonly config: Json; readonly forgot: ReadonlyArray<string> } => {
  if (!isObject(config.providers)) return { config, forgot: [] }
  const forgot: Array<string> = []
  const providers: Json = {}
  for (const [name, decl] of Object.entries(config.providers)) {
    if (!isObject(decl)) {
      providers[name] = decl
      continue
    }
    const { apiKey, headers, ...rest } = decl
    const kept = isObject(headers) ? Object.fromEntries(Object.entries(headers).filter(([header]) => !CREDENTIAL_HEADERS.has(header.toLowerCase()))) : headers
    const hadKey = apiKey !== undefined || (isObject(headers) && Object.keys(kept as Json).length < Object.keys(headers).length)
    if (hadKey) forgot.push(name)
    providers[name] = { ...rest, ...(headers === undefined ? {} : { headers: kept }) }
  }
  return { config: { ...config, providers }, forgot }
}

const ioError = (what: string, error: unknown) => {
  const code = (error as { code?: unknown }).code
  return new ConfigWriteError({ reason: "io", message: `Cannot ${what}${typeof code === "string" ? ` (${code})` : ""}` })
}

/** `logout`: the keys stored in `<home>/config.json` forgotten; the file is not touched when it holds none. */
export const forgetKeys = (home: string) =>
  update(home, (config) => {
    const forgotten = withoutKeys(config)
    return forgotten.forgot.length > 0 ? forgotten.config : undefined
  })

/** The file a change writes: `<home>/config.json`, or what that symbolic link points to. */
const target = (home: string): string => {
  const path = nodePath.join(home, "config.json")
  try {
    return fs.lstatSync(path).isSymbolicLink() ? fs.realpathSync(path) : path
  } catch {
    return path
  }
}

/** What identifies one version of a file: its inode, size and change time (undefined: absent). */
const version = (path: string): string | undefined => {
  try {
    const stat = fs.statSync(path)
    return `${stat.ino}:${stat.size}:${stat.mtimeMs}:${stat.ctimeMs}`
  } catch {
    return undefined
  }
}

/** The file changed under a write (another `skein setup`, a `logout`): read it again and redo the change. */
class Changed {}

/**
 * Replaces `path` with `text` at once (mode 0600), unless it is no longer the version `seen`;
 * whoever reads it sees the old file or the new, never a part.
 */
const writeAtomic = (path: string, text: string, seen: string | undefined) => {
  const temporary = `${path}.${process.pid}.${Math.random().toString(36).slice(2, 10)}.tmp`
  try {
    const fd = fs.openSync(temporary, "wx", 0o600)
    try {
      fs.writeFileSync(fd, text)
      fs.fsyncSync(fd)
    } finally {
      fs.closeSync(fd)
    }
    if (version(path) !== seen) throw new Changed()
    fs.renameSync(temporary, path)
  } catch (error) {
    fs.rmSync(temporary, { force: true })
    throw error
  }
  // The directory entry too, where the platform allows it.
  try {
    const dir = fs.openSync(nodePath.dirname(path), "r")
    try {
      fs.fsyncSync(dir)
    } finally {
      fs.closeSync(dir)
    }
  } catch {
    // not supported here (Windows): the rename is still atomic
  }
}

/** How many times a change is made again on a file that keeps changing under it. */
const ATTEMPTS = 5

/**
 * Applies `change` to `<home>/config.json` (a missing file is `{}`; the home is created, 0700,
 * if need be) and writes the result; a change that returns undefined leaves the file as it is.
 * Fails, writing nothing, when the file is not a JSON object or cannot be read. When another
 * process writes the file meanwhile, the change is made again on what it wrote, so neither
 * change is lost.
 */
export const update = (home: string, change: (config: Json) => Json | undefined) =>
  Effect.gen(function*() {
    const path = target(home)
    for (let attempt = 1; ; attempt++) {
      const seen = version(path)
      const text = yield* Effect.try({
        try: () => (seen !== undefined ? fs.readFileSync(path, "utf8") : undefined),
        catch: (error) => ioError(`read ${path}`, error)
      })
      const parsed = parseObject(text, path)
      if (parsed instanceof ConfigWriteError) return yield* parsed
      const changed = change(parsed)
      if (changed === undefined) return { path, config: parsed, written: false }
      const written = yield* Effect.try({
        try: () => {
          fs.mkdirSync(nodePath.dirname(path), { recursive: true, mode: 0o700 })
          writeAtomic(path, `${JSON.stringify(changed, null, 2)}\n`, seen)
          return true
        },
        catch: (error) =>
          error instanceof Changed
            ? attempt < ATTEMPTS ? error : new ConfigWriteError({ reason: "io", message: `${path} kept changing while it was written; try again` })
            : ioError(`write ${path}`, error)
      }).pipe(Effect.catchIf((error): error is Changed => error instanceof Changed, () => Effect.succeed(false)))
      if (written) return { path, config: changed, written: true }
    }
  })
