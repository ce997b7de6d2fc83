/**
 * The session methods a client calls on the agent: create, load, resume, list, close and
 * delete sessions, prompt and cancel turns, set the mode and config options; plus the
 * protocol-level `$/cancel_request` notification (sent by either side).
 *
 * `cwd` must be an absolute path; that is checked by the server, not here. List fields the spec
 * defaults (`mcpServers`, `additionalDirectories`, MCP `args`/`env`/`headers`) decode to `[]`
 * when absent or `null`.
 *
 * What the agent answers them is in `Answers.ts`: only a client of an external agent decodes it.
 *
 * Spec: `$defs` NewSessionRequest, LoadSessionRequest, ResumeSessionRequest,
 * ListSessionsRequest, CloseSessionRequest, DeleteSessionRequest, PromptRequest, StopReason,
 * CancelNotification, CancelRequestNotification, SetSessionModeRequest,
 * SetSessionConfigOptionRequest, McpServer, McpServerHttp, McpServerSse, McpServerStdio,
 * HttpHeader; and, from the unstable schema, ForkSessionRequest.
 */
import * as Schema from "effect/Schema"
import * as Lazy from "../Lazy.ts"
import {
  EnvVariable,
  meta,
  optional,
  RequestId,
  SessionConfigId,
  SessionConfigValueId,
  SessionId,
  SessionModeId,
  withDefault
} from "./Common.ts"
import { ContentBlock } from "./Content.ts"

// ---------------------------------------------------------------------------
// MCP servers the client asks the agent to connect to
// ---------------------------------------------------------------------------

export const HttpHeader = Lazy.schema("acp.HttpHeader", () => Schema.Struct({
  name: Schema.String,
  value: Schema.String,
  _meta: meta
}))
export type HttpHeader = typeof HttpHeader.Type

/** Only sent to an agent that advertises `mcpCapabilities.http`. */
export const McpServerHttp = Lazy.schema("acp.McpServerHttp", () => Schema.Struct({
  type: Schema.Literal("http"),
  name: Schema.String,
  url: Schema.String,
  headers: withDefault(Schema.Array(HttpHeader), []),
  _meta: meta
}))
export type McpServerHttp = typeof McpServerHttp.Type

/** Only sent to an agent that advertises `mcpCapabilities.sse`. */
export const McpServerSse = Lazy.schema("acp.McpServerSse", () => Schema.Struct({
  type: Schema.Literal("sse"),
  name: Schema.String,
  url: Schema.String,
  headers: withDefault(Schema.Array(HttpHeader), []),
  _meta: meta
}))
export type McpServerSse = typeof McpServerSse.Type

/** Untagged on the wire (any `type` is ignored): a command the agent spawns. */
export const McpServerStdio = Lazy.schema("acp.McpServerStdio", () => Schema.Struct({
  name: Schema.String,
  command: Schema.String,
  args: withDefault(Schema.Array(Schema.String), []),
  env: withDefault(Schema.Array(EnvVariable), []),
  /** Skein's extension: run this server in the session's sandbox. */
  sandbox: Schema.optionalKey(Schema.Boolean),
  _meta: meta
}))
export type McpServerStdio = typeof McpServerStdio.Type

/** `http` and `sse` are tagged by `type`; anything else is a stdio server. */
export const McpServer = Lazy.schema("acp.McpServer", () => Schema.Union([McpServerHttp, McpServerSse, McpServerStdio]))
export type McpServer = typeof McpServer.Type

const directories = Lazy.schema("acp.directories", () => withDefault(Schema.Array(Schema.String), []))
const mcpServers = Lazy.schema("acp.mcpServers", () => withDefault(Schema.Array(McpServer), []))

// ---------------------------------------------------------------------------
// session/new, session/load, session/resume
// ---------------------------------------------------------------------------

/** `mcpServers` is required by the spec; a client that omits it gets `[]`. */
export const NewSessionRequest = Lazy.schema("acp.NewSessionRequest", () => Schema.Struct({
  cwd: Schema.String,
  additionalDirectories: directories,
  mcpServers,
  _meta: meta
}))
export type NewSessionRequest = typeof NewSessionRequest.Type

/** Only sent to an agent that advertises `loadSession`; the agent replays the history first. */
export const LoadSessionRequest = Lazy.schema("acp.LoadSessionRequest", () => Schema.Struct({
  sessionId: SessionId,
  cwd: Schema.String,
  additionalDirectories: directories,
  mcpServers,
  _meta: meta
}))
export type LoadSessionRequest = typeof LoadSessionRequest.Type

/** Only sent to an agent that advertises `sessionCapabilities.resume`; no replay. */
export const ResumeSessionRequest = Lazy.schema("acp.ResumeSessionRequest", () => Schema.Struct({
  sessionId: SessionId,
  cwd: Schema.String,
  additionalDirectories: directories,
  mcpServers,
  _meta: meta
}))
export type ResumeSessionRequest = typeof ResumeSessionRequest.Type

/**
 * UNSTABLE (schema.unstable.json): only sent to an agent that advertises
 * `sessionCapabilities.fork`. A new session from the context of `sessionId`; no replay.
 * `systemPrompt` is only for agents that advertise `sessionCapabilities.systemPrompt`; Skein
 * does not, so it refuses a fork that carries one (the spec: an agent that cannot apply it
 * must answer an error rather than fork), and keeps it undecoded.
 */
export const ForkSessionRequest = Lazy.schema("acp.ForkSessionRequest", () => Schema.Struct({
  sessionId: SessionId,
  cwd: Schema.String,
  additionalDirectories: directories,
  mcpServers,
  systemPrompt: optional(Schema.Unknown),
  _meta: meta
}))
export type ForkSessionRequest = typeof ForkSessionRequest.Type

// ---------------------------------------------------------------------------
// session/list, session/close, session/delete
// ---------------------------------------------------------------------------

/** Only sent to an agent that advertises `sessionCapabilities.list`. */
export const ListSessionsRequest = Lazy.schema("acp.ListSessionsRequest", () => Schema.Struct({
  cwd: optional(Schema.String),
  cursor: optional(Schema.String),
  _meta: meta
}))
export type ListSessionsRequest = typeof ListSessionsRequest.Type

/** Only sent to an agent that advertises `sessionCapabilities.close`. */
export const CloseSessionRequest = Lazy.schema("acp.CloseSessionRequest", () => Schema.Struct({ sessionId: SessionId, _meta: meta }))
export type CloseSessionRequest = typeof CloseSessionRequest.Type

/** Only sent to an agent that advertises `sessionCapabilities.delete`. */
export const DeleteSessionRequest = Lazy.schema("acp.DeleteSessionRequest", () => Schema.Struct({ sessionId: SessionId, _meta: meta }))
export type DeleteSessionRequest = typeof DeleteSessionRequest.Type

// ---------------------------------------------------------------------------
// session/prompt, session/cancel, $/cancel_request
// ---------------------------------------------------------------------------

export const PromptRequest = Lazy.schema("acp.PromptRequest", () => Schema.Struct({
  sessionId: SessionId,
  prompt: Schema.Array(ContentBlock),
  _meta: meta
}))
export type PromptRequest = typeof PromptRequest.Type

/** Why a turn ended. A failed turn still ends with `end_turn` (its error is content). */
export const StopReason = Lazy.schema("acp.StopReason", () => Schema.Literals(["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]))
export type StopReason = typeof StopReason.Type

/** `session/cancel` (a notification): stop the session's running turn. */
export const CancelNotification = Lazy.schema("acp.CancelNotification", () => Schema.Struct({ sessionId: SessionId, _meta: meta }))
export type CancelNotification = typeof CancelNotification.Type

/** `$/cancel_request` (a notification, either direction): cancel the request with `requestId`. */
export const CancelRequestNotification = Lazy.schema("acp.CancelRequestNotification", () => Schema.Struct({ requestId: RequestId, _meta: meta }))
export type CancelRequestNotification = typeof CancelRequestNotification.Type

// ---------------------------------------------------------------------------
// session/set_mode, session/set_config_option
// ---------------------------------------------------------------------------

export const SetSessionModeRequest = Lazy.schema("acp.SetSessionModeRequest", () => Schema.Struct({
  sessionId: SessionId,
  modeId: SessionModeId,
  _meta: meta
}))
export type SetSessionModeRequest = typeof SetSessionModeRequest.Type

/** Sets a `boolean` option. */
export const SetSessionConfigBooleanRequest = Lazy.schema("acp.SetSessionConfigBooleanRequest", () => Schema.Struct({
  sessionId: SessionId,
  configId: SessionConfigId,
  type: Schema.Literal("boolean"),
  value: Schema.Boolean,
  _meta: meta
}))
export type SetSessionConfigBooleanRequest = typeof SetSessionConfigBooleanRequest.Type

/** Sets a `select` option to one of its values (any `type` on the wire is ignored). */
export const SetSessionConfigValueRequest = Lazy.schema("acp.SetSessionConfigValueRequest", () => Schema.Struct({
  sessionId: SessionId,
  configId: SessionConfigId,
  value: SessionConfigValueId,
  _meta: meta
}))
export type SetSessionConfigValueRequest = typeof SetSessionConfigValueRequest.Type

/** Tell the two apart by `typeof request.value`. */
export const SetSessionConfigOptionRequest = Lazy.schema("acp.SetSessionConfigOptionRequest", () => Schema.Union([SetSessionConfigBooleanRequest, SetSessionConfigValueRequest]))
export type SetSessionConfigOptionRequest = typeof SetSessionConfigOptionRequest.Type

