/**
 * The children of one turn: the subagents its tool calls start, supervised by the turn.
 *
 * A child is a session of its own (an actor with its own log, tools and permissions) opened by
 * the runtime; its prompts are driven from here, in a scope that belongs to the parent's
 * turn. The driver presents the child's turn for the parent: every event it publishes is
 * published again in the parent's turn (`child_event`), so whoever presents the parent shows
 * the child and answers its questions. The parent's log records what became of each child
 * (`subagent` events), before any of the child's own traffic and after its end.
 *
 * The turn does not end while children run: `settle` waits for them and gives the model their
 * results; `shutdown` (the turn ending in any way, cancel included) cancels the children still
 * working, waits for each to finalize its own turn (a child's children first), and closes
 * them, so that every descendant is logged as stopped before the parent's `turn_end`.
 *
 * A child never goes beyond its parent (`tools/Ceiling.ts`): it starts in the parent's mode
 * with its rules, and its gate reads the parent's ceiling as it is at each decision. What a
 * session that may change nothing cannot start: an external agent (it acts on its own), nor an
 * isolated workspace, whose creation goes through the parent's gate like any change.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Result from "effect/Result"
import * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import * as Definitions from "../agents/Definitions.ts"
import * as Worktree from "../agents/Worktree.ts"
import type { CanonicalBody, PermissionRule, SessionEvent } from "../log/Event.ts"
import type { Capabilities } from "../session/ClientCalls.ts"
import type { Session } from "../session/Protocol.ts"
import type {
  AgentInfo,
  ChildReport,
  SpawnRequest,
  StepReport,
  WorkflowReport,
  WorkflowRequest
} from "../tools/Delegation.ts"
import * as Ceiling from "../tools/Ceiling.ts"
import type { ModeId, StopReason, UserBlock } from "../Vocabulary.ts"
import { admit, type Child, failureText, noChild, report, responseText, succeeded, text, workflowProblem, worktreeCall } from "./ChildReports.ts"
import * as SessionId from "./SessionId.ts"
import { Permission, type TurnAgents } from "../session/TurnContract.ts"
import type { ToolEnv } from "../tools/Tool.ts"
import * as Spans from "../telemetry/Spans.ts"
import * as TraceContext from "../telemetry/TraceContext.ts"

type Limits = Definitions.Limits

/** What a child session is opened with. */
export interface OpenRequest {
  readonly id: string
  readonly parent: { readonly sessionId: string; readonly toolCallId: string; readonly depth: number }
  readonly agent: Definitions.AgentDefinition
  readonly cwd: string
  readonly additionalDirectories: ReadonlyArray<string>
  readonly mode: ModeId
  /** The parent's ceiling as it is now: the child never goes beyond it. */
  readonly above: () => Ceiling.Ceiling
  /** The parent's "always" rules: a child starts with them. */
  readonly rules: ReadonlyArray<PermissionRule>
  /** The limits of the parent's turn (read with its agents, once a turn). */
  readonly limits: Definitions.Limits
  /** In the parent's workspace: the parent's checkpoint, to take before the child's first change. */
  readonly checkpoint?: Effect.Effect<unknown> | undefined
}

/** What the runtime gives a session that may start children. */
export interface Factory {
  /** The session's own depth (0: a top-level session). */
  readonly depth: number
  /** `$SKEIN_HOME` (isolated worktrees live under it). */
  readonly home: string
  /** The agents a child may run as, for a session in `cwd`, and the limits on children. */
  readonly catalog: (cwd: string) => Effect.Effect<{ readonly agents: ReadonlyArray<Definitions.AgentDefinition>; readonly limits: Limits }>
  /** Opens a child session whose scope is `scope`; fails with a message for the model. */
  readonly open: (request: OpenRequest, scope: Scope.Closeable) => Effect.Effect<Session, string>
  /** How many children the session started before this turn (the per-session limit counts them). */
  readonly started: () => number
}

interface Options {
  readonly parentId: string
  readonly cwd: string
  readonly additionalDirectories: ReadonlyArray<string>
  readonly factory: Factory
  /** Logs a `subagent` event in the parent's turn. */
  readonly record: (body: CanonicalBody) => Effect.Effect<void>
  /** Publishes a child's event in the parent's turn. */
  readonly forward: (event: SessionEvent) => Effect.Effect<void>
  /** Whether someone presents the parent's turn (else the children's questions are denied at once). */
  readonly presented: boolean
  readonly client?: Capabilities | undefined
  /** The parent's ceiling as it is now. */
  readonly ceiling: () => Ceiling.Ceiling
  readonly rules: () => ReadonlyArray<PermissionRule>
  /** The parent's checkpoint of its turn: a child in the shared workspace takes it before its first change. */
  readonly checkpoint?: Effect.Effect<unknown> | undefined
}

/** The children of a turn: what the turn uses (the agent tools, `settle`), and what its supervisor needs. */
export interface Children extends TurnAgents {
  /** Stops and closes every child (the turn is ending). Never fails. */
  readonly shutdown: Effect.Effect<void>
}

/** How long a cancelled child may take to finalize before its scope is closed under it. */
const SHUTDOWN_WAIT_MS = 10_000

/**
 * The children of a turn. An isolated workspace is created only once the turn's `Permission`
 * (the parent's gate) allows it.
 */
export const make = (options: Options): Effect.Effect<Children, never, Permission | ToolEnv> =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const permission = yield* Permission
    const environment = yield* Effect.context<ToolEnv>()
    const children = new Map<string, Child>()
    // The agents and limits are read once per turn, at the first use (a turn that spawns 64 reads them once).
    const catalog = yield* Effect.cached(options.factory.catalog(options.cwd))
    const factory: Factory = { ...options.factory, catalog: () => catalog }
    let startedHere = 0
    let closing = false

    const running = () => [...children.values()].filter((child) => child.state === "running")

    const find = (id: string): Effect.Effect<Child, string> => {
      const child = children.get(id)
      return child !== undefined ? Effect.succeed(child) : Effect.fail(noChild(id, [...children.keys()]))
    }

    /** Runs one prompt of a child to its end, presenting it in the parent's turn. */
    const drive = (child: Child, content: ReadonlyArray<UserBlock>) =>
      Effect.gen(function*() {
        let timedOut = false
        let answer: string | undefined
        let outcome: { readonly stopReason: StopReason; readonly error?: string | undefined } | undefined
        const timer = yield* Effect.forkChild(Effect.andThen(
          Effect.sleep(child.timeoutMs),
          Effect.suspend(() => {
            timedOut = true
            return child.session.cancel
          })
        ))
        // The child's turn continues the trace of the tool call that started or prompted it.
        const traceparent = yield* TraceContext.current
        const turn = child.session.turn(content, {
          ...(options.client !== undefined ? { client: options.client } : {}),
          by: `parent:${options.parentId}`,
          ...(options.presented ? {} : { unattended: true }),
          ...(traceparent !== undefined ? { traceparent } : {})
        })
        const exit = yield* Effect.exit(Stream.runForEachArray(turn, (events) => {
          for (const event of events) {
            const said = responseText(event)
            if (said !== undefined && said.length > 0) answer = said
            if (event.type === "turn_end") outcome = { stopReason: event.data.stopReason, error: event.data.error }
          }
          return events.length === 1 ? options.forward(events[0]!) : Effect.forEach(events, options.forward, { discard: true })
        }))
        yield* Fiber.interrupt(timer)
        // A stream that failed (its log refused the turn) is a failed task; one that just ended, a cancelled one.
        const failed = Exit.isFailure(exit) && exit.cause.reasons.some((reason) => reason._tag === "Fail")
        child.stopReason = outcome?.stopReason ?? (failed ? "end_turn" : "cancelled")
        child.answer = answer
        child.error = outcome?.error ?? (Exit.isFailure(exit) ? failureText(exit.cause) : undefined)
        child.state = timedOut
          ? "timed_out"
          : child.stopReason === "cancelled"
          ? "cancelled"
          : child.error !== undefined
          ? "failed"
          : "idle"
        if (timedOut) child.error = `Timed out after ${child.timeoutMs} ms; stopped. What it did so far is in its log.`
        else if (child.state === "cancelled" && child.error === undefined) child.error = "Cancelled before it finished"
        child.reported = false
        yield* options.record({
          type: "subagent",
          data: {
            event: "result",
            id: child.id,
            state: child.state,
            stopReason: child.stopReason,
            ...(child.answer !== undefined ? { answer: child.answer } : {}),
            ...(child.error !== undefined ? { error: child.error } : {})
          }
        })
      }).pipe(Effect.ensuring(Effect.suspend(() => Deferred.succeed(child.done, undefined))))

    const start = (child: Child, content: ReadonlyArray<UserBlock>) =>
      Effect.gen(function*() {
        child.state = "running"
        child.stopReason = undefined
        child.error = undefined
        child.done = Deferred.makeUnsafe<void>()
        child.driver = yield* Effect.forkIn(drive(child, content), scope)
      })

    /** Admits, opens and announces a child (its isolated workspace once the gate allows it), in its span. */
    const open: (request: SpawnRequest) => Effect.Effect<Child, string> = Effect.fn("skein.spawn")(function*(request: SpawnRequest) {
      yield* Spans.spawn(request)
      if (closing) return yield* Effect.fail("The turn is ending; no more children can start")
      const { agents: definitions, limits } = yield* factory.catalog(options.cwd)
      const depth = factory.depth + 1
      const agent = admit({ depth, limits, running: running().length, started: factory.started() + startedHere, definitions, name: request.agent ?? "general" })
      if (typeof agent === "string") return yield* Effect.fail(agent)
      if (agent.acp !== undefined) {
        const refused = Ceiling.refusesExternal(options.ceiling(), agent.name)
        if (refused !== undefined) return yield* Effect.fail(refused)
      }
      const workspace = request.workspace ?? "shared"
      const id = SessionId.make()
      const approve = (plan: Worktree.Plan) =>
        Effect.flatMap(Effect.provideContext(permission.permit(worktreeCall(request.toolCallId, agent.name, plan), Worktree.change, plan), environment), (permit) =>
          permit._tag === "allow" ? Effect.void : Effect.fail(permit.reason))
      const worktree = workspace === "isolated"
        ? yield* Worktree.create({ cwd: options.cwd, id, home: factory.home, approve }).pipe(Effect.mapError((error) => error.message))
        : undefined
      const childScope = yield* Scope.fork(scope)
      const session = yield* factory.open({
        id,
        parent: { sessionId: options.parentId, toolCallId: request.toolCallId, depth },
        agent,
        cwd: worktree?.cwd ?? options.cwd,
        additionalDirectories: worktree !== undefined ? [] : options.additionalDirectories,
        mode: options.ceiling().mode,
        above: options.ceiling,
        rules: options.rules(),
        limits,
        ...(worktree === undefined && options.checkpoint !== undefined ? { checkpoint: options.checkpoint } : {})
      }, childScope).pipe(
        Effect.tapError(() =>
          Effect.andThen(Scope.close(childScope, Exit.void), worktree === undefined ? Effect.void : Effect.ignore(Worktree.remove(worktree)))
        )
      )
      startedHere++
      const child: Child = {
        id,
        agent,
        task: request.task,
        toolCallId: request.toolCallId,
        workspace,
        session,
        scope: childScope,
        worktree,
        timeoutMs: Math.min(request.timeoutMs ?? limits.timeoutMs, limits.timeoutMs),
        state: "running",
        stopReason: undefined,
        answer: undefined,
        error: undefined,
        branch: worktree?.branch,
        diff: undefined,
        reported: true,
        done: Deferred.makeUnsafe<void>(),
        driver: undefined
      }
      children.set(id, child)
      // Announced before any of its traffic.
      yield* options.record({
        type: "subagent",
        data: {
          event: "spawned",
          id,
          toolCallId: request.toolCallId,
          agent: agent.name,
          task: request.task,
          workspace,
          ...(worktree !== undefined ? { branch: worktree.branch } : {})
        }
      })
      return child
    })

    /** Starts a child on its task; its turn is beside the spawn's span, under the tool call that asked for it. */
    const spawn = (request: SpawnRequest): Effect.Effect<ChildReport, string> =>
      Effect.flatMap(open(request), (child) => Effect.map(start(child, text(request.task)), () => report(child)))

    const wait = (ids: ReadonlyArray<string> | undefined, timeoutMs: number | undefined, offset: number | undefined) =>
      Effect.gen(function*() {
        const targets = ids !== undefined && ids.length > 0
          ? yield* Effect.forEach(ids, find)
          : [...children.values()].filter((child) => child.state === "running" || !child.reported)
        if (targets.length === 0 && (ids === undefined || ids.length === 0)) {
          return [...children.values()].map((child) => report(child))
        }
        const all = Effect.forEach(targets, (child) => Deferred.await(child.done), { concurrency: "unbounded", discard: true })
        yield* timeoutMs === undefined ? all : Effect.timeoutOption(all, timeoutMs)
        return targets.map((child) => {
          if (child.state !== "running") child.reported = true
          return report(child, offset ?? 0)
        })
      })

    const send = (id: string, message: string) =>
      Effect.gen(function*() {
        const child = yield* find(id)
        if (child.state === "running") return yield* Effect.fail(`${id} is still working; wait for it first (wait_agent)`)
        if (child.state === "closed") return yield* Effect.fail(`${id} is closed`)
        if (closing) return yield* Effect.fail("The turn is ending; children take no more input")
        // The parent may have become read-only since the child started.
        const refused = child.agent.acp === undefined ? undefined : Ceiling.refusesExternal(options.ceiling(), child.agent.name)
        if (refused !== undefined) return yield* Effect.fail(refused)
        const { limits } = yield* factory.catalog(options.cwd)
        if (running().length >= limits.maxRunning) {
          return yield* Effect.fail(`${limits.maxRunning} children are running already (the limit): wait for some first`)
        }
        child.answer = undefined
        yield* options.record({ type: "subagent", data: { event: "state", id, state: "running" } })
        yield* start(child, text(message))
        return report(child)
      })

    /** Stops a child if it works (waiting for it to finalize), then closes it and its worktree. */
    const closeChild = (child: Child): Effect.Effect<void> =>
      Effect.gen(function*() {
        if (child.state === "closed") return
        if (child.state === "running") {
          yield* child.session.cancel
          yield* Effect.timeoutOption(Deferred.await(child.done), SHUTDOWN_WAIT_MS)
        }
        if (child.driver !== undefined) yield* Fiber.interrupt(child.driver)
        yield* Scope.close(child.scope, Exit.void)
        if (child.worktree !== undefined) {
          const summary = yield* Effect.option(Worktree.summarize(child.worktree))
          if (summary._tag === "Some") child.diff = summary.value.text
          const removed = yield* Effect.option(Worktree.remove(child.worktree))
          if (removed._tag === "Some" && !removed.value.kept) child.branch = undefined
        }
        child.state = "closed"
        yield* options.record({
          type: "subagent",
          data: {
            event: "closed",
            id: child.id,
            state: "closed",
            ...(child.branch !== undefined ? { branch: child.branch } : {}),
            ...(child.diff !== undefined ? { diff: child.diff } : {})
          }
        })
      })

    const close = (id: string) =>
      Effect.gen(function*() {
        const child = yield* find(id)
        yield* closeChild(child)
        child.reported = true
        return report(child)
      })

    const list = Effect.gen(function*() {
      const { agents: definitions } = yield* factory.catalog(options.cwd)
      const agents: ReadonlyArray<AgentInfo> = definitions.map((d) => ({ name: d.name, description: d.description, source: d.source }))
      return { children: [...children.values()].map((child) => report(child)), agents }
    })

    const workflow = (request: WorkflowRequest): Effect.Effect<WorkflowReport, string> =>
      Effect.gen(function*() {
        const steps = request.steps
        const invalid = workflowProblem(steps)
        if (invalid !== undefined) return yield* Effect.fail(invalid)

        const { limits } = yield* factory.catalog(options.cwd)
        const concurrency = Math.max(1, Math.min(request.maxConcurrency ?? limits.maxRunning, limits.maxRunning))
        const slots = yield* Semaphore.make(concurrency)
        const outcomes = new Map(steps.map((s) => [s.id, Deferred.makeUnsafe<StepReport>()] as const))
        let expired = false
        const started: Array<Child> = []
        const deadline = request.timeoutMs === undefined ? undefined : yield* Effect.forkChild(Effect.andThen(
          Effect.sleep(request.timeoutMs),
          Effect.suspend(() => {
            expired = true
            return Effect.forEach(started.filter((c) => c.state === "running"), (c) => c.session.cancel, { discard: true })
          })
        ))

        const runStep = (step: WorkflowRequest["steps"][number]): Effect.Effect<StepReport> =>
          Effect.gen(function*() {
            const deps = yield* Effect.forEach(step.depends_on ?? [], (dep) => Deferred.await(outcomes.get(dep)!))
            const failed = deps.find((d) => d.outcome !== "succeeded")
            if (failed !== undefined) return { step: step.id, outcome: "skipped", reason: `its dependency "${failed.step}" ${failed.outcome}` } satisfies StepReport
            return yield* slots.withPermits(1)(Effect.gen(function*() {
              if (expired) return { step: step.id, outcome: "skipped", reason: "the workflow's time ran out first" } satisfies StepReport
              const context = deps
                .map((d) => `## Result of step "${d.step}"\n\n${d.child?.answer ?? ""}`)
                .join("\n\n")
              const task = deps.length === 0 ? step.task : `${step.task}\n\n# Results of the steps this one builds on\n\n${context}`
              const spawned = yield* Effect.result(spawn({ task, agent: step.agent, workspace: step.workspace, toolCallId: request.toolCallId }))
              if (Result.isFailure(spawned)) return { step: step.id, outcome: "failed", reason: spawned.failure } satisfies StepReport
              const child = children.get(spawned.success.id)!
              started.push(child)
              yield* Deferred.await(child.done)
              child.reported = true
              const state = expired && child.state === "cancelled" ? "timed_out" : child.state
              if (state !== child.state) {
                child.state = state
                child.error = "The workflow's time ran out; stopped."
              }
              const childReport = report(child)
              return succeeded(child)
                ? { step: step.id, outcome: "succeeded", child: childReport } satisfies StepReport
                : { step: step.id, outcome: "failed", child: childReport, reason: child.error ?? `it stopped: ${child.stopReason}` } satisfies StepReport
            }))
          }).pipe(Effect.tap((r) => Deferred.succeed(outcomes.get(step.id)!, r)))

        const reports = yield* Effect.forEach(steps, runStep, { concurrency: "unbounded" })
        if (deadline !== undefined) yield* Fiber.interrupt(deadline)
        const good = reports.filter((r) => r.outcome === "succeeded").length
        return { outcome: good === reports.length ? "complete" : good === 0 ? "failed" : "partial", steps: reports } satisfies WorkflowReport
      })

    const settle = Effect.gen(function*() {
      const pending = [...children.values()].filter((child) => child.state === "running" || !child.reported)
      if (pending.length === 0) return undefined
      yield* Effect.forEach(pending, (child) => Deferred.await(child.done), { concurrency: "unbounded", discard: true })
      for (const child of pending) child.reported = true
      const text = [
        "Results of your subagents that you had not read (the turn waited for those still working):",
        JSON.stringify({ children: pending.map((child) => report(child)) }, null, 1)
      ].join("\n")
      return { ids: pending.map((child) => child.id), text }
    })

    const shutdown = Effect.suspend(() => {
      closing = true
      return Effect.forEach([...children.values()], closeChild, { concurrency: "unbounded", discard: true })
    }).pipe(
      Effect.andThen(Scope.close(scope, Exit.void)),
      Effect.catchCause((cause) => Effect.logError("could not close a turn's children", cause)),
      Effect.uninterruptible
    )

    return { spawn, wait, send, close, list, workflow, settle, shutdown } satisfies Children
  })
