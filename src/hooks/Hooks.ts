/**
 * Hooks at the points of a turn. A `Fire` runs the hooks of one point and says what each
 * decided: `live` matches the settings' hooks and runs them (at once, in parallel), `logged`
 * answers from a session's log (`skein replay --rerun` never runs a hook again). `forTurn`
 * puts a `Fire` to work in a turn: it logs one `hook` event per hook, then gives the point's
 * decisions as one (`Decision.combine`).
 *
 * The JSON a hook reads on stdin is Claude Code's: `session_id`, `transcript_path` (the
 * session's log), `cwd`, `permission_mode`, `hook_event_name`, and per event `tool_name` and
 * `tool_input` (PreToolUse, PostToolUse, and `tool_response` for the latter), `prompt`
 * (UserPromptSubmit), `stop_hook_active` (Stop), `source` (SessionStart: `startup` for a new
 * session, `resume` for one loaded again). `tool_name` is Claude Code's name for the tool
 * where it has one (`Bash`, `Write`; `Match.hookName`), and `tool_input` has Claude Code's
 * `file_path` beside Skein's `path`.
 */
import * as Effect from "effect/Effect"
import type { Canonical, CanonicalBody } from "../log/Event.ts"
import type { LogError } from "../log/LogError.ts"
import type { SessionSandbox } from "../tools/Sandboxed.ts"
import * as Decision from "./Decision.ts"
import * as Match from "./Match.ts"
import * as Runner from "./Runner.ts"
import type { Hook, HookEvent } from "./Settings.ts"

/** One point of a turn where hooks run. */
export interface Point {
  readonly event: HookEvent
  readonly turn: number
  /** The tool call (tool events): its id, and its name (matched against the matchers). */
  readonly call?: { readonly id: string; readonly name: string } | undefined
  /** SessionStart: `startup` or `resume` (matched against its matchers). */
  readonly source?: string | undefined
  readonly input: Record<string, unknown>
}

export interface Fired {
  readonly command: string
  readonly outcome: Decision.Outcome
}

/** Runs (or answers for) the hooks of one point. Never fails. */
export type Fire = (point: Point) => Effect.Effect<ReadonlyArray<Fired>>

/** Whether `hook` runs at `point`. */
const fires = (hook: Hook, point: Point): boolean => {
  if (hook.event !== point.event) return false
  if (point.call !== undefined) return Match.matches(hook.matcher, Match.namesOf(point.call.name))
  if (point.source !== undefined) return Match.matches(hook.matcher, [point.source])
  // UserPromptSubmit and Stop take no matcher (Claude Code ignores it too).
  return true
}

/** Runs the matching `hooks` for real, in the session's cwd and sandbox. */
export const live = (
  hooks: ReadonlyArray<Hook>,
  where: { readonly cwd: string; readonly projectDir?: string | undefined; readonly sandbox?: SessionSandbox | undefined }
): Fire =>
(point) =>
  Effect.forEach(
    hooks.filter((hook) => fires(hook, point)),
    (hook) =>
      Effect.map(
        Runner.run({ command: hook.command, timeoutMs: hook.timeoutMs, input: point.input, cwd: where.cwd, projectDir: where.projectDir, sandbox: where.sandbox }),
        (raw): Fired => ({ command: hook.command, outcome: Decision.decide(point.event, hook.command, raw) })
      ),
    { concurrency: "unbounded" }
  )

const keyOf = (turn: number | null, event: string, toolCallId: string | undefined) => JSON.stringify([turn, event, toolCallId ?? null])

/**
 * The logged hooks of a session, answering each point as it was answered: the points of the
 * same turn, event and tool call in their logged order (the hook events of one point are
 * consecutive in the log). A point the log has no hooks for fires none. `rename` maps a
 * re-run's tool call ids to the logged ones (they are the same when the model calls are replayed).
 */
export const logged = (events: ReadonlyArray<Canonical>): Fire => {
  const queues = new Map<string, Array<Array<Fired>>>()
  let last: string | undefined
  for (const event of events) {
    if (event.type !== "hook") {
      last = undefined
      continue
    }
    const key = keyOf(event.turn, event.data.event, event.data.toolCallId)
    let queue = queues.get(key)
    if (queue === undefined) queues.set(key, queue = [])
    if (last !== key || queue.length === 0) queue.push([])
    const { command, event: _name, toolCallId: _id, ...outcome } = event.data
    queue.at(-1)!.push({ command, outcome })
    last = key
  }
  return (point) => Effect.sync(() => queues.get(keyOf(point.turn, point.event, point.call?.id))?.shift() ?? [])
}

/** What every hook input carries. */
export interface Base {
  readonly sessionId: string
  readonly transcriptPath: string
  readonly cwd: string
  readonly mode: () => string
}

/** The hooks of one turn, as the turn loop calls them: each logs what ran, and gives the decisions as one (`undefined`: nothing ran). */
export interface TurnHooks {
  readonly sessionStart: (source: "startup" | "resume") => Effect.Effect<Decision.Outcome | undefined, LogError>
  readonly promptSubmit: (prompt: string) => Effect.Effect<Decision.Outcome | undefined, LogError>
  readonly preToolUse: (call: { readonly id: string; readonly name: string; readonly args: unknown }) => Effect.Effect<Decision.Outcome | undefined, LogError>
  readonly postToolUse: (
    call: { readonly id: string; readonly name: string; readonly args: unknown },
    result: { readonly ok: boolean; readonly content: string }
  ) => Effect.Effect<Decision.Outcome | undefined, LogError>
  /** `active`: the model already went on once in this turn because a Stop hook said so. */
  readonly stop: (active: boolean) => Effect.Effect<Decision.Outcome | undefined, LogError>
}

/** Claude Code's `tool_input`: Skein's arguments, and `file_path` beside a `path`. */
const toolInput = (args: unknown): unknown => {
  if (typeof args !== "object" || args === null || Array.isArray(args)) return args
  const path = (args as { readonly path?: unknown }).path
  return typeof path === "string" && !("file_path" in args) ? { ...args, file_path: path } : args
}

export const forTurn = (options: {
  readonly fire: Fire
  readonly turn: number
  readonly base: Base
  readonly record: (body: CanonicalBody) => Effect.Effect<void, LogError>
}): TurnHooks => {
  const at = (event: HookEvent, extra: Record<string, unknown>, more: { readonly call?: Point["call"]; readonly source?: string } = {}) =>
    Effect.gen(function*() {
      const input = {
        session_id: options.base.sessionId,
        transcript_path: options.base.transcriptPath,
        cwd: options.base.cwd,
        permission_mode: options.base.mode(),
        hook_event_name: event,
        ...extra
      }
      const fired = yield* options.fire({ event, turn: options.turn, input, ...more })
      if (fired.length === 0) return undefined
      for (const { command, outcome } of fired) {
        yield* options.record({
          type: "hook",
          data: { event, command, ...(more.call !== undefined ? { toolCallId: more.call.id } : {}), ...outcome }
        })
      }
      return Decision.combine(fired.map((f) => f.outcome))
    })
  return {
    sessionStart: (source) => at("SessionStart", { source }, { source }),
    promptSubmit: (prompt) => at("UserPromptSubmit", { prompt }),
    preToolUse: (call) =>
      at("PreToolUse", { tool_name: Match.hookName(call.name), tool_input: toolInput(call.args), tool_use_id: call.id }, { call }),
    postToolUse: (call, result) =>
      at(
        "PostToolUse",
        { tool_name: Match.hookName(call.name), tool_input: toolInput(call.args), tool_use_id: call.id, tool_response: { success: result.ok, content: result.content } },
        { call }
      ),
    stop: (active) => at("Stop", { stop_hook_active: active })
  }
}
