/**
 * External ACP agents: a child session whose turns are run by another agent process
 * (`codex-acp`, another Skein) that Skein drives as an ACP *client*. What that agent streams
 * is folded into the child's log as Skein's own canonical events, so the child reloads,
 * replays and is presented like any session; its questions reach the child's presenter.
 *
 * The seam is the session's `runTurn`: `Runner.run(io)` replaces the model/tool loop of one
 * turn. `TurnIO` is written here, structurally, so that this folder never imports the
 * runtime (which imports it); `Turn.TurnContext` is one.
 *
 * - **Process.** Started on the first `run` (a child that never runs costs nothing), in the
 *   scope given to `make`, as the leader of its own process group (`ProcessGroup`), with
 *   Skein's environment less its secrets plus the agent's configured `env` (whose values
 *   become secrets themselves, as MCP servers' do). Closing the scope kills the whole group.
 *   A bounded, redacted tail of its stderr explains a failure. If it dies, the turn ends
 *   with an error and the next `run` starts it again (resuming its session with
 *   `session/load` when it offers that).
 * - **Protocol.** `initialize` (fs offered, no terminal), one `session/new`, then one
 *   `session/prompt` per turn. The agent's `session/request_permission` goes to `io.ask`;
 *   `fs/read_text_file` reads inside the session's roots; `fs/write_text_file` goes through
 *   `io.permit` as a call of the built-in `write` tool, then writes inside the roots. Both
 *   file operations go through `SafeFs`. Anything else is "method not found".
 * - **Folding.** The agent's output between two of its tool calls is one "model call":
 *   message and thought chunks are published as deltas and kept in `io.state.partial`; a
 *   tool call logs that call's `model_response` (ending with the tool call) and a
 *   `tool_call`, its progress is published, its end is a `tool_result`. The prompt's answer
 *   logs the last `model_response`, after a failed result for any tool call the agent left
 *   open. The history's invariants hold: every tool call is part of a model response, and
 *   each one gets a result. (Streamed text is not checkpointed as `model_partial`: if Skein
 *   itself dies mid-call, that call's text is lost to the child's log, not to the agent.)
 * - **Questions.** The agent's options are offered one per kind, each named by its kind (as
 *   Skein's own are); the agent is answered with its own option id. Nobody to answer, or no
 *   answer in time, is the agent's "reject once" when it offers one. The user who allowed
 *   the agent's *edit* of a file is not asked again when the agent writes that file through
 *   Skein (the gate is told, and still refuses what it would refuse, and asks about a
 *   protected file): the grant covers the kind and the files the user was shown, never a
 *   write after a read, nor a file or kind the call reported only later.
 * - **Ceiling.** While the child's ceiling (`tools/Ceiling.ts`) lets nothing change (its parent
 *   switched to plan, say), a question about anything but looking is answered "reject"
 *   without asking, an allowance given meanwhile becomes "reject", and an agent that reports
 *   a change starting is stopped: the turn ends with an error saying why (Skein cannot hold a
 *   program to read-only otherwise).
 * - **Ids.** An agent names its tool calls as it likes and may name two alike in two turns
 *   (or after a restart); in the log a call of turn T the agent calls X is `ext-T-X`, and a
 *   write the agent makes outside any of its calls is `write-T-N`.
 * - **Cancel.** Interrupting `run` answers the agent's open questions `cancelled`, sends
 *   `session/cancel` and waits (a few seconds) for the prompt's answer, folding what comes
 *   meanwhile; then the interruption goes on and the session's supervisor finalizes what is
 *   open. An agent that does not answer in time is stopped.
 *
 * Nothing here writes to Skein's stdout (its own client's channel): the agent's output is
 * read from its pipes and only ever reaches the log, the bus and the stderr tail.
 */
import * as NodePath from "node:path"
import * as NodeStream from "@effect/platform-node/NodeStream"
import type * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import type * as AcpContent from "../acp/Content.ts"
import * as AcpClient from "../acp/Client.ts"
import * as Initialize from "../acp/Initialize.ts"
import { AgentMethod, ClientMethod, PROTOCOL_VERSION } from "../acp/Methods.ts"
import * as AcpSession from "../acp/Session.ts"
import * as AcpUpdate from "../acp/Update.ts"
import * as Peer from "../jsonrpc/Peer.ts"
import * as Rpc from "../jsonrpc/Protocol.ts"
import type { CanonicalBody, EphemeralBody } from "../log/Event.ts"
import type { AssistantPart, Location, ModelStop, StopReason, ToolDetails, ToolKind, UserBlock } from "../Vocabulary.ts"
import { appendPart, type History } from "../log/History.ts"
import type { LogError } from "../log/LogError.ts"
import * as Diagnostics from "../mcp/Diagnostics.ts"
import * as ProcEnviron from "../secrets/ProcEnviron.ts"
import * as Secrets from "../secrets/Secrets.ts"
import type { Launch, SessionSandbox } from "../tools/Sandboxed.ts"
import * as Ceiling from "../tools/Ceiling.ts"
import * as ProcessGroup from "../tools/process/ProcessGroup.ts"
import * as SafeFs from "../fs/SafeFs.ts"
import * as Tool from "../tools/Tool.ts"
import * as Workspace from "../tools/Workspace.ts"
import { describeError, write } from "../tools/write.ts"
import { userContent } from "../translate/Translate.ts"
import { type PermissionOption, type PermissionToolCall, promptText } from "../Vocabulary.ts"

// ---------------------------------------------------------------------------
// The seam
// ---------------------------------------------------------------------------

/** A tool call as the permission gate is shown it (the runtime's `AnnouncedCall`). */
export interface PermitCall {
  readonly id: string
  readonly name: string
  readonly args: unknown
  readonly title: string
  readonly kind: ToolKind
  readonly locations?: ReadonlyArray<Location> | undefined
}

/** The gate's verdict (the runtime's `Permit`). */
export type Permit =
  | { readonly _tag: "allow"; readonly readOnly?: true | undefined }
  | { readonly _tag: "deny"; readonly reason: string }

/** An answer to a permission question (the runtime's `PermissionAnswer`). */
export type PermissionAnswer =
  | { readonly outcome: "selected"; readonly optionId: string }
  | { readonly outcome: "cancelled" }

/** What a turn run elsewhere gets from its session; `Turn.TurnContext` is one. */
export interface TurnIO {
  readonly sessionId: string
  readonly turn: number
  /** The prompt (already in `history`). */
  readonly content: ReadonlyArray<UserBlock>
  readonly cwd: string
  /** Every directory the session may touch, the cwd first. */
  readonly roots: ReadonlyArray<string>
  /** Read only: the session folds into it what `emit` logs. */
  readonly history: History
  readonly emit: {
    /** Logs then publishes a canonical event of this turn. */
    readonly canonical: (body: CanonicalBody) => Effect.Effect<void, LogError>
    /** Publishes an ephemeral event of this turn. */
    readonly ephemeral: (body: EphemeralBody) => Effect.Effect<void>
  }
  /**
   * Shared with the session's supervisor: `partial` holds what the current model call
   * streamed and is not logged yet, so that a cancel logs it; `requested` the arguments of
   * tool calls of a logged response, by id.
   */
  readonly state: { partial: Array<AssistantPart> | undefined; call: number; readonly requested: Map<string, unknown> }
  /**
   * The permission gate. `granted`: the user allowed this very change already (in the agent's
   * own question about it); where the gate would ask, it does not ask again.
   */
  readonly permit: (
    call: PermitCall,
    tool: Tool.Tool,
    args: unknown,
    prior?: { readonly granted?: boolean | undefined }
  ) => Effect.Effect<Permit, never, Tool.ToolEnv>
  /** Asks whoever presents the turn a permission question as it is; `undefined` when nobody can answer. */
  readonly ask: (question: {
    readonly toolCall: PermissionToolCall
    readonly options: ReadonlyArray<PermissionOption>
  }) => Effect.Effect<PermissionAnswer | undefined>
}

/** An external agent as configured (`"agents": {"codex": {"acp": {command, args, env}}}`). */
export interface ExternalAgent {
  readonly name: string
  readonly command: string
  readonly args: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string>>
  /** Its process runs in the session's sandbox (`options.sandbox`), or does not start. */
  readonly sandbox?: boolean | undefined
}

export interface Options {
  /** Where the process runs (the child session's cwd). */
  readonly cwd: string
  /** Who Skein says it is in `initialize`. */
  readonly clientInfo: { readonly name: string; readonly version: string }
  /** How long one of the agent's permission questions may wait for an answer (default: until the turn ends). */
  readonly permissionTimeoutMs?: number | undefined
  /** The child session's sandbox, for an agent whose settings say `"sandbox": true`. */
  readonly sandbox?: SessionSandbox | undefined
  /** The child session's ceiling as it is now (default: nothing beyond its own gate). */
  readonly ceiling?: (() => Pick<Ceiling.Ceiling, "mode" | "readOnly">) | undefined
}

export interface Outcome {
  readonly stopReason: StopReason
  /** The text shown to the user when the turn failed. */
  readonly error?: string | undefined
}

export interface Runner {
  /** Runs one turn through the agent. Never fails: a problem is an outcome with an `error`. */
  readonly run: (io: TurnIO) => Effect.Effect<Outcome, never, Tool.ToolEnv>
  /** The agent's process id while it runs. */
  readonly pid: () => number | undefined
}

// ---------------------------------------------------------------------------
// Limits and messages
// ---------------------------------------------------------------------------

/** How long `initialize` and `session/new` (or `session/load`) may take: agents may start slowly. */
const START_TIMEOUT_MS = 60_000
/** After `session/cancel`, how long the agent has to answer the prompt before it is stopped. */
export const CANCEL_WAIT_MS = 5_000
/** Once its stdin is closed, how long the agent may take to exit by itself. */
const STDIN_GRACE_MS = 500
/** The largest file an agent may read through `fs/read_text_file`. */
const MAX_READ_BYTES = 8 * 1024 * 1024
/** A JSON-RPC error code of Skein's own (the implementation-defined range): the request was refused. */
export const REFUSED = -32010

const STDERR_LINES_SHOWN = 8
const MAX_RAW_OUTPUT_CHARS = 20_000

/** Result text of a tool call the agent ended its prompt without finishing. */
export const UNFINISHED_TOOL = "Not finished: the agent ended its turn before this tool call did."

/** Text from the agent (an error message): clipped, and without Skein's secrets. */
const quoted = (text: string, max = 300): string => Secrets.redact(text.length > max ? `${text.slice(0, max)}…` : text)

const refused = (message: string) => new Rpc.RpcError({ code: REFUSED, message })
const noPrompt = () => new Rpc.RpcError({ code: Rpc.ErrorCode.InvalidRequest, message: "No prompt of this session is running" })

// ---------------------------------------------------------------------------
// From ACP to the log
// ---------------------------------------------------------------------------

/** A content block as text. */
const blockText = (block: AcpContent.ContentBlock): string => {
  switch (block.type) {
    case "text":
      return block.text
    case "resource_link":
      return `[${block.name}](${block.uri})`
    case "resource":
      return "text" in block.resource ? block.resource.text : `[resource ${block.resource.uri}]`
    case "image":
      return "[image]"
    case "audio":
      return "[audio]"
  }
}

type ToolCallContent = AcpUpdate.ToolCallContent

/** The text of a tool call's content (diffs and terminals are not text). */
const contentText = (content: ReadonlyArray<ToolCallContent>): string =>
  content.flatMap((item) => (item.type === "content" ? [blockText(item.content)] : [])).join("\n")

const diffsOf = (content: ReadonlyArray<ToolCallContent>) =>
  content.flatMap((item) => (item.type === "diff" ? [{ path: item.path, oldText: item.oldText ?? null, newText: item.newText }] : []))

const locationsOf = (locations: ReadonlyArray<AcpUpdate.ToolCallLocation>): ReadonlyArray<Location> =>
  locations.map((l) => (l.line !== undefined ? { path: l.path, line: l.line } : { path: l.path }))

/** What the agent said a tool call produced: its text (else its raw output) and its diffs. */
const resultOf = (content: ReadonlyArray<ToolCallContent>, rawOutput: unknown): { readonly text: string; readonly details?: ToolDetails } => {
  let text = contentText(content)
  if (text.length === 0 && rawOutput !== undefined && rawOutput !== null) {
    const raw = typeof rawOutput === "string" ? rawOutput : JSON.stringify(rawOutput) ?? ""
    text = raw.length > MAX_RAW_OUTPUT_CHARS ? `${raw.slice(0, MAX_RAW_OUTPUT_CHARS)}… [truncated]` : raw
  }
  const diff = diffsOf(content)
  return diff.length > 0 ? { text, details: { diff } } : { text }
}

/** A prompt block the agent accepts: images and embedded resources only when it says it takes them. */
const promptBlock = (block: UserBlock, caps: Initialize.PromptCapabilities | undefined) =>
  (block.type === "image" && caps?.image !== true) || (block.type === "resource" && caps?.embeddedContext !== true)
    ? { type: "text" as const, text: promptText([block]) }
    : userContent(block)

const modelStopOf = (reason: StopReason): ModelStop =>
  reason === "max_tokens" || reason === "refusal" || reason === "cancelled" ? reason : "end_turn"

// ---------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------

/** A tool call announced in the log and not finished yet. */
interface Tracked {
  /** Its id in the log. */
  readonly id: string
  title: string
  kind: ToolKind
  locations: ReadonlyArray<Location>
  args: unknown
  /** Its last content (a tool call update replaces the list). */
  content: ReadonlyArray<ToolCallContent>
  running: boolean
  /**
   * What the user allowed when the agent asked about it: the call's kind and files as the
   * question showed them. Only an `edit` grant lets the agent's writes of those files through
   * without asking again.
   */
  grant: { readonly kind: ToolKind; readonly paths: ReadonlySet<string> } | undefined
}

/** How a prompt ended, as `run` sees it. */
type Settled =
  | { readonly _tag: "answered"; readonly stopReason: StopReason }
  /** The agent answered the prompt with an error. */
  | { readonly _tag: "refused"; readonly message: string }
  /** The agent is gone (or its connection was closed). */
  | { readonly _tag: "lost"; readonly message: string }
  /** The session's log refused an event (`Prompt.broken` says why). */
  | { readonly _tag: "broken" }
  /** The agent reported a change while its session may change nothing: it is stopped. */
  | { readonly _tag: "confined"; readonly message: string }

/** One running prompt: the fold of its updates into the turn. */
interface Prompt {
  readonly io: TurnIO
  /** The current model call's streamed parts (the same array as `io.state.partial`). */
  parts: Array<AssistantPart>
  call: number
  /** Open tool calls of the agent, by the agent's id. */
  readonly open: Map<string, Tracked>
  /** The agent's tool calls that have their result. */
  readonly finished: Set<string>
  /** Writes the agent made outside its tool calls, announced as calls of Skein's `write`, still open. */
  readonly own: Map<string, Tracked>
  writes: number
  /** Still folding into its turn (nothing is logged for it once this is false). */
  attached: boolean
  /** Why the session's log refused one of its events, if it did: the turn cannot go on. */
  broken: string | undefined
  readonly settled: Deferred.Deferred<Settled>
  /** Completed when `run` stops waiting (a cancel, or the end): the agent's open questions give up. */
  readonly ended: Deferred.Deferred<void>
}

interface Connection {
  readonly scope: Scope.Closeable
  readonly peer: Peer.Peer
  readonly pid: number
  /** The agent's session id, once it has opened one. */
  sessionId: string
  prompts: Initialize.PromptCapabilities | undefined
  /** Completed, with what happened, when the agent can no longer answer. */
  readonly lost: Deferred.Deferred<string>
}

const describeExit = (exit: ProcessGroup.LeaderExit | undefined): string =>
  exit === undefined ? "closed its output" : exit.signal !== null ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`

// ---------------------------------------------------------------------------
// The runner
// ---------------------------------------------------------------------------

/** Starts the agent's process: in the session's sandbox when its settings ask for it (or not at all). */
const spawnAgent = (agent: ExternalAgent, options: Options, env: Record<string, string>) => {
  const cannot = (why: string | undefined) => `Cannot start the external agent ${agent.name}: \`${agent.command}\`${why !== undefined ? ` (${why})` : ""}`
  const start = (launch: Launch | undefined) =>
    ProcessGroup.spawnProgram(
      launch === undefined
        ? { file: agent.command, args: agent.args, cwd: options.cwd, env, stdin: "pipe" }
        : { ...launch, cwd: options.cwd, stdin: "pipe" }
    ).pipe(Effect.mapError(({ code }) => cannot(code)))
  if (agent.sandbox !== true) return start(undefined)
  if (options.sandbox === undefined) return Effect.fail(cannot("it asks for the sandbox, and this Skein runs none"))
  return options.sandbox.prepare({ file: agent.command, args: agent.args, cwd: options.cwd, env }, { readOnly: false, outside: false, required: true }, start).pipe(
    Effect.mapError((error) => (error.startsWith("Cannot start") ? error : cannot(`in the sandbox: ${error}`)))
  )
}

export const make = (agent: ExternalAgent, options: Options): Effect.Effect<Runner, never, Scope.Scope> =>
  Effect.gen(function*() {
    const parent = yield* Effect.scope
    /** Serializes the fold: notifications, the handlers' own announcements and the prompt's end. */
    const fold = yield* Semaphore.make(1)
    const starting = yield* Semaphore.make(1)
    let connection: Connection | undefined
    /** The agent's session of a connection that was lost, to resume on the next one. */
    let resumable: string | undefined
    let current: Prompt | undefined
    let closed = false
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        closed = true
      })
    )

    const who = `The external agent ${agent.name}`

    /** Whether the session may change nothing now, and a call of this kind may change something. */
    const confining = (kind: ToolKind): boolean => {
      const ceiling = options.ceiling?.()
      return ceiling !== undefined && !Ceiling.mayChange(ceiling) && !Ceiling.onlyLooks(kind)
    }

    // ---- folding ------------------------------------------------------------------

    /** Runs a fold step of `p` while it is attached; a log failure ends the prompt. */
    const step = <A>(p: Prompt, f: () => Effect.Effect<A, LogError>): Effect.Effect<A | undefined> =>
      fold.withPermits(1)(Effect.suspend(() => (p.attached ? f() : Effect.succeed(undefined)))).pipe(
        Effect.catch((error: LogError) =>
          Effect.suspend(() => {
            p.broken ??= `could not log an event: ${error.message}`
            return Effect.as(Deferred.succeed(p.settled, { _tag: "broken" }), undefined)
          })
        )
      )

    /**
     * Ends the current model call with a tool call and announces it: its `model_response`,
     * then its `tool_call`. The next parts start the next call.
     */
    const announce = (
      p: Prompt,
      call: { readonly id: string; readonly name: string; readonly title: string; readonly kind: ToolKind; readonly locations: ReadonlyArray<Location>; readonly args: unknown }
    ): Effect.Effect<Tracked, LogError> =>
      Effect.gen(function*() {
        const { io } = p
        io.state.requested.set(call.id, call.args)
        yield* io.emit.canonical({
          type: "model_response",
          data: { call: p.call, parts: [...p.parts, { type: "tool_call", id: call.id, name: call.name, args: call.args }], stop: "tool_use" }
        })
        p.parts = []
        p.call++
        io.state.partial = p.parts
        io.state.call = p.call
        yield* io.emit.canonical({
          type: "tool_call",
          data: {
            id: call.id,
            name: call.name,
            args: call.args,
            title: call.title,
            kind: call.kind,
            ...(call.locations.length > 0 ? { locations: call.locations } : {})
          }
        })
        return { ...call, content: [], running: false, grant: undefined }
      })

    /** Announces a tool call of the agent, from its first report (or whatever first names it). */
    const announceAgentCall = (p: Prompt, update: AcpUpdate.ToolCallUpdate): Effect.Effect<Tracked, LogError> => {
      const kind = update.kind ?? "other"
      return Effect.map(
        announce(p, {
          id: `ext-${p.io.turn}-${update.toolCallId}`,
          name: `${agent.name}:${update.name ?? kind}`,
          title: update.title ?? `${agent.name}: ${kind}`,
          kind,
          locations: locationsOf(update.locations ?? []),
          args: update.rawInput ?? {}
        }),
        (tracked) => {
          p.open.set(update.toolCallId, tracked)
          return tracked
        }
      )
    }

    /** Takes what an update changes of a call's description. */
    const merge = (tracked: Tracked, update: AcpUpdate.ToolCallUpdate): void => {
      if (update.title !== undefined) tracked.title = update.title
      if (update.kind !== undefined) tracked.kind = update.kind
      if (update.locations !== undefined) tracked.locations = locationsOf(update.locations)
      if (update.rawInput !== undefined) tracked.args = update.rawInput
      if (update.content !== undefined) tracked.content = update.content
    }

    /** Folds an update of an announced call of the agent: progress, or its result. */
    const progress = (p: Prompt, agentId: string, tracked: Tracked, update: AcpUpdate.ToolCallUpdate): Effect.Effect<void, LogError> =>
      Effect.gen(function*() {
        const { io } = p
        merge(tracked, update)
        if (update.status === "completed" || update.status === "failed") {
          p.open.delete(agentId)
          p.finished.add(agentId)
          const result = resultOf(tracked.content, update.rawOutput)
          yield* io.emit.canonical({
            type: "tool_result",
            data: {
              id: tracked.id,
              title: tracked.title,
              ok: update.status === "completed",
              content: result.text,
              ...(result.details !== undefined ? { details: result.details } : {})
            }
          })
          return
        }
        if (update.status === "in_progress" && !tracked.running) {
          tracked.running = true
          yield* io.emit.ephemeral({ type: "tool_running", data: { id: tracked.id } })
        }
        if (update.content !== undefined) {
          const output = contentText(update.content)
          if (output.length > 0) yield* io.emit.ephemeral({ type: "tool_progress", data: { id: tracked.id, output } })
        }
      })

    /** Folds one `session/update` of the running prompt. */
    const apply = (p: Prompt, update: AcpUpdate.SessionUpdate): Effect.Effect<void, LogError> =>
      Effect.suspend(() => {
        const { io } = p
        switch (update.sessionUpdate) {
          case "agent_message_chunk":
          case "agent_thought_chunk": {
            const text = blockText(update.content)
            if (text.length === 0) return Effect.void
            const kind = update.sessionUpdate === "agent_message_chunk" ? "text" : "thinking"
            appendPart(p.parts, kind, text)
            io.state.partial = p.parts
            return io.emit.ephemeral({ type: kind === "text" ? "text_delta" : "thinking_delta", data: { text } })
          }
          case "tool_call":
          case "tool_call_update": {
            const agentId = update.toolCallId
            // A late update of a finished call changes nothing the log can still show.
            if (p.finished.has(agentId)) return Effect.void
            const tracked = p.open.get(agentId)
            return tracked !== undefined
              ? progress(p, agentId, tracked, update)
              : Effect.flatMap(announceAgentCall(p, update), (announced) => progress(p, agentId, announced, update))
          }
          case "plan":
            return io.emit.canonical({
              type: "plan",
              data: { entries: update.entries.map((e) => ({ content: e.content, status: e.status, priority: e.priority })) }
            })
          case "usage_update":
            return io.emit.ephemeral({
              type: "usage",
              data: {
                used: update.used,
                size: update.size,
                ...(update.cost !== undefined && update.cost.currency === "USD" ? { cost: update.cost.amount } : {})
              }
            })
          default:
            // Commands, modes, config options and session info are the agent's own business.
            return Effect.void
        }
      })

    /** After an update is folded: an agent that reports a change starting while the session may change nothing is stopped. */
    const confine = (p: Prompt, update: AcpUpdate.SessionUpdate): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (update.sessionUpdate !== "tool_call" && update.sessionUpdate !== "tool_call_update") return Effect.void
        if (update.status === "completed" || update.status === "failed") return Effect.void
        const tracked = p.open.get(update.toolCallId)
        if (!confining(update.kind ?? tracked?.kind ?? "other")) return Effect.void
        const why = Ceiling.whyReadOnly(options.ceiling!()) ?? "it may change nothing"
        return Deferred.succeed(p.settled, {
          _tag: "confined",
          message: `${who} was stopped: it started ${quoted(tracked?.title ?? update.title ?? "a tool call", 120)}, which may change files, and ${why}.`
        })
      })

    /** The prompt was answered (or failed): every call still open fails, then the last model call is logged. */
    const conclude = (p: Prompt, stop: ModelStop, error?: string) =>
      step(p, () =>
        Effect.gen(function*() {
          const { io } = p
          const why = error ?? UNFINISHED_TOOL
          for (const tracked of [...p.open.values(), ...p.own.values()]) {
            yield* io.emit.canonical({ type: "tool_result", data: { id: tracked.id, title: tracked.title, ok: false, content: why } })
          }
          p.open.clear()
          p.own.clear()
          yield* io.emit.canonical({
            type: "model_response",
            data: { call: p.call, parts: p.parts, stop, ...(error !== undefined ? { error } : {}) }
          })
          return true
        }))

    /** Stops folding into the turn; open questions give up. */
    const detach = (p: Prompt) =>
      fold.withPermits(1)(Effect.sync(() => {
        p.attached = false
        if (current === p) current = undefined
      })).pipe(Effect.andThen(Deferred.succeed(p.ended, undefined)))

    // ---- the agent's requests -------------------------------------------------------

    /** The running prompt of the agent's session `sessionId` on `conn`. */
    const promptOf = (conn: Connection, sessionId: string): Prompt | undefined =>
      connection === conn && sessionId === conn.sessionId && current !== undefined && current.attached ? current : undefined

    const CANCELLED = { outcome: { outcome: "cancelled" } } as const

    const requestPermission = (conn: Connection) => (params: AcpClient.RequestPermissionRequest) =>
      Effect.gen(function*() {
        const p = promptOf(conn, params.sessionId)
        if (p === undefined) return CANCELLED
        const agentId = params.toolCall.toolCallId
        // The call the question is about, announced first if the agent never reported it.
        const tracked = yield* step(p, () => {
          const known = p.open.get(agentId)
          if (known !== undefined) return Effect.succeed(known)
          return p.finished.has(agentId) ? Effect.succeed(undefined) : announceAgentCall(p, params.toolCall)
        })
        if (tracked === undefined) return CANCELLED
        // Its content here is what the call would do (a diff to approve), not what it did.
        const { content: proposed, ...described } = params.toolCall
        merge(tracked, described)
        // Skein's questions offer one option per kind, named by its kind; the agent's own id is given back.
        const byKind = new Map<PermissionOption["kind"], AcpClient.PermissionOption>()
        for (const option of params.options) if (!byKind.has(option.kind)) byKind.set(option.kind, option)
        if (byKind.size === 0) return CANCELLED
        const reject = byKind.get("reject_once")
        const refusal = reject !== undefined ? { outcome: { outcome: "selected", optionId: reject.optionId } } : CANCELLED
        // A session that may change nothing does not ask about a change: it refuses it.
        if (confining(tracked.kind)) return refusal
        const offered = [...byKind.values()].map((o): PermissionOption => ({ optionId: o.kind, name: o.name, kind: o.kind }))
        const diffs = diffsOf(proposed ?? tracked.content).map((d) => ({ type: "diff" as const, ...d }))
        const toolCall: PermissionToolCall = {
          toolCallId: tracked.id,
          title: tracked.title,
          kind: tracked.kind,
          status: "pending",
          rawInput: tracked.args,
          ...(tracked.locations.length > 0 ? { locations: tracked.locations } : {}),
          ...(diffs.length > 0 ? { content: diffs } : {})
        }
        const asked = p.io.ask({ toolCall, options: offered })
        const answer = yield* Effect.raceFirst(
          options.permissionTimeoutMs === undefined
            ? Effect.map(asked, (a) => ({ _tag: "answer" as const, a }))
            : Effect.map(Effect.timeoutOption(asked, options.permissionTimeoutMs), (o) =>
              o._tag === "Some" ? { _tag: "answer" as const, a: o.value } : { _tag: "timeout" as const }),
          Effect.as(Deferred.await(p.ended), { _tag: "ended" as const })
        )
        const chosen = answer._tag === "answer" && answer.a?.outcome === "selected" ? byKind.get(answer.a.optionId as PermissionOption["kind"]) : undefined
        const outcome = chosen !== undefined
          ? chosen.kind
          : answer._tag === "timeout"
          ? "timeout" as const
          : answer._tag === "answer" && answer.a === undefined
          ? "unanswerable" as const
          : "cancelled" as const
        yield* step(p, () => p.io.emit.canonical({ type: "permission", data: { toolCallId: tracked.id, outcome } }))
        if (outcome === "allow_once" || outcome === "allow_always") {
          // The session may have become read-only while the user was asked.
          if (confining(tracked.kind)) return refusal
          tracked.grant = { kind: tracked.kind, paths: new Set(tracked.locations.map((l) => NodePath.resolve(p.io.cwd, l.path))) }
        }
        if (chosen !== undefined) return { outcome: { outcome: "selected", optionId: chosen.optionId } }
        // Nobody answered: a denial, as Skein's own gate makes it, when the agent offers one.
        return outcome === "timeout" || outcome === "unanswerable" ? refusal : CANCELLED
      })

    /** The path an `fs/*` request names, resolved inside the session's roots (its real path). */
    const resolveIn = (io: TurnIO, input: string) => {
      const absolute = NodePath.resolve(io.cwd, input)
      const named = io.roots.some((root) => {
        const rel = NodePath.relative(root, absolute)
        return rel !== ".." && !rel.startsWith(`..${NodePath.sep}`) && !NodePath.isAbsolute(rel)
      })
      return Workspace.resolve(input, io).pipe(
        Effect.mapError(() =>
          Rpc.invalidParams(
            named
              ? "The path leads outside the directories this session may use, or cannot be resolved"
              : "The path is outside the directories this session may use"
          )
        )
      )
    }

    const fsFailure = (error: SafeFs.Failure, verb: string): Rpc.RpcError =>
      error._tag === "SafeFsChanged"
        ? Rpc.invalidParams(`The path changed while it was in use (${error.reason === "link" ? "a symbolic link appeared on it" : "it now leads elsewhere"})`)
        : SafeFs.isNotFound(error)
        ? Rpc.resourceNotFound("no such file")
        : new Rpc.RpcError({ code: Rpc.ErrorCode.InternalError, message: `Cannot ${verb} the file: ${describeError(error)}` })

    const readTextFile = (conn: Connection) => (params: AcpClient.ReadTextFileRequest) =>
      Effect.gen(function*() {
        const p = promptOf(conn, params.sessionId)
        if (p === undefined) return yield* noPrompt()
        const target = yield* resolveIn(p.io, params.path)
        const roots = yield* SafeFs.realRoots(p.io.roots)
        const bytes = yield* Effect.scoped(Effect.gen(function*() {
          const { handle, stat } = yield* SafeFs.openRead(target, roots)
          if (!stat.isFile()) return yield* Effect.fail(Rpc.invalidParams("The path is not a regular file"))
          if (stat.size > BigInt(MAX_READ_BYTES)) {
            return yield* Effect.fail(Rpc.invalidParams(`The file is larger than ${MAX_READ_BYTES / 1024 / 1024} MiB`))
          }
          return yield* SafeFs.readAll(handle)
        })).pipe(Effect.mapError((error) => (error._tag === "RpcError" ? error : fsFailure(error, "read"))))
        const text = new TextDecoder("utf-8").decode(bytes)
        if (params.line === undefined && params.limit === undefined) return { content: text }
        // Lines keep their ends, so a window joins back into the file's own text.
        const lines = text.split(/(?<=\n)/)
        const from = Math.max(0, (params.line ?? 1) - 1)
        return { content: lines.slice(from, params.limit === undefined ? undefined : from + params.limit).join("") }
      })

    /**
     * The gate for a write of the agent, told whether the user allowed this very edit in the
     * agent's own question: a grant of another kind (a read) or of other files covers nothing.
     */
    const permitWrite = (io: TurnIO, owner: Tracked | undefined, call: PermitCall, args: { readonly path: string; readonly content: string }) =>
      io.permit(call, write, args, { granted: owner?.grant?.kind === "edit" && owner.grant.paths.has(args.path) })

    const writeTextFile = (conn: Connection) => (params: AcpClient.WriteTextFileRequest) =>
      Effect.gen(function*() {
        const p = promptOf(conn, params.sessionId)
        if (p === undefined) return yield* noPrompt()
        const { io } = p
        const target = NodePath.resolve(io.cwd, params.path)
        const args = { path: target, content: params.content }
        const relative = NodePath.relative(io.cwd, target)
        const shown = relative === "" || relative.startsWith("..") || NodePath.isAbsolute(relative) ? target : relative
        // The agent's open call that names this file (the latest), else a call of Skein's own `write`.
        const owner = [...p.open.values()].reverse().find((t) => t.locations.some((l) => NodePath.resolve(io.cwd, l.path) === target))
        const ownId = owner === undefined ? `write-${io.turn}-${++p.writes}` : undefined
        const own = ownId === undefined ? undefined : yield* step(p, () =>
          Effect.map(
            announce(p, { id: ownId, name: write.name, title: `Write ${shown}`, kind: "edit", locations: [{ path: target }], args }),
            (tracked) => {
              p.own.set(ownId, tracked)
              return tracked
            }
          ))
        const subject = owner ?? own
        if (subject === undefined) return yield* noPrompt()
        const call: PermitCall = { id: subject.id, name: write.name, args, title: subject.title, kind: "edit", locations: [{ path: target }] }
        const permit = yield* Effect.raceFirst(
          permitWrite(io, owner, call, args),
          Effect.as(Deferred.await(p.ended), { _tag: "deny", reason: "The turn was cancelled" } satisfies Permit)
        )
        /** Ends Skein's own call of this write, if it is one. */
        const report = (ok: boolean, content: string, details?: ToolDetails) =>
          own === undefined || ownId === undefined ? Effect.void : step(p, () =>
            Effect.suspend(() => {
              if (!p.own.delete(ownId)) return Effect.void
              return io.emit.canonical({
                type: "tool_result",
                data: { id: own.id, title: own.title, ok, content, ...(details !== undefined ? { details } : {}) }
              })
            }))
        if (permit._tag === "deny") {
          yield* report(false, permit.reason)
          return yield* Effect.fail(refused(permit.reason))
        }
        const output = yield* Tool.run(write, args, {
          sessionId: io.sessionId,
          toolCallId: subject.id,
          cwd: io.cwd,
          roots: io.roots,
          progress: () => Effect.void,
          plan: () => Effect.void
        })
        yield* report(output.ok, output.content, output.details)
        if (!output.ok) return yield* Effect.fail(refused(output.content))
        return {}
      })

    const handlers = (conn: Connection) => ({
      requests: {
        [ClientMethod.sessionRequestPermission]: Peer.request(AcpClient.RequestPermissionRequest, requestPermission(conn)),
        [ClientMethod.fsReadTextFile]: Peer.request(AcpClient.ReadTextFileRequest, readTextFile(conn)),
        [ClientMethod.fsWriteTextFile]: Peer.request(AcpClient.WriteTextFileRequest, writeTextFile(conn))
      },
      notifications: {
        [ClientMethod.sessionUpdate]: Peer.notification(AcpUpdate.SessionNotification, (n) => {
          const p = promptOf(conn, n.sessionId)
          // Outside a prompt (a `session/load` replay, commands offered): nothing of a turn.
          return p === undefined ? Effect.void : Effect.asVoid(step(p, () => Effect.andThen(apply(p, n.update), confine(p, n.update))))
        })
      }
    })

    // ---- the process ------------------------------------------------------------------

    /** Closes a connection: its process group is dead when this returns. */
    const drop = (conn: Connection) =>
      Effect.suspend(() => {
        if (connection === conn) connection = undefined
        if (conn.sessionId !== "") resumable = conn.sessionId
        return Scope.close(conn.scope, Exit.void)
      })

    /** A request to the agent during start-up; its failure is a message. */
    const startRequest = (peer: Peer.Peer, lost: Deferred.Deferred<string>, method: string, params: unknown) =>
      Effect.raceFirst(
        peer.request(method, params, { timeout: START_TIMEOUT_MS }).pipe(
          Effect.mapError((error) => `${who} failed ${method}: ${quoted(error.message)} (${error.code})`)
        ),
        Effect.flatMap(Deferred.await(lost), (message) => Effect.fail(message))
      )

    const decodeAnswer = <S extends Schema.Constraint>(schema: S, method: string) => (value: unknown) =>
      Schema.decodeUnknownEffect(schema)(value).pipe(
        Effect.mapError(() => `${who} answered ${method} with something Skein cannot read`)
      ) as Effect.Effect<S["Type"], string, S["DecodingServices"]>

    /** Starts the agent and opens its session; the connection's scope owns the process. */
    const start = (io: TurnIO, services: Context.Context<Tool.ToolEnv>): Effect.Effect<Connection, string> =>
      Effect.gen(function*() {
        const scope = yield* Scope.fork(parent)
        const setup = Effect.gen(function*() {
          // Its configured values are secrets from now on (redacted wherever they show up),
          // and Skein's own stay out of its environment and of /proc/<skein>/environ.
          const registry = Secrets.registry()
          for (const [name, value] of Object.entries(agent.env)) registry.addConfigured(name, value)
          // `--token=X`, `--api-key X`: a secret passed as an argument.
          agent.args.forEach((arg, i) => {
            const flag = /^--?([^=]+)(?:=(.*))?$/s.exec(arg)
            if (flag === null || !Secrets.isSecretName(flag[1]!)) return
            registry.addValue(flag[2] ?? agent.args[i + 1])
          })
          const env = { ...Secrets.childEnv(), ...agent.env }
          ProcEnviron.hideSecrets()
          const diagnostics = Diagnostics.make()
          const group = yield* Effect.acquireRelease(
            spawnAgent(agent, options, env),
            (group) =>
              Effect.gen(function*() {
                group.stdin?.end()
                yield* ProcessGroup.awaitFor(group.exited, STDIN_GRACE_MS)
                yield* ProcessGroup.release(group)
              })
          ).pipe(Scope.provide(scope))
          group.stderr.on("data", (chunk: Buffer) => diagnostics.push(chunk))
          const stdin = group.stdin!
          const transport: Peer.Transport = {
            input: NodeStream.fromReadable<Uint8Array, unknown>({ evaluate: () => group.stdout, onError: (error) => error, closeOnDone: false }),
            write: (chunk) =>
              Effect.callback<void>((resume) => {
                if (stdin.destroyed || stdin.writableEnded) return resume(Effect.void)
                const ok = stdin.write(chunk, () => {
                  if (!ok) resume(Effect.void)
                })
                if (ok) resume(Effect.void)
              })
          }
          const peer = yield* Peer.make(transport).pipe(Scope.provide(scope))
          const lost = yield* Deferred.make<string>()
          const conn: Connection = { scope, peer, pid: group.pid, sessionId: "", prompts: undefined, lost }
          const serving = yield* Effect.forkIn(peer.serve(handlers(conn)).pipe(Effect.provideContext(services)), scope)
          // Gone when it exits or its output ends; what is still in its pipes is read first
          // (its last stderr lines explain why).
          yield* Effect.forkIn(
            Effect.raceFirst(Effect.asVoid(Deferred.await(group.exited)), Effect.asVoid(Fiber.await(serving))).pipe(
              Effect.andThen(ProcessGroup.awaitFor(group.exited, 200)),
              Effect.andThen(ProcessGroup.awaitFor(group.drained, 200)),
              Effect.andThen(Effect.suspend(() => {
                const tail = diagnostics.lines().slice(-STDERR_LINES_SHOWN)
                const said = tail.length > 0 ? `\nIts last output:\n${tail.map((line) => `  ${line}`).join("\n")}` : ""
                return Deferred.succeed(lost, `${who} ${describeExit(group.exitStatus())}.${said}`)
              }))
            ),
            scope
          )

          const init = yield* startRequest(peer, lost, AgentMethod.initialize, {
            protocolVersion: PROTOCOL_VERSION,
            clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: false },
            clientInfo: { name: options.clientInfo.name, version: options.clientInfo.version }
          }).pipe(Effect.flatMap(decodeAnswer(Initialize.InitializeResponse, AgentMethod.initialize)))
          if (init.protocolVersion !== PROTOCOL_VERSION) {
            return yield* Effect.fail(`${who} speaks ACP version ${init.protocolVersion}; Skein speaks version ${PROTOCOL_VERSION}`)
          }
          const caps = init.agentCapabilities
          const additional = io.roots.slice(1)
          const where = {
            cwd: io.cwd,
            mcpServers: [],
            ...(additional.length > 0 && caps?.sessionCapabilities?.additionalDirectories !== undefined ? { additionalDirectories: additional } : {})
          }
          // A connection that replaces a lost one resumes the agent's session when it can.
          const resumed = resumable !== undefined && caps?.loadSession === true
            ? yield* startRequest(peer, lost, AgentMethod.sessionLoad, { sessionId: resumable, ...where }).pipe(
              Effect.as(resumable),
              Effect.orElseSucceed(() => undefined)
            )
            : undefined
          const sessionId = resumed ?? (yield* startRequest(peer, lost, AgentMethod.sessionNew, where).pipe(
            Effect.flatMap(decodeAnswer(AcpSession.NewSessionResponse, AgentMethod.sessionNew)),
            Effect.map((answer) => answer.sessionId)
          ))
          conn.sessionId = sessionId
          conn.prompts = caps?.promptCapabilities
          return conn
        })
        return yield* setup.pipe(Effect.onExit((exit) => (Exit.isSuccess(exit) ? Effect.void : Scope.close(scope, exit))))
      })

    /** The live connection, started (again) when there is none. */
    const connect = (io: TurnIO, services: Context.Context<Tool.ToolEnv>) =>
      starting.withPermits(1)(Effect.gen(function*() {
        if (connection !== undefined && !(yield* Deferred.isDone(connection.lost))) return connection
        if (connection !== undefined) yield* drop(connection)
        if (closed) return yield* Effect.fail(`${who} is closed`)
        connection = yield* start(io, services)
        return connection
      }))

    // ---- a turn ---------------------------------------------------------------------

    /** Sends the prompt; its end (an answer, an error, the agent gone) settles `p`. */
    const send = (conn: Connection, p: Prompt) =>
      conn.peer.request(AgentMethod.sessionPrompt, {
        sessionId: conn.sessionId,
        prompt: p.io.content.map((block) => promptBlock(block, conn.prompts))
      }).pipe(
        Effect.flatMap((answer) => Schema.decodeUnknownEffect(AcpSession.PromptResponse)(answer)),
        Effect.map((answer): Settled => ({ _tag: "answered", stopReason: answer.stopReason })),
        Effect.catch((error): Effect.Effect<Settled> =>
          error._tag === "RpcError" && error.code === Rpc.ErrorCode.PeerClosed
            ? Effect.map(Deferred.await(conn.lost), (message) => ({ _tag: "lost", message }))
            : Effect.succeed({
              _tag: "refused",
              message: error._tag === "RpcError"
                ? `${quoted(error.message)} (${error.code})`
                : "it answered with something Skein cannot read"
            })
        ),
        (answered) => Effect.raceFirst(answered, Effect.map(Deferred.await(conn.lost), (message): Settled => ({ _tag: "lost", message }))),
        Effect.flatMap((settled) => Deferred.succeed(p.settled, settled)),
        // The connection closed under it (Skein is shutting the child down).
        Effect.onInterrupt(() => Deferred.succeed(p.settled, { _tag: "lost", message: `${who} was stopped` }))
      )

    /** The turn was cancelled: the agent is told, and given a moment to finish. */
    const cancel = (conn: Connection, p: Prompt, sending: Fiber.Fiber<unknown>) =>
      Effect.gen(function*() {
        // Open questions first: ACP wants them answered `cancelled` before the prompt ends.
        yield* Deferred.succeed(p.ended, undefined)
        yield* conn.peer.notify(AgentMethod.sessionCancel, { sessionId: conn.sessionId })
        const answered = yield* ProcessGroup.awaitFor(p.settled, CANCEL_WAIT_MS)
        yield* detach(p)
        const settled = answered ? yield* Deferred.await(p.settled) : undefined
        // An agent that does not stop, or broke, is not given another prompt.
        if (settled === undefined || settled._tag !== "answered") {
          yield* Fiber.interrupt(sending)
          yield* drop(conn)
        }
      })

    const runPrompt = (conn: Connection, io: TurnIO) =>
      Effect.gen(function*() {
        const p: Prompt = {
          io,
          parts: [],
          call: 1,
          open: new Map(),
          finished: new Set(),
          own: new Map(),
          writes: 0,
          attached: true,
          broken: undefined,
          settled: yield* Deferred.make<Settled>(),
          ended: yield* Deferred.make<void>()
        }
        current = p
        io.state.partial = p.parts
        io.state.call = p.call
        // Once the prompt is sent, an interruption is always a cancel the agent hears of.
        return yield* Effect.uninterruptibleMask((restore) =>
          Effect.gen(function*() {
            const sending = yield* Effect.forkIn(send(conn, p), conn.scope)
            const waited = yield* Effect.exit(restore(Deferred.await(p.settled)))
            if (Exit.isFailure(waited)) {
              yield* cancel(conn, p, sending)
              return yield* Effect.failCause(waited.cause)
            }
            return yield* restore(finish(conn, p, waited.value))
          })
        ).pipe(Effect.ensuring(detach(p)))
      })

    /** What a settled prompt leaves in the log, and the turn's outcome. */
    const finish = (conn: Connection, p: Prompt, settled: Settled) =>
      Effect.gen(function*() {
        let outcome: Outcome
        switch (settled._tag) {
          case "answered":
            yield* conclude(p, modelStopOf(settled.stopReason))
            outcome = { stopReason: settled.stopReason }
            break
          case "refused": {
            const error = `${who} failed the prompt: ${settled.message}`
            yield* conclude(p, "error", error)
            outcome = { stopReason: "end_turn", error }
            break
          }
          case "lost":
            yield* conclude(p, "error", settled.message)
            yield* drop(conn)
            outcome = { stopReason: "end_turn", error: settled.message }
            break
          case "broken":
            outcome = { stopReason: "end_turn" }
            break
          case "confined":
            // It is told, then stopped: a program that goes on alone cannot be held to read-only.
            yield* conclude(p, "error", settled.message)
            yield* conn.peer.notify(AgentMethod.sessionCancel, { sessionId: conn.sessionId })
            yield* drop(conn)
            outcome = { stopReason: "end_turn", error: settled.message }
            break
        }
        if (p.broken === undefined) return outcome
        // The log refused an event: the agent is stopped (it would go on alone).
        yield* conn.peer.notify(AgentMethod.sessionCancel, { sessionId: conn.sessionId })
        yield* drop(conn)
        return { stopReason: "end_turn", error: `The turn failed inside Skein: ${p.broken}` } satisfies Outcome
      })

    const run = Effect.fn("External.run")(function*(io: TurnIO) {
      const services = yield* Effect.context<Tool.ToolEnv>()
      const connected = yield* Effect.result(connect(io, services))
      if (Result.isFailure(connected)) return { stopReason: "end_turn", error: connected.failure } satisfies Outcome
      return yield* runPrompt(connected.success, io)
    })

    return { run, pid: () => connection?.pid } satisfies Runner
  })
