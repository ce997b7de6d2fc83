/**
 * What is secret, decided in one place, and the redactor that keeps secret
 * values out of everything Skein shows, logs, writes or sends to a model.
 *
 * An environment variable is secret when its name says so (case-insensitive,
 * `-` read as `_`; erring toward secret):
 * - it contains `SECRET`, `PASSWORD`, `PASSWD`, `PASSPHRASE`, `CREDENTIAL`,
 *   `PRIVATE`, `COOKIE`, `WEBHOOK`, `TOKEN` (not `TOKENIZER…`), `AUTH` (not
 *   `AUTHOR`/`AUTHORS` as a word), `APIKEY`/`API_KEY`, `DSN`,
 *   `CONNECTION_STRING`/`CONN_STR`;
 * - or it ends in `KEY`, or has `KEY`, `KEYS`, `PAT` or `PASS` as a word
 *   (`MYLLM_KEY`, `AWS_ACCESS_KEY_ID`, `GITHUB_PAT`, `SMTP_PASS`);
 * - except `SSH_AUTH_SOCK` (a socket path, which `git` over SSH needs);
 * or when its value is a URL with a password (`postgres://u:pw@host/db`).
 *
 * Secret values, redacted from text when at least `MIN_LENGTH` characters
 * long (a shorter one would mangle ordinary words; it is still kept out of
 * child environments):
 * - the values of secret variables in Skein's environment (a value that is a
 *   file path is not: the path is not the secret, the file is);
 * - every configured provider key (`apiKey`, the variable `apiKeyEnv` names);
 * - every provider header, MCP server `env` value and MCP HTTP header value
 *   whose name says it is secret, or that looks like a credential
 *   (`looksLikeCredential`: letters with digits, not a path or a URL), and an
 *   MCP server's `--token X` style arguments;
 * - inside any of these: the password of a URL, the credential after
 *   `Bearer`/`Basic`/`token`, the values of secret-named query parameters,
 *   each line of a value of several lines; each also as it looks JSON-escaped
 *   and URL-encoded.
 *
 * One registry per process: the environment, stderr and `/proc` are per
 * process, and a value secret for one session is secret for all of them
 * (adr/0010). `make()` gives an independent one (tests).
 */
import * as Matcher from "./Matcher.ts"
import * as Shapes from "./Shapes.ts"

export const MARKER = Matcher.MARKER
/** Values shorter than this are not redacted from text (only kept out of child environments). */
const MIN_LENGTH = 8
/** Shorter values are not remembered at all (a secret variable is still left out of child environments by its name). */
const MIN_EXACT = 4

const SECRET_NAME = new RegExp(
  [
    "SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|PRIVATE|COOKIE|WEBHOOK|DSN|CONNECTION_?STRING|CONN_?STR",
    "TOKEN(?!IZ)",
    "AUTH(?!ORS?(?:_|$))",
    "API_?KEY",
    "KEY$",
    "(?:^|_)(?:KEYS?|PAT|PASS)(?:_|$)"
  ].join("|"),
  "i"
)
const NOT_SECRET: ReadonlySet<string> = new Set(["SSH_AUTH_SOCK"])

/** Whether a variable's (or a header's) name says it holds a secret. */
export const isSecretName = (name: string): boolean => {
  const normal = name.replace(/-/g, "_")
  return !NOT_SECRET.has(normal.toUpperCase()) && SECRET_NAME.test(normal)
}

const CREDENTIAL_URL = /\b[a-z][a-z0-9+.-]*:\/\/[^\s/?#@:]*:([^\s/?#@]+)@/gi
const QUERY_PARAM = /[?&]([^=&#\s]+)=([^&#\s]+)/g
const AUTH_SCHEME = /^(?:Bearer|Basic|Token|Bot|Digest)\s+(\S+)$/i
const PATH = /^(?:~?\/|\.{1,2}\/|[A-Za-z]:[\\/])\S*$/
const URL_LIKE = /^[a-z][a-z0-9+.-]*:\/\/\S*$/i

const HAS_CREDENTIAL_URL = new RegExp(CREDENTIAL_URL.source, "i")

/** Whether a value holds a URL with a password. */
export const hasCredentialUrl = (value: string): boolean => HAS_CREDENTIAL_URL.test(value)

/**
 * Whether a value under a name that says nothing looks like a credential: no spaces, not a path
 * or a URL, and letters with digits (or, from 20 characters, two kinds of letters or digits).
 * A word, a number, a path or a name (`production`, `8080`, `/srv/data`, `my-org`) is not;
 * redacting those would mangle every path and message that mentions them.
 */
const looksLikeCredential = (value: string): boolean => {
  if (value.length < MIN_LENGTH || /\s/.test(value) || PATH.test(value) || URL_LIKE.test(value)) return false
  const lower = /[a-z]/.test(value)
  const upper = /[A-Z]/.test(value)
  const digit = /\d/.test(value)
  return ((lower || upper) && digit) || (value.length >= 20 && [lower, upper, digit].filter(Boolean).length >= 2)
}

const decoded = (text: string): string => {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/** The secret parts inside a value: URL passwords, a credential after an auth scheme, secret query parameters. */
const partsOf = (value: string): Array<string> => {
  const parts: Array<string> = []
  // Most values (every variable of the environment passes here) hold neither a URL nor a space.
  if (!value.includes("://") && !value.includes(" ")) return parts
  for (const match of value.matchAll(CREDENTIAL_URL)) parts.push(match[1]!, decoded(match[1]!))
  for (const match of value.matchAll(QUERY_PARAM)) if (isSecretName(decoded(match[1]!))) parts.push(match[2]!, decoded(match[2]!))
  const scheme = AUTH_SCHEME.exec(value.trim())
  if (scheme !== null) parts.push(scheme[1]!)
  return parts
}

/** The forms a secret takes in text: as is, JSON-escaped, URL-encoded. */
const formsOf = (value: string): Array<string> => {
  const forms = [value]
  const json = JSON.stringify(value).slice(1, -1)
  if (json !== value) forms.push(json)
  const url = encodeURIComponent(value)
  if (url !== value) forms.push(url)
  return forms
}

/** Bytes of UTF-8 text as a latin1 string (one character per byte), for matching raw output. */
const asLatin1 = (text: string): string => Buffer.from(text, "utf8").toString("latin1")

type Env = Readonly<Record<string, string | undefined>>

export interface Registry {
  /** A value that is secret whatever it looks like (a provider key). */
  readonly addValue: (value: string | undefined) => void
  /**
   * A variable or header someone configured for a tool (MCP `env`, `headers`, provider
   * headers): secret when its name says so or its value looks like a credential.
   */
  readonly addConfigured: (name: string, value: string) => void
  /** Names of variables that hold a secret although their name does not say so (`apiKeyEnv`). */
  readonly addName: (name: string) => void
  /** The secret variables of an environment (by name or by a URL with a password). */
  readonly addEnvironment: (env: Env) => void
  /** Whether an environment variable is secret: by name, by value, or because it holds a known secret. */
  readonly isSecretVariable: (name: string, value: string) => boolean
  /** An environment for a child process: `env` without any secret variable. */
  readonly childEnv: (env: Env) => Record<string, string>
  readonly redact: (text: string) => string
  /** Redacts every string (and key) in a JSON-like value; returns the value itself when nothing changed. */
  readonly redactDeep: <A>(value: A) => A
  /** A redactor for one stream of text chunks (see `Matcher.stream`); follows later additions. */
  readonly stream: () => Matcher.Stream
  /** The same for raw bytes (a command's output), UTF-8 split across chunks included. */
  readonly byteStream: () => { readonly push: (chunk: Uint8Array) => Uint8Array; readonly flush: () => Uint8Array }
  /** How many values are redacted from text. */
  readonly size: () => number
  /** Changes whenever a value or a name is added. */
  readonly version: () => number
}

/** A registry; `environment`, when given, is read into it the first time it is needed. */
export const make = (environment?: () => Env): Registry => {
  /** Every known secret value, whatever its length (child environments). */
  const values = new Set<string>()
  /** The forms redacted from text (values of `MIN_LENGTH` or more). */
  const forms = new Set<string>()
  const names = new Set<string>()
  let text: Matcher.Matcher | undefined
  let bytes: Matcher.Matcher | undefined
  let version = 0

  const addValue = (value: string | undefined) => {
    if (value === undefined) return
    const trimmed = value.trim()
    for (const v of trimmed === value || trimmed.length === 0 ? [value] : [value, trimmed]) {
      // One to three characters are no secret worth dropping every variable that equals them for.
      if (v.length < MIN_EXACT || values.has(v)) continue
      values.add(v)
      if (v.length < MIN_LENGTH) continue
      for (const form of formsOf(v)) forms.add(form)
      text = bytes = undefined
      version++
      for (const part of partsOf(v)) addValue(part)
      // A key of several lines (PEM) may be shown a line at a time.
      if (v.includes("\n")) for (const line of v.split(/\r?\n/)) addValue(line)
    }
  }

  /** The secret parts of a value that is not itself secret (a URL's password). */
  const addParts = (value: string) => {
    for (const part of partsOf(value)) addValue(part)
  }

  const addConfigured = (name: string, value: string) => {
    if (isSecretName(name) || looksLikeCredential(value) || hasCredentialUrl(value)) addValue(value)
    else addParts(value)
  }

  const isNamedSecret = (name: string, value: string) => isSecretName(name) || names.has(name) || hasCredentialUrl(value)

  const addEnvironment = (env: Env) => {
    for (const name in env) {
      const value = env[name]
      if (value === undefined || value.length === 0) continue
      if (hasCredentialUrl(value)) addValue(value)
      else if (!isSecretName(name) && !names.has(name)) addParts(value)
      else if (PATH.test(value)) addParts(value)
      else addValue(value)
    }
  }

  // Read on first use, not when the registry is made: adding a configured key at start-up is cheap.
  let pending = environment
  const ready = () => {
    if (pending === undefined) return
    const env = pending()
    pending = undefined
    addEnvironment(env)
  }

  const matcher = () => (text ??= Matcher.make(forms))
  const redact = (s: string) => {
    ready()
    return forms.size === 0 ? s : matcher().redact(s)
  }

  const isSecretVariable = (name: string, value: string) => {
    ready()
    return isNamedSecret(name, value) || values.has(value) || (forms.size > 0 && matcher().redact(value) !== value)
  }

  const deep = (value: unknown): unknown => {
    if (typeof value === "string") return redact(value)
    if (typeof value !== "object" || value === null) return value
    if (Array.isArray(value)) {
      let out: Array<unknown> | undefined
      for (let i = 0; i < value.length; i++) {
        const item = value[i]
        const clean = deep(item)
        if (clean !== item) (out ??= value.slice())[i] = clean
      }
      return out ?? value
    }
    const proto = Object.getPrototypeOf(value)
    if (proto !== Object.prototype && proto !== null) return value
    let out: Record<string, unknown> | undefined
    for (const key of Object.keys(value)) {
      const item = (value as Record<string, unknown>)[key]
      const clean = deep(item)
      const cleanKey = redact(key)
      if (clean === item && cleanKey === key) continue
      out ??= { ...(value as Record<string, unknown>) }
      if (cleanKey !== key) delete out[key]
      out[cleanKey] = clean
    }
    return out ?? value
  }

  /** A stream over the current matcher that moves to a new one when secrets are added. */
  const follow = (current: () => Matcher.Matcher, minHold?: number) => {
    let seen = version
    let stream = current().stream(minHold)
    return {
      push: (chunk: string) => {
        if (seen === version) return stream.push(chunk)
        const before = stream.flush()
        seen = version
        stream = current().stream(minHold)
        return current().redact(before) + stream.push(chunk)
      },
      flush: () => (seen === version ? stream.flush() : current().redact(stream.flush()))
    }
  }

  return {
    addValue,
    addConfigured,
    addName: (name) => {
      if (names.has(name)) return
      names.add(name)
      version++
    },
    addEnvironment,
    isSecretVariable,
    childEnv: (env) => {
      const out: Record<string, string> = {}
      for (const name in env) {
        const value = env[name]
        if (value !== undefined && !isSecretVariable(name, value)) out[name] = value
      }
      return out
    },
    redact,
    redactDeep: <A>(value: A): A => {
      ready()
      return forms.size === 0 ? value : deep(value) as A
    },
    stream: () => {
      ready()
      return follow(matcher)
    },
    byteStream: () => {
      ready()
      const latin1 = follow(() => (bytes ??= Matcher.make([...forms].map(asLatin1))), 1)
      const push = (chunk: Uint8Array): Uint8Array => {
        if (forms.size === 0) return chunk
        return Buffer.from(latin1.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString("latin1")), "latin1")
      }
      return { push, flush: () => Buffer.from(latin1.flush(), "latin1") }
    },
    size: () => {
      ready()
      return forms.size
    },
    version: () => {
      ready()
      return version
    }
  }
}

// ---------------------------------------------------------------------------
// The process's registry
// ---------------------------------------------------------------------------

let processRegistry: Registry | undefined

/** This process's registry; Skein's own environment is read into it when it is first needed. */
export const registry = (): Registry => (processRegistry ??= make(() => process.env))

export const redact = (text: string): string => registry().redact(text)
export const redactDeep = <A>(value: A): A => registry().redactDeep(value)
/** Skein's environment (or `env`) without secrets: what a child process gets. */
export const childEnv = (env: Env = process.env): Record<string, string> => registry().childEnv(env)

// ---------------------------------------------------------------------------
// Credential shapes
// ---------------------------------------------------------------------------

/**
 * Known secrets, `extra` values (4 characters or more), and the values of anything shaped like
 * a key or a bearer token (`Shapes`: the value, not the words around it). For text Skein
 * writes itself (provider errors, diagnostics), never for tool output: shapes would mangle the
 * source code a model reads.
 */
export const redactWithShapes = (text: string, extra: ReadonlyArray<string> = []): string => {
  let out = redact(text)
  for (const secret of extra) {
    if (secret.length >= 4) out = out.split(secret).join(MARKER)
  }
  return Shapes.redact(out)
}
