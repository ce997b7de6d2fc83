/**
 * Re-running a logged session: every prompt again, turn by turn, in a fresh
 * session whose model calls are answered from the log (the replay provider)
 * while the tools run for real. Then each turn's tool results are compared
 * with the logged ones. This is how a user checks that a new Skein version,
 * or a changed repository, still behaves the same.
 *
 * Fidelity rules:
 * - The mode is the logged one at each turn's start, and permission questions
 *   get the logged answers, so a call the user refused is refused again (never
 *   run); a question the log has no answer for is denied.
 * - A turn that was cancelled (or cut by a crash) is cancelled at the same
 *   point: at the logged cancel point of a model call, or as the interrupted
 *   tool call starts.
 * - Tools run in `cwd` (default: the logged cwd); paths under it are compared
 *   as if they were under the logged cwd.
 * - The re-run writes its own log in `home`; the original is never touched.
 * - Hooks are not run again: each point of a turn gets the decisions its hooks logged there
 *   (`hook` events), and a point the log has none for fires none.
 * - The session's MCP servers (as recorded beside its log) are started again, and the first
 *   turn waits until each is ready or has failed, so that their tools are there as they were.
 */
import type { Settings as SandboxSettings } from "../sandbox/Settings.ts"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import type { Canonical, LogHeader, SessionEvent } from "../log/Event.ts"
import type { Provider } from "../providers/Provider.ts"
import { SessionLog } from "../log/SessionLog.ts"
import * as Replay from "../providers/Replay.ts"
import type { Toolkit } from "../tools/Toolkit.ts"
import * as Toolkits from "../tools/Toolkit.ts"
import { VERSION } from "../version.ts"
import { Bus } from "./Bus.ts"
import type { Session } from "../session/Protocol.ts"
import { Config } from "./Config.ts"
import { isModeId, type McpServer, type ModeId, type PermissionAsked } from "../Vocabulary.ts"
import * as Compare from "./RerunCompare.ts"
import * as Hooks from "../hooks/Hooks.ts"
import { Runtime } from "./Api.ts"
import { layer as RuntimeLayer } from "./Runtime.ts"

export interface Options {
  /** The logged session: its header and events. */
  readonly header: LogHeader
  readonly events: ReadonlyArray<Canonical>
  /** Where the tools run (default: the logged cwd). */
  readonly cwd?: string | undefined
  /** The home the re-run's own session log is written in. */
  readonly home: string
  /** The tools (default: the built-in toolkit). */
  readonly toolkit?: Toolkit | undefined
  /** The session's MCP servers, started for the re-run (none by default). */
  readonly mcpServers?: ReadonlyArray<McpServer> | undefined
  /** The logs of its children (subagents) and of theirs, by session id: they are re-run too. */
  readonly children?: ReadonlyMap<string, { readonly header: LogHeader; readonly events: ReadonlyArray<Canonical> }> | undefined
  /** The sandbox its commands run in (none by default). */
  readonly sandbox?: SandboxSettings | undefined
}

/** The children a log started, in order: id, agent, first prompt, the turn that started them. */
const spawnedBy = (events: ReadonlyArray<Canonical>) =>
  events.flatMap((event) =>
    event.type === "subagent" && event.data.event === "spawned"
      ? [{ id: event.data.id, agent: event.data.agent ?? "general", task: event.data.task ?? "", turn: event.turn ?? 0 }]
      : []
  )

const firstPrompt = (request: { readonly messages: ReadonlyArray<{ readonly role: string; readonly content?: unknown }> }) => {
  const first = request.messages.find((m) => m.role === "user")
  const content = (first?.content ?? []) as ReadonlyArray<{ readonly type: string; readonly text?: string }>
  return content.map((block) => block.text ?? "").join("\n")
}

/** How long the re-run waits for MCP servers to be ready (or to fail) before its first turn. */
export const MCP_READY_TIMEOUT_MS = 30_000

const allowAnswers: ReadonlySet<string> = new Set(["allow_once", "allow_always", "reject_once", "reject_always"])

/**
 * Tool call ids the log shows were stopped by a cancel or a crash (an
 * "interrupted" result, or no result at all): the re-run cancels as they start.
 */
const interruptedCalls = (events: ReadonlyArray<Canonical>): Set<string> => {
  const unanswered = new Set<string>()
  const out = new Set<string>()
  for (const event of events) {
    if (event.type === "tool_call") unanswered.add(event.data.id)
    if (event.type === "tool_result" && unanswered.delete(event.data.id) && Compare.isInterrupted(event.data)) out.add(event.data.id)
  }
  for (const id of unanswered) out.add(id)
  return out
}

/** The mode in force as each logged turn started, by turn number. */
const modesAtTurns = (header: LogHeader, events: ReadonlyArray<Canonical>): Map<number, string> => {
  let mode = header.mode ?? "default"
  const out = new Map<number, string>()
  for (const event of events) {
    if (event.type === "mode_changed") mode = event.data.mode
    if (event.type === "turn_start" && event.turn !== null) out.set(event.turn, mode)
  }
  return out
}

/** Re-runs a logged session and compares its tool results with the log's. */
export const run = (options: Options) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const { header, events } = options
    const cwd = options.cwd ?? header.cwd
    const turns = Replay.turnsOf(events)
    const permissions = new Map<string, string>()
    for (const event of events) if (event.type === "permission") permissions.set(event.data.toolCallId, event.data.outcome)
    const interrupted = interruptedCalls(events)
    const modes = modesAtTurns(header, events)

    let current: Session | undefined
    let runtime: Runtime["Service"] | undefined
    const cancel = Effect.suspend(() => current?.cancel ?? Effect.void)
    const parentProvider = Replay.make(events, { onCancelPoint: () => cancel })
    // Each child of the re-run answers from the logged child it stands for: the one of the same
    // agent whose task is its first prompt (children start in the logged order; parallel ones
    // ask their first model call in any order, so the task, not the order, tells them apart).
    const children = options.children ?? new Map()
    const logged = [...children.entries()].map(([id, log]) => ({ id, agent: log.header.agent ?? "general", log }))
    const standsFor = new Map<string, string>()
    const providers = new Map<string, Provider>()
    /** The replay of the session a request or a call point belongs to: the parent's, or its child's. */
    const replayOf = (sessionId: string): Provider | undefined =>
      current === undefined || sessionId === current.id ? parentProvider : providers.get(sessionId)
    const provider: Provider = {
      name: parentProvider.name,
      // Compactions and steering happen where the log has them, measured against the logged window.
      ...(parentProvider.contextWindow !== undefined ? { contextWindow: parentProvider.contextWindow } : {}),
      compactionDue: (at) => replayOf(at.sessionId)?.compactionDue?.(at) ?? false,
      injected: (at) => replayOf(at.sessionId)?.injected?.(at) ?? [],
      stream: (request) =>
        Stream.suspend(() => {
          if (current === undefined || request.sessionId === current.id) return parentProvider.stream(request)
          let routed = providers.get(request.sessionId)
          if (routed === undefined) {
            const prompt = firstPrompt(request)
            const taken = new Set(standsFor.values())
            const match = logged.find((c) =>
              !taken.has(c.id) && c.agent === (request.agent ?? "general") &&
              c.log.events.some((e: Canonical) => e.type === "turn_start" && e.data.content.map((b) => (b.type === "text" ? b.text : "")).join("\n") === prompt)
            )
            if (match === undefined) {
              return Stream.succeed({ _tag: "Failure", message: "The log has no child of this agent with this task", retryable: false } as const)
            }
            standsFor.set(request.sessionId, match.id)
            const childId = request.sessionId
            routed = Replay.make(match.log.events, {
              onCancelPoint: () => Effect.suspend(() => (runtime === undefined ? Effect.void : Effect.ignore(Effect.flatMap(runtime.getSession(childId), (s) => s.cancel))))
            })
            providers.set(request.sessionId, routed)
          }
          return routed.stream(request)
        })
    }
    // Permission answers by session (the logged child's) and tool call.
    const childPermissions = new Map<string, string>()
    for (const [id, log] of children) {
      for (const event of log.events) if (event.type === "permission") childPermissions.set(`${id}/${event.data.toolCallId}`, event.data.outcome)
    }
    const base = options.toolkit ?? Toolkits.builtin()
    const toolkit = Toolkits.make(base.tools.map((tool) => ({
      ...tool,
      execute: (args: unknown, ctx: Parameters<typeof tool.execute>[1]) =>
        interrupted.has(ctx.toolCallId) ? Effect.andThen(cancel, Effect.never) : tool.execute(args, ctx)
    })))
    /** The log's answer to a permission question: the same option, or a denial. */
    const answer = (session: Session, asked: PermissionAsked) => {
      const id = asked.toolCall.toolCallId
      // The log shows the turn was cut short while this call was waiting: cut it there again.
      if (interrupted.has(id)) return cancel
      const logged = permissions.get(id)
      return Effect.ignore(session.answer(
        asked.requestId,
        logged !== undefined && allowAnswers.has(logged) ? { outcome: "selected", optionId: logged } : { outcome: "cancelled" }
      ))
    }
    // Hooks answer as the log says (the parent's, and each child's as its logged child's did).
    const parentHooks = Hooks.logged(events)
    const childHooks = new Map<string, Hooks.Fire>()
    const hookReplay = (sessionId: string): Hooks.Fire => {
      if (current === undefined || sessionId === current.id) return parentHooks
      const original = standsFor.get(sessionId)
      if (original === undefined) return () => Effect.succeed([])
      let fire = childHooks.get(original)
      if (fire === undefined) childHooks.set(original, fire = Hooks.logged(children.get(original)?.events ?? []))
      return fire
    }
    // A turn the log stopped at the cap stops there again; otherwise the log says when to stop.
    const capped = turns.filter((t) => t.stopReason === "max_turn_requests").map((t) => t.calls.size)
    const maxTurnRequests = capped.length > 0 ? Math.max(...capped) : 10_000
    const initialMode: ModeId = header.mode !== undefined && isModeId(header.mode) ? header.mode : "default"

    // Fresh: inside a program that already built Skein's layers, the shared ones would be reused.
    const layer = Layer.fresh(RuntimeLayer).pipe(
      Layer.provideMerge(Layer.fresh(Bus.layer)),
      Layer.provide(SessionLog.layer({ home: options.home })),
      Layer.provide(Config.layer({
        home: options.home,
        provider,
        model: undefined,
        maxTurnRequests,
        defaultMode: initialMode,
        permissionTimeoutMs: 24 * 60 * 60 * 1000,
        toolkit,
        version: VERSION,
        sandbox: options.sandbox,
        hookReplay
      }))
    )

    const additionalDirectories = yield* Effect.filter(
      header.additionalDirectories ?? [],
      (dir) => fs.stat(dir).pipe(Effect.map((info) => info.type === "Directory"), Effect.orElseSucceed(() => false))
    )

    /** A child's question, answered as its logged child answered it (a denial when the log has none). */
    const answerChild = (childId: string, asked: PermissionAsked) =>
      Effect.gen(function*() {
        if (runtime === undefined) return
        const child = yield* runtime.getSession(childId)
        const logged = childPermissions.get(`${standsFor.get(childId) ?? ""}/${asked.toolCall.toolCallId}`)
        yield* child.answer(
          asked.requestId,
          logged !== undefined && allowAnswers.has(logged) ? { outcome: "selected", optionId: logged } : { outcome: "cancelled" }
        )
      }).pipe(Effect.ignore)

    const rerun = yield* Effect.gen(function*() {
      runtime = yield* Runtime
      const session = yield* runtime.newSession({
        cwd,
        additionalDirectories,
        mode: initialMode,
        ...(options.mcpServers !== undefined ? { mcpServers: options.mcpServers } : {})
      })
      current = session
      // MCP servers start in the background: their tools must be listed before the first turn.
      const connecting = Effect.map(session.mcpServers, (servers) => servers.some((server) => server.state === "connecting"))
      yield* Effect.gen(function*() {
        while (yield* connecting) yield* Effect.sleep(20)
      }).pipe(Effect.timeoutOption(MCP_READY_TIMEOUT_MS))
      for (const turn of turns) {
        const mode = modes.get(turn.turn)
        if (mode !== undefined && mode !== (yield* session.settings).mode) yield* Effect.ignore(session.setMode(mode))
        // The re-run presents each turn, answering its questions (its children's too) as the log did.
        const onEvent = (event: SessionEvent): Effect.Effect<void> => {
          if (event.type === "permission_asked") return event.sessionId === session.id ? answer(session, event.data) : answerChild(event.sessionId, event.data)
          if (event.type === "child_event") return onEvent(event.data.event as SessionEvent)
          return Effect.void
        }
        yield* session.turn(turn.content).pipe(Stream.runForEach(onEvent))
      }
      const record = yield* runtime.readSession(session.id)
      // Every child the re-run started, read back (they are closed with their parent's turn).
      const rerunChildren = new Map<string, ReadonlyArray<Canonical>>()
      for (const [rerunId, originalId] of standsFor) {
        const child = yield* Effect.option(runtime.readSession(rerunId))
        if (child._tag === "Some") rerunChildren.set(originalId, child.value.events)
      }
      yield* runtime.closeSession(session.id)
      return { ...record, rerunChildren, rerunIds: new Map([...standsFor].map(([a, b]) => [b, a])) }
    }).pipe(
      Effect.provide(layer),
      Effect.scoped
    )

    const report = Compare.compare({
      recorded: events,
      rerun: rerun.events,
      recordedCwd: header.cwd,
      rerunCwd: cwd,
      renamed: new Map([...rerun.rerunIds].map(([original, again]) => [again, original]))
    })
    // Each logged child against the re-run's child that stood for it (a child not started again: every turn "not run").
    const childReports: Array<Compare.ChildReport> = []
    const visit = (list: ReadonlyArray<Canonical>) => {
      for (const spawned of spawnedBy(list)) {
        const log = children.get(spawned.id)
        if (log === undefined) continue
        const again = rerun.rerunChildren.get(spawned.id) ?? []
        const compared = Compare.compare({
          recorded: log.events,
          rerun: again,
          recordedCwd: log.header.cwd,
          rerunCwd: cwd,
          renamed: new Map([...rerun.rerunIds].map(([original, rerunId]) => [rerunId, original]))
        })
        childReports.push({
          sessionId: spawned.id,
          rerunSessionId: rerun.rerunIds.get(spawned.id),
          agent: spawned.agent,
          parentTurn: spawned.turn,
          turns: compared.turns,
          diverged: compared.diverged
        })
        visit(log.events)
      }
    }
    visit(events)
    return {
      ...report,
      diverged: report.diverged || childReports.some((c) => c.diverged),
      ...(childReports.length > 0 ? { children: childReports } : {}),
      sessionId: header.id,
      rerunSessionId: rerun.header.id,
      rerunLog: rerun.file
    } satisfies Compare.Report
  })
