/**
 * The words every layer shares: what a user sends and a model produces, tool kinds and
 * locations, modes, the provider-neutral conversation, MCP server settings, and the
 * questions a session asks whoever presents it. Data and Schemas only, imported by the log,
 * the providers, the tools, the runtime and the presenters alike; it imports nothing of
 * Skein's (but `Lazy.ts`), so no layer reaches into another for a type. Each Schema is built at
 * its first use (`Lazy.schema`): a process that only opens sessions builds none of them.
 */
import * as Schema from "effect/Schema"
import * as Lazy from "./Lazy.ts"

// ---------------------------------------------------------------------------
// Content the user sends and the model produces
// ---------------------------------------------------------------------------

/** A block of user input, as received from a presenter (a subset of ACP content). */
export const UserBlock = Lazy.schema("UserBlock", () => Schema.Union([
  Schema.Struct({ type: Schema.Literal("text"), text: Schema.String }),
  Schema.Struct({
    type: Schema.Literal("resource_link"),
    uri: Schema.String,
    name: Schema.String,
    mimeType: Schema.optionalKey(Schema.String),
    title: Schema.optionalKey(Schema.String),
    description: Schema.optionalKey(Schema.String),
    size: Schema.optionalKey(Schema.Number)
  }),
  Schema.Struct({ type: Schema.Literal("image"), data: Schema.String, mimeType: Schema.String, uri: Schema.optionalKey(Schema.String) }),
  Schema.Struct({
    type: Schema.Literal("resource"),
    uri: Schema.String,
    mimeType: Schema.optionalKey(Schema.String),
    text: Schema.optionalKey(Schema.String),
    blob: Schema.optionalKey(Schema.String)
  })
]))
export type UserBlock = typeof UserBlock.Type

/** One part of a model response, in the order the model produced it. */
export const AssistantPart = Lazy.schema("AssistantPart", () => Schema.Union([
  Schema.Struct({ type: Schema.Literal("text"), text: Schema.String }),
  Schema.Struct({ type: Schema.Literal("thinking"), text: Schema.String, signature: Schema.optionalKey(Schema.String) }),
  Schema.Struct({ type: Schema.Literal("tool_call"), id: Schema.String, name: Schema.String, args: Schema.Unknown })
]))
export type AssistantPart = typeof AssistantPart.Type

export const Usage = Lazy.schema("Usage", () => Schema.Struct({
  input: Schema.Number,
  output: Schema.Number,
  cached: Schema.optionalKey(Schema.Number)
}))
export type Usage = typeof Usage.Type

/** Why a model call ended. `tool_use` means the turn goes on with tool results. */
export const ModelStop = Lazy.schema("ModelStop", () => Schema.Literals(["end_turn", "tool_use", "max_tokens", "refusal", "error", "cancelled"]))
export type ModelStop = typeof ModelStop.Type

/** Why a turn ended, as ACP names it. */
export const StopReason = Lazy.schema("StopReason", () => Schema.Literals(["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]))
export type StopReason = typeof StopReason.Type

export const ToolKind = Lazy.schema("ToolKind", () => Schema.Literals(["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"]))
export type ToolKind = typeof ToolKind.Type

export const Location = Lazy.schema("Location", () => Schema.Struct({ path: Schema.String, line: Schema.optionalKey(Schema.Number) }))
export type Location = typeof Location.Type

/** What presenters show of a tool result beyond its text: a diff, a command's output. */
export const ToolDetails = Lazy.schema("ToolDetails", () => Schema.Struct({
  diff: Schema.optionalKey(Schema.Array(Schema.Struct({ path: Schema.String, oldText: Schema.NullOr(Schema.String), newText: Schema.String }))),
  exitCode: Schema.optionalKey(Schema.NullOr(Schema.Number)),
  output: Schema.optionalKey(Schema.String),
  truncated: Schema.optionalKey(Schema.Boolean),
  /** The client terminal the command ran in (live presenters keep showing it; a replay shows `output`). */
  terminalId: Schema.optionalKey(Schema.String)
}))
export type ToolDetails = typeof ToolDetails.Type

/** A user block as text, as the model and a transcript see it (an image as `[image]`). */
export const blockText = (block: UserBlock): string => {
  switch (block.type) {
    case "text":
      return block.text
    case "resource_link":
      return `[${block.name}](${block.uri})`
    case "resource":
      return block.text !== undefined ? `<resource uri="${block.uri}">\n${block.text}\n</resource>` : `[resource ${block.uri}]`
    case "image":
      return "[image]"
  }
}

/** The text of a user prompt, as the model and a transcript see it. */
export const promptText = (content: ReadonlyArray<UserBlock>): string => content.map(blockText).join("\n")

// ---------------------------------------------------------------------------
// Modes: what a session may do without asking (ids as Claude Code users know them)
// ---------------------------------------------------------------------------

export const ModeId = Lazy.schema("ModeId", () => Schema.Literals(["default", "acceptEdits", "plan", "bypassPermissions"]))
export type ModeId = typeof ModeId.Type

interface Mode {
  readonly id: ModeId
  readonly name: string
  readonly description: string
}

export const modes: ReadonlyArray<Mode> = [
  { id: "default", name: "Default", description: "Asks before edits and commands" },
  { id: "acceptEdits", name: "Accept Edits", description: "Edits inside the workspace are allowed; commands still ask" },
  { id: "plan", name: "Plan", description: "Read-only: reads and searches, no edits or commands" },
  { id: "bypassPermissions", name: "Bypass Permissions", description: "Asks nothing; every tool call is allowed" }
]

export const DEFAULT_MODE: ModeId = "default"

export const isModeId = (id: string): id is ModeId => modes.some((mode) => mode.id === id)

// ---------------------------------------------------------------------------
// The conversation as providers see it
// ---------------------------------------------------------------------------

/** A tool as the model sees it. */
export interface ToolSpec {
  readonly name: string
  readonly description: string
  /** JSON Schema of the arguments. */
  readonly parameters: Record<string, unknown>
}

/** The provider-neutral conversation history. */
export type Message =
  | { readonly role: "user"; readonly content: ReadonlyArray<UserBlock> }
  | { readonly role: "assistant"; readonly parts: ReadonlyArray<AssistantPart> }
  | { readonly role: "tool"; readonly id: string; readonly name: string; readonly ok: boolean; readonly content: string }

// ---------------------------------------------------------------------------
// MCP servers a session uses (the shapes ACP gives them in)
// ---------------------------------------------------------------------------

const NameValue = Lazy.schema("NameValue", () => Schema.Struct({ name: Schema.String, value: Schema.String }))

export const McpServerHttp = Lazy.schema("McpServerHttp", () => Schema.Struct({
  type: Schema.Literal("http"),
  name: Schema.String,
  url: Schema.String,
  headers: Schema.Array(NameValue)
}))
export type McpServerHttp = typeof McpServerHttp.Type

export const McpServerSse = Lazy.schema("McpServerSse", () => Schema.Struct({
  type: Schema.Literal("sse"),
  name: Schema.String,
  url: Schema.String,
  headers: Schema.Array(NameValue)
}))
export type McpServerSse = typeof McpServerSse.Type

/** A command Skein spawns and speaks MCP with over its stdio. */
export const McpServerStdio = Lazy.schema("McpServerStdio", () => Schema.Struct({
  name: Schema.String,
  command: Schema.String,
  args: Schema.Array(Schema.String),
  env: Schema.Array(NameValue),
  /** Skein's extension: run the server in the session's sandbox (it does not start where that cannot be done). */
  sandbox: Schema.optionalKey(Schema.Boolean)
}))
export type McpServerStdio = typeof McpServerStdio.Type

/** `http` and `sse` are tagged by `type`; anything else is a stdio server. */
export const McpServer = Lazy.schema("McpServer", () => Schema.Union([McpServerHttp, McpServerSse, McpServerStdio]))
export type McpServer = typeof McpServer.Type

// ---------------------------------------------------------------------------
// Questions: what a session asks of whoever presents its turn
// ---------------------------------------------------------------------------

const OptionKind = Lazy.schema("OptionKind", () => Schema.Literals(["allow_once", "allow_always", "reject_once", "reject_always"]))
export type OptionKind = typeof OptionKind.Type

export const PermissionOption = Lazy.schema("PermissionOption", () => Schema.Struct({ optionId: OptionKind, name: Schema.String, kind: OptionKind }))
export type PermissionOption = typeof PermissionOption.Type

/** The change a `write` or `edit` would make, shown before the user answers. */
export const ProposedDiff = Lazy.schema("ProposedDiff", () => Schema.Struct({
  type: Schema.Literal("diff"),
  path: Schema.String,
  /** The file's text now; null when the file does not exist yet. */
  oldText: Schema.NullOr(Schema.String),
  newText: Schema.String
}))
export type ProposedDiff = typeof ProposedDiff.Type

/** The tool call a permission question is about (ACP's `ToolCallUpdate` shape). */
export const PermissionToolCall = Lazy.schema("PermissionToolCall", () => Schema.Struct({
  toolCallId: Schema.String,
  title: Schema.String,
  kind: ToolKind,
  status: Schema.Literal("pending"),
  rawInput: Schema.Unknown,
  locations: Schema.optionalKey(Schema.Array(Location)),
  content: Schema.optionalKey(Schema.Array(ProposedDiff))
}))
export type PermissionToolCall = typeof PermissionToolCall.Type

export const PermissionAsked = Lazy.schema("PermissionAsked", () => Schema.Struct({
  requestId: Schema.String,
  toolCall: PermissionToolCall,
  options: Schema.Array(PermissionOption)
}))
export type PermissionAsked = typeof PermissionAsked.Type

const terminalOp = <M extends string>(method: M) =>
  Schema.Struct({ method: Schema.Literal(method), params: Schema.Struct({ terminalId: Schema.String }) })

/** An operation on the client's side, as the ACP client method that does it (without `sessionId`). */
export const ClientOp = Lazy.schema("ClientOp", () => Schema.Union([
  Schema.Struct({ method: Schema.Literal("fs/read_text_file"), params: Schema.Struct({ path: Schema.String }) }),
  Schema.Struct({ method: Schema.Literal("fs/write_text_file"), params: Schema.Struct({ path: Schema.String, content: Schema.String }) }),
  Schema.Struct({
    method: Schema.Literal("terminal/create"),
    params: Schema.Struct({
      command: Schema.String,
      args: Schema.Array(Schema.String),
      cwd: Schema.String,
      env: Schema.optionalKey(Schema.Array(NameValue)),
      outputByteLimit: Schema.Number
    })
  }),
  terminalOp("terminal/wait_for_exit"),
  terminalOp("terminal/output"),
  terminalOp("terminal/kill"),
  terminalOp("terminal/release")
]))
export type ClientOp = typeof ClientOp.Type

export const ClientCall = Lazy.schema("ClientCall", () => Schema.Struct({
  requestId: Schema.String,
  /** The tool call it serves, when there is one. */
  toolCallId: Schema.optionalKey(Schema.String),
  op: ClientOp
}))
export type ClientCall = typeof ClientCall.Type

/**
 * An answer. A permission question takes `selected` (one of the offered option ids) or
 * `cancelled`; a client call takes `result` (the client method's result, decoded by the
 * session) or `error` (a message).
 */
export const Answer = Lazy.schema("Answer", () => Schema.Union([
  Schema.Struct({ outcome: Schema.Literal("selected"), optionId: Schema.String }),
  Schema.Struct({ outcome: Schema.Literal("cancelled") }),
  Schema.Struct({ outcome: Schema.Literal("result"), result: Schema.Unknown }),
  Schema.Struct({ outcome: Schema.Literal("error"), message: Schema.String })
]))
export type Answer = typeof Answer.Type

/** How a command in a client terminal ended: its exit code, or the signal that killed it. */
const ExitStatus = Lazy.schema("ExitStatus", () => Schema.Struct({ exitCode: Schema.NullOr(Schema.Number), signal: Schema.NullOr(Schema.String) }))
export type ExitStatus = typeof ExitStatus.Type

/** The result a `client_call` is answered with, by method (what the session decodes). */
export const ClientResults = {
  "fs/read_text_file": Lazy.schema("ClientResults.fs/read_text_file", () => Schema.Struct({ content: Schema.String })),
  "fs/write_text_file": Lazy.schema("ClientResults.fs/write_text_file", () => Schema.Struct({})),
  "terminal/create": Lazy.schema("ClientResults.terminal/create", () => Schema.Struct({ terminalId: Schema.String })),
  "terminal/wait_for_exit": ExitStatus,
  "terminal/output": Lazy.schema("ClientResults.terminal/output", () => Schema.Struct({ output: Schema.String, truncated: Schema.Boolean, exitStatus: Schema.NullOr(ExitStatus) })),
  "terminal/kill": Lazy.schema("ClientResults.terminal/kill", () => Schema.Struct({})),
  "terminal/release": Lazy.schema("ClientResults.terminal/release", () => Schema.Struct({}))
} as const

/** An MCP server of a session as it is now: connecting, ready (with its tools) or failed (why). */
export const McpServerStatus = Lazy.schema("McpServerStatus", () => Schema.Struct({
  name: Schema.String,
  transport: Schema.Literals(["stdio", "http", "sse"]),
  state: Schema.Literals(["connecting", "ready", "failed", "closed"]),
  /** The names the model sees (ready servers). */
  tools: Schema.Array(Schema.String),
  /** Why it failed. */
  error: Schema.optionalKey(Schema.String),
  pid: Schema.optionalKey(Schema.Number),
  /** The MCP revision the server speaks, once known. */
  protocolVersion: Schema.optionalKey(Schema.String),
  serverInfo: Schema.optionalKey(Schema.Struct({ name: Schema.String, version: Schema.String })),
  /** The last lines of its stderr (and of stdout lines that were not JSON-RPC). */
  stderr: Schema.Array(Schema.String)
}))
export type McpServerStatus = typeof McpServerStatus.Type
