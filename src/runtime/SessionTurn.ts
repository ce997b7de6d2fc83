/**
 * One turn of a session under supervision. The supervisor logs `turn_start`, runs the loop as
 * an interruptible child, and — whatever happens to the loop (end, failure, defect, cancel,
 * shutdown) — stops the turn's children, finalizes open tool calls, logs `turn_end` and syncs
 * the log, then tells the session's mailbox the turn is done. A defect in a turn is a failed
 * turn for this session only. A turn's end the log refused is kept by the journal; its
 * presenter is told at once (`turn_aborted`).
 */
import * as os from "node:os"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import type { CanonicalBody } from "../log/Event.ts"
import type * as History from "../log/History.ts"
import type { LogError } from "../log/LogError.ts"
import type { ClientAccess } from "../session/ClientCalls.ts"
import type { SessionInfo, TurnOutcome } from "../session/Protocol.ts"
import * as TurnContract from "../session/TurnContract.ts"
import * as Skills from "../skills/Skills.ts"
import type * as Ceiling from "../tools/Ceiling.ts"
import type * as Edges from "../tools/Edges.ts"
import * as Background from "../tools/process/Background.ts"
import type { ToolEnv } from "../tools/Tool.ts"
import type { Toolkit } from "../tools/Toolkit.ts"
import * as Toolkits from "../tools/Toolkit.ts"
import * as Spans from "../telemetry/Spans.ts"
import * as Children from "./Children.ts"
import type * as Journal from "./Journal.ts"
import type { Actor } from "./SessionActor.ts"
import * as SessionCommands from "./SessionCommands.ts"
import * as TurnServices from "./TurnServices.ts"
import type { Deps } from "./SessionDeps.ts"
import * as SessionState from "./SessionState.ts"
import * as Turn from "./Turn.ts"
import * as TurnEnd from "./TurnEnd.ts"

/** What a turn uses of its session. */
export interface Env {
  readonly info: SessionInfo
  readonly deps: Deps
  readonly history: History.History
  readonly journal: Journal.Journal
  readonly actor: Actor
  readonly background: Background.Shells
  readonly commands: SessionCommands.Env
  /** The skills and commands for a prompt (`fresh`: read now; otherwise as last read). */
  readonly extensions: {
    readonly fresh: Effect.Effect<SessionCommands.Extensions>
    readonly forContent: (content: TurnContract.TurnContext["content"]) => Effect.Effect<SessionCommands.Extensions>
    /** Reads them again in the background (at most once a second), for the next prompt. */
    readonly refresh: Effect.Effect<void>
  }
  /** The system prompt for a turn offered `toolkit`. */
  readonly system: (toolkit: Toolkit) => Effect.Effect<string>
  /** Whoever presents a turn, as its `Questions`. */
  readonly questionsFor: (turn: number) => TurnContract.Questions["Service"]
  /** The permission gate of a turn, asking its `Questions`. */
  readonly permissionFor: (turn: number) => Effect.Effect<TurnContract.Permission["Service"], never, TurnContract.Questions>
  readonly clientFor: (q: SessionState.Queued) => ClientAccess | undefined
  readonly checkpointFor: (turn: number) => Effect.Effect<unknown>
  /** Logs an event of a turn, and what follows it (the usage it reports). */
  readonly record: (turn: number, body: CanonicalBody, committed?: () => void) => Effect.Effect<void, LogError>
  readonly contextWindow: () => number | undefined
  readonly reach: () => Ceiling.Ceiling
  readonly logProblem: (what: string) => (cause: Cause.Cause<unknown>) => Effect.Effect<void>
}

/** The context a turn's loop runs with. */
const contextOf = (env: Env, q: SessionState.Queued, resolved: SessionCommands.Resolved, extensions: SessionCommands.Extensions, state: TurnContract.TurnState, agents: TurnContract.TurnAgents | undefined) =>
  Effect.gen(function*() {
    const { deps, info } = env
    const emit: TurnContract.Emit = {
      // A logged model response is no longer partial: cleared in the same step, so a cancel
      // right after it cannot log it twice.
      canonical: (body) => env.record(q.turn, body, body.type === "model_response" ? () => void (state.partial = undefined) : undefined),
      ephemeral: (body) => env.journal.ephemeral(q.turn, body)
    }
    const window = env.contextWindow()
    const listed = Skills.catalog(extensions.skills, Skills.budget(window)).text
    // Without a skill the model may load, the `skill` tool is not offered.
    const toolkit = extensions.skills.some((s) => s.modelInvocable) ? deps.toolkit : Toolkits.only(deps.toolkit, (name) => name !== "skill")
    const system = yield* env.system(toolkit)
    const settings = env.actor.state()
    const ctx: TurnContract.TurnContext = {
      sessionId: info.id,
      turn: q.turn,
      content: resolved.content,
      cwd: info.cwd,
      roots: [info.cwd, ...info.additionalDirectories],
      system: listed.length > 0 ? `${system}\n\n${listed}` : system,
      model: SessionState.model(settings),
      reasoningEffort: settings.settings.config.get("thought_level"),
      provider: deps.provider,
      toolkit,
      history: env.history,
      maxTurnRequests: deps.maxTurnRequests,
      emit,
      state,
      notices: deps.notices,
      agent: deps.agent,
      agents,
      readRoots: Skills.readableFolders(extensions.skills, deps.userHome ?? os.homedir()),
      window,
      compactAt: deps.compactAt,
      hooks: deps.hooks === undefined
        ? undefined
        : yield* Effect.provideContext(deps.hooks({ turn: q.turn, mode: () => env.reach().mode, record: emit.canonical }), deps.services),
      steering: (final) => {
        const taken = env.actor.nowSync({ _tag: "TakeSteering", turn: q.turn, final })
        return taken.flatMap((output) => (output._tag === "Steered" ? output.items : []))
      }
    }
    return ctx
  })

/** What the turn runs: a local command, an external agent's turn, or the model/tool loop. */
const workOf = (env: Env, ctx: TurnContract.TurnContext, resolved: SessionCommands.Resolved): Effect.Effect<TurnOutcome, unknown, ToolEnv | Edges.Services | TurnContract.Permission | TurnContract.Questions> => {
  const local = resolved.command?.local === true ? resolved.command : undefined
  switch (local?.name) {
    case "compact":
      return Turn.compactNow(ctx, local.arguments)
    case "undo":
      return SessionCommands.undo(env.commands, ctx.turn)
    case "rewind":
      return SessionCommands.rewind(env.commands, ctx.turn, local.arguments)
    default:
      return env.deps.runTurn !== undefined ? env.deps.runTurn(ctx) : Turn.run(ctx)
  }
}

/** Runs one turn under supervision; always ends with `turn_end`, then tells the mailbox. */
export const supervise = (env: Env, q: SessionState.Queued, cancelled: boolean): Effect.Effect<void> => {
  const { deps, info } = env
  let interrupted = true
  return Effect.uninterruptibleMask((restore) =>
    Effect.gen(function*() {
      const state: TurnContract.TurnState = { partial: undefined, call: 0, requested: new Map() }
      // The turn's own edges: whoever presents it, asked its questions, and the permission gate that asks them.
      const questions = env.questionsFor(q.turn)
      const permission = yield* Effect.provideService(env.permissionFor(q.turn), TurnContract.Questions, questions)
      const edges = Context.make(TurnContract.Questions, questions).pipe(Context.add(TurnContract.Permission, permission))
      // A folder's own definitions load once it is trusted: the question comes before they are read.
      const trusted = q.presented && deps.trustQuestion !== undefined && (yield* Effect.provideContext(deps.trustQuestion, edges))
      // Its MCP servers too: started now, and awaited (at most their start-up timeout) so this turn's model sees their tools.
      const late = deps.projectMcp === undefined ? undefined : yield* deps.projectMcp
      if (late !== undefined) yield* Effect.andThen(env.journal.soon(late.events), Effect.exit(restore(late.ready)))
      const extensions = yield* (trusted ? env.extensions.fresh : env.extensions.forContent(q.content))
      const resolved = yield* SessionCommands.resolve(env.commands, q.content, extensions)
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
        env.record(q.turn, start, () => void (startLogged = true)).pipe(
          Effect.andThen(resolved.activation === undefined ? Effect.void : env.record(q.turn, { type: "skill_activation", data: resolved.activation })),
          Effect.andThen(resolved.notice === undefined ? Effect.void : env.record(q.turn, { type: "notice", data: { text: resolved.notice, source: "command" } }))
        )
      )
      let exit: Exit.Exit<TurnOutcome, unknown>
      let children: Children.Children | undefined
      if (Exit.isFailure(started)) {
        exit = Exit.failCause(started.cause)
      } else if (cancelled || env.actor.state().closed) {
        exit = Exit.interrupt()
      } else {
        children = deps.children === undefined ? undefined : yield* Children.make({
          parentId: info.id,
          cwd: info.cwd,
          additionalDirectories: info.additionalDirectories,
          factory: deps.children,
          record: (body) => Effect.catchCause(env.record(q.turn, body), env.logProblem(`could not log a ${body.type} event`)),
          forward: (event) => env.journal.ephemeral(q.turn, { type: "child_event", data: { event } }),
          presented: q.presented,
          client: q.client,
          ceiling: env.reach,
          rules: () => env.history.rules,
          checkpoint: env.checkpointFor(q.turn)
        }).pipe(Effect.provideContext(edges), Effect.provideContext(deps.services))
        const ctx = yield* contextOf(env, q, resolved, extensions, state, children)
        // What the turn's tools use, decided once for the turn: the client's files and terminal or Skein's, the sandbox.
        const services = TurnServices.make({
          emit: TurnServices.emitOf(ctx.emit),
          client: env.clientFor(q),
          sandbox: deps.sandbox,
          agents: children,
          skills: SessionCommands.skillsFor(env.commands, q.turn, extensions)
        }).pipe(Context.merge(edges))
        const work = workOf(env, ctx, resolved).pipe(
          Effect.provideContext(services),
          Effect.provideContext(deps.services),
          Effect.provideService(Background.Current, env.background)
        )
        const fiber = yield* Effect.forkChild(restore(work))
        // A cancel that came while the loop was being started interrupts it now.
        yield* env.actor.now({ _tag: "Looping", turn: q.turn, loop: fiber })
        const awaited = yield* Effect.exit(restore(Fiber.await(fiber)))
        if (Exit.isFailure(awaited)) yield* Fiber.interrupt(fiber)
        exit = yield* Fiber.await(fiber)
      }
      interrupted = Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)
      // Every child is stopped and closed (and logged so) before the turn ends.
      if (children !== undefined) yield* children.shutdown
      // What the turn (and its children) left, to tell later changes by someone else from its own.
      if (env.commands.checkpoints !== undefined) yield* env.commands.checkpoints.after(q.turn)
      yield* Spans.turnEnded(yield* finalize(env, q, state, exit, startLogged ? undefined : start))
    }).pipe(Spans.turn({ sessionId: info.id, turn: q.turn, agent: deps.agent, parentSessionId: info.parent?.sessionId, traceparent: q.traceparent }))
  ).pipe(
    // Skills and commands are read again once the turn is over (started before the next turn
    // may start, which waits for it): never between a prompt and its first token.
    Effect.ensuring(env.extensions.refresh),
    Effect.ensuring(Effect.flatMap(Clock.currentTimeMillis, (at) => env.actor.send({ _tag: "TurnDone", turn: q.turn, interrupted, at })))
  )
}

/**
 * Logs what the loop left open, then `turn_end`, then syncs (`start`: the turn's `turn_start`,
 * when it was never logged). When the log refuses them, the turn's presenter is told so
 * (`turn_aborted`). Never fails; gives the outcome the turn's span reports: a turn whose end the
 * log refused counts as failed, unless it was cancelled.
 */
const finalize = (env: Env, q: SessionState.Queued, state: TurnContract.TurnState, exit: Exit.Exit<TurnOutcome, unknown>, start: CanonicalBody | undefined) =>
  Effect.gen(function*() {
    const outcome = TurnEnd.outcomeOf(exit)
    if (Exit.isFailure(exit) && !Cause.hasInterruptsOnly(exit.cause)) yield* env.logProblem(`turn ${q.turn} failed`)(exit.cause)
    const refused = TurnEnd.refusedBy(exit)
    const bodies = TurnEnd.closing(env.history, state, outcome, refused !== undefined)
    state.partial = undefined
    state.compaction = undefined
    // A turn_start the store refused is written with its end (an invalid one never is).
    const ending = yield* env.journal.end(q.turn, bodies, refused !== undefined ? start : undefined)
    if (ending._tag === "Logged") return outcome
    yield* env.logProblem(`could not log the end of turn ${q.turn}`)(Cause.fail(ending.error))
    const failure = TurnEnd.refusal(ending.error, ending._tag === "Lost" ? "This turn's end could not be saved" : "This turn stopped, and its end is not saved yet")
    yield* env.journal.ephemeral(q.turn, { type: "turn_aborted", data: { stopReason: outcome.stopReason, error: failure.message } })
    if (ending._tag === "Lost") yield* env.actor.lose(TurnEnd.refusal(ending.error, "This session was closed"))
    return outcome.stopReason === "cancelled" ? outcome : { stopReason: "end_turn" as const, error: "its end was not logged" }
  })
