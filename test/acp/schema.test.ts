/**
 * Holds Skein's hand-written ACP Schemas against the official JSON Schema of
 * `@agentclientprotocol/sdk`: whatever our Schemas can encode must validate against the matching
 * `$defs` entry, and what clients send (examples from the spec) must decode.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Schema from "effect/Schema"
import { Answers, Client, Config, Content, Initialize, Methods, Protocol, Session, Update } from "../../src/acp/index.ts"
import { makeOutboundChecker, methodTables, officialDefs, validateDef } from "../support/AcpSchema.ts"

/** Paths to values that must never reach the wire: `undefined`, non-finite numbers, functions. */
const nonJson = (value: unknown, path = "$"): Array<string> => {
  if (value === undefined) return [path]
  if (typeof value === "number") return Number.isFinite(value) ? [] : [path]
  if (typeof value === "function" || typeof value === "symbol" || typeof value === "bigint") return [path]
  if (Array.isArray(value)) return value.flatMap((item, i) => nonJson(item, `${path}[${i}]`))
  if (typeof value === "object" && value !== null) {
    return Object.entries(value).flatMap(([k, v]) => nonJson(v, `${path}.${k}`))
  }
  return []
}

type Outgoing = readonly [name: string, schema: Schema.Codec<unknown, unknown>, defName: string]

const codec = <S extends Schema.Top>(schema: S) => schema as unknown as Schema.Codec<unknown, unknown>

/**
 * Every Schema whose values Skein writes, paired with the `$defs` entry it must satisfy.
 * Incoming schemas are listed too: what we would encode of them must be valid ACP as well,
 * which keeps their field names and types honest.
 */
const encoded: ReadonlyArray<Outgoing> = [
  // initialize, authenticate, logout
  ["Initialize.InitializeResponse", codec(Initialize.InitializeResponse), "InitializeResponse"],
  ["Initialize.AgentCapabilities", codec(Initialize.AgentCapabilities), "AgentCapabilities"],
  ["Initialize.AuthMethod", codec(Initialize.AuthMethod), "AuthMethod"],
  ["Initialize.Implementation", codec(Initialize.Implementation), "Implementation"],
  ["Initialize.AuthenticateResponse", codec(Initialize.AuthenticateResponse), "AuthenticateResponse"],
  ["Initialize.LogoutResponse", codec(Initialize.LogoutResponse), "LogoutResponse"],
  ["Initialize.InitializeRequest", codec(Initialize.InitializeRequest), "InitializeRequest"],
  ["Initialize.AuthenticateRequest", codec(Initialize.AuthenticateRequest), "AuthenticateRequest"],
  ["Initialize.LogoutRequest", codec(Initialize.LogoutRequest), "LogoutRequest"],
  // sessions
  ["Answers.NewSessionResponse", codec(Answers.NewSessionResponse), "NewSessionResponse"],
  ["Answers.LoadSessionResponse", codec(Answers.LoadSessionResponse), "LoadSessionResponse"],
  ["Answers.ResumeSessionResponse", codec(Answers.ResumeSessionResponse), "ResumeSessionResponse"],
  ["Answers.ListSessionsResponse", codec(Answers.ListSessionsResponse), "ListSessionsResponse"],
  ["Answers.CloseSessionResponse", codec(Answers.CloseSessionResponse), "CloseSessionResponse"],
  ["Answers.DeleteSessionResponse", codec(Answers.DeleteSessionResponse), "DeleteSessionResponse"],
  ["Answers.PromptResponse", codec(Answers.PromptResponse), "PromptResponse"],
  ["Answers.SetSessionModeResponse", codec(Answers.SetSessionModeResponse), "SetSessionModeResponse"],
  [
    "Answers.SetSessionConfigOptionResponse",
    codec(Answers.SetSessionConfigOptionResponse),
    "SetSessionConfigOptionResponse"
  ],
  ["Session.CancelRequestNotification", codec(Session.CancelRequestNotification), "CancelRequestNotification"],
  ["Session.NewSessionRequest", codec(Session.NewSessionRequest), "NewSessionRequest"],
  ["Session.LoadSessionRequest", codec(Session.LoadSessionRequest), "LoadSessionRequest"],
  ["Session.ResumeSessionRequest", codec(Session.ResumeSessionRequest), "ResumeSessionRequest"],
  ["Session.ListSessionsRequest", codec(Session.ListSessionsRequest), "ListSessionsRequest"],
  ["Session.CloseSessionRequest", codec(Session.CloseSessionRequest), "CloseSessionRequest"],
  ["Session.DeleteSessionRequest", codec(Session.DeleteSessionRequest), "DeleteSessionRequest"],
  ["Session.PromptRequest", codec(Session.PromptRequest), "PromptRequest"],
  ["Session.CancelNotification", codec(Session.CancelNotification), "CancelNotification"],
  ["Session.SetSessionModeRequest", codec(Session.SetSessionModeRequest), "SetSessionModeRequest"],
  [
    "Session.SetSessionConfigOptionRequest",
    codec(Session.SetSessionConfigOptionRequest),
    "SetSessionConfigOptionRequest"
  ],
  ["Session.McpServer", codec(Session.McpServer), "McpServer"],
  // config
  ["Config.SessionModeState", codec(Config.SessionModeState), "SessionModeState"],
  ["Config.SessionConfigOption", codec(Config.SessionConfigOption), "SessionConfigOption"],
  // content
  ["Content.ContentBlock", codec(Content.ContentBlock), "ContentBlock"],
  ["Content.Annotations", codec(Content.Annotations), "Annotations"],
  ["Content.EmbeddedResourceResource", codec(Content.EmbeddedResourceResource), "EmbeddedResourceResource"],
  // session/update
  ["Update.SessionNotification", codec(Update.SessionNotification), "SessionNotification"],
  ["Update.UserMessageChunk", codec(Update.UserMessageChunk), "SessionUpdate"],
  ["Update.AgentMessageChunk", codec(Update.AgentMessageChunk), "SessionUpdate"],
  ["Update.AgentThoughtChunk", codec(Update.AgentThoughtChunk), "SessionUpdate"],
  ["Update.SessionUpdateToolCall", codec(Update.SessionUpdateToolCall), "SessionUpdate"],
  ["Update.SessionUpdateToolCallUpdate", codec(Update.SessionUpdateToolCallUpdate), "SessionUpdate"],
  ["Update.Plan", codec(Update.Plan), "SessionUpdate"],
  ["Update.AvailableCommandsUpdate", codec(Update.AvailableCommandsUpdate), "SessionUpdate"],
  ["Update.CurrentModeUpdate", codec(Update.CurrentModeUpdate), "SessionUpdate"],
  ["Update.ConfigOptionUpdate", codec(Update.ConfigOptionUpdate), "SessionUpdate"],
  ["Update.SessionInfoUpdate", codec(Update.SessionInfoUpdate), "SessionUpdate"],
  ["Update.UsageUpdate", codec(Update.UsageUpdate), "SessionUpdate"],
  ["Update.ToolCall", codec(Update.ToolCall), "ToolCall"],
  ["Update.ToolCallUpdate", codec(Update.ToolCallUpdate), "ToolCallUpdate"],
  ["Update.ToolCallContent", codec(Update.ToolCallContent), "ToolCallContent"],
  ["Update.ToolCallLocation", codec(Update.ToolCallLocation), "ToolCallLocation"],
  ["Update.PlanEntry", codec(Update.PlanEntry), "PlanEntry"],
  ["Update.AvailableCommand", codec(Update.AvailableCommand), "AvailableCommand"],
  ["Update.Cost", codec(Update.Cost), "Cost"],
  // agent → client requests, and the client's answers
  ["Client.RequestPermissionRequest", codec(Client.RequestPermissionRequest), "RequestPermissionRequest"],
  ["Client.ReadTextFileRequest", codec(Client.ReadTextFileRequest), "ReadTextFileRequest"],
  ["Client.WriteTextFileRequest", codec(Client.WriteTextFileRequest), "WriteTextFileRequest"],
  ["Client.CreateTerminalRequest", codec(Client.CreateTerminalRequest), "CreateTerminalRequest"],
  ["Client.TerminalOutputRequest", codec(Client.TerminalOutputRequest), "TerminalOutputRequest"],
  ["Client.WaitForTerminalExitRequest", codec(Client.WaitForTerminalExitRequest), "WaitForTerminalExitRequest"],
  ["Client.KillTerminalRequest", codec(Client.KillTerminalRequest), "KillTerminalRequest"],
  ["Client.ReleaseTerminalRequest", codec(Client.ReleaseTerminalRequest), "ReleaseTerminalRequest"],
  ["Client.RequestPermissionResponse", codec(Client.RequestPermissionResponse), "RequestPermissionResponse"],
  ["Client.ReadTextFileResponse", codec(Client.ReadTextFileResponse), "ReadTextFileResponse"],
  ["Client.WriteTextFileResponse", codec(Client.WriteTextFileResponse), "WriteTextFileResponse"],
  ["Client.CreateTerminalResponse", codec(Client.CreateTerminalResponse), "CreateTerminalResponse"],
  ["Client.TerminalOutputResponse", codec(Client.TerminalOutputResponse), "TerminalOutputResponse"],
  [
    "Client.WaitForTerminalExitResponse",
    codec(Client.WaitForTerminalExitResponse),
    "WaitForTerminalExitResponse"
  ],
  ["Client.KillTerminalResponse", codec(Client.KillTerminalResponse), "KillTerminalResponse"],
  ["Client.ReleaseTerminalResponse", codec(Client.ReleaseTerminalResponse), "ReleaseTerminalResponse"]
]

describe("generated values, encoded, validate against the official schema", () => {
  for (const [name, schema, defName] of encoded) {
    it.prop(`${name} → $defs/${defName}`, [schema], ([value]) => {
      const wire = Schema.encodeUnknownSync(schema)(value)
      expect(nonJson(wire)).toEqual([])
      const parsed: unknown = JSON.parse(JSON.stringify(wire))
      const result = validateDef(defName, parsed)
      expect(result.ok ? "valid" : result.errors).toBe("valid")
      // What we write, we can read back.
      Schema.decodeUnknownSync(schema)(parsed)
    })
  }
})

describe("the method tables agree with the schema", () => {
  const tables = methodTables()

  it("every client → agent request has its response def", () => {
    const ours = Object.keys(Protocol.agentRequests).sort()
    expect(ours).toEqual([...tables.responses.keys()].sort())
  })

  it("every agent → client request Skein may send is one the schema defines", () => {
    for (const method of Object.keys(Protocol.clientRequests)) {
      expect(tables.outboundRequests.has(method), method).toBe(true)
    }
    for (const method of Object.keys(Protocol.clientNotifications)) {
      expect(tables.outboundNotifications.has(method), method).toBe(true)
    }
  })

  it("every method constant names a method of the schema", () => {
    const known = new Set(Object.values(officialDefs()).flatMap((def) => {
      const method = def["x-method"]
      return typeof method === "string" ? [method] : []
    }))
    for (const method of Object.values(Methods.Method)) expect(known.has(method), method).toBe(true)
    expect(Methods.PROTOCOL_VERSION).toBe(1)
  })

  it("every error code constant is one the schema names", () => {
    const codes = (officialDefs().ErrorCode!.anyOf as Array<{ const?: number }>).flatMap((b) =>
      b.const === undefined ? [] : [b.const]
    )
    expect(Object.values(Methods.ErrorCode).sort()).toEqual(codes.sort())
  })
})

// ---------------------------------------------------------------------------
// Incoming: examples a client sends
// ---------------------------------------------------------------------------

type Incoming = readonly [name: string, schema: Schema.Codec<unknown, unknown>, defName: string, params: unknown]

/** Valid per the spec (checked against the schema too), and must decode. */
const validIncoming: ReadonlyArray<Incoming> = [
  ["initialize, minimal", codec(Initialize.InitializeRequest), "InitializeRequest", { protocolVersion: 1 }],
  [
    "initialize, full",
    codec(Initialize.InitializeRequest),
    "InitializeRequest",
    {
      protocolVersion: 1,
      clientCapabilities: {
        fs: { readTextFile: true, writeTextFile: true },
        terminal: true,
        session: { configOptions: { boolean: {} } },
        _meta: { "zed.dev/x": 1 }
      },
      clientInfo: { name: "zed", title: "Zed", version: "0.201.0" }
    }
  ],
  ["authenticate", codec(Initialize.AuthenticateRequest), "AuthenticateRequest", { methodId: "login" }],
  ["logout", codec(Initialize.LogoutRequest), "LogoutRequest", {}],
  [
    "session/new with MCP servers",
    codec(Session.NewSessionRequest),
    "NewSessionRequest",
    {
      cwd: "/home/user/project",
      mcpServers: [
        { name: "filesystem", command: "/path/to/mcp-server", args: ["--stdio"], env: [{ name: "K", value: "v" }] },
        { type: "http", name: "api", url: "https://api.example.com/mcp", headers: [{ name: "A", value: "b" }] },
        { type: "sse", name: "events", url: "https://events.example.com/mcp", headers: [] }
      ]
    }
  ],
  [
    "session/load",
    codec(Session.LoadSessionRequest),
    "LoadSessionRequest",
    { sessionId: "sess_789xyz", cwd: "/home/user/project", mcpServers: [] }
  ],
  [
    "session/resume",
    codec(Session.ResumeSessionRequest),
    "ResumeSessionRequest",
    { sessionId: "sess_789xyz", cwd: "/home/user/project" }
  ],
  ["session/list, empty", codec(Session.ListSessionsRequest), "ListSessionsRequest", {}],
  [
    "session/list, filtered",
    codec(Session.ListSessionsRequest),
    "ListSessionsRequest",
    { cwd: "/home/user/project", cursor: null }
  ],
  ["session/close", codec(Session.CloseSessionRequest), "CloseSessionRequest", { sessionId: "s" }],
  ["session/delete", codec(Session.DeleteSessionRequest), "DeleteSessionRequest", { sessionId: "s" }],
  [
    "session/prompt with every block type",
    codec(Session.PromptRequest),
    "PromptRequest",
    {
      sessionId: "sess_abc123def456",
      prompt: [
        { type: "text", text: "Can you analyze this code for potential issues?", annotations: null },
        {
          type: "resource",
          resource: { uri: "file:///home/user/project/main.py", mimeType: "text/x-python", text: "def f(): pass" }
        },
        { type: "resource", resource: { uri: "file:///logo.png", blob: "iVBORw0KGgo=" } },
        {
          type: "resource_link",
          uri: "file:///home/user/document.pdf",
          name: "document.pdf",
          mimeType: "application/pdf",
          size: 1024000
        },
        { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png", annotations: { audience: ["user"], priority: 1 } },
        { type: "audio", data: "UklGRg==", mimeType: "audio/wav" }
      ]
    }
  ],
  ["session/cancel", codec(Session.CancelNotification), "CancelNotification", { sessionId: "s" }],
  ["$/cancel_request, integer id", codec(Session.CancelRequestNotification), "CancelRequestNotification", { requestId: 7 }],
  ["$/cancel_request, string id", codec(Session.CancelRequestNotification), "CancelRequestNotification", { requestId: "a" }],
  ["session/set_mode", codec(Session.SetSessionModeRequest), "SetSessionModeRequest", { sessionId: "s", modeId: "code" }],
  [
    "session/set_config_option, value",
    codec(Session.SetSessionConfigOptionRequest),
    "SetSessionConfigOptionRequest",
    { sessionId: "s", configId: "model", value: "gpt-5" }
  ],
  [
    "session/set_config_option, boolean",
    codec(Session.SetSessionConfigOptionRequest),
    "SetSessionConfigOptionRequest",
    { sessionId: "s", configId: "fast", type: "boolean", value: true }
  ],
  [
    "request_permission answer, selected",
    codec(Client.RequestPermissionResponse),
    "RequestPermissionResponse",
    { outcome: { outcome: "selected", optionId: "allow-once" } }
  ],
  [
    "request_permission answer, cancelled",
    codec(Client.RequestPermissionResponse),
    "RequestPermissionResponse",
    { outcome: { outcome: "cancelled" } }
  ],
  ["fs/read_text_file answer", codec(Client.ReadTextFileResponse), "ReadTextFileResponse", { content: "x\n" }],
  ["fs/write_text_file answer", codec(Client.WriteTextFileResponse), "WriteTextFileResponse", {}],
  ["terminal/create answer", codec(Client.CreateTerminalResponse), "CreateTerminalResponse", { terminalId: "t1" }],
  [
    "terminal/output answer, running",
    codec(Client.TerminalOutputResponse),
    "TerminalOutputResponse",
    { output: "ok", truncated: false, exitStatus: null }
  ],
  [
    "terminal/output answer, exited",
    codec(Client.TerminalOutputResponse),
    "TerminalOutputResponse",
    { output: "", truncated: true, exitStatus: { exitCode: 0, signal: null } }
  ],
  [
    "terminal/wait_for_exit answer",
    codec(Client.WaitForTerminalExitResponse),
    "WaitForTerminalExitResponse",
    { exitCode: null, signal: "SIGKILL" }
  ]
]

/** Invalid per the spec (checked against the schema too), and must not decode. */
const invalidIncoming: ReadonlyArray<Incoming> = [
  ["initialize without protocolVersion", codec(Initialize.InitializeRequest), "InitializeRequest", {}],
  ["initialize with a string version", codec(Initialize.InitializeRequest), "InitializeRequest", { protocolVersion: "1" }],
  ["initialize with a fractional version", codec(Initialize.InitializeRequest), "InitializeRequest", { protocolVersion: 1.5 }],
  ["session/new without cwd", codec(Session.NewSessionRequest), "NewSessionRequest", { mcpServers: [] }],
  ["session/new with a numeric cwd", codec(Session.NewSessionRequest), "NewSessionRequest", { cwd: 1, mcpServers: [] }],
  [
    "session/new with a broken MCP server",
    codec(Session.NewSessionRequest),
    "NewSessionRequest",
    { cwd: "/p", mcpServers: [{ name: "x" }] }
  ],
  ["session/load without sessionId", codec(Session.LoadSessionRequest), "LoadSessionRequest", { cwd: "/p", mcpServers: [] }],
  ["session/resume without cwd", codec(Session.ResumeSessionRequest), "ResumeSessionRequest", { sessionId: "s" }],
  ["session/prompt without sessionId", codec(Session.PromptRequest), "PromptRequest", { prompt: [] }],
  ["session/prompt with a numeric sessionId", codec(Session.PromptRequest), "PromptRequest", { sessionId: 42, prompt: [] }],
  ["session/prompt with a string prompt", codec(Session.PromptRequest), "PromptRequest", { sessionId: "s", prompt: "hi" }],
  [
    "session/prompt with an unknown block type",
    codec(Session.PromptRequest),
    "PromptRequest",
    { sessionId: "s", prompt: [{ type: "video", data: "" }] }
  ],
  [
    "session/prompt with non-string text",
    codec(Session.PromptRequest),
    "PromptRequest",
    { sessionId: "s", prompt: [{ type: "text", text: 3 }] }
  ],
  ["session/cancel without sessionId", codec(Session.CancelNotification), "CancelNotification", {}],
  ["$/cancel_request with an object id", codec(Session.CancelRequestNotification), "CancelRequestNotification", { requestId: {} }],
  ["session/set_mode without modeId", codec(Session.SetSessionModeRequest), "SetSessionModeRequest", { sessionId: "s" }],
  [
    "session/set_config_option with a numeric value",
    codec(Session.SetSessionConfigOptionRequest),
    "SetSessionConfigOptionRequest",
    { sessionId: "s", configId: "c", value: 3 }
  ],
  [
    "request_permission answer with an unknown outcome",
    codec(Client.RequestPermissionResponse),
    "RequestPermissionResponse",
    { outcome: { outcome: "maybe" } }
  ],
  [
    "request_permission answer selected without optionId",
    codec(Client.RequestPermissionResponse),
    "RequestPermissionResponse",
    { outcome: { outcome: "selected" } }
  ],
  ["terminal/output answer without truncated", codec(Client.TerminalOutputResponse), "TerminalOutputResponse", { output: "" }]
]

describe("incoming params", () => {
  for (const [name, schema, defName, params] of validIncoming) {
    it(`decodes ${name}`, () => {
      const result = validateDef(defName, params)
      expect(result.ok ? "valid" : result.errors).toBe("valid")
      const decoded = Schema.decodeUnknownExit(schema)(params)
      expect(decoded._tag).toBe("Success")
    })
  }

  for (const [name, schema, defName, params] of invalidIncoming) {
    it(`rejects ${name}`, () => {
      expect(validateDef(defName, params).ok).toBe(false)
      const decoded = Schema.decodeUnknownExit(schema)(params)
      expect(decoded._tag).toBe("Failure")
    })
  }

  it("fills the spec defaults of initialize and ignores unknown fields", () => {
    const decoded = Schema.decodeUnknownSync(Initialize.InitializeRequest)({
      protocolVersion: 1,
      clientCapabilities: { fs: { readTextFile: true }, terminal: "yes", futureThing: {} },
      clientInfo: { name: "acpx" }
    })
    expect(decoded).toEqual({
      protocolVersion: 1,
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: false }, terminal: false, auth: { terminal: false } }
    })
  })

  it("turns null and absent lists into [] and null optionals into absent keys", () => {
    const decoded = Schema.decodeUnknownSync(Session.NewSessionRequest)({
      cwd: "/p",
      mcpServers: [{ name: "fs", command: "/bin/mcp", args: null, env: null, extra: true }]
    })
    expect(decoded).toEqual({
      cwd: "/p",
      additionalDirectories: [],
      mcpServers: [{ name: "fs", command: "/bin/mcp", args: [], env: [] }]
    })
    // The spec requires `mcpServers`; Skein tolerates a client that omits it.
    expect(Schema.decodeUnknownSync(Session.NewSessionRequest)({ cwd: "/p" }).mcpServers).toEqual([])

    const prompt = Schema.decodeUnknownSync(Session.PromptRequest)({
      sessionId: "s",
      prompt: [{ type: "text", text: "hi", annotations: null, _meta: null }]
    })
    expect(prompt.prompt).toEqual([{ type: "text", text: "hi" }])
  })

  it("tells the two kinds of set_config_option apart", () => {
    const decode = Schema.decodeUnknownSync(Session.SetSessionConfigOptionRequest)
    expect(decode({ sessionId: "s", configId: "c", type: "boolean", value: false })).toEqual({
      sessionId: "s",
      configId: "c",
      type: "boolean",
      value: false
    })
    expect(decode({ sessionId: "s", configId: "c", value: "high" })).toEqual({ sessionId: "s", configId: "c", value: "high" })
  })
})

describe("unstable: session/fork against schema.unstable.json", () => {
  it.prop("Answers.ForkSessionResponse → $defs/ForkSessionResponse; Initialize.SessionCapabilities → $defs/SessionCapabilities", [
    codec(Answers.ForkSessionResponse),
    codec(Initialize.SessionCapabilities)
  ], ([response, capabilities]) => {
    for (const [schema, value, defName] of [
      [codec(Answers.ForkSessionResponse), response, "ForkSessionResponse"],
      [codec(Initialize.SessionCapabilities), capabilities, "SessionCapabilities"]
    ] as const) {
      const wire: unknown = JSON.parse(JSON.stringify(Schema.encodeUnknownSync(schema)(value)))
      const result = validateDef(defName, wire, true)
      expect(result.ok ? "valid" : result.errors).toBe("valid")
    }
  })

  it("decodes a client's session/fork (lists defaulted, a systemPrompt kept for the server to refuse) and refuses one without cwd", () => {
    const full = {
      sessionId: "s",
      cwd: "/p",
      additionalDirectories: ["/q"],
      mcpServers: [{ name: "fs", command: "/bin/mcp", args: [], env: [] }],
      systemPrompt: { mode: "append", content: [{ type: "text", text: "Be brief." }] },
      _meta: { x: 1 }
    }
    expect(validateDef("ForkSessionRequest", full, true)).toEqual({ ok: true })
    expect(Schema.decodeUnknownSync(Session.ForkSessionRequest)(full)).toEqual(full)
    expect(Schema.decodeUnknownSync(Session.ForkSessionRequest)({ sessionId: "s", cwd: "/p", systemPrompt: null })).toEqual({
      sessionId: "s",
      cwd: "/p",
      additionalDirectories: [],
      mcpServers: []
    })
    expect(validateDef("ForkSessionRequest", { sessionId: "s" }, true).ok).toBe(false)
    expect(Schema.decodeUnknownExit(Session.ForkSessionRequest)({ sessionId: "s" })._tag).toBe("Failure")
  })
})

describe("outgoing encoding is exact", () => {
  it("omits absent and undefined optionals and drops unknown keys", () => {
    const update: Update.SessionNotification = {
      sessionId: "s",
      update: { sessionUpdate: "tool_call_update", toolCallId: "t", status: "completed", title: undefined }
    }
    const withExtra = { ...update, extra: 1 } as Update.SessionNotification
    expect(Schema.encodeSync(Update.SessionNotification)(withExtra)).toEqual({
      sessionId: "s",
      update: { sessionUpdate: "tool_call_update", toolCallId: "t", status: "completed" }
    })
    expect(Object.keys(Schema.encodeSync(Update.SessionNotification)(update).update)).toEqual([
      "sessionUpdate",
      "toolCallId",
      "status"
    ])
  })

  it("keeps null where it means 'clear' (session_info_update)", () => {
    const encodedInfo = Schema.encodeSync(Update.SessionInfoUpdate)({ sessionUpdate: "session_info_update", title: null })
    expect(encodedInfo).toEqual({ sessionUpdate: "session_info_update", title: null })
    expect(validateDef("SessionUpdate", encodedInfo)).toEqual({ ok: true })
  })

  it("refuses to encode what the spec does not allow", () => {
    const encode = Schema.encodeUnknownExit(Answers.PromptResponse)
    expect(encode({ stopReason: "done" })._tag).toBe("Failure")
    const usage = Schema.encodeUnknownExit(Update.UsageUpdate)
    expect(usage({ sessionUpdate: "usage_update", used: -1, size: 10 })._tag).toBe("Failure")
    expect(usage({ sessionUpdate: "usage_update", used: 1.5, size: 10 })._tag).toBe("Failure")
  })
})

// ---------------------------------------------------------------------------
// The checker itself must be able to fail
// ---------------------------------------------------------------------------

const rpc = (body: Record<string, unknown>) => ({ jsonrpc: "2.0", ...body })

describe("the outbound checker", () => {
  it("accepts a well-formed exchange", () => {
    const checker = makeOutboundChecker()
    checker.sawRequest(JSON.stringify(rpc({ id: 0, method: "initialize", params: { protocolVersion: 1 } })))
    expect(checker.unanswered()).toEqual(["initialize#0"])
    expect(
      checker.check(
        JSON.stringify(rpc({ id: 0, result: { protocolVersion: 1, agentCapabilities: { loadSession: true }, authMethods: [] } })) + "\n"
      )
    ).toEqual([])
    checker.sawRequest(rpc({ id: "p1", method: "session/prompt", params: { sessionId: "s", prompt: [] } }))
    expect(
      checker.check(
        rpc({
          method: "session/update",
          params: { sessionId: "s", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hi" } } }
        })
      )
    ).toEqual([])
    expect(
      checker.check(
        rpc({
          id: 0,
          method: "session/request_permission",
          params: {
            sessionId: "s",
            toolCall: { toolCallId: "t" },
            options: [{ optionId: "a", name: "Allow", kind: "allow_once" }]
          }
        })
      )
    ).toEqual([])
    expect(checker.check(rpc({ method: "$/cancel_request", params: { requestId: 0 } }))).toEqual([])
    expect(checker.check(rpc({ id: "p1", result: { stopReason: "cancelled" } }))).toEqual([])
    expect(checker.check(rpc({ id: null, error: { code: -32700, message: "Parse error" } }))).toEqual([])
    checker.sawRequest(rpc({ id: 9, method: "nope/nope" }))
    expect(checker.check(rpc({ id: 9, error: { code: -32601, message: "Method not found" } }))).toEqual([])
    expect(checker.unanswered()).toEqual([])
  })

  it("rejects a session/update with an unknown update kind", () => {
    const problems = makeOutboundChecker().check(
      rpc({ method: "session/update", params: { sessionId: "s", update: { sessionUpdate: "agent_mood", mood: "happy" } } })
    )
    expect(problems).toHaveLength(1)
    expect(problems[0]).toContain("SessionNotification")
  })

  it("rejects a prompt response with stopReason \"done\"", () => {
    const checker = makeOutboundChecker()
    checker.sawRequest(rpc({ id: 3, method: "session/prompt", params: { sessionId: "s", prompt: [] } }))
    const problems = checker.check(rpc({ id: 3, result: { stopReason: "done" } }))
    expect(problems).toHaveLength(1)
    expect(problems[0]).toContain("PromptResponse")
  })

  it("checks a result against the method of the request it answers", () => {
    const checker = makeOutboundChecker()
    checker.sawRequest(rpc({ id: 1, method: "session/new", params: { cwd: "/p", mcpServers: [] } }))
    // A valid PromptResponse, but this id asked for a session.
    expect(checker.check(rpc({ id: 1, result: { stopReason: "end_turn" } }))[0]).toContain("NewSessionResponse")
  })

  it("rejects what is not a valid JSON-RPC message of an agent", () => {
    const checker = makeOutboundChecker()
    const cases: ReadonlyArray<readonly [unknown, string]> = [
      ["{not json", "not valid JSON"],
      ['{"jsonrpc":"2.0",\n"method":"session/update"}', "single line"],
      [[1, 2], "JSON object"],
      [{ id: 1, result: {} }, "jsonrpc"],
      [rpc({ id: 42, result: {} }), "no pending client request"],
      [rpc({ method: "session/prompt", params: { sessionId: "s", prompt: [] } }), "not a notification an agent may send"],
      [rpc({ id: 1, method: "session/new", params: { cwd: "/p", mcpServers: [] } }), "not a method an agent may call"],
      [rpc({ id: 1.5, method: "fs/read_text_file", params: { sessionId: "s", path: "/a" } }), "string or an integer"],
      [rpc({ id: 2, method: "fs/read_text_file", params: { sessionId: "s", path: "/a", line: -1 } }), "ReadTextFileRequest"],
      [rpc({ method: "session/update", params: {} }), "SessionNotification"],
      [rpc({ id: null, error: { code: 1.5, message: "x" } }), "Error"],
      [rpc({ id: null, error: { code: -32603 } }), "Error"],
      [
        rpc({
          method: "session/update",
          params: { sessionId: "s", update: { sessionUpdate: "usage_update", used: -1, size: 1 } }
        }),
        "SessionNotification"
      ],
      [rpc({ method: "$/cancel_request", params: {}, extra: true }), "extra"]
    ]
    for (const [message, expected] of cases) {
      const problems = checker.check(message)
      expect(problems.join("\n"), JSON.stringify(message)).toContain(expected)
    }
  })

  it("rejects a second response to the same request and results for unknown methods", () => {
    const checker = makeOutboundChecker()
    checker.sawRequest(rpc({ id: 5, method: "session/cancel_everything" }))
    expect(checker.check(rpc({ id: 5, result: {} }))[0]).toContain("not an agent method")
    checker.sawRequest(rpc({ id: 6, method: "session/set_mode", params: { sessionId: "s", modeId: "m" } }))
    expect(checker.check(rpc({ id: 6, result: {} }))).toEqual([])
    expect(checker.check(rpc({ id: 6, result: {} }))[0]).toContain("no pending client request")
    checker.sawRequest(rpc({ id: 7, method: "session/set_mode", params: { sessionId: "s", modeId: "m" } }))
    expect(checker.check(rpc({ id: "7", result: {} }))[0]).toContain("no pending client request")
  })

  it("validateDef reports errors and refuses unknown defs", () => {
    const result = validateDef("StopReason", "done")
    expect(result.ok).toBe(false)
    expect(() => validateDef("NoSuchDef", {})).toThrow(/NoSuchDef/)
  })
})
