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
 * - The session's MCP servers (as recorded beside its log) are started again, and the first
 *   turn waits until each is ready or has failed, so that their tools are there as they were.
 */
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import type { Canonical, LogHeader } from "../log/Event.ts"
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
import { layer as RuntimeLayer, Runtime } from "./Runtime.ts"

export type { Difference, Report, TurnReport } from "./RerunCompare.ts"

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
    const cancel = Effect.suspend(() => current?.cancel ?? Effect.void)
    const provider = Replay.make(events, { onCancelPoint: () => cancel })
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
        version: VERSION
      }))
    )

    const additionalDirectories = yield* Effect.filter(
      header.additionalDirectories ?? [],
      (dir) => fs.stat(dir).pipe(Effect.map((info) => info.type === "Directory"), Effect.orElseSucceed(() => false))
    )

    const rerun = yield* Effect.gen(function*() {
      const runtime = yield* Runtime
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
        // The re-run presents each turn, answering its questions as the log did.
        yield* session.turn(turn.content).pipe(
          Stream.runForEach((event) => (event.type === "permission_asked" ? answer(session, event.data) : Effect.void))
        )
      }
      const record = yield* runtime.readSession(session.id)
      yield* runtime.closeSession(session.id)
      return record
    }).pipe(
      Effect.provide(layer),
      Effect.scoped
    )

    const report = Compare.compare({
      recorded: events,
      rerun: rerun.events,
      recordedCwd: header.cwd,
      rerunCwd: cwd
    })
    return { ...report, sessionId: header.id, rerunSessionId: rerun.header.id, rerunLog: rerun.file } satisfies Compare.Report
  })
