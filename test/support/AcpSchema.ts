/**
 * The official ACP v1 JSON Schema (`@agentclientprotocol/sdk/schema/v1/schema.json`) as a
 * validator for tests: `validateDef` checks a value against one `$defs` entry, and
 * `makeOutboundChecker` checks every JSON-RPC message an *agent* writes.
 *
 * Ajv runs the 2020-12 draft in strict mode, with the schema's vocabulary declared rather than
 * waved through:
 * - its annotation keywords (`x-side`, `x-method`, `x-deserialize-*`, `x-docs-ignore`) are
 *   registered as keywords that validate nothing (they describe a Rust deserializer);
 * - its `format`s (`int32`, `int64`, `uint16`, `uint32`, `uint64`, `double`, `uri`) are
 *   registered with real range checks, so `used: -1` or a 2^40 `line` fails;
 * - `discriminator` is enabled, which gives readable errors for tagged unions;
 * - only `strictTypes` is off: the schema puts `discriminator` beside `oneOf` without a
 *   `type: "object"` of its own (the branches carry it). That lint is about how a schema is
 *   written, not about what it accepts.
 * `useDefaults` stays off, so validation never changes the value it checks.
 *
 * The validators are compiled once per checkout, not once per process: AcpValidators.ts keeps
 * Ajv's standalone code of every def on disk, keyed by a hash of what decides it.
 */
import type { ErrorObject, ValidateFunction } from "ajv/dist/2020.js"
import { readFileSync } from "node:fs"
import { loadValidators, schemaPath, type SchemaFile, type Validators } from "./AcpValidators.ts"

type Json = Record<string, unknown>

interface Loaded {
  readonly file: SchemaFile
  readonly text: string
  readonly schema: { readonly $defs: Record<string, Json> }
  /** Compiled on first use: a file that only reads the schema's defs compiles nothing. */
  validators: Validators | undefined
}

const loadedBy = new Map<SchemaFile, Loaded>()

const isObject = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

/** The stable v1 schema, or the unstable one (with the subagents extension). */
const load = (unstable = false): Loaded => {
  const file: SchemaFile = unstable ? "schema.unstable.json" : "schema.json"
  const cached = loadedBy.get(file)
  if (cached) return cached
  const text = readFileSync(schemaPath(file), "utf8")
  const made: Loaded = { file, text, schema: JSON.parse(text) as Loaded["schema"], validators: undefined }
  loadedBy.set(file, made)
  return made
}

/** The `$defs` of the official schema (parsed once). */
export const officialDefs = (unstable = false): Readonly<Record<string, Json>> => load(unstable).schema.$defs

/** Where this process's validators of a schema came from (test/support/AcpValidators.ts). */
export const validatorsFrom = (unstable = false): Validators["from"] | undefined => load(unstable).validators?.from

const validatorFor = (defName: string, unstable = false): ValidateFunction => {
  const loaded = load(unstable)
  if (!Object.hasOwn(loaded.schema.$defs, defName)) throw new Error(`no $defs entry named ${defName} in the ACP schema`)
  loaded.validators ??= loadValidators(loaded.file, loaded.text, loaded.schema)
  const compiled = loaded.validators.get(defName)
  if (!compiled) throw new Error(`Ajv could not compile $defs/${defName}`)
  return compiled
}

const formatErrors = (errors: ReadonlyArray<ErrorObject> | null | undefined): string =>
  (errors ?? [])
    .map((e) => {
      const params = Object.keys(e.params).length > 0 ? ` ${JSON.stringify(e.params)}` : ""
      return `${e.instancePath || "/"} ${e.message ?? e.keyword}${params}`
    })
    .join("; ")

export type Validation = { readonly ok: true } | { readonly ok: false; readonly errors: string }

const validateDefIn = (defName: string, value: unknown, unstable: boolean): Validation => validateDef(defName, value, unstable)

/** Validates `value` against `$defs/<defName>` of the official schema. */
export const validateDef = (defName: string, value: unknown, unstable = false): Validation => {
  const validate = validatorFor(defName, unstable)
  return validate(value) ? { ok: true } : { ok: false, errors: formatErrors(validate.errors) }
}

// ---------------------------------------------------------------------------
// Method → $defs tables, read off the schema's own `x-side` / `x-method` annotations
// ---------------------------------------------------------------------------

interface MethodTables {
  /** client → agent method → the `…Response` def of the agent's `result`. */
  readonly responses: ReadonlyMap<string, string>
  /** agent → client request method → its `…Request` params def. */
  readonly outboundRequests: ReadonlyMap<string, string>
  /** agent → client (or protocol-level) notification method → its params def. */
  readonly outboundNotifications: ReadonlyMap<string, string>
}

const tablesBy = new Map<boolean, MethodTables>()

/** What the schema (or the unstable one, with its extra methods such as `session/fork`) says an agent may write, by method. */
export const methodTables = (unstable = false): MethodTables => {
  const cached = tablesBy.get(unstable)
  if (cached) return cached
  const responses = new Map<string, string>()
  const outboundRequests = new Map<string, string>()
  const outboundNotifications = new Map<string, string>()
  for (const [name, def] of Object.entries(officialDefs(unstable))) {
    const side = def["x-side"]
    const method = def["x-method"]
    if (typeof method !== "string") continue
    if (side === "agent" && name.endsWith("Response")) responses.set(method, name)
    if (side === "client" && name.endsWith("Request")) outboundRequests.set(method, name)
    if ((side === "client" || side === "protocol") && name.endsWith("Notification")) {
      outboundNotifications.set(method, name)
    }
  }
  const tables = { responses, outboundRequests, outboundNotifications }
  tablesBy.set(unstable, tables)
  return tables
}

// ---------------------------------------------------------------------------
// The outbound checker
// ---------------------------------------------------------------------------

export interface OutboundChecker {
  /**
   * Records a message the client sent, so responses can be matched to their request's method.
   * Accepts a parsed message or a raw line; anything that is not a request is ignored.
   */
  readonly sawRequest: (message: unknown) => void
  /**
   * Problems with one message the agent wrote (a parsed value or a raw stdout line); empty when
   * it is valid ACP. A response settles its request: a second response to it is a problem.
   */
  readonly check: (message: unknown) => Array<string>
  /** Client requests the agent has not answered yet, as `method#id`. */
  readonly unanswered: () => Array<string>
}

const idKey = (id: unknown): string => `${typeof id}:${String(id)}`

const parseLine = (line: string): { readonly value: unknown } | { readonly problem: string } => {
  const body = line.endsWith("\n") ? line.slice(0, -1) : line
  if (body.includes("\n")) return { problem: "a message must be a single line" }
  try {
    return { value: JSON.parse(body) }
  } catch {
    return { problem: "not valid JSON" }
  }
}

const REQUEST_KEYS = new Set(["jsonrpc", "id", "method", "params"])
const NOTIFICATION_KEYS = new Set(["jsonrpc", "method", "params"])
const RESPONSE_KEYS = new Set(["jsonrpc", "id", "result", "error"])

/** `unstable`: check against the unstable schema (a client that declared the subagents extension). */
export const makeOutboundChecker = (options: { readonly unstable?: boolean } = {}): OutboundChecker => {
  const unstable = options.unstable === true
  const validateDef = (defName: string, value: unknown) => validateDefIn(defName, value, unstable)
  const { responses, outboundRequests, outboundNotifications } = methodTables(unstable)
  /** id key → method (undefined when the client sent an id without a method). */
  const pending = new Map<string, { readonly id: unknown; readonly method: string | undefined }>()

  const sawRequest = (message: unknown): void => {
    const value = typeof message === "string" ? parseLine(message) : { value: message }
    if (!("value" in value) || !isObject(value.value)) return
    const m = value.value
    if (!("id" in m) || "result" in m || "error" in m) return
    pending.set(idKey(m.id), { id: m.id, method: typeof m.method === "string" ? m.method : undefined })
  }

  const extraKeys = (m: Json, allowed: ReadonlySet<string>, what: string): Array<string> =>
    Object.keys(m)
      .filter((k) => !allowed.has(k))
      .map((k) => `${what} has a member "${k}" JSON-RPC 2.0 does not define`)

  const checkParams = (what: string, defName: string, params: unknown): Array<string> => {
    const result = validateDef(defName, params)
    return result.ok ? [] : [`${what} params do not match $defs/${defName}: ${result.errors}`]
  }

  const checkRequestId = (what: string, id: unknown): Array<string> =>
    typeof id === "string" || Number.isInteger(id) ? [] : [`${what} id must be a string or an integer`]

  const checkObject = (m: Json): Array<string> => {
    const problems: Array<string> = []
    if (m.jsonrpc !== "2.0") problems.push(`"jsonrpc" must be "2.0"`)

    if ("method" in m) {
      if (typeof m.method !== "string") return [...problems, `"method" must be a string`]
      const method = m.method
      if ("id" in m) {
        const what = `request ${method}`
        problems.push(...extraKeys(m, REQUEST_KEYS, what), ...checkRequestId(what, m.id))
        const defName = outboundRequests.get(method)
        if (defName === undefined) problems.push(`${what}: not a method an agent may call on a client`)
        else problems.push(...checkParams(what, defName, m.params))
      } else {
        const what = `notification ${method}`
        problems.push(...extraKeys(m, NOTIFICATION_KEYS, what))
        const defName = outboundNotifications.get(method)
        if (defName === undefined) problems.push(`${what}: not a notification an agent may send`)
        else problems.push(...checkParams(what, defName, m.params))
      }
      return problems
    }

    if (!("id" in m)) return [...problems, "neither a request, a notification nor a response"]

    const request = pending.get(idKey(m.id))
    const what = `response to ${request?.method ?? "?"}#${JSON.stringify(m.id)}`
    problems.push(...extraKeys(m, RESPONSE_KEYS, what))
    const hasResult = "result" in m
    const hasError = "error" in m
    if (hasResult === hasError) return [...problems, `${what}: must have exactly one of "result" and "error"`]

    if (request === undefined) {
      // A parse error or an unreadable request is answered with id null and an error.
      if (!(hasError && m.id === null)) problems.push(`${what}: answers no pending client request`)
    } else {
      pending.delete(idKey(m.id))
    }

    if (hasError) {
      if (m.id !== null) problems.push(...checkRequestId(what, m.id))
      const result = validateDef("Error", m.error)
      if (!result.ok) problems.push(`${what}: error does not match $defs/Error: ${result.errors}`)
      return problems
    }

    if (request === undefined) return problems
    const method = request.method
    if (method === undefined) return [...problems, `${what}: a request without a method must get an error`]
    if (method.startsWith("_")) return problems // extension method: `ExtResponse` is any value
    const defName = responses.get(method)
    // `session/cancel` is a notification in ACP; sent as a request (as some clients do), it is answered null.
    if (method === "session/cancel") return m.result === null ? problems : [...problems, `${what}: session/cancel sent as a request is answered null`]
    if (defName === undefined) return [...problems, `${what}: ${method} is not an agent method; answer with an error`]
    const result = validateDef(defName, m.result)
    if (!result.ok) problems.push(`${what}: result does not match $defs/${defName}: ${result.errors}`)
    return problems
  }

  const check = (message: unknown): Array<string> => {
    const value = typeof message === "string" ? parseLine(message) : { value: message }
    if (!("value" in value)) return [value.problem]
    if (!isObject(value.value)) return ["a message must be a JSON object"]
    return checkObject(value.value)
  }

  const unanswered = (): Array<string> =>
    [...pending.values()].map(({ id, method }) => `${method ?? "?"}#${JSON.stringify(id)}`)

  return { sawRequest, check, unanswered }
}
