/**
 * The Session actor: the local implementation of the session protocol
 * (`session/Protocol.ts`). One mailbox fiber owns the session's one state value: the
 * history folded from its log (messages, mode, config, permission rules), the numbering of
 * its events, and the order of its turns (`Mailbox.ts`, a pure step). Every command is a
 * message; the mailbox never blocks on a turn, so `Cancel` and answers are handled at once.
 *
 * A prompt becomes a turn supervised by a fiber in the session's scope. The supervisor logs
 * `turn_start`, runs the loop as an interruptible child, and — whatever happens to the loop
 * (end, failure, defect, cancel, shutdown) — finalizes open tool calls, logs `turn_end` and
 * syncs the log. A defect in a turn is a failed turn for this session only. Events reach the
 * log and the bus through the session's journal (`Journal.ts`): a turn's end the log refused is
 * written before anything else once it can be, and until then the session takes no new prompt;
 * its presenter is told at once (`turn_aborted`). A session another Skein took over is closed.
 */
import * as os from "node:os"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import type * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as References from "effect/References"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { type Canonical, type CanonicalBody, type CommandRun, isEphemeral, type SessionEvent } from "../log/Event.ts"
import * as History from "../log/History.ts"
import type { Writer } from "../log/Store.ts"
import type { LogError } from "../log/LogError.ts"
import * as Models from "../providers/Models.ts"
import * as Prompt from "../providers/Prompt.ts"
import type { Provider } from "../providers/Provider.ts"
import type { SessionSandbox } from "../tools/Sandboxed.ts"
import * as ClientCalls from "../session/ClientCalls.ts"
import {
  type Command,
  type SendResult,
  type Session as ProtocolSession,
  SessionError,
  type SessionInfo,
  type TurnOutcome
} from "../session/Protocol.ts"
import type * as TurnContract from "../session/TurnContract.ts"
import type { ToolEnv } from "../tools/Tool.ts"
import type { Toolkit } from "../tools/Toolkit.ts"
import { isModeId, type McpServerStatus, type ModeId, type Usage, type UserBlock } from "../Vocabulary.ts"
import * as Ceiling from "../tools/Ceiling.ts"
import * as Bus from "./Bus.ts"
import * as Children from "./Children.ts"
import * as Gate from "./Gate.ts"
import * as Journal from "./Journal.ts"
import * as Mailbox from "./Mailbox.ts"
import * as Questions from "./Questions.ts"
import * as Turn from "./Turn.ts"
import * as TurnEnd from "./TurnEnd.ts"
import * as Commands from "../commands/Commands.ts"
import * as Latest from "./Latest.ts"
import * as Spans from "../telemetry/Spans.ts"
import * as Skills from "../skills/Skills.ts"
import * as Undo from "../session/Undo.ts"
import type * as Workspace from "../trust/Workspace.ts"
import * as Checkpoints from "../checkpoints/Checkpoints.ts"
import * as Rewind from "../checkpoints/Rewind.ts"
import * as Background from "../tools/process/Background.ts"
import * as Tool from "../tools/Tool.ts"
import * as Toolkits from "../tools/Toolkit.ts"

/** A session live in this process: the protocol, and what the runtime that hosts it reads. */
export interface Session extends ProtocolSession {
  /** The history as the model sees it (read-only). */
  readonly history: History.History
  /**
   * When the session last finished its work (ms since the epoch: the end of its last turn, or
   * when it started), or `undefined` while a turn is running or queued.
   */
  readonly idleSince: () => number | undefined
}

export interface Deps {
  readonly bus: Bus.Bus["Service"]
  readonly writer: Writer
  /** The session's logged events, read back (for `subscribe`). */
  readonly readLog: Effect.Effect<ReadonlyArray<Canonical>, SessionError>
  /**
   * Closes this session (its scope belongs to the runtime). With a reason (another Skein took
   * it over), requests for it are answered with that reason until it is opened again.
   */
  readonly close: (reason?: string) => Effect.Effect<void>
  readonly provider: Provider
  readonly toolkit: Toolkit
  readonly maxTurnRequests: number
  readonly model?: string | undefined
  /** The models the session may switch to; without it, `model` is fixed. */
  readonly models?: Models.Catalog | undefined
  readonly services: Context.Context<ToolEnv>
  readonly permissionTimeoutMs: number
  /** Messages for the user that arose outside the model (an MCP server failed); shown in the next turn. */
  readonly notices?: (() => ReadonlyArray<{ readonly text: string; readonly source?: string }>) | undefined
  /** Session-level events logged once when the session starts (`mcp_servers` when they changed). */
  readonly startEvents?: ReadonlyArray<CanonicalBody> | undefined
  /** The status of the session's MCP servers. */
  readonly mcpStatus?: (() => ReadonlyArray<McpServerStatus>) | undefined
  /** What the session needs to start children (subagents); without it, it starts none. */
  readonly children?: Children.Factory | undefined
  /** The agent the session runs as (a child session): the provider is told. */
  readonly agent?: string | undefined
  /** Instructions added to the system prompt (a custom agent's). */
  readonly instructions?: string | undefined
  /** Nothing that changes anything runs, whatever the mode (an explorer). */
  readonly readOnly?: boolean | undefined
  /** The parent's ceiling as it is now (a child session): the session never goes beyond it, nor do its children. */
  readonly above?: (() => Ceiling.Ceiling) | undefined
  /**
   * The session's skills and slash commands, read again at each turn's start (a new file
   * counts from the next prompt); without it, it has neither.
   */
  readonly extensions?: Effect.Effect<Extensions> | undefined
  /** The share of the context window at which the conversation is compacted (default 0.8). */
  readonly compactAt?: number | undefined
  /** The user's home directory (default: the OS's); a skill folder that holds it is not readable without asking. */
  readonly userHome?: string | undefined
  /** What the system prompt says of the project, when the host has read it already (a child: its parent's); read once otherwise. */
  readonly project?: Effect.Effect<Prompt.Project> | undefined
  /** The session's sandbox: its commands run in it, and are asked for accordingly. */
  readonly sandbox?: SessionSandbox | undefined
  /** Before each presented turn: the folder's trust question (`trust/Workspace.ts`); true when the answer made more load. */
  readonly trustQuestion?: ((ask: TurnContract.TurnContext["ask"]) => Effect.Effect<boolean>) | undefined
  /** The hooks of a turn (`src/hooks`); without it, none run. */
  readonly hooks?: ReturnType<Workspace.Workspace["hooksFor"]> | undefined
  /** Where the session keeps checkpoints of its workspace (`$SKEIN_HOME`); without it, it keeps none. */
  readonly checkpointsHome?: string | undefined
  /** How much its checkpoints may keep (default `Checkpoints.DEFAULT_LIMITS`). */
  readonly checkpointLimits?: Partial<Checkpoints.Limits> | undefined
  /** A child in its parent's workspace: the parent's checkpoint, taken before the child's first change. */
  readonly checkpoint?: Effect.Effect<unknown> | undefined
  /** Runs a turn's work in place of the model/tool loop (an external ACP agent). */
  readonly runTurn?: ((ctx: TurnContract.TurnContext) => Effect.Effect<TurnOutcome, never, ToolEnv>) | undefined
}

/** What a session can run besides its tools: skills, and slash commands. */
export interface Extensions {
  readonly skills: ReadonlyArray<Skills.Skill>
  readonly commands: ReadonlyArray<Commands.Command>
}

/** What a prompt comes to once the `/name` of a known command in it is resolved (`Commands.locate`). */
interface Resolved {
  /** What the model sees (and `turn_start` logs). */
  readonly content: ReadonlyArray<UserBlock>
  readonly command?: CommandRun | undefined
  /** The skill the command loaded, to log as activated. */
  readonly activation?: { readonly name: string; readonly path: string; readonly sha256: string; readonly body: string } | undefined
  /** What the user is told about the command: why it could not run as such (it went to the model as typed), or what of the prompt it left aside. */
  readonly notice?: string | undefined
}

/** A command the model never sees ran: the rest of its prompt went nowhere, and the user is told. */
const leftAside = (name: string, content: ReadonlyArray<UserBlock>) =>
  content.length > 1
    ? `/${name} ran on its own: the rest of this prompt (${content.length - 1} more block${content.length > 2 ? "s" : ""}) was not sent to the model. Send it again if you meant it.`
    : undefined

type Message =
  | {
    readonly _tag: "Turns"
    readonly input: Mailbox.Input
    /** For a Submit: gets the turn number, or why the prompt was refused. */
    readonly reply?: Deferred.Deferred<number, SessionError> | undefined
    /** For a Submit: gets the turn's outcome. */
    readonly outcome?: Deferred.Deferred<TurnOutcome, SessionError> | undefined
  }
  | { readonly _tag: "SetMode"; readonly mode: ModeId; readonly reply: Deferred.Deferred<void, SessionError> }
  | { readonly _tag: "SetConfig"; readonly id: string; readonly value: string; readonly reply: Deferred.Deferred<void, SessionError> }

const defaultClosed = new SessionError({ reason: "closed", message: "The session is closed" })

/**
 * Starts a session actor in `scope`. `history` is the already-folded history (empty for a new
 * session, its mode the session's starting mode); the session keeps folding into it.
 * `lastSeq` is the `seq` of the last logged event (0 for a new session): numbering goes on
 * from there, as turn numbers go on from `history.turns`. What it logs is annotated with its
 * id (`session`).
 */
export const make = (info: SessionInfo, history: History.History, deps: Deps, scope: Scope.Closeable, lastSeq = 0) =>
  Effect.gen(function*() {
    const mailbox = yield* Queue.unbounded<Message>()
    let turns = Mailbox.initial(history.turns)
    let closed = false
    /** The loop of the running turn, once started. */
    let loop: Fiber.Fiber<unknown, unknown> | undefined
    let idle = yield* Clock.currentTimeMillis
    // Local waiters for a turn's outcome (`prompt`), by turn.
    const outcomes = new Map<number, Deferred.Deferred<TurnOutcome, SessionError>>()

    const mode = (): ModeId => (history.mode !== undefined && isModeId(history.mode) ? history.mode : "default")
    /** A child session's mode can only be narrowed from the one it started with (its parent's). */
    const ceiling: ModeId | undefined = info.parent !== undefined ? mode() : undefined
    /** The most the session may do now: its mode and agent under its parent's ceiling (`tools/Ceiling.ts`). */
    const reach = () => Ceiling.under({ mode: mode(), readOnly: deps.readOnly, rules: history.rules }, deps.above?.())
    // The model and effort the session chose (remembered in its log as `config_changed`).
    const currentModel = () => history.config.get("model") ?? deps.model
    const currentEffort = () => history.config.get("thought_level")
    // The project part of the system prompt, read once: a stable prefix for the providers' caches.
    const project = yield* Effect.cached(deps.project ?? Prompt.load(info.cwd).pipe(Effect.provideContext(deps.services)))
    // The session's cost so far (USD), when the model's price is known.
    let spent = 0
    /** Steering content for the running turn, until its last safe point (`open` false) has passed. */
    let steering: { readonly turn: number; items: Array<ReadonlyArray<UserBlock>>; open: boolean } | undefined

    const withInstructions = (system: string) =>
      deps.instructions === undefined || deps.instructions.length === 0 ? system : `${system}\n\n${deps.instructions}`

    // Completed when the session starts closing: requests waiting on the mailbox give up.
    const closing = yield* Deferred.make<void>()
    yield* deps.bus.register(info.id).pipe(Scope.provide(scope))
    // The session's background commands: its turns start and read them; its scope's close kills them.
    const background = yield* Background.make().pipe(Scope.provide(scope))

    /** Stamps, logs, folds and publishes events; keeps a turn's end the store refused for later (`Journal.ts`). */
    const journal = yield* Journal.make({ sessionId: info.id, writer: deps.writer, bus: deps.bus, history, lastSeq })
    const emitCanonical = journal.canonical
    const emitEphemeral = journal.ephemeral
    /** Snapshots of the workspace before a turn's first change and at its end (`checkpoints/`). */
    const checkpoints = deps.checkpointsHome === undefined ? undefined : Checkpoints.make({
      home: deps.checkpointsHome,
      sessionId: info.id,
      roots: [info.cwd, ...info.additionalDirectories],
      record: (turn, body) => emitCanonical(turn, body),
      limits: deps.checkpointLimits
    })
    /** What a call of `turn` allowed to change files takes first: the turn's checkpoint (a shared child's: its parent's). */
    const checkpointFor = (turn: number): Effect.Effect<unknown> => deps.checkpoint ?? (checkpoints === undefined ? Effect.void : checkpoints.before(turn))
    /** Why the session was closed when that was not asked for (another Skein took it over). */
    let closedWith: SessionError | undefined
    const closedError = () => closedWith ?? defaultClosed

    /** The session was taken over by another Skein: it is closed, and says why to whoever asks for it. */
    const lose = (error: SessionError) =>
      Effect.suspend(() => {
        if (closedWith !== undefined) return Effect.void
        closedWith = error
        // Not in this fiber: closing the scope waits for the turns that run in it.
        return Effect.asVoid(Effect.forkDetach(deps.close(error.message)))
      })

    /** The model's context window (tokens), when known. */
    const contextWindow = () => deps.models?.info(currentModel())?.contextWindow ?? deps.provider.contextWindow

    /**
     * After a model call with usage: the context it used of the window, and the cost so far. A
     * compaction's summary call adds to the cost only (`used`: undefined); the compaction then
     * reports the context the conversation uses after it.
     */
    const usageUpdate = (turn: number, usage: Usage | undefined, used: number | undefined): Effect.Effect<void> => {
      const model = deps.models?.info(currentModel())
      const cost = usage === undefined ? undefined : Models.cost(usage, model?.price)
      if (cost !== undefined) spent += cost
      const size = contextWindow()
      const costed = Spans.cost(cost === undefined ? undefined : spent)
      if (size === undefined || used === undefined) return costed
      return Effect.andThen(costed, emitEphemeral(turn, { type: "usage", data: { used, size, ...(spent > 0 || cost !== undefined ? { cost: spent } : {}) } }))
    }

    /** The usage update that follows a logged event, if any. */
    const usageAfter = (turn: number, body: CanonicalBody): Effect.Effect<void> => {
      if (body.type === "model_response" && body.data.usage !== undefined) {
        return usageUpdate(turn, body.data.usage, body.data.compaction === undefined ? Models.contextUsed(body.data.usage) : undefined)
      }
      if (body.type === "compaction") return usageUpdate(turn, undefined, body.data.usageAfter)
      return Effect.void
    }

    // ---- questions -----------------------------------------------------------------

    const questions = Questions.make({
      emit: emitEphemeral,
      presented: (turn) => turns.running?.turn === turn && turns.running.presented
    })

    /** Asks the presenter of `turn` a permission question; `undefined` when nobody answers. */
    const askFor = (turn: number): TurnContract.TurnContext["ask"] => (request) =>
      Effect.map(
        questions.ask(turn, (requestId) => ({ type: "permission_asked", data: { requestId, toolCall: request.toolCall, options: request.options } })),
        Option.match({
          onNone: () => undefined,
          onSome: (answer) => (answer.outcome === "selected" ? answer : { outcome: "cancelled" as const })
        })
      )

    const permitFor = (turn: number) =>
      Checkpoints.guard(Gate.make({
        sessionId: info.id,
        cwd: info.cwd,
        roots: [info.cwd, ...info.additionalDirectories],
        mode,
        history,
        canAsk: () => turns.running?.turn === turn && turns.running.presented,
        ask: askFor(turn),
        timeoutMs: deps.permissionTimeoutMs,
        record: (body) => emitCanonical(turn, body),
        readOnly: deps.readOnly,
        above: deps.above,
        sandbox: deps.sandbox
      }), checkpointFor(turn))

    /** The client's files and terminals for a turn, when its presenter's client offers them. */
    const clientFor = (q: Mailbox.Queued) =>
      q.presented && q.client !== undefined
        ? ClientCalls.access(
          q.client,
          (op, toolCallId) =>
            Effect.map(
              questions.ask(q.turn, (requestId) => ({ type: "client_call", data: { requestId, ...(toolCallId !== undefined ? { toolCallId } : {}), op } })),
              Option.getOrElse(() => ({ outcome: "error" as const, message: "the client that presented the turn is gone" }))
            ),
          (id, terminalId) => emitEphemeral(q.turn, { type: "tool_terminal", data: { id, terminalId } })
        )
        : undefined

    const logProblem = (what: string) => (cause: Cause.Cause<unknown>) => Effect.logError(`session ${info.id}: ${what}`, Cause.pretty(cause))

    // Not synced here: the next turn's end or the session's close syncs it, and the session answers
    // sooner. Refused, they are logged first thing once the store takes writes again.
    if (deps.startEvents !== undefined) yield* journal.soon(deps.startEvents)

    // ---- commands and skills ---------------------------------------------------------

    const noExtensions: Extensions = { skills: [], commands: [] }

    /**
     * The skills and commands as last read, and a read that refreshes them. A prompt that may
     * name a command (it starts with `/`) waits for a fresh read; any other takes the last one and
     * refreshes it meanwhile (at most once a second), off the path to its first token (a new
     * skill file reaches the catalog a prompt later). The first read starts with the session.
     */
    const extensionsOf = Latest.make(deps.extensions ?? Effect.succeed(noExtensions), { everyMs: 1_000, scope })
    const extensionsFor = (content: ReadonlyArray<UserBlock>): Effect.Effect<Extensions> =>
      Commands.mayName(content) ? extensionsOf.fresh : extensionsOf.last
    if (deps.extensions !== undefined) yield* extensionsOf.refresh

    /**
     * A prompt with a text block that starts with `/name` of a known command (the last one)
     * becomes what that command runs; its other blocks stay where they are.
     */
    const resolve = (content: ReadonlyArray<UserBlock>, extensions: Extensions): Effect.Effect<Resolved> =>
      Effect.gen(function*() {
        const located = Commands.locate(content, extensions.commands)
        if (located === undefined) return { content }
        const found = located.command
        const command: CommandRun = { name: found.name, arguments: located.arguments, ...(located.block > 0 ? { block: located.block } : {}) }
        const withText = (text: string): ReadonlyArray<UserBlock> => content.map((block, i) => (i === located.block ? { type: "text", text } : block))
        switch (found.kind) {
          case "builtin":
            if (found.name === "compact" || found.name === "undo" || found.name === "rewind") return { content, command: { ...command, local: true }, notice: leftAside(found.name, content) }
            return { content: withText(Commands.expand(found.name === "init" ? Commands.INIT_PROMPT : Commands.REVIEW_PROMPT, located.arguments)), command }
          case "prompt":
            return { content: withText(Commands.expand(found.template ?? "", located.arguments)), command }
          case "skill": {
            if (found.skill === undefined) return { content }
            const skill = found.skill
            const loaded = yield* Effect.result(Skills.activate(skill).pipe(Effect.provideContext(deps.services)))
            if (loaded._tag === "Failure") return { content, notice: loaded.failure.message }
            return {
              content: withText(Commands.forSkill(skill, loaded.success.body, located.arguments)),
              command,
              activation: { name: skill.name, path: skill.path, sha256: loaded.success.sha256, body: loaded.success.body }
            }
          }
        }
      })

    /** The `skill` tool's access for a turn: loads a skill the model may load, and logs it. */
    const skillsFor = (turn: number, extensions: Extensions): Tool.SkillAccess => ({
      activate: (name) =>
        Effect.gen(function*() {
          const skill = extensions.skills.find((s) => s.name === name && s.modelInvocable)
          if (skill === undefined) {
            const names = extensions.skills.filter((s) => s.modelInvocable).map((s) => s.name)
            return Tool.error(`There is no skill "${name}".${names.length > 0 ? ` The skills are: ${names.join(", ")}.` : ""}`)
          }
          const loaded = yield* Effect.result(Skills.activate(skill).pipe(Effect.provideContext(deps.services)))
          if (loaded._tag === "Failure") return Tool.error(loaded.failure.message)
          const { body, sha256 } = loaded.success
          const logged = yield* Effect.exit(emitCanonical(turn, { type: "skill_activation", data: { name: skill.name, path: skill.path, sha256, body } }))
          if (Exit.isFailure(logged)) return Tool.error(`The skill "${name}" could not be recorded in the session's log, so it was not loaded.`)
          return Tool.ok(`The skill "${skill.name}" (folder: ${skill.dir}; its files may be read without asking):\n\n${body}`)
        })
    })

    /** `/undo`: reverts the file changes of the last turn that has some left, and logs what it did. */
    const undo = (turn: number): Effect.Effect<TurnOutcome, LogError | SessionError, ToolEnv> =>
      Effect.gen(function*() {
        const notice = (text: string) => emitCanonical(turn, { type: "notice", data: { text, source: "undo" } })
        // Undoing changes files: a read-only session (plan mode) does not, whoever asks.
        const readOnly = Ceiling.whyReadOnly(reach())
        if (readOnly !== undefined) {
          yield* notice(`Nothing was undone: ${readOnly}, and /undo changes files. Switch to another mode to undo.`)
          return { stopReason: "end_turn" }
        }
        const events = yield* deps.readLog
        const target = Undo.lastChangingTurn(events)
        if (target === undefined) {
          yield* notice(Undo.nothingToUndo)
          return { stopReason: "end_turn" }
        }
        const plan = Undo.plan(events, target)
        if (plan.files.length > 0 && checkpoints !== undefined) yield* checkpoints.before(turn)
        const result = yield* Undo.apply(plan, { roots: [info.cwd, ...info.additionalDirectories], cwd: info.cwd })
        yield* emitCanonical(turn, {
          type: "undo",
          data: "refused" in result
            ? { turn: target, restored: [], removed: [], refused: result.refused }
            : { turn: target, restored: result.restored, removed: result.removed }
        })
        yield* notice(Undo.message(result, plan, info.cwd))
        return { stopReason: "end_turn" }
      })

    /** `/rewind [N]`: the files and the conversation back to before turn N (`checkpoints/Rewind.ts`). */
    const rewind = (turn: number, args: string): Effect.Effect<TurnOutcome, LogError | SessionError> =>
      Effect.gen(function*() {
        yield* Rewind.run({
          turn,
          arguments: args,
          cwd: info.cwd,
          events: yield* deps.readLog,
          checkpoints,
          readOnly: Ceiling.whyReadOnly(reach()),
          record: (body) => emitCanonical(turn, body),
          ask: askFor(turn),
          canAsk: () => turns.running?.turn === turn && turns.running.presented
        })
        return { stopReason: "end_turn" }
      })

    // ---- turns ---------------------------------------------------------------------

    /** Runs one turn under supervision; always ends with `turn_end`. */
    const supervise = (q: Mailbox.Queued, cancelled: boolean) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.gen(function*() {
          const state: TurnContract.TurnState = { partial: undefined, call: 0, requested: new Map() }
          let children: Children.Children | undefined
          const emit: TurnContract.Emit = {
            // A logged model response is no longer partial: cleared in the same step, so
            // a cancel right after it cannot log it twice.
            canonical: (body) =>
              emitCanonical(q.turn, body, body.type === "model_response" ? () => {
                state.partial = undefined
              } : undefined).pipe(Effect.andThen(usageAfter(q.turn, body))),
            ephemeral: (body) => emitEphemeral(q.turn, body)
          }
          // A folder's own definitions load once it is trusted: the question comes before they are read.
          const trusted = q.presented && deps.trustQuestion !== undefined && (yield* deps.trustQuestion(askFor(q.turn)))
          const extensions = yield* (trusted ? extensionsOf.fresh : extensionsFor(q.content))
          const resolved = yield* resolve(q.content, extensions)
          const start: CanonicalBody = {
            type: "turn_start",
            data: {
              content: resolved.content,
              ...(q.by !== undefined ? { by: q.by } : {}),
              ...(q.key !== undefined ? { key: q.key } : {}),
              ...(resolved.command !== undefined ? { command: resolved.command } : {})
            }
          }
          let startLogged = false
          const started = yield* Effect.exit(
            emitCanonical(q.turn, start, () => {
              startLogged = true
            }).pipe(
              Effect.andThen(resolved.activation === undefined ? Effect.void : emitCanonical(q.turn, { type: "skill_activation", data: resolved.activation })),
              Effect.andThen(
                resolved.notice === undefined ? Effect.void : emitCanonical(q.turn, { type: "notice", data: { text: resolved.notice, source: "command" } })
              )
            )
          )
          let exit: Exit.Exit<TurnOutcome, unknown>
          if (Exit.isFailure(started)) {
            exit = Exit.failCause(started.cause)
          } else if (cancelled || closed) {
            exit = Exit.interrupt()
          } else {
            const permit = permitFor(q.turn)
            const agents = deps.children === undefined ? undefined : yield* Children.make({
              parentId: info.id,
              cwd: info.cwd,
              additionalDirectories: info.additionalDirectories,
              factory: deps.children,
              record: (body) => Effect.catchCause(emitCanonical(q.turn, body), logProblem(`could not log a ${body.type} event`)),
              forward: (event) => emitEphemeral(q.turn, { type: "child_event", data: { event } }),
              presented: q.presented,
              client: q.client,
              ceiling: reach,
              rules: () => history.rules,
              permit: (call, subject, args) => Effect.provideContext(permit(call, subject, args), deps.services),
              checkpoint: checkpointFor(q.turn)
            })
            children = agents
            const steered = { turn: q.turn, items: [] as Array<ReadonlyArray<UserBlock>>, open: true }
            steering = steered
            const window = contextWindow()
            const listed = Skills.catalog(extensions.skills, Skills.budget(window)).text
            // Without a skill the model may load, the `skill` tool is not offered.
            const toolkit = extensions.skills.some((s) => s.modelInvocable) ? deps.toolkit : Toolkits.only(deps.toolkit, (name) => name !== "skill")
            const system = withInstructions(Prompt.render(yield* project, { mode: reach().mode, tools: toolkit.specs() }))
            const ctx: TurnContract.TurnContext = {
              sessionId: info.id,
              turn: q.turn,
              content: resolved.content,
              cwd: info.cwd,
              roots: [info.cwd, ...info.additionalDirectories],
              system: listed.length > 0 ? `${system}\n\n${listed}` : system,
              model: currentModel(),
              reasoningEffort: currentEffort(),
              provider: deps.provider,
              toolkit,
              history,
              maxTurnRequests: deps.maxTurnRequests,
              emit,
              state,
              client: clientFor(q),
              notices: deps.notices,
              permit,
              ask: askFor(q.turn),
              agent: deps.agent,
              agents,
              skills: skillsFor(q.turn, extensions),
              readRoots: Skills.readableFolders(extensions.skills, deps.userHome ?? os.homedir()),
              sandbox: deps.sandbox,
              window,
              compactAt: deps.compactAt,
              hooks: deps.hooks === undefined
                ? undefined
                : yield* Effect.provideContext(deps.hooks({ turn: q.turn, mode: () => reach().mode, record: emit.canonical }), deps.services),
              steering: (final) => {
                const taken = steered.items
                steered.items = []
                if (final && taken.length === 0) steered.open = false
                return taken
              }
            }
            const local = resolved.command?.local === true ? resolved.command : undefined
            const work: Effect.Effect<TurnOutcome, unknown, ToolEnv> = local?.name === "compact"
              ? Turn.compactNow(ctx, local.arguments)
              : local?.name === "undo"
              ? undo(q.turn)
              : local?.name === "rewind"
              ? rewind(q.turn, local.arguments)
              : deps.runTurn !== undefined
              ? deps.runTurn(ctx)
              : Turn.run(ctx)
            const fiber = yield* Effect.forkChild(restore(work.pipe(Effect.provideContext(deps.services), Effect.provideService(Background.Current, background))))
            loop = fiber
            // A cancel that arrived while the loop was being started.
            if (turns.epoch > q.epoch) yield* Fiber.interrupt(fiber)
            const awaited = yield* Effect.exit(restore(Fiber.await(fiber)))
            if (Exit.isFailure(awaited)) yield* Fiber.interrupt(fiber)
            exit = yield* Fiber.await(fiber)
          }
          loop = undefined
          // Steering the turn never took (it failed first) becomes the next prompt; a cancel drops it.
          const left = steering?.turn === q.turn ? steering.items : []
          steering = undefined
          if (left.length > 0 && !(Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause))) {
            yield* Effect.forkIn(Effect.ignore(submit({ _tag: "Submit", content: left.flat(), presented: false })), scope)
          }
          // Every child is stopped and closed (and logged so) before the turn ends.
          if (children !== undefined) yield* children.shutdown
          children = undefined
          // What the turn (and its children) left, to tell later changes by someone else from its own.
          if (checkpoints !== undefined) yield* checkpoints.after(q.turn)
          const ended = yield* finalize(q, state, exit, startLogged ? undefined : start)
          // A turn whose end the log refused counts as failed.
          yield* Spans.turnEnded(Exit.isSuccess(ended) ? ended.value : { stopReason: "end_turn", error: "its end was not logged" })
          const waiter = outcomes.get(q.turn)
          outcomes.delete(q.turn)
          if (waiter !== undefined) yield* Deferred.done(waiter, ended)
        }).pipe(Spans.turn({ sessionId: info.id, turn: q.turn, agent: deps.agent, parentSessionId: info.parent?.sessionId, traceparent: q.traceparent }))
      ).pipe(Effect.ensuring(Queue.offer(mailbox, { _tag: "Turns", input: { _tag: "TurnDone", turn: q.turn } })))

    /**
     * Logs what the loop left open, then `turn_end`, then syncs (`start`: the turn's `turn_start`,
     * when it was never logged). When the log refuses them, the turn's presenter is told so
     * (`turn_aborted`), and its outcome is that refusal, unless the turn was cancelled. Never fails.
     */
    const finalize = (q: Mailbox.Queued, state: TurnContract.TurnState, exit: Exit.Exit<TurnOutcome, unknown>, start: CanonicalBody | undefined) =>
      Effect.gen(function*() {
        const outcome = TurnEnd.outcomeOf(exit)
        if (Exit.isFailure(exit) && !Cause.hasInterruptsOnly(exit.cause)) yield* logProblem(`turn ${q.turn} failed`)(exit.cause)
        const refused = TurnEnd.refusedBy(exit)
        const bodies = TurnEnd.closing(history, state, outcome, refused !== undefined)
        state.partial = undefined
        state.compaction = undefined
        // A turn_start the store refused is written with its end (an invalid one never is).
        const ending = yield* journal.end(q.turn, bodies, refused !== undefined ? start : undefined)
        if (ending._tag === "Logged") return Exit.succeed(outcome)
        yield* logProblem(`could not log the end of turn ${q.turn}`)(Cause.fail(ending.error))
        const failure = TurnEnd.refusal(ending.error, ending._tag === "Lost" ? "This turn's end could not be saved" : "This turn stopped, and its end is not saved yet")
        yield* emitEphemeral(q.turn, { type: "turn_aborted", data: { stopReason: outcome.stopReason, error: failure.message } })
        if (ending._tag === "Lost") yield* lose(TurnEnd.refusal(ending.error, "This session was closed"))
        return outcome.stopReason === "cancelled" ? Exit.succeed(outcome) : Exit.fail(failure)
      })

    /** No turn left to run (the last one's presenter may still be finishing with it). */
    const resting = () => turns.queue.length === 0 && (turns.running === undefined || turns.running.done)

    /** Carries out what the pure step of the turns decided. */
    const perform = (output: Mailbox.Output): Effect.Effect<void> => {
      switch (output._tag) {
        case "Accepted":
          return Effect.void
        case "Start":
          return Effect.asVoid(Effect.forkIn(supervise(output.turn, output.cancelled), scope))
        case "Interrupt":
          return loop === undefined ? Effect.void : Effect.asVoid(Effect.forkIn(Fiber.interrupt(loop), scope))
        case "Abandoned":
          return questions.abandon(output.turn)
      }
    }

    const configure = (message: Extract<Message, { _tag: "SetMode" | "SetConfig" }>) =>
      Effect.gen(function*() {
        const invalid = (text: string) => Deferred.fail(message.reply, new SessionError({ reason: "invalid_config", message: text }))
        let change: CanonicalBody | undefined
        if (message._tag === "SetMode") {
          if (mode() !== message.mode) change = { type: "mode_changed", data: { mode: message.mode } }
        } else {
          if (message.id === "model") {
            if (deps.models === undefined || !deps.models.entries.some((e) => e.key === message.value)) return yield* invalid(`Unknown model "${message.value}"`)
          } else if (message.id === "thought_level") {
            const efforts = deps.models?.info(currentModel())?.efforts ?? []
            if (!efforts.includes(message.value)) {
              return yield* invalid(`The model does not take the reasoning effort "${message.value}"${efforts.length > 0 ? ` (it takes ${efforts.join(", ")})` : ""}`)
            }
          } else {
            return yield* invalid(`Unknown config option "${message.id}"`)
          }
          if (history.config.get(message.id) !== message.value) change = { type: "config_changed", data: { id: message.id, value: message.value } }
        }
        if (change !== undefined) {
          // Session-level; the log remembers it for session/load, and presenters announce it. A
          // change the log refused is not made; one logged but not synced is (the next write syncs first).
          const logged = yield* Effect.exit(emitCanonical(null, change))
          if (Exit.isFailure(logged)) return yield* refused(TurnEnd.errorOf(logged), `The ${message._tag === "SetMode" ? "mode" : message.id} was not changed`, message.reply)
          yield* journal.sync
        }
        yield* Deferred.succeed(message.reply, undefined)
      })

    /** Answers a request the log refused; a session taken over by another Skein is closed. */
    const refused = <A>(error: LogError, what: string, reply: Deferred.Deferred<A, SessionError>) =>
      Effect.gen(function*() {
        yield* logProblem(what.toLowerCase())(Cause.fail(error))
        yield* Deferred.fail(reply, TurnEnd.refusal(error, what))
        if (error.reason === "locked") yield* lose(TurnEnd.refusal(error, "This session was closed"))
      })

    const handle = (message: Message): Effect.Effect<void> => {
      if (message._tag !== "Turns") return configure(message)
      const reply = message.reply
      if (message.input._tag === "Submit" && reply !== undefined) {
        if (closed) return Effect.asVoid(Deferred.fail(reply, closedError()))
        // A log that misses a turn's end takes no new prompt before it has it.
        if (journal.behind() || journal.lost() !== undefined) {
          return Effect.flatMap(Effect.exit(journal.repair), (repaired) =>
            Exit.isSuccess(repaired) ? step(message) : refused(TurnEnd.errorOf(repaired), "The prompt was not run", reply))
        }
      }
      return step(message)
    }

    const step = (message: Extract<Message, { _tag: "Turns" }>): Effect.Effect<void> => {
      const [next, outputs] = Mailbox.step(turns, message.input)
      turns = next
      return Effect.gen(function*() {
        for (const output of outputs) {
          if (output._tag === "Accepted") {
            if (message.outcome !== undefined) outcomes.set(output.turn, message.outcome)
            if (message.reply !== undefined) yield* Deferred.succeed(message.reply, output.turn)
          }
          yield* perform(output)
        }
        if (message.input._tag === "TurnDone" && resting()) idle = yield* Clock.currentTimeMillis
      })
    }

    yield* Effect.forkIn(Effect.forever(Effect.flatMap(Queue.take(mailbox), handle)), scope)

    // On close: every prompt still waiting resolves as cancelled (or with why the session was
    // closed). Finalizers run in reverse order, so this one (registered last) runs first, before
    // the mailbox stops.
    yield* Scope.addFinalizer(scope, Effect.suspend(() => {
      closed = true
      const left = [...outcomes.values()]
      outcomes.clear()
      const ended: Exit.Exit<TurnOutcome, SessionError> = closedWith === undefined ? Exit.succeed({ stopReason: "cancelled" }) : Exit.fail(closedWith)
      return Effect.forEach(left, (waiter) => Deferred.done(waiter, ended), { discard: true }).pipe(
        Effect.andThen(Deferred.succeed(closing, undefined))
      )
    }))

    // ---- the protocol ----------------------------------------------------------------

    /** Sends a message and waits for its reply, or for the session to close. */
    const request = <A, E>(reply: Deferred.Deferred<A, E>, message: Message): Effect.Effect<A, E | SessionError> =>
      Effect.suspend(() =>
        closed
          ? Effect.fail(closedError())
          : Effect.andThen(
            Queue.offer(mailbox, message),
            Effect.raceFirst(Deferred.await(reply), Effect.andThen(Deferred.await(closing), Effect.suspend(() => Effect.fail(closedError()))))
          )
      )

    const submit = (input: Extract<Mailbox.Input, { _tag: "Submit" }>, outcome?: Deferred.Deferred<TurnOutcome, SessionError>): Effect.Effect<number, SessionError> =>
      Effect.suspend(() => {
        const reply = Deferred.makeUnsafe<number, SessionError>()
        return request(reply, { _tag: "Turns", input, reply, outcome })
      })

    const released = (turn: number) => Queue.offer(mailbox, { _tag: "Turns", input: { _tag: "Released", turn } })

    const cancel = Effect.asVoid(Queue.offer(mailbox, { _tag: "Turns", input: { _tag: "Cancel" } }))

    const setMode = (id: string): Effect.Effect<void, SessionError> =>
      Effect.suspend(() => {
        if (!isModeId(id)) return Effect.fail(new SessionError({ reason: "invalid_mode", message: `Unknown mode "${id}"` }))
        if (ceiling !== undefined && Ceiling.broader(id, ceiling)) {
          return Effect.fail(new SessionError({
            reason: "invalid_mode",
            message: `A child session may only be narrowed: it started in "${ceiling}", and "${id}" allows more`
          }))
        }
        const reply = Deferred.makeUnsafe<void, SessionError>()
        return request(reply, { _tag: "SetMode", mode: id, reply })
      })

    const setConfig = (id: string, value: string): Effect.Effect<void, SessionError> =>
      Effect.suspend(() => {
        if (id === "mode") return setMode(value)
        const reply = Deferred.makeUnsafe<void, SessionError>()
        return request(reply, { _tag: "SetConfig", id, value, reply })
      })

    /**
     * Content for the running turn, given to the model at its next safe point; with no turn
     * running (or past its last safe point), a new turn nobody presents.
     */
    const steer = (content: ReadonlyArray<UserBlock>): Effect.Effect<SendResult, SessionError> =>
      Effect.suspend(() => {
        const running = turns.running
        if (steering !== undefined && steering.open && running !== undefined && running.turn === steering.turn && !running.done) {
          steering.items.push(content)
          return Effect.succeed<SendResult>({ turn: steering.turn, steering: "injected" })
        }
        return Effect.map(submit({ _tag: "Submit", content, presented: false }), (turn): SendResult => ({ turn, steering: "startedNewTurn" }))
      })

    /** A turn nobody presents, to its outcome. */
    const prompt = (content: ReadonlyArray<UserBlock>) =>
      Effect.suspend(() => {
        const outcome = Deferred.makeUnsafe<TurnOutcome, SessionError>()
        return Effect.andThen(submit({ _tag: "Submit", content, presented: false }, outcome), Deferred.await(outcome))
      })

    const subscription = Effect.flatMap(deps.bus.subscribe(info.id), (sub) => (sub === undefined ? Effect.fail(closedError()) : Effect.succeed(sub)))

    const session: Session = {
      ...info,
      history,
      turn: (content, options) =>
        Stream.unwrap(Effect.gen(function*() {
          // A prompt sent again (the same key): the turn it started, not a new one.
          const earlier = options?.key === undefined ? undefined : history.keys.get(options.key)
          if (earlier !== undefined) {
            let turn: number | null | undefined
            return session.subscribe(earlier - 1).pipe(
              Stream.filter((event) => {
                if (turn === undefined && event.seq === earlier && event.type === "turn_start") turn = event.turn
                return turn !== undefined && event.turn === turn
              }),
              Stream.takeUntil((event) => event.type === "turn_end")
            )
          }
          // Subscribed before the prompt is submitted: nothing of the turn can be missed.
          const sub = yield* subscription
          const turn = yield* submit({
            _tag: "Submit",
            content,
            presented: options?.unattended !== true,
            client: options?.client,
            by: options?.by,
            ...(options?.key !== undefined ? { key: options.key } : {}),
            ...(options?.traceparent !== undefined ? { traceparent: options.traceparent } : {})
          })
          // However the stream ends, its presenter lets go of the turn (the next one may start).
          yield* Effect.addFinalizer(() => released(turn))
          return TurnEnd.events(sub, turn, () => closedWith)
        })),
      send: (command: Command): Effect.Effect<SendResult, SessionError> => {
        switch (command._tag) {
          case "Prompt":
            return Effect.map(submit({ _tag: "Submit", content: command.content, presented: false }), (turn) => ({ turn }))
          case "Cancel":
            return Effect.as(cancel, {})
          case "SetMode":
            return Effect.as(setMode(command.mode), {})
          case "SetConfig":
            return Effect.as(setConfig(command.id, command.value), {})
          case "Steer":
            return steer(command.content)
          case "Answer":
            return Effect.as(questions.answer(command.requestId, command.answer), {})
          case "Close":
            return Effect.as(deps.close(), {})
        }
      },
      prompt,
      cancel,
      setMode,
      setConfig,
      answer: questions.answer,
      settings: Effect.sync(() => ({
        mode: reach().mode,
        ...(currentModel() !== undefined ? { model: currentModel()! } : {}),
        ...(currentEffort() !== undefined ? { effort: currentEffort()! } : {})
      })),
      events: Stream.unwrap(Effect.map(deps.bus.subscribe(info.id), (sub) => (sub === undefined ? Stream.empty : Bus.toStream(sub)))),
      subscribe: (fromSeq) =>
        Stream.unwrap(Effect.gen(function*() {
          // Live first, then the log: whatever is logged meanwhile is in one or the other, and
          // what is in both is dropped from the live part by its seq.
          const sub = yield* subscription
          const logged = yield* deps.readLog
          const replay = logged.filter((event) => event.seq > fromSeq)
          const last = Math.max(fromSeq, logged.length > 0 ? logged[logged.length - 1]!.seq : 0)
          return Stream.concat(
            Stream.fromIterable(replay as ReadonlyArray<SessionEvent>),
            Bus.toStream(sub).pipe(Stream.filter((event) => (isEphemeral(event) ? event.seq >= last : event.seq > last)))
          )
        })),
      mcpServers: Effect.sync(() => deps.mcpStatus?.() ?? []),
      idleSince: () => (resting() ? idle : undefined)
    }
    return session
  }).pipe(
    // What the session logs names the session, not the request that opened it (its fibers,
    // forked from here, would carry that request's annotations for their whole life).
    Effect.provideService(References.CurrentLogAnnotations, { session: info.id })
  )
