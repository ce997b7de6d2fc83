/**
 * The Session actor: the local implementation of the session protocol (`session/Protocol.ts`).
 * Its state is one value changed by a pure step (`SessionState.ts`): the order of its turns,
 * steering, settings, open questions, cost, idle time, whether it is closed. A small
 * interpreter (`SessionActor.ts`) feeds it the session's messages and performs what it decides;
 * the mailbox never blocks on a turn, so `Cancel` and answers are handled at once.
 *
 * A prompt becomes a turn supervised by a fiber in the session's scope (`SessionTurn.ts`),
 * which always ends it with `turn_end`. Events reach the log and the bus through the session's
 * journal (`Journal.ts`): a turn's end the log refused is written before anything else once it
 * can be, and until then the session takes no new prompt. A prompt's outcome is its turn's
 * `turn_end` (or `turn_aborted`), read from the session's events as every presenter reads it.
 * A session another Skein took over is closed.
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as References from "effect/References"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { type CanonicalBody, type EphemeralBody, isEphemeral, type SessionEvent } from "../log/Event.ts"
import * as History from "../log/History.ts"
import * as Models from "../providers/Models.ts"
import * as Prompt from "../providers/Prompt.ts"
import * as ClientCalls from "../session/ClientCalls.ts"
import { type Command, outcomeOf, type SendResult, type SessionError, type SessionInfo, type TurnOutcome } from "../session/Protocol.ts"
import * as TurnContract from "../session/TurnContract.ts"
import { type Answer, isModeId, type ModeId, type Usage, type UserBlock } from "../Vocabulary.ts"
import * as Ceiling from "../tools/Ceiling.ts"
import * as Background from "../tools/process/Background.ts"
import type { Toolkit } from "../tools/Toolkit.ts"
import * as Checkpoints from "../checkpoints/Checkpoints.ts"
import * as Commands from "../commands/Commands.ts"
import * as Spans from "../telemetry/Spans.ts"
import * as Bus from "./Bus.ts"
import * as Gate from "./Gate.ts"
import * as Journal from "./Journal.ts"
import * as Latest from "./Latest.ts"
import * as SessionActor from "./SessionActor.ts"
import * as SessionCommands from "./SessionCommands.ts"
import type { Deps, Session } from "./SessionDeps.ts"
import * as SessionState from "./SessionState.ts"
import * as SessionTurn from "./SessionTurn.ts"
import * as TurnEnd from "./TurnEnd.ts"
import * as UsageShown from "./Usage.ts"

/**
 * Starts a session actor in `scope`. `history` is the already-folded history (empty for a new
 * session, its mode the session's starting mode); the session keeps folding into it.
 * `lastSeq` is the `seq` of the last logged event (0 for a new session): numbering goes on
 * from there, as turn numbers go on from `history.turns`. What it logs is annotated with its
 * id (`session`).
 */
export const make = (info: SessionInfo, history: History.History, deps: Deps, scope: Scope.Closeable, lastSeq = 0) =>
  Effect.gen(function*() {
    const mode: ModeId = history.mode !== undefined && isModeId(history.mode) ? history.mode : "default"
    const initial = SessionState.initial({
      turnsSoFar: history.turns,
      settings: { mode, config: new Map(history.config) },
      // A child session's mode can only be narrowed from the one it started with (its parent's).
      limits: { models: deps.models, model: deps.model, ceiling: info.parent !== undefined ? mode : undefined },
      now: yield* Clock.currentTimeMillis,
      usage: UsageShown.restore(history, deps.models, deps.model, deps.provider.contextWindow)
    })
    const logProblem = (what: string) => (cause: Cause.Cause<unknown>) => Effect.logError(`session ${info.id}: ${what}`, Cause.pretty(cause))

    yield* deps.bus.register(info.id).pipe(Scope.provide(scope))
    // The session's background commands: its turns start and read them; its scope's close kills them.
    const background = yield* Background.make().pipe(Scope.provide(scope))
    /** Stamps, logs, folds and publishes events; keeps a turn's end the store refused for later (`Journal.ts`). */
    const journal = yield* Journal.make({ sessionId: info.id, writer: deps.writer, bus: deps.bus, history, lastSeq })
    const actor: SessionActor.Actor = yield* SessionActor.make(initial, {
      journal,
      start: (turn, cancelled) => Effect.asVoid(Effect.forkIn(SessionTurn.supervise(turnEnv, turn, cancelled), scope)),
      close: deps.close,
      logProblem
    }, scope)

    const settings = () => actor.state().settings
    /** The most the session may do now: its mode and agent under its parent's ceiling (`tools/Ceiling.ts`). */
    const reach = () => Ceiling.under({ mode: settings().mode, readOnly: deps.readOnly, rules: history.rules }, deps.above?.())
    const currentModel = () => SessionState.model(actor.state())
    /** The model's context window (tokens), when known. */
    const contextWindow = () => deps.models?.info(currentModel())?.contextWindow ?? deps.provider.contextWindow
    // The project part of the system prompt, read once: a stable prefix for the providers' caches.
    const project = yield* Effect.cached(deps.project ?? Prompt.load(info.cwd).pipe(Effect.provideContext(deps.services)))
    const system = (toolkit: Toolkit) =>
      Effect.map(project, (loaded) => {
        const rendered = Prompt.render(loaded, { mode: reach().mode, tools: toolkit.specs() })
        return deps.instructions === undefined || deps.instructions.length === 0 ? rendered : `${rendered}\n\n${deps.instructions}`
      })

    /** Snapshots of the workspace before a turn's first change and at its end (`checkpoints/`). */
    const checkpoints = deps.checkpointsHome === undefined ? undefined : Checkpoints.make({
      home: deps.checkpointsHome,
      sessionId: info.id,
      roots: [info.cwd, ...info.additionalDirectories],
      record: (turn, body) => journal.canonical(turn, body),
      limits: deps.checkpointLimits
    })
    /** What a call of `turn` allowed to change files takes first: the turn's checkpoint (a shared child's: its parent's). */
    const checkpointFor = (turn: number): Effect.Effect<unknown> => deps.checkpoint ?? (checkpoints === undefined ? Effect.void : checkpoints.before(turn))

    /**
     * After a model call with usage: the context it used of the window, and the cost so far. A
     * compaction's summary call adds to the cost only (`used`: undefined); the compaction then
     * reports the context the conversation uses after it.
     */
    const usageUpdate = (turn: number, usage: Usage | undefined, used: number | undefined): Effect.Effect<void> =>
      Effect.gen(function*() {
        const cost = usage === undefined ? undefined : Models.cost(usage, deps.models?.info(currentModel())?.price)
        if (cost !== undefined) yield* actor.now({ _tag: "Spend", usd: cost })
        const spent = actor.state().spent
        yield* Spans.cost(cost === undefined ? undefined : spent)
        const shown = UsageShown.shown(used, contextWindow(), spent, cost !== undefined)
        if (shown === undefined) return
        yield* actor.now({ _tag: "Shown", usage: shown })
        yield* journal.ephemeral(turn, { type: "usage", data: shown })
      })

    /** Logs an event of a turn, then the usage update that follows it, if any. */
    const record = (turn: number, body: CanonicalBody, committed?: () => void) =>
      Effect.andThen(
        journal.canonical(turn, body, committed),
        body.type === "model_response" && body.data.usage !== undefined
          ? usageUpdate(turn, body.data.usage, body.data.compaction === undefined ? Models.contextUsed(body.data.usage) : undefined)
          : body.type === "compaction"
          ? usageUpdate(turn, undefined, body.data.usageAfter)
          : Effect.void
      )

    // ---- questions -----------------------------------------------------------------

    /** Asks whoever presents `turn`; `undefined` when nobody does (or they went away meanwhile). */
    const question = (turn: number, body: (requestId: string) => EphemeralBody): Effect.Effect<Answer | undefined> =>
      Effect.suspend(() => {
        const asker = Deferred.makeUnsafe<Answer | undefined>()
        return actor.now({ _tag: "Ask", turn, body, asker }).pipe(
          Effect.andThen(Deferred.await(asker)),
          // A question the session stops waiting for (a cancel, a timeout) is withdrawn.
          Effect.onExit((exit) => (exit._tag === "Failure" ? actor.now({ _tag: "Withdraw", asker }) : Effect.void))
        )
      })

    const presents = (turn: number) => SessionState.presents(actor.state(), turn)

    /** Whoever presents `turn`, asked a question as it is; `undefined` when nobody answers. */
    const questionsFor = (turn: number): TurnContract.Questions["Service"] => ({
      ask: (request) =>
        Effect.map(
          question(turn, (requestId) => ({ type: "permission_asked", data: { requestId, toolCall: request.toolCall, options: request.options } })),
          (answer) => (answer === undefined ? undefined : answer.outcome === "selected" ? answer : { outcome: "cancelled" as const })
        ),
      canAsk: () => presents(turn)
    })

    /** The permission gate of `turn` (asking its `Questions`); a call allowed to change files takes the turn's checkpoint first. */
    const permissionFor = (turn: number) =>
      Effect.map(
        Gate.make({
          cwd: info.cwd,
          roots: [info.cwd, ...info.additionalDirectories],
          mode: () => settings().mode,
          history,
          timeoutMs: deps.permissionTimeoutMs,
          record: (body) => record(turn, body),
          readOnly: deps.readOnly,
          above: deps.above,
          sandbox: deps.sandbox
        }),
        (gate) => TurnContract.Permission.of({ permit: Checkpoints.guard(gate.permit, checkpointFor(turn)) })
      )

    /** The client's files and terminals for a turn, when its presenter's client offers them. */
    const clientFor = (q: SessionState.Queued) =>
      q.presented && q.client !== undefined
        ? ClientCalls.access(
          q.client,
          (op, toolCallId) =>
            Effect.map(
              question(q.turn, (requestId) => ({ type: "client_call", data: { requestId, ...(toolCallId !== undefined ? { toolCallId } : {}), op } })),
              (answer) => answer ?? { outcome: "error" as const, message: "the client that presented the turn is gone" }
            ),
          (id, terminalId) => journal.ephemeral(q.turn, { type: "tool_terminal", data: { id, terminalId } })
        )
        : undefined

    // Not synced here: the next turn's end or the session's close syncs it, and the session answers
    // sooner. Refused, they are logged first thing once the store takes writes again.
    if (deps.startEvents !== undefined) yield* journal.soon(deps.startEvents)

    // ---- commands and skills ---------------------------------------------------------

    /**
     * The skills and commands as last read, and a read that refreshes them. A prompt that may
     * name a command (it starts with `/`) waits for a fresh read; any other takes them as of the
     * last read started. They are read again in the background when a turn ends (at most once a
     * second), not when a prompt comes, so that no read starts between a prompt and its first
     * token; a skill file written during a turn is in the next prompt's catalog when the read
     * before is a second old (a prompt that comes while that read runs waits for it). The first
     * read starts with the session.
     */
    const extensionsOf = Latest.make(deps.extensions ?? Effect.succeed(SessionCommands.noExtensions), { everyMs: 1_000, scope })
    if (deps.extensions !== undefined) yield* extensionsOf.refresh

    const commands: SessionCommands.Env = {
      cwd: info.cwd,
      additionalDirectories: info.additionalDirectories,
      services: deps.services,
      record: (turn, body) => journal.canonical(turn, body),
      readLog: deps.readLog,
      checkpoints,
      reach
    }

    const turnEnv: SessionTurn.Env = {
      info,
      deps,
      history,
      journal,
      actor,
      background,
      commands,
      extensions: {
        fresh: extensionsOf.fresh,
        forContent: (content: ReadonlyArray<UserBlock>) => (Commands.mayName(content) ? extensionsOf.fresh : extensionsOf.known),
        refresh: extensionsOf.refresh
      },
      system,
      questionsFor,
      permissionFor,
      clientFor,
      checkpointFor,
      record,
      contextWindow,
      reach,
      logProblem
    }

    // ---- the protocol ----------------------------------------------------------------

    const closedError = () => SessionState.closedError(actor.state())

    const submit = (content: ReadonlyArray<UserBlock>, options?: Omit<Extract<SessionState.Message, { _tag: "Submit" }>, "_tag" | "content" | "reply">) =>
      Effect.map(actor.request((reply) => ({ _tag: "Submit", content, presented: false, ...options, reply })), (result) => result.turn!)

    const setConfig = (id: string, value: string): Effect.Effect<void, SessionError> => Effect.asVoid(actor.request((reply) => ({ _tag: "Configure", change: { id, value }, reply })))

    const subscription = Effect.flatMap(deps.bus.subscribe(info.id), (sub) => (sub === undefined ? Effect.fail(closedError()) : Effect.succeed(sub)))

    /** Submits `content` and streams its turn (a turn nobody presents when `unattended`). */
    const turn: Session["turn"] = (content, options) =>
      Stream.unwrap(Effect.gen(function*() {
        // A prompt sent again (the same key): the turn it started, not a new one.
        const earlier = options?.key === undefined ? undefined : history.keys.get(options.key)
        if (earlier !== undefined) {
          let found: number | null | undefined
          return session.subscribe(earlier - 1).pipe(
            Stream.filter((event) => {
              if (found === undefined && event.seq === earlier && event.type === "turn_start") found = event.turn
              return found !== undefined && event.turn === found
            }),
            Stream.takeUntil((event) => event.type === "turn_end")
          )
        }
        // Subscribed before the prompt is submitted: nothing of the turn can be missed.
        const sub = yield* subscription
        const number = yield* submit(content, {
          presented: options?.unattended !== true,
          client: options?.client,
          by: options?.by,
          ...(options?.key !== undefined ? { key: options.key } : {}),
          ...(options?.traceparent !== undefined ? { traceparent: options.traceparent } : {})
        })
        // However the stream ends, its presenter lets go of the turn (the next one may start).
        yield* Effect.addFinalizer(() => actor.send({ _tag: "Released", turn: number }))
        return TurnEnd.events(sub, number, () => actor.state().closedWith)
      }))

    const session: Session = {
      ...info,
      history,
      turn,
      send: (command: Command): Effect.Effect<SendResult, SessionError> => {
        switch (command._tag) {
          case "Prompt":
            return Effect.map(submit(command.content), (turn) => ({ turn }))
          case "Cancel":
            return Effect.as(session.cancel, {})
          case "SetMode":
            return Effect.as(setConfig("mode", command.mode), {})
          case "SetConfig":
            return Effect.as(setConfig(command.id, command.value), {})
          case "Steer":
            return actor.request((reply) => ({ _tag: "Steer", content: command.content, reply }))
          case "Answer":
            return Effect.as(session.answer(command.requestId, command.answer), {})
          case "Close":
            return Effect.as(deps.close(), {})
        }
      },
      // A turn nobody presents, folded to its end: its outcome is what its `turn_end` says.
      prompt: (content) =>
        Stream.runFold(turn(content, { unattended: true }), (): TurnOutcome => ({ stopReason: "cancelled" }), (last, event) => outcomeOf(event) ?? last),
      cancel: actor.send({ _tag: "Cancel" }),
      setMode: (mode) => setConfig("mode", mode),
      setConfig,
      answer: (requestId, answer) =>
        Effect.suspend(() => {
          const reply = Deferred.makeUnsafe<SendResult, SessionError>()
          return Effect.andThen(actor.now({ _tag: "Answer", requestId, answer, reply }), Effect.asVoid(Deferred.await(reply)))
        }),
      settings: Effect.sync(() => {
        const model = currentModel()
        const effort = settings().config.get("thought_level")
        const usage = actor.state().shown
        return {
          mode: reach().mode,
          ...(model !== undefined ? { model } : {}),
          ...(effort !== undefined ? { effort } : {}),
          ...(usage !== undefined ? { usage } : {})
        }
      }),
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
      idleSince: () => {
        const state = actor.state()
        return SessionState.resting(state) ? state.idleSince : undefined
      }
    }
    return session
  }).pipe(
    // What the session logs names the session, not the request that opened it (its fibers,
    // forked from here, would carry that request's annotations for their whole life).
    Effect.provideService(References.CurrentLogAnnotations, { session: info.id })
  )
