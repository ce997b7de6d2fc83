/**
 * Drives the built agent (`dist/skein.mjs acp`) as a child process, the way an editor does.
 *
 *   const agents = useAgents()                    // registers an afterEach that kills them all
 *   const agent = await agents.start({ script: { turns: [...] }, files: { "notes.txt": "hi" } })
 *   await agent.initialize()
 *   const sessionId = await agent.newSession()
 *   const { stopReason } = await agent.prompt(sessionId, "hello")
 *   expect(agent.updates(sessionId)).toEqual([...])
 *   expectClean(agent)                            // every stdout line valid JSON-RPC and valid ACP
 *
 * Each agent gets a fresh temporary `--home`, a temporary workspace (its cwd, optionally seeded
 * with files) and its script written to a temporary file. A real client from
 * `@agentclientprotocol/sdk` is connected to the child's stdio, through a tee:
 * - every line the agent writes is recorded (`lines`) and checked against the official ACP
 *   schema with `makeOutboundChecker()` (`problems`);
 * - every request the client writes (through the SDK or `sendRaw`) is shown to the checker, so
 *   each response is validated against its method's `…Response` def;
 * - a turn's updates (chunks, tool calls, plans) that arrive while no `session/prompt` of their
 *   session is open are problems too (nothing about a turn after its response);
 * - so are a permission request about a tool call its session was never told of, a tool call
 *   update without its title and kind, and a message chunk without a `messageId`;
 * - responses to raw requests (string ids `raw-N`) and `id: null` errors are kept for the test
 *   (`rawResponse`, `nullIdErrors`) instead of being handed to the SDK, which knows nothing of
 *   them.
 */
import * as acp from "@agentclientprotocol/sdk"
import * as acpUnstable from "@agentclientprotocol/sdk/unstable"
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterEach, expect } from "vitest"
import { makeOutboundChecker, type OutboundChecker } from "./AcpSchema.ts"

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")
/** Node 24, pinned as a devDependency (the system `node` may be older). */
export const NODE = path.join(REPO_ROOT, "node_modules/.bin/node")
export const SKEIN = path.join(REPO_ROOT, "dist/skein.mjs")

type ScriptTurns = ReadonlyArray<{ readonly expect?: string; readonly absent?: string; readonly calls: ReadonlyArray<ReadonlyArray<unknown>> }>

export interface Script {
  readonly turns: ScriptTurns
  /** The turns child sessions (subagents) of each agent play. */
  readonly agents?: Readonly<Record<string, { readonly turns: ScriptTurns }>>
}

export interface StartOptions {
  /**
   * The scripted provider's script (written to a temporary JSON file). Without one the agent
   * starts without `--script`: with the providers its home and environment configure (none,
   * unless the test writes a `config.json` or sets `env`).
   */
  readonly script: Script | undefined
  /** Files to create in the workspace, by path relative to it. */
  readonly files?: Readonly<Record<string, string>>
  /** Extra arguments after `acp --home H --script S` (after `acp` alone with `--connect`). */
  readonly args?: ReadonlyArray<string>
  /**
   * The command that starts the agent, from its home and script file (default: Node 24 running
   * the built `dist/skein.mjs acp --home H [--script S]`, then `args`): an installed `skein`.
   */
  readonly command?: ((paths: { readonly home: string; readonly script: string | undefined }) => ReadonlyArray<string>) | undefined
  /** Called with the home before the agent starts (to write a `config.json` there). */
  readonly prepareHome?: ((home: string) => void) | undefined
  /** Extra environment variables. */
  readonly env?: Readonly<Record<string, string>>
  /** A command line Skein runs under (e.g. a bwrap that takes user namespaces away), before `node skein.mjs …`. */
  readonly wrapper?: ReadonlyArray<string>
  /**
   * How the client answers `session/request_permission` (default: the `allow_once` option).
   * May return a promise that never settles, to leave a request pending.
   */
  readonly permission?: ((request: acp.RequestPermissionRequest) => acp.RequestPermissionResponse | Promise<acp.RequestPermissionResponse>) | undefined
  /**
   * What the client offers in `initialize` (default: neither files nor terminals). `subagents`:
   * the client shows child sessions (the unstable extension); its messages are then checked
   * against the unstable schema.
   */
  readonly clientCapabilities?: {
    readonly readTextFile?: boolean
    readonly writeTextFile?: boolean
    readonly terminal?: boolean
    readonly subagents?: boolean
    /** `auth.terminal`: the client runs terminal sign-in methods. */
    readonly authTerminal?: boolean
  } | undefined
  /** The client's answers to the agent's `fs/*` and `terminal/*` requests, by method. */
  readonly clientMethods?: Readonly<Record<string, (params: any) => unknown>> | undefined
  /**
   * Speak the unstable schema (its methods, such as `session/fork`, and their checks) without
   * declaring the subagents extension (which `clientCapabilities.subagents` also implies).
   */
  readonly unstable?: boolean | undefined
}

export interface Exit {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

export interface JsonRpcMessage {
  readonly jsonrpc?: unknown
  readonly id?: unknown
  readonly method?: string
  readonly params?: any
  readonly result?: any
  readonly error?: { readonly code: number; readonly message: string; readonly data?: unknown }
}

export interface SessionUpdateNotification {
  readonly sessionId: string
  readonly update: acp.SessionUpdate
}

/** The JSON-RPC error code of a rejected SDK request, or a description of what else it was. */
export const errorCode = async (promise: Promise<unknown>): Promise<number | string> => {
  try {
    await promise
    return "resolved"
  } catch (error) {
    if (error instanceof acp.RequestError) return error.code
    return `not a RequestError: ${String(error)}`
  }
}

/** Updates that belong to a turn (as opposed to session state such as a mode change). */
/** Updates about the session rather than its conversation: its title, its slash commands. */
const METADATA_UPDATES: ReadonlySet<string> = new Set(["session_info_update", "available_commands_update"])

const TURN_UPDATES = new Set<unknown>(["agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan"])

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Resolves when `predicate` holds, polling every few ms; rejects with `what` after `timeoutMs`. */
export const waitUntil = async (predicate: () => boolean, what: string, timeoutMs = 5_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(5)
  }
}

export class AgentProcess {
  /** The temporary folder holding `home/`, `workspace/` and `script.json`. */
  readonly root: string
  readonly home: string
  /** The workspace, the agent's cwd and the default cwd of `newSession` (a real path). */
  readonly cwd: string
  readonly scriptPath: string
  readonly child: ChildProcessWithoutNullStreams
  readonly connection: acp.ClientConnection
  /** Every line the agent wrote on stdout, without its `\n`, in order. */
  readonly lines: Array<string> = []
  /** Schema and framing problems found in the agent's output; must stay empty. */
  readonly problems: Array<string> = []
  /** Every `session/update` the SDK client received, in order of arrival. */
  readonly received: Array<SessionUpdateNotification> = []
  /** Every `session/update` the agent wrote, parsed from the raw lines, in order. */
  readonly written: Array<SessionUpdateNotification> = []
  /** Errors the agent wrote with `id: null` (parse errors and unreadable requests). */
  readonly nullIdErrors: Array<JsonRpcMessage> = []
  /** Every `session/request_permission` the client received, in order. */
  readonly permissionRequests: Array<acp.RequestPermissionRequest> = []

  private stderrText = ""
  private partial = ""
  private rawId = 0
  private readonly rawIds = new Set<string>()
  private readonly rawResponses = new Map<string, JsonRpcMessage>()
  /** session/prompt requests the client sent and the agent has not answered: id key → sessionId. */
  private readonly promptsInFlight = new Map<string, string>()
  /** Child session → the session it was announced on (`subagent_update`). */
  private readonly parents = new Map<string, string>()
  /** The tool calls announced (`tool_call`) on each session so far. */
  private readonly cards = new Map<string, Set<string>>()
  private readonly checker: OutboundChecker
  private readonly exited: Promise<Exit>
  private exitValue: Exit | undefined
  private readonly sdkInput: ReadableStreamDefaultController<Uint8Array> | undefined
  private disposed = false

  private constructor(options: StartOptions) {
    if (options.command === undefined && !existsSync(SKEIN)) throw new Error(`${SKEIN} is missing: run \`node scripts/build.mjs\` first`)
    this.root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "skein-e2e-")))
    this.home = path.join(this.root, "home")
    this.cwd = path.join(this.root, "workspace")
    this.scriptPath = path.join(this.root, "script.json")
    mkdirSync(this.home)
    mkdirSync(this.cwd)
    for (const [file, content] of Object.entries(options.files ?? {})) {
      const target = path.join(this.cwd, file)
      mkdirSync(path.dirname(target), { recursive: true })
      writeFileSync(target, content)
    }
    if (options.script !== undefined) writeFileSync(this.scriptPath, JSON.stringify(options.script))
    options.prepareHome?.(this.home)
    const unstable = options.unstable === true || options.clientCapabilities?.subagents === true
    this.checker = makeOutboundChecker({ unstable })

    const script = options.script !== undefined ? this.scriptPath : undefined
    // An agent whose sessions live in a `skein serve` (`--connect`) has no home or model of its
    // own: it refuses those options.
    const remote = (options.args ?? []).some((arg) => arg === "--connect" || arg.startsWith("--connect="))
    const own = remote ? [] : ["--home", this.home, ...(script !== undefined ? ["--script", script] : [])]
    const command = options.command?.({ home: this.home, script }) ?? [NODE, SKEIN, "acp", ...own, ...(options.args ?? [])]
    const wrapped = [...(options.wrapper ?? []), ...command]
    this.child = spawn(wrapped[0]!, wrapped.slice(1), {
      cwd: this.cwd,
      // The flags decide; SKEIN_* variables of the caller's shell must not leak in.
      // A developer's own provider keys must not make the suite call a real model either.
      env: {
        ...process.env,
        SKEIN_HOME: "",
        SKEIN_PROVIDER: "",
        SKEIN_SCRIPT: "",
        SKEIN_MODEL: "",
        OPENAI_API_KEY: "",
        OPENAI_BASE_URL: "",
        ANTHROPIC_API_KEY: "",
        ANTHROPIC_AUTH_TOKEN: "",
        ANTHROPIC_BASE_URL: "",
        ...options.env
      },
      stdio: ["pipe", "pipe", "pipe"]
    })
    this.exited = new Promise<Exit>((resolve) => {
      this.child.once("exit", (code, signal) => {
        this.exitValue = { code, signal }
        resolve(this.exitValue)
      })
    })
    this.child.stderr.setEncoding("utf8")
    this.child.stderr.on("data", (chunk: string) => {
      this.stderrText += chunk
    })
    // Writes to a child that is gone fail with EPIPE; the test sees that through `waitExit`.
    this.child.stdin.on("error", () => {})

    let controller: ReadableStreamDefaultController<Uint8Array> | undefined
    const input = new ReadableStream<Uint8Array>({
      start: (c) => {
        controller = c
      }
    })
    this.sdkInput = controller
    const decoder = new TextDecoder("utf-8", { fatal: false })
    this.child.stdout.on("data", (chunk: Buffer) => this.onStdout(decoder.decode(chunk, { stream: true })))
    this.child.stdout.on("end", () => {
      this.onStdout(decoder.decode())
      if (this.partial.length > 0) {
        this.problems.push(`stdout ended inside a line (no final \\n): ${JSON.stringify(this.partial.slice(0, 200))}`)
        this.partial = ""
      }
      try {
        this.sdkInput?.close()
      } catch {
        // already closed
      }
    })

    const textOut = new TextDecoder()
    const output = new WritableStream<Uint8Array>({
      write: (chunk) => {
        for (const line of textOut.decode(chunk).split("\n")) if (line.length > 0) this.sawClientLine(line)
        return new Promise<void>((resolve, reject) => {
          if (this.child.stdin.destroyed || this.child.stdin.writableEnded) return reject(new Error("agent stdin is closed"))
          this.child.stdin.write(chunk, (error) => (error ? reject(error) : resolve()))
        })
      }
    })

    // A client that declared the subagents extension speaks the unstable schema (its SDK binding validates it).
    const sdk = (unstable ? acpUnstable : acp) as typeof acp
    const app = sdk
      .client({ name: "skein-e2e" })
      .onNotification("session/update", ({ params }) => {
        this.received.push({ sessionId: params.sessionId, update: params.update })
      })
      .onRequest("session/request_permission", ({ params }) => {
        this.permissionRequests.push(params)
        if (options.permission !== undefined) return options.permission(params)
        const allow = params.options.find((o) => o.kind === "allow_once") ?? params.options[0]
        return allow === undefined
          ? { outcome: { outcome: "cancelled" } }
          : { outcome: { outcome: "selected", optionId: allow.optionId } }
      })
    for (const [method, handler] of Object.entries(options.clientMethods ?? {})) {
      ;(app as any).onRequest(method, ({ params }: { params: unknown }) => handler(params))
    }
    this.offered = options.clientCapabilities ?? {}
    this.connection = app.connect(sdk.ndJsonStream(output, input))
  }

  private readonly offered: NonNullable<StartOptions["clientCapabilities"]>

  /** Spawns the agent; call `initialize()` next. */
  static start(options: StartOptions): AgentProcess {
    return new AgentProcess(options)
  }

  /**
   * Every line the client writes: shown to the checker; prompts (and loads, which replay a
   * session's history as turn updates before answering, and rewinds, which run a turn of their
   * own) are tracked until answered.
   */
  private sawClientLine(line: string): void {
    this.checker.sawRequest(line)
    try {
      const m = JSON.parse(line) as JsonRpcMessage
      if ((m.method === "session/prompt" || m.method === "session/load" || m.method === "_session/rewind") && "id" in m && typeof m.params?.sessionId === "string") {
        this.promptsInFlight.set(JSON.stringify(m.id), m.params.sessionId)
      }
    } catch {
      // a deliberately malformed line
    }
  }

  private onStdout(text: string): void {
    const parts = (this.partial + text).split("\n")
    this.partial = parts.pop() ?? ""
    for (const line of parts) this.onLine(line)
  }

  private onLine(line: string): void {
    this.lines.push(line)
    for (const problem of this.checker.check(line)) this.problems.push(`line ${this.lines.length}: ${problem}`)
    let message: JsonRpcMessage
    try {
      message = JSON.parse(line) as JsonRpcMessage
    } catch {
      return // reported by the checker
    }
    if (typeof message !== "object" || message === null) return
    for (const problem of this.presentationProblems(message)) this.problems.push(`line ${this.lines.length}: ${problem}`)
    if (message.method === "session/update" && message.params !== undefined) {
      const { sessionId, update } = message.params
      this.written.push({ sessionId, update })
      // Invariant 4: what a turn streams (text, thoughts, tool calls) is sent only while its prompt is open.
      // A child session's updates belong to its parent's prompt (it was announced on the parent).
      if (update?.sessionUpdate === "subagent_update" && typeof update.sessionId === "string") this.parents.set(update.sessionId, sessionId)
      let root = sessionId
      while (this.parents.has(root)) root = this.parents.get(root)!
      if (TURN_UPDATES.has(update?.sessionUpdate) && ![...this.promptsInFlight.values()].includes(root)) {
        this.problems.push(`line ${this.lines.length}: ${update.sessionUpdate} for session ${sessionId} while no prompt of it is open`)
      }
    }
    const isResponse = !("method" in message) && "id" in message
    if (isResponse) this.promptsInFlight.delete(JSON.stringify(message.id))
    if (isResponse && message.id === null) {
      this.nullIdErrors.push(message)
      return
    }
    if (isResponse && typeof message.id === "string" && this.rawIds.has(message.id)) {
      this.rawResponses.set(message.id, message)
      return
    }
    try {
      this.sdkInput?.enqueue(new TextEncoder().encode(line + "\n"))
    } catch {
      // the SDK side is closed
    }
  }

  /**
   * What every client needs to show a session right, beyond the schema: a permission request is
   * about a tool call already announced on its session; every update of a tool call repeats its
   * title and kind; every message chunk says which message it belongs to (`messageId`).
   */
  private presentationProblems(message: JsonRpcMessage): Array<string> {
    const sessionId = message.params?.sessionId
    if (typeof sessionId !== "string") return []
    let cards = this.cards.get(sessionId)
    if (cards === undefined) this.cards.set(sessionId, cards = new Set())
    if (message.method === "session/request_permission") {
      const id = message.params.toolCall?.toolCallId
      return cards.has(id) ? [] : [`session/request_permission about tool call ${JSON.stringify(id)}, never announced on session ${sessionId}`]
    }
    if (message.method !== "session/update") return []
    const update = message.params.update
    switch (update?.sessionUpdate) {
      case "tool_call":
        cards.add(update.toolCallId)
        return []
      case "tool_call_update":
        if (!cards.has(update.toolCallId)) return [`tool_call_update of ${JSON.stringify(update.toolCallId)}, never announced on session ${sessionId}`]
        return typeof update.title === "string" && typeof update.kind === "string" ? [] : [`tool_call_update of ${JSON.stringify(update.toolCallId)} without its title and kind`]
      case "agent_message_chunk":
      case "agent_thought_chunk":
      case "user_message_chunk":
        return typeof update.messageId === "string" && update.messageId.length > 0 ? [] : [`${update.sessionUpdate} without a messageId`]
      default:
        return []
    }
  }

  get sdk(): acp.ClientContext {
    return this.connection.agent
  }

  /** Everything the agent wrote on stderr so far. */
  get stderr(): string {
    return this.stderrText
  }

  /** The exit status, once the process has exited. */
  get exitStatus(): Exit | undefined {
    return this.exitValue
  }

  /** The parsed stdout lines. Lines that are not JSON are left out (and are in `problems`). */
  messages(): Array<JsonRpcMessage> {
    const out: Array<JsonRpcMessage> = []
    for (const line of this.lines) {
      try {
        out.push(JSON.parse(line) as JsonRpcMessage)
      } catch {
        // reported by the checker
      }
    }
    return out
  }

  /** Client requests (SDK or raw) the agent has not answered. */
  unanswered(): Array<string> {
    return this.checker.unanswered()
  }

  // ---- the SDK client --------------------------------------------------------

  initialize(): Promise<acp.InitializeResponse> {
    return this.sdk.request("initialize", {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: {
        fs: { readTextFile: this.offered.readTextFile === true, writeTextFile: this.offered.writeTextFile === true },
        terminal: this.offered.terminal === true,
        ...(this.offered.authTerminal === true ? { auth: { terminal: true } } : {}),
        ...(this.offered.subagents === true ? { subagents: {} } : {})
      } as acp.ClientCapabilities,
      clientInfo: { name: "skein-e2e", version: "0.0.0" }
    })
  }

  async newSession(cwd: string = this.cwd): Promise<string> {
    const response = await this.sdk.request("session/new", { cwd, mcpServers: [] })
    return response.sessionId
  }

  /**
   * Sends `session/prompt` with one text block. Once answered, waits until the SDK client has
   * delivered every `session/update` the agent wrote for that session before the response.
   */
  async prompt(sessionId: string, text: string, options?: acp.SendRequestOptions): Promise<acp.PromptResponse> {
    const response = await this.sdk.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] }, options)
    await this.settled(sessionId)
    return response
  }

  /** Waits until the SDK client has received every update the agent wrote so far for a session. */
  async settled(sessionId: string): Promise<void> {
    const writtenCount = this.written.filter((n) => n.sessionId === sessionId).length
    try {
      await waitUntil(() => this.allUpdates(sessionId).length >= writtenCount, `the SDK to deliver ${writtenCount} updates`, 2_000)
    } catch (error) {
      this.problems.push(`session ${sessionId}: ${String(error)} (the SDK got ${this.allUpdates(sessionId).length})`)
    }
  }

  /** `session/cancel` (a notification). */
  cancel(sessionId: string): Promise<void> {
    return this.sdk.notify("session/cancel", { sessionId })
  }

  /**
   * The `session/update` payloads of a session's conversation the SDK client received, in
   * order: everything but what describes the session itself (its title, its command list: see
   * `allUpdates`).
   */
  updates(sessionId: string): Array<acp.SessionUpdate> {
    return this.allUpdates(sessionId).filter((u) => !METADATA_UPDATES.has(u.sessionUpdate))
  }

  /** Every `session/update` payload the SDK client received for a session, in order. */
  allUpdates(sessionId: string): Array<acp.SessionUpdate> {
    return this.received.filter((n) => n.sessionId === sessionId).map((n) => n.update)
  }

  /** Resolves once the agent has written an update for `sessionId` that matches `predicate`. */
  waitForUpdate(sessionId: string, predicate: (update: acp.SessionUpdate) => boolean, timeoutMs = 5_000): Promise<void> {
    return waitUntil(
      () => this.written.some((n) => n.sessionId === sessionId && predicate(n.update)),
      `an update of session ${sessionId}`,
      timeoutMs
    )
  }

  // ---- raw access --------------------------------------------------------------

  /** Writes one raw line (a `\n` is added) to the agent's stdin, bypassing the SDK. */
  sendRaw(line: string): void {
    this.sawClientLine(line)
    this.child.stdin.write(line + "\n")
  }

  /** A fresh id for a raw request; its response is kept for `rawResponse`, not given to the SDK. */
  nextRawId(): string {
    const id = `raw-${++this.rawId}`
    this.rawIds.add(id)
    return id
  }

  /** Sends a raw request (`{"jsonrpc":"2.0","id","method","params"}`) and returns its id. */
  sendRawRequest(method: string, params?: unknown, id: string = this.nextRawId()): string {
    this.rawIds.add(id)
    this.sendRaw(JSON.stringify({ jsonrpc: "2.0", id, method, ...(params !== undefined ? { params } : {}) }))
    return id
  }

  /** Waits for the agent's response to a raw request. */
  async rawResponse(id: string, timeoutMs = 5_000): Promise<JsonRpcMessage> {
    await waitUntil(() => this.rawResponses.has(id), `the response to ${id}`, timeoutMs)
    return this.rawResponses.get(id)!
  }

  /** Sends a raw request and waits for its response. */
  requestRaw(method: string, params?: unknown, timeoutMs?: number): Promise<JsonRpcMessage> {
    return this.rawResponse(this.sendRawRequest(method, params), timeoutMs)
  }

  /** Index in `lines` of the response with this id (-1 when there is none yet). */
  responseLineIndex(id: unknown): number {
    return this.lines.findIndex((line) => {
      try {
        const m = JSON.parse(line) as JsonRpcMessage
        return !("method" in m) && m.id === id
      } catch {
        return false
      }
    })
  }

  // ---- process lifecycle -------------------------------------------------------

  /** Ends the agent's stdin (EOF). */
  closeStdin(): void {
    this.child.stdin.end()
  }

  /** Waits for the process to exit; rejects after `timeoutMs`. */
  async waitExit(timeoutMs = 5_000): Promise<Exit> {
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the agent did not exit within ${timeoutMs} ms`)), timeoutMs)
    })
    try {
      return await Promise.race([this.exited, timeout])
    } finally {
      clearTimeout(timer)
    }
  }

  /** The session's log, `<home>/sessions/<id>.ndjson`, parsed line by line. */
  readLog(sessionId: string): Array<any> {
    const text = readFileSync(path.join(this.home, "sessions", `${sessionId}.ndjson`), "utf8")
    return text.split("\n").filter((line) => line.length > 0).map((line) => JSON.parse(line))
  }

  /** Kills the process (SIGKILL) if it still runs, closes the client and removes the temp folder. */
  async kill(): Promise<void> {
    if (this.disposed) return
    this.disposed = true
    if (this.exitValue === undefined) {
      this.child.kill("SIGKILL")
      await this.exited
    }
    this.connection.close()
    rmSync(this.root, { recursive: true, force: true })
  }
}

/** Tracks the agents a test file starts and kills them all after each test. */
export const useAgents = () => {
  const live = new Set<AgentProcess>()
  afterEach(async () => {
    const agents = [...live]
    live.clear()
    await Promise.all(agents.map((agent) => agent.kill()))
  })
  return {
    start: (options: StartOptions): AgentProcess => {
      const agent = AgentProcess.start(options)
      live.add(agent)
      return agent
    },
    /** Starts an agent and initializes it. */
    ready: async (options: StartOptions): Promise<AgentProcess> => {
      const agent = AgentProcess.start(options)
      live.add(agent)
      await agent.initialize()
      return agent
    }
  }
}

/**
 * Every stdout line was one valid JSON-RPC message that validates against the ACP schema, no turn
 * update came while no prompt of its session was open, and every client request was answered.
 */
export const expectClean = (agent: AgentProcess): void => {
  expect(agent.problems).toEqual([])
  expect(agent.lines.length).toBeGreaterThan(0)
  expect(agent.unanswered()).toEqual([])
}

/**
 * A text content chunk update, as the agent writes it: `messageId` names the message it belongs
 * to (`m<turn>.<n>`: the n-th run of text or thinking of a turn; `e<seq>`: the text of one
 * logged event; `u<turn>`: a replayed prompt).
 */
export const message = (text: string, messageId: string) => ({ sessionUpdate: "agent_message_chunk", content: { type: "text", text }, messageId })
export const thought = (text: string, messageId: string) => ({ sessionUpdate: "agent_thought_chunk", content: { type: "text", text }, messageId })
