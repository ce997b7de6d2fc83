/**
 * The permission gate of a session: applies the pure policy of
 * `tools/Permissions.ts`, asks the presenter when the policy says so, records
 * the answer in the log and remembers "always" answers as rules.
 *
 * A cancelled, malformed, failed or timed-out answer is a denial. Interrupting
 * the turn interrupts the question (the ACP presenter withdraws it with
 * `$/cancel_request`).
 */
import * as Effect from "effect/Effect"
import type { CanonicalBody } from "../log/Event.ts"
import type { History } from "../log/History.ts"
import type { LogError } from "../log/SessionLog.ts"
import * as Confine from "../tools/commands/Confine.ts"
import * as Permissions from "../tools/Permissions.ts"
import type { PermissionToolCall } from "../Vocabulary.ts"
import * as Protected from "../tools/Protected.ts"
import type { Tool, ToolEnv } from "../tools/Tool.ts"
import type { ModeId } from "../Vocabulary.ts"
import type { AnnouncedCall, Permit } from "./Turn.ts"

/** What a presenter is asked: the live tool call (with the change it would make) and the four options. */
export interface PermissionRequest {
  readonly sessionId: string
  readonly toolCall: PermissionToolCall
  readonly options: ReadonlyArray<Permissions.Option>
}

export type PermissionAnswer =
  | { readonly outcome: "selected"; readonly optionId: string }
  | { readonly outcome: "cancelled" }

/** Asks the user. Must not fail; a problem is `cancelled`; `undefined` when nobody is there to answer. */
export type Asker = (request: PermissionRequest) => Effect.Effect<PermissionAnswer | undefined>

export interface Options {
  readonly sessionId: string
  readonly cwd: string
  /** Every directory the session may touch, the cwd first (default: the cwd alone). */
  readonly roots?: ReadonlyArray<string> | undefined
  readonly mode: () => ModeId
  readonly history: History
  readonly ask: Asker
  /** Whether anyone can answer now (nobody presents the turn: calls that need asking are denied at once). */
  readonly canAsk: () => boolean
  readonly timeoutMs: number
  readonly record: (body: CanonicalBody) => Effect.Effect<void, LogError>
  /** A read-only agent (an explorer): nothing that changes anything runs, whatever the mode; read-only commands run confined. */
  readonly readOnly?: boolean | undefined
}

const denied = (reason: string): Permit => ({ _tag: "deny", reason })

/** An id as it may be quoted in a warning: short, and JSON-quoted so nothing in it reads as our own words. */
const quoted = (id: string): string => JSON.stringify(id.length > 64 ? `${id.slice(0, 64)}…` : id)

/**
 * What the policy needs from the file system, looked up only where the mode
 * leaves a question open: whether a command only reads inside the roots, and
 * whether an edit's target is protected.
 */
const facts = Effect.fnUntraced(function*(options: Options, mode: ModeId, call: AnnouncedCall, tool: Tool, command: string | undefined) {
  if (mode === "bypassPermissions" || mode === "plan" || !tool.mutating) return {}
  const roots = options.roots ?? [options.cwd]
  if (command !== undefined) {
    const verdict = yield* Confine.check(command, { cwd: options.cwd, roots, env: process.env })
    return { readOnlyCommand: verdict.ok }
  }
  if (tool.kind !== "edit") return {}
  for (const location of call.locations ?? []) {
    if ((yield* Protected.reason(location.path, roots)) !== undefined) return { protectedEdit: location.path }
  }
  return {}
})

export const make = (options: Options) => (call: AnnouncedCall, tool: Tool, args: unknown): Effect.Effect<Permit, never, ToolEnv> =>
  Effect.gen(function*() {
    const command = tool.kind === "execute" && typeof (args as { command?: unknown }).command === "string"
      ? (args as { command: string }).command
      : undefined
    const mode = options.mode()
    if (options.readOnly === true && tool.mutating) {
      const readOnlyCommand = command !== undefined &&
        (yield* Confine.check(command, { cwd: options.cwd, roots: options.roots ?? [options.cwd], env: process.env })).ok
      return readOnlyCommand
        ? { _tag: "allow", readOnly: true } as Permit
        : denied(`This agent is read-only: ${call.title} was not run. Report what should change instead.`)
    }
    const verdict = Permissions.decide({
      mode,
      rules: options.history.rules,
      tool,
      args,
      cwd: options.cwd,
      command,
      ...(yield* facts(options, mode, call, tool, command))
    })
    if (verdict._tag === "allow") return { _tag: "allow", ...(verdict.readOnly === true ? { readOnly: true } : {}) } as Permit
    if (verdict._tag === "deny") return denied(verdict.reason)
    /** Logs a decision; whether the log took it. */
    const record = (body: CanonicalBody) =>
      options.record(body).pipe(Effect.as(true), Effect.catchCause((cause) => Effect.as(Effect.logError("could not log a permission answer", cause), false)))
    const unanswerable = Effect.as(
      record({ type: "permission", data: { toolCallId: call.id, outcome: "unanswerable" } }),
      denied(`Permission is needed to run ${call.title}, and no one is there to answer. It was not run.`)
    )
    if (!options.canAsk()) return yield* unanswerable
    const choices = Permissions.options(tool, verdict.scope)
    // The change an edit would make, so the user sees it before answering (none if it cannot be worked out).
    const preview = tool.preview === undefined ? [] : yield* tool.preview(args, { cwd: options.cwd, roots: options.roots ?? [options.cwd] })
    const answer = yield* options.ask({
      sessionId: options.sessionId,
      toolCall: {
        toolCallId: call.id,
        title: call.title,
        kind: call.kind,
        status: "pending",
        rawInput: call.args,
        ...(call.locations !== undefined && call.locations.length > 0 ? { locations: call.locations } : {}),
        ...(preview.length > 0 ? { content: preview } : {})
      },
      options: choices
    }).pipe(Effect.timeoutOption(options.timeoutMs))
    // The presenter went away before answering.
    if (answer._tag === "Some" && answer.value === undefined) return yield* unanswerable
    const given = answer._tag === "Some" ? answer.value : undefined
    const offered = choices.find((choice) => given?.outcome === "selected" && choice.optionId === given.optionId)
    if (given?.outcome === "selected" && offered === undefined) {
      yield* Effect.logWarning(
        `The answer to the permission request for ${call.title} chose option ${quoted(given.optionId)}, which was not offered ` +
          `(offered: ${choices.map((choice) => choice.optionId).join(", ")}); it counts as cancelled.`
      )
    }
    const outcome = answer._tag === "None" ? "timeout" as const : offered !== undefined ? offered.kind : "cancelled" as const
    const rule = outcome === "allow_always"
      ? Permissions.ruleFor(tool, verdict.scope, "allow")
      : outcome === "reject_always"
      ? Permissions.ruleFor(tool, verdict.scope, "reject")
      : undefined
    const logged = yield* record({ type: "permission", data: { toolCallId: call.id, outcome, ...(rule !== undefined ? { rule } : {}) } })
    // Nothing runs that the log cannot account for (the store refused the answer).
    if (!logged) return denied(`The answer for ${call.title} could not be written to the session's log, so it was not run.`)
    switch (outcome) {
      case "allow_once":
      case "allow_always":
        return { _tag: "allow" } as Permit
      case "reject_once":
      case "reject_always":
        return denied(`The user denied permission for ${call.title}. It was not run.`)
      case "timeout":
        return denied(`No answer to the permission request for ${call.title} in time; it was not run.`)
      case "cancelled":
        return denied(`The permission request for ${call.title} was cancelled; it was not run.`)
    }
  })
