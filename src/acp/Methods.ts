/**
 * ACP v1 method names and error codes, as plain constants. Importing this module costs nothing:
 * no schemas, no dependencies.
 */

/** The protocol version Skein speaks; sent back in every `initialize` response. */
export const PROTOCOL_VERSION = 1

/** Requests and notifications a client sends to the agent. */
export const AgentMethod = {
  initialize: "initialize",
  authenticate: "authenticate",
  logout: "logout",
  sessionNew: "session/new",
  sessionLoad: "session/load",
  sessionResume: "session/resume",
  sessionList: "session/list",
  sessionClose: "session/close",
  sessionDelete: "session/delete",
  sessionPrompt: "session/prompt",
  /** A notification. */
  sessionCancel: "session/cancel",
  sessionSetMode: "session/set_mode",
  sessionSetConfigOption: "session/set_config_option"
} as const
export type AgentMethod = (typeof AgentMethod)[keyof typeof AgentMethod]

/** Requests and notifications the agent sends to the client. */
export const ClientMethod = {
  /** A notification. */
  sessionUpdate: "session/update",
  sessionRequestPermission: "session/request_permission",
  fsReadTextFile: "fs/read_text_file",
  fsWriteTextFile: "fs/write_text_file",
  terminalCreate: "terminal/create",
  terminalOutput: "terminal/output",
  terminalWaitForExit: "terminal/wait_for_exit",
  terminalKill: "terminal/kill",
  terminalRelease: "terminal/release"
} as const
export type ClientMethod = (typeof ClientMethod)[keyof typeof ClientMethod]

/** Notifications either side may send. */
export const ProtocolMethod = {
  cancelRequest: "$/cancel_request"
} as const
export type ProtocolMethod = (typeof ProtocolMethod)[keyof typeof ProtocolMethod]

/** Every method name, flat, for lookups by name. */
export const Method = { ...AgentMethod, ...ClientMethod, ...ProtocolMethod } as const
export type Method = AgentMethod | ClientMethod | ProtocolMethod

/**
 * JSON-RPC error codes used by ACP (`$defs/ErrorCode`). Any other int32 is allowed; `-32000`
 * to `-32099` are implementation-defined server errors.
 */
export const ErrorCode = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  /** The request was cancelled with `$/cancel_request`. */
  requestCancelled: -32800,
  authRequired: -32000,
  /** E.g. an unknown session id. */
  resourceNotFound: -32002
} as const
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode]
