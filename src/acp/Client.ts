/**
 * What the agent asks of the client: permission for a tool call, and — only when the client
 * advertised them — file access (`fs/*`) and terminals (`terminal/*`). Requests go out (exact
 * encoding); responses come in (lenient decoding).
 *
 * Spec: `$defs` RequestPermissionRequest/Response, PermissionOption, PermissionOptionKind,
 * RequestPermissionOutcome, SelectedPermissionOutcome, ReadTextFileRequest/Response,
 * WriteTextFileRequest/Response, CreateTerminalRequest/Response, TerminalOutputRequest/Response,
 * TerminalExitStatus, WaitForTerminalExitRequest/Response, KillTerminalRequest/Response,
 * ReleaseTerminalRequest/Response.
 */
import * as Schema from "effect/Schema"
import {
  EnvVariable,
  lenient,
  meta,
  optional,
  PermissionOptionId,
  SessionId,
  TerminalId,
  Uint32,
  Uint64
} from "./Common.ts"
import { ToolCallUpdate } from "./Update.ts"

// ---------------------------------------------------------------------------
// session/request_permission
// ---------------------------------------------------------------------------

/** Tells the client how to show an option; the client may remember `*_always` answers. */
export const PermissionOptionKind = Schema.Literals(["allow_once", "allow_always", "reject_once", "reject_always"])
export type PermissionOptionKind = typeof PermissionOptionKind.Type

export const PermissionOption = Schema.Struct({
  optionId: PermissionOptionId,
  name: Schema.String,
  kind: PermissionOptionKind,
  _meta: meta
})
export type PermissionOption = typeof PermissionOption.Type

export const RequestPermissionRequest = Schema.Struct({
  sessionId: SessionId,
  /** The tool call asking; it has been reported with `tool_call` before. */
  toolCall: ToolCallUpdate,
  options: Schema.Array(PermissionOption),
  _meta: meta
})
export type RequestPermissionRequest = typeof RequestPermissionRequest.Type

/** The prompt turn was cancelled before the user answered. */
export const CancelledPermissionOutcome = Schema.Struct({
  outcome: Schema.Literal("cancelled")
})
export type CancelledPermissionOutcome = typeof CancelledPermissionOutcome.Type

export const SelectedPermissionOutcome = Schema.Struct({
  outcome: Schema.Literal("selected"),
  optionId: PermissionOptionId,
  _meta: meta
})
export type SelectedPermissionOutcome = typeof SelectedPermissionOutcome.Type

/** Discriminated by `outcome`. */
export const RequestPermissionOutcome = Schema.Union([CancelledPermissionOutcome, SelectedPermissionOutcome])
export type RequestPermissionOutcome = typeof RequestPermissionOutcome.Type

export const RequestPermissionResponse = Schema.Struct({
  outcome: RequestPermissionOutcome,
  _meta: meta
})
export type RequestPermissionResponse = typeof RequestPermissionResponse.Type

// ---------------------------------------------------------------------------
// fs/read_text_file, fs/write_text_file
// ---------------------------------------------------------------------------

/** Reads the client's view of a file, unsaved edits included. `path` is absolute. */
export const ReadTextFileRequest = Schema.Struct({
  sessionId: SessionId,
  path: Schema.String,
  /** 1-based first line. */
  line: optional(Uint32),
  /** Maximum number of lines. */
  limit: optional(Uint32),
  _meta: meta
})
export type ReadTextFileRequest = typeof ReadTextFileRequest.Type

export const ReadTextFileResponse = Schema.Struct({
  content: Schema.String,
  _meta: meta
})
export type ReadTextFileResponse = typeof ReadTextFileResponse.Type

/** Writes a whole file through the client. `path` is absolute. */
export const WriteTextFileRequest = Schema.Struct({
  sessionId: SessionId,
  path: Schema.String,
  content: Schema.String,
  _meta: meta
})
export type WriteTextFileRequest = typeof WriteTextFileRequest.Type

export const WriteTextFileResponse = Schema.Struct({ _meta: meta })
export type WriteTextFileResponse = typeof WriteTextFileResponse.Type

// ---------------------------------------------------------------------------
// terminal/*
// ---------------------------------------------------------------------------

export const CreateTerminalRequest = Schema.Struct({
  sessionId: SessionId,
  command: Schema.String,
  args: optional(Schema.Array(Schema.String)),
  env: optional(Schema.Array(EnvVariable)),
  /** Absolute working directory. */
  cwd: optional(Schema.String),
  /** Output beyond this many bytes is truncated from the start. */
  outputByteLimit: optional(Uint64),
  _meta: meta
})
export type CreateTerminalRequest = typeof CreateTerminalRequest.Type

export const CreateTerminalResponse = Schema.Struct({
  terminalId: TerminalId,
  _meta: meta
})
export type CreateTerminalResponse = typeof CreateTerminalResponse.Type

export const TerminalOutputRequest = Schema.Struct({
  sessionId: SessionId,
  terminalId: TerminalId,
  _meta: meta
})
export type TerminalOutputRequest = typeof TerminalOutputRequest.Type

/** How a command ended: an exit code, or the signal that killed it. */
export const TerminalExitStatus = Schema.Struct({
  exitCode: lenient(Uint32),
  signal: lenient(Schema.String),
  _meta: meta
})
export type TerminalExitStatus = typeof TerminalExitStatus.Type

export const TerminalOutputResponse = Schema.Struct({
  output: Schema.String,
  truncated: Schema.Boolean,
  /** Present once the command has exited. */
  exitStatus: lenient(TerminalExitStatus),
  _meta: meta
})
export type TerminalOutputResponse = typeof TerminalOutputResponse.Type

export const WaitForTerminalExitRequest = Schema.Struct({
  sessionId: SessionId,
  terminalId: TerminalId,
  _meta: meta
})
export type WaitForTerminalExitRequest = typeof WaitForTerminalExitRequest.Type

export const WaitForTerminalExitResponse = TerminalExitStatus
export type WaitForTerminalExitResponse = typeof WaitForTerminalExitResponse.Type

/** Kills the command; the terminal stays valid until released. */
export const KillTerminalRequest = Schema.Struct({
  sessionId: SessionId,
  terminalId: TerminalId,
  _meta: meta
})
export type KillTerminalRequest = typeof KillTerminalRequest.Type

export const KillTerminalResponse = Schema.Struct({ _meta: meta })
export type KillTerminalResponse = typeof KillTerminalResponse.Type

/** Kills the command if still running and frees the terminal; its id is then invalid. */
export const ReleaseTerminalRequest = Schema.Struct({
  sessionId: SessionId,
  terminalId: TerminalId,
  _meta: meta
})
export type ReleaseTerminalRequest = typeof ReleaseTerminalRequest.Type

export const ReleaseTerminalResponse = Schema.Struct({ _meta: meta })
export type ReleaseTerminalResponse = typeof ReleaseTerminalResponse.Type
