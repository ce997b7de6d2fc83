/**
 * Connection setup: `initialize` (version and capability negotiation), `authenticate` and
 * `logout`.
 *
 * The client's capabilities decode with the spec defaults filled in (a capability the client
 * does not mention is `false`), so the server reads `clientCapabilities.fs.readTextFile`
 * without guarding. The agent's capabilities are all optional on the way out: advertise a
 * capability only once it works, and omit what is off.
 *
 * Spec: `$defs` InitializeRequest, InitializeResponse, ClientCapabilities,
 * FileSystemCapabilities, AuthCapabilities, AgentCapabilities, PromptCapabilities,
 * McpCapabilities, SessionCapabilities (+ its List/Delete/AdditionalDirectories/Resume/Close
 * entries), AgentAuthCapabilities, LogoutCapabilities, Implementation, AuthMethod,
 * AuthMethodAgent, AuthMethodTerminal, AuthenticateRequest/Response, LogoutRequest/Response.
 */
import * as Schema from "effect/Schema"
import * as Lazy from "../Lazy.ts"
import { AuthMethodId, lenient, lenientDefault, meta, optional, Uint16 } from "./Common.ts"

/** The major protocol version; see `PROTOCOL_VERSION` in `Methods.ts`. */
export const ProtocolVersion = Uint16
export type ProtocolVersion = typeof ProtocolVersion.Type

/** Name and version of a client or agent. */
export const Implementation = Lazy.schema("acp.Implementation", () => Schema.Struct({
  name: Schema.String,
  title: lenient(Schema.String),
  version: Schema.String,
  _meta: meta
}))
export type Implementation = typeof Implementation.Type

// ---------------------------------------------------------------------------
// Client capabilities (incoming)
// ---------------------------------------------------------------------------

export const FileSystemCapabilities = Lazy.schema("acp.FileSystemCapabilities", () => Schema.Struct({
  readTextFile: lenientDefault(Schema.Boolean, false),
  writeTextFile: lenientDefault(Schema.Boolean, false),
  _meta: meta
}))
export type FileSystemCapabilities = typeof FileSystemCapabilities.Type

export const AuthCapabilities = Lazy.schema("acp.AuthCapabilities", () => Schema.Struct({
  terminal: lenientDefault(Schema.Boolean, false),
  _meta: meta
}))
export type AuthCapabilities = typeof AuthCapabilities.Type

/**
 * What the client offers the agent. Skein reads `fs`, `terminal`, `auth`, `subagents` and
 * `session.compaction`; other entries (`elicitation`, extensions) are ignored.
 */
export const ClientCapabilities = Lazy.schema("acp.ClientCapabilities", () => Schema.Struct({
  fs: lenientDefault(FileSystemCapabilities, { readTextFile: false, writeTextFile: false }),
  terminal: lenientDefault(Schema.Boolean, false),
  auth: lenientDefault(AuthCapabilities, { terminal: false }),
  /** UNSTABLE (schema.unstable.json): the client shows child sessions (subagents) as sessions of their own. */
  subagents: lenient(Schema.Struct({ _meta: meta })),
  /** UNSTABLE: session-related capabilities; `compaction` present: the client shows `compaction_update`s. */
  session: lenient(Schema.Struct({ compaction: lenient(Schema.Struct({ _meta: meta })), _meta: meta })),
  _meta: meta
}))
export type ClientCapabilities = typeof ClientCapabilities.Type

/** The spec default of `clientCapabilities`: the client offers nothing. */
export const defaultClientCapabilities: ClientCapabilities = {
  fs: { readTextFile: false, writeTextFile: false },
  terminal: false,
  auth: { terminal: false }
}

export const InitializeRequest = Lazy.schema("acp.InitializeRequest", () => Schema.Struct({
  protocolVersion: ProtocolVersion,
  clientCapabilities: lenientDefault(ClientCapabilities, defaultClientCapabilities),
  clientInfo: lenient(Implementation),
  _meta: meta
}))
export type InitializeRequest = typeof InitializeRequest.Type

// ---------------------------------------------------------------------------
// Agent capabilities (outgoing)
// ---------------------------------------------------------------------------

/** Which prompt blocks beyond text and resource links the agent accepts. */
export const PromptCapabilities = Lazy.schema("acp.PromptCapabilities", () => Schema.Struct({
  image: optional(Schema.Boolean),
  audio: optional(Schema.Boolean),
  embeddedContext: optional(Schema.Boolean),
  _meta: meta
}))
export type PromptCapabilities = typeof PromptCapabilities.Type

/** MCP transports the agent can connect to besides stdio. */
export const McpCapabilities = Lazy.schema("acp.McpCapabilities", () => Schema.Struct({
  http: optional(Schema.Boolean),
  sse: optional(Schema.Boolean),
  _meta: meta
}))
export type McpCapabilities = typeof McpCapabilities.Type

/** The empty object that switches a capability on (`{}`), open for `_meta`. */
export const CapabilityMarker = Lazy.schema("acp.CapabilityMarker", () => Schema.Struct({ _meta: meta }))
export type CapabilityMarker = typeof CapabilityMarker.Type

/** Optional session methods the agent supports: present (as `{}`) means supported. */
export const SessionCapabilities = Lazy.schema("acp.SessionCapabilities", () => Schema.Struct({
  list: lenient(CapabilityMarker),
  delete: lenient(CapabilityMarker),
  additionalDirectories: lenient(CapabilityMarker),
  resume: lenient(CapabilityMarker),
  close: lenient(CapabilityMarker),
  /** UNSTABLE (schema.unstable.json): `session/fork`. */
  fork: lenient(CapabilityMarker),
  _meta: meta
}))
export type SessionCapabilities = typeof SessionCapabilities.Type

export const AgentAuthCapabilities = Lazy.schema("acp.AgentAuthCapabilities", () => Schema.Struct({
  logout: lenient(CapabilityMarker),
  _meta: meta
}))
export type AgentAuthCapabilities = typeof AgentAuthCapabilities.Type

export const AgentCapabilities = Lazy.schema("acp.AgentCapabilities", () => Schema.Struct({
  loadSession: optional(Schema.Boolean),
  promptCapabilities: optional(PromptCapabilities),
  mcpCapabilities: optional(McpCapabilities),
  sessionCapabilities: optional(SessionCapabilities),
  auth: optional(AgentAuthCapabilities),
  _meta: meta
}))
export type AgentCapabilities = typeof AgentCapabilities.Type

/** The agent authenticates by itself when the client calls `authenticate` (the default). */
export const AuthMethodAgent = Lazy.schema("acp.AuthMethodAgent", () => Schema.Struct({
  id: AuthMethodId,
  name: Schema.String,
  description: lenient(Schema.String),
  _meta: meta
}))
export type AuthMethodAgent = typeof AuthMethodAgent.Type

/** The client runs the agent binary with `args`/`env` in a terminal for the user to log in. */
export const AuthMethodTerminal = Lazy.schema("acp.AuthMethodTerminal", () => Schema.Struct({
  type: Schema.Literal("terminal"),
  id: AuthMethodId,
  name: Schema.String,
  description: lenient(Schema.String),
  args: optional(Schema.Array(Schema.String)),
  env: optional(Schema.Record(Schema.String, Schema.String)),
  _meta: meta
}))
export type AuthMethodTerminal = typeof AuthMethodTerminal.Type

/** Tagged by `type` only for `terminal`; a method without `type` is an agent method. */
export const AuthMethod = Lazy.schema("acp.AuthMethod", () => Schema.Union([AuthMethodTerminal, AuthMethodAgent]))
export type AuthMethod = typeof AuthMethod.Type

export const InitializeResponse = Lazy.schema("acp.InitializeResponse", () => Schema.Struct({
  protocolVersion: ProtocolVersion,
  agentCapabilities: optional(AgentCapabilities),
  authMethods: optional(Schema.Array(AuthMethod)),
  agentInfo: lenient(Implementation),
  _meta: meta
}))
export type InitializeResponse = typeof InitializeResponse.Type

// ---------------------------------------------------------------------------
// authenticate / logout
// ---------------------------------------------------------------------------

export const AuthenticateRequest = Lazy.schema("acp.AuthenticateRequest", () => Schema.Struct({
  methodId: AuthMethodId,
  _meta: meta
}))
export type AuthenticateRequest = typeof AuthenticateRequest.Type

export const AuthenticateResponse = Lazy.schema("acp.AuthenticateResponse", () => Schema.Struct({ _meta: meta }))
export type AuthenticateResponse = typeof AuthenticateResponse.Type

/** Only sent to an agent that advertises `agentCapabilities.auth.logout`. */
export const LogoutRequest = Lazy.schema("acp.LogoutRequest", () => Schema.Struct({ _meta: meta }))
export type LogoutRequest = typeof LogoutRequest.Type

export const LogoutResponse = Lazy.schema("acp.LogoutResponse", () => Schema.Struct({ _meta: meta }))
export type LogoutResponse = typeof LogoutResponse.Type
