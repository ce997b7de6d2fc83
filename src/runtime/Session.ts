/**
 * The Session actor: one mailbox fiber owns a session's state (mode, config,
 * the queue of prompts, the running turn). Every command is a message; the
 * mailbox never blocks on a turn, so `cancel` is handled at once.
 *
 * A prompt becomes a turn supervised by a fiber in the session's scope. The
 * supervisor logs `turn_start`, runs the loop as an interruptible child, and —
 * whatever happens to the loop (end, failure, defect, cancel, shutdown) —
 * finalizes open tool calls, logs `turn_end`, syncs the log and resolves the
 * prompt. A defect in a turn is a failed turn for this session only.
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import type * as PubSub from "effect/PubSub"
import * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import type { CanonicalBody, EphemeralBody, SessionEvent, Usage, UserBlock } from "../log/Event.ts"
import * as History from "../log/History.ts"
import type { LogError, Writer } from "../log/SessionLog.ts"
import type { ServerStatus as McpServerStatus } from "../mcp/McpSession.ts"
import * as Models from "../providers/Models.ts"
import * as Prompt from "../providers/Prompt.ts"
import type { Provider } from "../providers/Provider.ts"
import * as EventScrub from "../secrets/EventScrub.ts"
import * as ClientCalls from "../session/ClientCalls.ts"
import type { Answer } from "../Vocabulary.ts"
import type { ToolEnv } from "../tools/Tool.ts"
import type { Toolkit } from "../tools/Toolkit.ts"
import type { Bus } from "./Bus.ts"
import * as Gate from "./Gate.ts"
import { isModeId, type ModeId } from "../Vocabulary.ts"
import * as Turn from "./Turn.ts"

export type TurnOutcome = Turn.TurnOutcome

/** A prompt accepted by a session: its turn number and its eventual outcome. */
export interface Ticket {
  readonly turn: number
  readonly outcome: Deferred.Deferred<TurnOutcome>
}

export class SessionError extends Schema.TaggedError<SessionError>()("SessionError", {
  reason: Schema.Literals(["closed", "invalid_mode", "invalid_config", "unknown_request"]),
  message: Schema.String
}) {}

export interface SessionInfo {
  readonly id: string
  readonly cwd: string
  readonly additionalDirectories: ReadonlyArray<string>
  readonly created: number
}

export interface Session extends SessionInfo {
  /** Queues a prompt; resolves once the session accepted it (not when the turn ends). */
  readonly submit: (content: ReadonlyArray<UserBlock>) => Effect.Effect<Ticket, SessionError>
  /** Queues a prompt and waits for its turn to end. */
  readonly prompt: (content: ReadonlyArray<UserBlock>) => Effect.Effect<TurnOutcome, SessionError>
  /** Cancels the running turn and every queued one. */
  readonly cancel: Effect.Effect<void>
  /**
   * Answers an open question of this session (a `permission_asked` or `client_call` event's
   * `requestId`). Fails with `unknown_request` when no such question is open (never asked,
   * already answered, or withdrawn). Never waits behind a turn.
   */
  readonly answer: (requestId: string, answer: Answer) => Effect.Effect<void, SessionError>
  readonly setMode: (mode: string) => Effect.Effect<void, SessionError>
  readonly setConfig: (id: string, value: string) => Effect.Effect<void, SessionError>
  readonly mode: Effect.Effect<ModeId>
  /** The session's choices: its mode, model (catalog key) and reasoning effort. */
  readonly settings: Effect.Effect<Settings>
  /**
   * This session's events as a Stream, from the moment it starts running (fork
   * it with `startImmediately` before prompting to see a whole turn).
   */
  readonly events: Stream.Stream<SessionEvent>
  /** A subscription to this session's events from now on (scoped). */
  readonly subscribe: Effect.Effect<PubSub.Subscription<SessionEvent>, SessionError, Scope.Scope>
  /** The history as the model sees it (read-only). */
  readonly history: History.History
  /** This session's MCP servers as they are now: connecting, ready (with their tools) or failed (why). */
  readonly mcpServers: () => ReadonlyArray<McpServerStatus>
  /**
   * When the session last finished its work (ms since the epoch: the end of its last turn, or
   * when it started), or `undefined` while a turn is running or queued.
   */
  readonly idleSince: () => number | undefined
}

export interface Settings {
  readonly mode: ModeId
  readonly model: string | undefined
  readonly effort: string | undefined
}

export interface Deps {
  readonly bus: Bus["Service"]
  readonly writer: Writer
  readonly provider: Provider
  readonly toolkit: Toolkit
  readonly maxTurnRequests: number
  readonly model?: string | undefined
  /** The models the session may switch to; without it, `model` is fixed. */
  readonly models?: Models.Catalog | undefined
  readonly services: import("effect/Context").Context<ToolEnv>
  /**
   * Whether whoever presents the session answers its questions (`permission_asked`,
   * `client_call` events, answered with `answer`). Without a presenter (and without `ask`),
   * calls that need asking are denied at once.
   */
  readonly presented?: boolean | undefined
  /** Asks the user about a tool call in-process, instead of a presenter (re-runs, embedders). */
  readonly ask?: Gate.Asker | undefined
  readonly permissionTimeoutMs: number
  /** What the presenter's client offers to tools (editor files, terminals), asked as `client_call`s. */
  readonly client?: ClientCalls.Capabilities | undefined
  /** Messages for the user that arose outside the model (an MCP server failed); shown in the next turn. */
  readonly notices?: (() => ReadonlyArray<{ readonly text: string; readonly source?: string }>) | undefined
  /** Session-level events logged once when the session starts (`mcp_servers` when they changed). */
  readonly startEvents?: ReadonlyArray<CanonicalBody> | undefined
  /** The status of the session's MCP servers. */
  readonly mcpStatus?: (() => ReadonlyArray<McpServerStatus>) | undefined
}

type Message =
  | { readonly _tag: "Submit"; readonly content: ReadonlyArray<UserBlock>; readonly reply: Deferred.Deferred<Ticket, SessionError> }
  | { readonly _tag: "Cancel" }
  | { readonly _tag: "SetMode"; readonly mode: ModeId; readonly reply: Deferred.Deferred<void, SessionError> }
  | { readonly _tag: "SetConfig"; readonly id: string; readonly value: string; readonly reply: Deferred.Deferred<void, SessionError> }
  | { readonly _tag: "TurnDone" }

interface Pending {
  readonly turn: number
  readonly content: ReadonlyArray<UserBlock>
  readonly outcome: Deferred.Deferred<TurnOutcome>
  readonly epoch: number
}

/** The result logged for a tool call a cancel stopped, and for one a failed turn never ran. */
export const CANCELLED_TOOL = "Cancelled by the user"
export const NOT_RUN_TOOL = "Not run: the turn failed"

const closedError = new SessionError({ reason: "closed", message: "The session is closed" })

/**
 * Starts a session actor in `scope`. `history` is the already-folded history
 * (empty for a new session); the session keeps folding into it. `lastSeq` is
 * the `seq` of the last logged event (0 for a new session): numbering goes on
 * from there, as turn numbers go on from `history.turns`.
 */
export const make = (
  info: SessionInfo,
  history: History.History,
  initialMode: ModeId,
  deps: Deps,
  scope: Scope.Closeable,
  lastSeq = 0
) =>
  Effect.gen(function*() {
    const mailbox = yield* Queue.unbounded<Message>()
    const lock = yield* Semaphore.make(1)
    let seq = lastSeq
    let mode: ModeId = history.mode !== undefined && isModeId(history.mode) ? history.mode : initialMode
    let accepted = history.turns
    let epoch = 0
    let closed = false
    const pending: Array<Pending> = []
    let running: { readonly turn: number; loop: Fiber.Fiber<unknown, unknown> | undefined } | undefined
    let idle = yield* Clock.currentTimeMillis

    // The model and effort the session chose (remembered in its log as `config_changed`).
    const currentModel = () => history.config.get("model") ?? deps.model
    const currentEffort = () => history.config.get("thought_level")
    // The project part of the system prompt, read once: a stable prefix for the providers' caches.
    const project = yield* Effect.cached(Prompt.load(info.cwd).pipe(Effect.provideContext(deps.services)))
    // The session's cost so far (USD), when the model's price is known.
    let spent = 0

    const scrub = EventScrub.make()
    // Completed when the session starts closing: requests waiting on the mailbox give up.
    const closing = yield* Deferred.make<void>()
    yield* deps.bus.register(info.id).pipe(Scope.provide(scope))

    /**
     * Stamps, logs, folds and publishes one canonical event — as one
     * uninterruptible step, so a cancel never leaves a line on disk that the
     * session does not know about.
     */
    const emitCanonical = (turn: number | null, raw: CanonicalBody, committed?: () => void): Effect.Effect<void, LogError> =>
      lock.withPermits(1)(
        Effect.uninterruptible(Effect.gen(function*() {
          const ts = yield* Clock.currentTimeMillis
          // Secrets never reach the log, the model's history or a presenter; held-back deltas go first.
          for (const held of scrub.flush()) yield* deps.bus.publish({ ...held, sessionId: info.id, seq, ts, turn } as SessionEvent<EphemeralBody>)
          const body = scrub.canonical(raw)
          const event = { ...body, sessionId: info.id, seq: seq + 1, ts, turn } as SessionEvent<CanonicalBody>
          yield* deps.writer.append([event])
          seq = event.seq
          History.apply(history, body)
          committed?.()
          yield* deps.bus.publish(event)
        }))
      )

    const emitEphemeral = (turn: number, raw: EphemeralBody): Effect.Effect<void> =>
      Effect.flatMap(Clock.currentTimeMillis, (ts) => {
        const bodies = scrub.ephemeral(raw)
        const publish = (body: EphemeralBody) => deps.bus.publish({ ...body, sessionId: info.id, seq, ts, turn } as SessionEvent<EphemeralBody>)
        return bodies.length === 1 ? publish(bodies[0]!) : Effect.forEach(bodies, publish, { discard: true })
      })

    /** After a model call with usage: the context it used of the window, and the cost so far. */
    const usageUpdate = (turn: number, usage: Usage): Effect.Effect<void> => {
      const model = deps.models?.info(currentModel())
      const cost = Models.cost(usage, model?.price)
      if (cost !== undefined) spent += cost
      if (model?.contextWindow === undefined) return Effect.void
      return emitEphemeral(turn, {
        type: "usage",
        data: { used: Models.contextUsed(usage), size: model.contextWindow, ...(cost !== undefined ? { cost: spent } : {}) }
      })
    }

    // ---- questions -----------------------------------------------------------------

    /** Questions waiting for an answer, by request id. */
    const open = new Map<string, Deferred.Deferred<Answer>>()
    let asked = 0

    /**
     * Publishes a question of the running turn and waits for its answer. A wait that ends
     * without one (interrupted: cancel, timeout) withdraws the question.
     */
    const question = (body: (requestId: string) => EphemeralBody): Effect.Effect<Answer> =>
      Effect.suspend(() => {
        const turn = running?.turn ?? accepted
        const requestId = `${turn}.${++asked}`
        const reply = Deferred.makeUnsafe<Answer>()
        open.set(requestId, reply)
        return emitEphemeral(turn, body(requestId)).pipe(
          Effect.andThen(Deferred.await(reply)),
          Effect.onExit((exit) => {
            const withdrawn = open.delete(requestId) && exit._tag === "Failure"
            return withdrawn ? emitEphemeral(turn, { type: "question_withdrawn", data: { requestId } }) : Effect.void
          })
        )
      })

    const presenterAsks: Gate.Asker = (request) =>
      Effect.map(
        question((requestId) => ({ type: "permission_asked", data: { requestId, toolCall: request.toolCall, options: request.options } })),
        (answer) => answer.outcome === "selected" ? answer : { outcome: "cancelled" as const }
      )

    const client = deps.presented === true && deps.client !== undefined
      ? ClientCalls.access(
        deps.client,
        (op, toolCallId) => question((requestId) => ({ type: "client_call", data: { requestId, ...(toolCallId !== undefined ? { toolCallId } : {}), op } })),
        (id, terminalId) => emitEphemeral(running?.turn ?? accepted, { type: "tool_terminal", data: { id, terminalId } })
      )
      : undefined

    const permit = Gate.make({
      sessionId: info.id,
      cwd: info.cwd,
      roots: [info.cwd, ...info.additionalDirectories],
      mode: () => mode,
      history,
      ask: deps.ask ?? (deps.presented === true ? presenterAsks : undefined),
      timeoutMs: deps.permissionTimeoutMs,
      record: (body) => emitCanonical(running?.turn ?? null, body)
    })

    const logProblem = (what: string) => (cause: Cause.Cause<unknown>) =>
      Effect.logError(`session ${info.id}: ${what}`, Cause.pretty(cause))

    if (deps.startEvents !== undefined && deps.startEvents.length > 0) {
      // Not synced here: the next turn's end or the session's close syncs it, and the session answers sooner.
      yield* Effect.forEach(deps.startEvents, (body) => emitCanonical(null, body), { discard: true }).pipe(
        Effect.catchCause(logProblem("could not log its start"))
      )
    }

    /** Runs one turn under supervision; always ends with `turn_end` and a resolved outcome. */
    const supervise = (p: Pending) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.gen(function*() {
          const state: Turn.TurnState = { partial: undefined, call: 0, requested: new Map() }
          const emit: Turn.Emit = {
            // A logged model response is no longer partial: cleared in the same step, so
            // a cancel right after it cannot log it twice.
            canonical: (body) =>
              emitCanonical(p.turn, body, body.type === "model_response" ? () => {
                state.partial = undefined
              } : undefined).pipe(
                Effect.andThen(body.type === "model_response" && body.data.usage !== undefined ? usageUpdate(p.turn, body.data.usage) : Effect.void)
              ),
            ephemeral: (body) => emitEphemeral(p.turn, body)
          }
          const started = yield* Effect.exit(emitCanonical(p.turn, { type: "turn_start", data: { content: p.content } }))
          let exit: Exit.Exit<TurnOutcome, unknown>
          if (Exit.isFailure(started)) {
            exit = Exit.failCause(started.cause)
          } else if (p.epoch < epoch) {
            exit = Exit.interrupt()
          } else {
            const ctx: Turn.TurnContext = {
              sessionId: info.id,
              turn: p.turn,
              cwd: info.cwd,
              roots: [info.cwd, ...info.additionalDirectories],
              system: Prompt.render(yield* project, { mode, tools: deps.toolkit.specs() }),
              model: currentModel(),
              reasoningEffort: currentEffort(),
              provider: deps.provider,
              toolkit: deps.toolkit,
              history,
              maxTurnRequests: deps.maxTurnRequests,
              emit,
              state,
              client,
              notices: deps.notices,
              permit
            }
            const loop = yield* Effect.forkChild(restore(Turn.run(ctx).pipe(Effect.provideContext(deps.services))))
            if (running !== undefined) running.loop = loop
            // A cancel that arrived while the loop was being started.
            if (p.epoch < epoch) yield* Fiber.interrupt(loop)
            const awaited = yield* Effect.exit(restore(Fiber.await(loop)))
            if (Exit.isFailure(awaited)) yield* Fiber.interrupt(loop)
            exit = yield* Fiber.await(loop)
          }
          const outcome = yield* finalize(p, state, exit)
          yield* Deferred.succeed(p.outcome, outcome)
        })
      ).pipe(Effect.ensuring(Queue.offer(mailbox, { _tag: "TurnDone" })))

    /** Logs what the loop left open, then `turn_end`, then syncs. Never fails. */
    const finalize = (p: Pending, state: Turn.TurnState, exit: Exit.Exit<TurnOutcome, unknown>) =>
      Effect.gen(function*() {
        let outcome: TurnOutcome
        if (Exit.isSuccess(exit)) {
          outcome = exit.value
        } else if (Cause.hasInterruptsOnly(exit.cause)) {
          outcome = { stopReason: "cancelled" }
        } else {
          yield* logProblem(`turn ${p.turn} failed`)(exit.cause)
          const error = Cause.squash(exit.cause)
          const detail = error instanceof Error ? error.message : typeof error === "object" && error !== null && "message" in error ? String(error.message) : String(error)
          outcome = { stopReason: "end_turn", error: `The turn failed inside Skein: ${detail}` }
        }
        const why = outcome.stopReason === "cancelled" ? CANCELLED_TOOL : NOT_RUN_TOOL
        const canonical = (body: CanonicalBody) => Effect.catchCause(emitCanonical(p.turn, body), logProblem("could not log the end of a turn"))
        if (state.partial !== undefined) {
          yield* canonical({
            type: "model_response",
            data: { call: state.call, parts: state.partial, stop: outcome.stopReason === "cancelled" ? "cancelled" : "error" }
          })
          state.partial = undefined
        }
        for (const [id, name] of [...history.openToolCalls]) {
          // A call the model asked for but that never started is shown too, so every
          // result a client sees belongs to a tool call it was told about.
          const title = history.announced.get(id) ?? name
          if (!history.announced.has(id)) {
            const args = state.requested.get(id)
            yield* canonical({ type: "tool_call", data: { id, name, args: args ?? {}, title, kind: "other" } })
          }
          yield* canonical({ type: "tool_result", data: { id, title, ok: false, content: why } })
        }
        yield* canonical({
          type: "turn_end",
          data: { stopReason: outcome.stopReason, ...(outcome.error !== undefined ? { error: outcome.error } : {}) }
        })
        yield* Effect.catchCause(deps.writer.sync, logProblem("could not sync its log"))
        return outcome
      })

    const startNext = Effect.gen(function*() {
      if (running !== undefined || closed) return
      const next = pending.shift()
      if (next === undefined) return
      running = { turn: next.turn, loop: undefined }
      yield* Effect.forkIn(supervise(next), scope)
    })

    const handle = (message: Message): Effect.Effect<void> => {
      switch (message._tag) {
        case "Submit":
          return Effect.gen(function*() {
            const outcome = yield* Deferred.make<TurnOutcome>()
            const ticket: Ticket = { turn: ++accepted, outcome }
            pending.push({ turn: ticket.turn, content: message.content, outcome, epoch })
            yield* Deferred.succeed(message.reply, ticket)
            yield* startNext
          })
        case "Cancel":
          return Effect.gen(function*() {
            epoch++
            if (running?.loop !== undefined) yield* Effect.forkIn(Fiber.interrupt(running.loop), scope)
          })
        case "TurnDone":
          running = undefined
          return Effect.andThen(
            Effect.flatMap(Clock.currentTimeMillis, (now) =>
              Effect.sync(() => {
                idle = now
              })),
            startNext
          )
        case "SetMode":
          return Effect.gen(function*() {
            if (mode !== message.mode) {
              mode = message.mode
              // Session-level: presenters of the change (set_mode, set_config_option) announce it.
              yield* emitCanonical(null, { type: "mode_changed", data: { mode } }).pipe(
                Effect.andThen(deps.writer.sync),
                Effect.catchCause(logProblem("could not log a mode change"))
              )
            }
            yield* Deferred.succeed(message.reply, undefined)
          })
        case "SetConfig":
          return Effect.gen(function*() {
            const invalid = (text: string) => Deferred.fail(message.reply, new SessionError({ reason: "invalid_config", message: text }))
            if (message.id === "model") {
              if (deps.models === undefined || !deps.models.entries.some((e) => e.key === message.value)) {
                return yield* invalid(`Unknown model "${message.value}"`)
              }
            } else if (message.id === "thought_level") {
              const efforts = deps.models?.info(currentModel())?.efforts ?? []
              if (!efforts.includes(message.value)) {
                return yield* invalid(`The model does not take the reasoning effort "${message.value}"${efforts.length > 0 ? ` (it takes ${efforts.join(", ")})` : ""}`)
              }
            } else {
              return yield* invalid(`Unknown config option "${message.id}"`)
            }
            if (history.config.get(message.id) !== message.value) {
              // Session-level, like a mode change; the log remembers it for session/load.
              yield* emitCanonical(null, { type: "config_changed", data: { id: message.id, value: message.value } }).pipe(
                Effect.andThen(deps.writer.sync),
                Effect.catchCause(logProblem("could not log a config change"))
              )
            }
            yield* Deferred.succeed(message.reply, undefined)
          })
      }
    }

    yield* Effect.forkIn(Effect.forever(Effect.flatMap(Queue.take(mailbox), handle)), scope)

    // On close: every prompt still waiting resolves as cancelled. Finalizers run in
    // reverse order, so this one (registered last) runs first, before the mailbox stops.
    yield* Scope.addFinalizer(scope, Effect.suspend(() => {
      closed = true
      const left = pending.splice(0)
      return Effect.forEach(left, (p) => Deferred.succeed(p.outcome, { stopReason: "cancelled" }), { discard: true }).pipe(
        Effect.andThen(Deferred.succeed(closing, undefined))
      )
    }))

    const ask = <A>(make: (reply: Deferred.Deferred<A, SessionError>) => Message) =>
      Effect.gen(function*() {
        if (closed) return yield* closedError
        const reply = yield* Deferred.make<A, SessionError>()
        yield* Queue.offer(mailbox, make(reply))
        return yield* Effect.raceFirst(
          Deferred.await(reply),
          Effect.andThen(Deferred.await(closing), Effect.fail(closedError))
        )
      })

    const submit = (content: ReadonlyArray<UserBlock>) =>
      ask<Ticket>((reply) => ({ _tag: "Submit", content, reply }))

    const session: Session = {
      ...info,
      history,
      submit,
      prompt: (content) => Effect.flatMap(submit(content), (ticket) => Deferred.await(ticket.outcome)),
      events: Stream.unwrap(
        Effect.map(deps.bus.subscribe(info.id), (sub) => (sub === undefined ? Stream.empty : Stream.fromSubscription(sub)))
      ),
      cancel: Effect.asVoid(Queue.offer(mailbox, { _tag: "Cancel" })),
      answer: (requestId, answer) =>
        Effect.suspend(() => {
          const reply = open.get(requestId)
          if (reply === undefined) {
            return Effect.fail(new SessionError({ reason: "unknown_request", message: `No question ${JSON.stringify(requestId.slice(0, 64))} is waiting for an answer` }))
          }
          open.delete(requestId)
          return Deferred.succeed(reply, answer)
        }),
      setMode: (id) =>
        isModeId(id)
          ? ask<void>((reply) => ({ _tag: "SetMode", mode: id, reply }))
          : Effect.fail(new SessionError({ reason: "invalid_mode", message: `Unknown mode "${id}"` })),
      setConfig: (id, value) =>
        id === "mode"
          ? session.setMode(value)
          : ask<void>((reply) => ({ _tag: "SetConfig", id, value, reply })),
      mode: Effect.sync(() => mode),
      settings: Effect.sync(() => ({ mode, model: currentModel(), effort: currentEffort() })),
      subscribe: Effect.flatMap(deps.bus.subscribe(info.id), (sub) => sub === undefined ? Effect.fail(closedError) : Effect.succeed(sub)),
      mcpServers: deps.mcpStatus ?? (() => []),
      idleSince: () => (running !== undefined || pending.length > 0 ? undefined : idle)
    }
    return session
  })
