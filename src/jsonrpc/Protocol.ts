/**
 * The JSON-RPC 2.0 vocabulary: message shapes, a pure classifier for incoming
 * JSON, the `RpcError` data type with its named constructors, and a formatter
 * for Schema decode issues that never echoes an input value.
 *
 * Invariant: no error message built here contains a params value (params may
 * hold secrets); method names and schema paths are fine.
 */
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"

/** A request id. `null` only ever appears in error responses to unreadable messages. */
export type Id = string | number

interface RequestMessage {
  readonly jsonrpc: "2.0"
  readonly id: Id
  readonly method: string
  readonly params?: unknown
}

interface NotificationMessage {
  readonly jsonrpc: "2.0"
  readonly method: string
  readonly params?: unknown
}

interface ErrorObject {
  readonly code: number
  readonly message: string
  readonly data?: unknown
}

interface SuccessResponseMessage {
  readonly jsonrpc: "2.0"
  readonly id: Id
  readonly result: unknown
}

interface ErrorResponseMessage {
  readonly jsonrpc: "2.0"
  readonly id: Id | null
  readonly error: ErrorObject
}

export type Message = RequestMessage | NotificationMessage | SuccessResponseMessage | ErrorResponseMessage

/** What one parsed JSON value is, as far as JSON-RPC is concerned. */
export type Incoming =
  | { readonly _tag: "Request"; readonly id: Id; readonly method: string; readonly params: unknown }
  | { readonly _tag: "Notification"; readonly method: string; readonly params: unknown }
  | { readonly _tag: "Response"; readonly id: Id; readonly result: unknown }
  | { readonly _tag: "ErrorResponse"; readonly id: Id | null; readonly error: ErrorObject }
  | { readonly _tag: "Invalid"; readonly id: Id | null }

const isRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

export const isId = (u: unknown): u is Id => typeof u === "string" || (typeof u === "number" && Number.isFinite(u))

const has = (o: object, key: string): boolean => Object.prototype.hasOwnProperty.call(o, key)

const isErrorObject = (u: unknown): u is ErrorObject =>
  isRecord(u) && typeof u.code === "number" && Number.isFinite(u.code) && typeof u.message === "string"

/** `params`, when present, must be structured (object or array); `null` is tolerated. */
const isParams = (u: unknown): boolean => u === undefined || u === null || typeof u === "object"

/**
 * Classifies a parsed JSON value. Pure and total: anything that is not a
 * well-formed request, notification or response is `Invalid`, keeping the id
 * when the value had a valid one (so the -32600 reply can carry it).
 */
export const classify = (json: unknown): Incoming => {
  if (!isRecord(json)) return { _tag: "Invalid", id: null }
  const id = has(json, "id") && isId(json.id) ? json.id : null
  if (json.jsonrpc !== "2.0") return { _tag: "Invalid", id }
  if (has(json, "method")) {
    const method = json.method
    if (typeof method !== "string" || !isParams(json.params) || has(json, "result") || has(json, "error")) {
      return { _tag: "Invalid", id }
    }
    if (!has(json, "id")) return { _tag: "Notification", method, params: json.params }
    if (id === null) return { _tag: "Invalid", id: null }
    return { _tag: "Request", id, method, params: json.params }
  }
  const hasResult = has(json, "result")
  const hasError = has(json, "error")
  if (hasResult && !hasError && id !== null) return { _tag: "Response", id, result: json.result }
  if (hasError && !hasResult && isErrorObject(json.error) && (id !== null || json.id === null)) {
    return { _tag: "ErrorResponse", id, error: json.error }
  }
  return { _tag: "Invalid", id }
}

// -----------------------------------------------------------------------------
// Builders
// -----------------------------------------------------------------------------

export const makeRequest = (id: Id, method: string, params: unknown): RequestMessage =>
  params === undefined ? { jsonrpc: "2.0", id, method } : { jsonrpc: "2.0", id, method, params }

export const makeNotification = (method: string, params: unknown): NotificationMessage =>
  params === undefined ? { jsonrpc: "2.0", method } : { jsonrpc: "2.0", method, params }

/** A success response; an `undefined` result becomes `null` so the key is never dropped. */
export const makeSuccess = (id: Id, result: unknown): SuccessResponseMessage => ({
  jsonrpc: "2.0",
  id,
  result: result === undefined ? null : result
})

export const makeError = (id: Id | null, error: RpcError): ErrorResponseMessage => ({
  jsonrpc: "2.0",
  id,
  error: toErrorObject(error)
})

// -----------------------------------------------------------------------------
// Errors
// -----------------------------------------------------------------------------

export class RpcError extends Schema.TaggedError<RpcError>()("RpcError", {
  code: Schema.Number,
  message: Schema.String,
  data: Schema.optional(Schema.Unknown)
}) {}

export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  RequestCancelled: -32800,
  AuthRequired: -32000,
  ResourceNotFound: -32002,
  /** Local only: an outgoing request got no response in time. */
  RequestTimeout: -32001,
  /** Local only: the other side went away before responding. */
  PeerClosed: -32099
} as const

/** The wire form of an error: `{ code, message, data? }`. */
export const toErrorObject = (error: RpcError): ErrorObject =>
  error.data === undefined
    ? { code: error.code, message: error.message }
    : { code: error.code, message: error.message, data: error.data }

export const fromErrorObject = (error: ErrorObject): RpcError =>
  new RpcError(
    error.data === undefined
      ? { code: error.code, message: error.message }
      : { code: error.code, message: error.message, data: error.data }
  )

const MAX_NAME = 100

/** Method names come from the wire: keep them short in messages. */
const clip = (s: string): string => (s.length > MAX_NAME ? `${s.slice(0, MAX_NAME)}…` : s)

export const parseError = (): RpcError => new RpcError({ code: ErrorCode.ParseError, message: "Parse error" })

export const invalidRequest = (message = "Invalid request"): RpcError =>
  new RpcError({ code: ErrorCode.InvalidRequest, message })

export const methodNotFound = (method: string): RpcError =>
  new RpcError({ code: ErrorCode.MethodNotFound, message: `Method not found: ${clip(method)}` })

/** `message` is used verbatim; build it with `formatIssue` or from names, never from values. */
export const invalidParams = (message: string): RpcError =>
  new RpcError({ code: ErrorCode.InvalidParams, message })

export const internalError = (): RpcError => new RpcError({ code: ErrorCode.InternalError, message: "Internal error" })

export const requestCancelled = (): RpcError =>
  new RpcError({ code: ErrorCode.RequestCancelled, message: "Request cancelled" })

/** A request refused for lack of resources (-32800 covers "aborted … because of resource constraints"). */
export const tooManyRequests = (): RpcError =>
  new RpcError({ code: ErrorCode.RequestCancelled, message: "Too many requests in flight" })

/** Local only: what an outgoing request fails with when the answer to it is not a valid response. */
export const invalidResponse = (): RpcError =>
  new RpcError({ code: ErrorCode.InternalError, message: "Invalid response" })

export const resourceNotFound = (what: string): RpcError =>
  new RpcError({ code: ErrorCode.ResourceNotFound, message: `Resource not found: ${clip(what)}` })

export const requestTimeout = (method: string): RpcError =>
  new RpcError({ code: ErrorCode.RequestTimeout, message: `Request timed out: ${clip(method)}` })

export const peerClosed = (): RpcError => new RpcError({ code: ErrorCode.PeerClosed, message: "Peer closed" })

// -----------------------------------------------------------------------------
// Schema issues → messages without values
// -----------------------------------------------------------------------------

/**
 * Rebuilds an issue tree without any reported input, and without the dynamic
 * `message` a filter may return (it can quote the value). Static annotations
 * written by schema authors (`expected`, schema- and filter-level `message`)
 * are kept.
 */
const sanitize = (issue: SchemaIssue.Issue): SchemaIssue.Issue => {
  switch (issue._tag) {
    case "Filter":
      return new SchemaIssue.Filter(issue.filter, sanitize(issue.issue))
    case "Encoding":
      return new SchemaIssue.Encoding(issue.ast, sanitize(issue.issue))
    case "Pointer":
      return new SchemaIssue.Pointer(issue.path, sanitize(issue.issue))
    case "Composite":
      return new SchemaIssue.Composite(issue.ast, [sanitize(issue.issues[0]), ...issue.issues.slice(1).map(sanitize)])
    case "AnyOf":
      return new SchemaIssue.AnyOf(issue.ast, issue.issues.map(sanitize))
    case "MissingKey":
      return new SchemaIssue.MissingKey(issue.annotations)
    case "UnexpectedKey":
      return new SchemaIssue.UnexpectedKey(issue.ast)
    case "InvalidType":
      return new SchemaIssue.InvalidType(issue.ast)
    case "InvalidValue": {
      const expected = issue.annotations?.expected
      return new SchemaIssue.InvalidValue(typeof expected === "string" ? { expected } : undefined)
    }
    case "Forbidden":
      return new SchemaIssue.Forbidden(undefined)
    case "OneOf":
      return new SchemaIssue.OneOf(issue.ast, issue.successes)
  }
}

const MISSING = "\u0000missing"

const formatter = SchemaIssue.makeFormatterStandardSchemaV1({
  leafHook: (leaf) => (leaf._tag === "MissingKey" ? MISSING : SchemaIssue.defaultLeafHook(leaf))
})

const formatPath = (path: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }>): string => {
  let out = ""
  for (const segment of path) {
    const key = typeof segment === "object" ? segment.key : segment
    if (typeof key === "number") out += `[${key}]`
    else out += out === "" ? clip(String(key)) : `.${clip(String(key))}`
  }
  return out
}

const MAX_ENTRIES = 8

/**
 * Formats a Schema decode issue as `Invalid params: expected string at "cwd";
 * missing "sessionId"`: paths and expected types only, never the values.
 */
export const formatIssue = (issue: SchemaIssue.Issue): string => {
  const entries = formatter(sanitize(issue)).issues
  const parts = entries.slice(0, MAX_ENTRIES).map(({ message, path }) => {
    const where = path === undefined || path.length === 0 ? "" : JSON.stringify(formatPath(path))
    if (message === MISSING) return where === "" ? "missing value" : `missing ${where}`
    const text = message === "Expected <filter>"
      ? "expected a valid value"
      : message.startsWith("Expected ")
      ? `expected ${message.slice("Expected ".length)}`
      : message
    return where === "" ? text : `${text} at ${where}`
  })
  if (entries.length > MAX_ENTRIES) parts.push(`and ${entries.length - MAX_ENTRIES} more`)
  return `Invalid params: ${parts.join("; ")}`
}
