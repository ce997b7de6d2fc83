/**
 * Why an MCP server failed or refused a call, in words for the user (never a payload value),
 * from the MCP client's error (`McpSession.ts`).
 */
import type { McpClientError } from "effect/ai/McpClientError"

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`

/** Why a server failed, in words for the user (never a payload value). */
export const describe = (error: McpClientError, initTimeoutMs: number, callTimeoutMs: number): string => {
  const reason = error.reason
  switch (reason._tag) {
    case "TimeoutError":
      return reason.operation === "initialization"
        ? `it did not answer \`initialize\` within ${seconds(initTimeoutMs)}`
        : reason.operation === "tools/call"
        ? `a tool call did not finish within ${seconds(callTimeoutMs)}`
        : `it did not list its tools within ${seconds(initTimeoutMs)}`
    case "TransportError":
      return reason.description ?? "its connection failed"
    case "ClosedError":
      return reason.sessionExpired === true ? "its HTTP session expired" : "its connection closed"
    case "HttpError":
      return `it answered HTTP ${reason.status}${
        reason.status === 401 || reason.status === 403 ? " (it needs authorization, which Skein does not support yet)" : ""
      }`
    case "ProtocolError":
      return reason.code !== undefined
        ? `it answered with an error (${reason.description ?? "no message"}, code ${reason.code})`
        : `it broke the MCP protocol (${reason.description ?? "no detail"})`
    case "ValidationError":
      return `it sent an invalid MCP message (${reason.description})`
    case "UnsupportedError":
    case "LimitError":
    case "ConfigurationError":
      return reason.description
    case "ToolError":
      return "a tool failed"
  }
}

/** Whether a failed call leaves the server usable (its answer was an error, not garbage or silence). */
export const isToolLevel = (error: McpClientError): boolean =>
  (error.reason._tag === "ProtocolError" && error.reason.code !== undefined) || error.reason._tag === "UnsupportedError"

