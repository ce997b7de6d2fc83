/**
 * The permission gate of a session: applies the pure policy of
 * `tools/Permissions.ts` under the session's ceiling (`tools/Ceiling.ts`), asks the
 * presenter when the policy says so (the turn's `Questions`), records the answer in the log and
 * remembers "always" answers as rules. A turn is given it as its `Permission`.
 *
 * The ceiling is read at every decision, so a parent narrowed while its child works
 * (switched to `plan`, say) holds the child from its next call on; a question that was
 * open meanwhile is decided again once answered, so an allowance the ceiling no longer
 * admits is a denial.
 *
 * A cancelled, malformed, failed or timed-out answer is a denial. Interrupting
 * the turn interrupts the question (the ACP presenter withdraws it with
 * `$/cancel_request`).
 */
import * as Effect from "effect/Effect"
import type { CanonicalBody } from "../log/Event.ts"
import type { History } from "../log/History.ts"
import type { LogError } from "../log/LogError.ts"
import * as Ceiling from "../tools/Ceiling.ts"
import * as Confine from "../tools/commands/Confine.ts"
import * as Permissions from "../tools/Permissions.ts"
import * as Protected from "../tools/Protected.ts"
import * as Hosts from "../sandbox/Hosts.ts"
import * as Address from "../tools/web/Address.ts"
import type { ToolEnv } from "../tools/Tool.ts"
import type { ModeId } from "../Vocabulary.ts"
import type { Placement, SessionSandbox } from "../tools/Sandboxed.ts"
import { type AnnouncedCall, type Gated, Permission, type Permit, type Prior, Questions } from "../session/TurnContract.ts"
import * as Spans from "../telemetry/Spans.ts"

interface Options {
  readonly cwd: string
  /** Every directory the session may touch, the cwd first (default: the cwd alone). */
  readonly roots?: ReadonlyArray<string> | undefined
  readonly mode: () => ModeId
  readonly history: History
  readonly timeoutMs: number
  readonly record: (body: CanonicalBody) => Effect.Effect<void, LogError>
  /** A read-only agent (an explorer): nothing that changes anything runs, whatever the mode; read-only commands run confined. */
  readonly readOnly?: boolean | undefined
  /** The parent's ceiling as it is now (a child session): the session never goes beyond it. */
  readonly above?: (() => Ceiling.Ceiling) | undefined
  /** The session's sandbox: where its commands run decides whether they are asked for. */
  readonly sandbox?: SessionSandbox | undefined
}

const denied = (reason: string): Permit => ({ _tag: "deny", reason })

/** An id as it may be quoted in a warning: short, and JSON-quoted so nothing in it reads as our own words. */
const quoted = (id: string): string => JSON.stringify(id.length > 64 ? `${id.slice(0, 64)}…` : id)

/**
 * What the policy needs from the file system, looked up only where the mode
 * leaves a question open: whether a command only reads inside the roots, and
 * whether an edit's target is protected.
 */
const facts = Effect.fnUntraced(function*(options: Options, mode: ModeId, call: AnnouncedCall, tool: Gated, command: string | undefined, placement: Placement | undefined) {
  // Plan mode runs read-only commands only inside the sandbox.
  if (mode === "bypassPermissions" || (mode === "plan" && placement?._tag !== "inside") || !tool.mutating) return {}
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

/** The session's ceiling now, and the rules that hold for it (its own, and its ancestors' rejections). */
const current = (options: Options) => {
  const above = options.above?.()
  const ceiling = Ceiling.under({ mode: options.mode(), readOnly: options.readOnly, rules: options.history.rules }, above)
  const rules = above === undefined || above.rejects.length === 0 ? options.history.rules : [...options.history.rules, ...above.rejects]
  return { ceiling, rules }
}

/** Whether a fetch goes to a host the session's sandbox admits (`sandbox.network.allow`), with the sandbox on. */
const admits = (sandbox: SessionSandbox | undefined, tool: Gated, args: unknown, cwd: string): Effect.Effect<boolean> => {
  const scope = tool.kind === "fetch" && sandbox !== undefined ? tool.scope?.(args, cwd) : undefined
  if (sandbox === undefined || scope?.kind !== "host" || Hosts.admittedBy(sandbox.allow, Address.nameOf(scope.value)) === undefined) return Effect.succeed(false)
  return Effect.map(sandbox.placement(false), (placement) => placement._tag === "inside")
}

/** Said once per session when `auto` finds no sandbox: commands are asked for, as before. */
const fallbackNotice = (reason: string | undefined): string =>
  `Commands run without a sandbox in this session${reason === undefined ? "" : ` (${reason})`}, so each is asked for as before. ` +
  "`skein doctor` shows what the sandbox needs; \"sandbox\": \"off\" in Skein's config.json turns this notice off."

/**
 * The gate's decision on one call. A question goes to the `Questions` of the fiber that asks
 * (whoever presents the turn); nobody there (`canAsk` false), calls that need asking are
 * denied at once.
 */
const decide = (options: Options): (call: AnnouncedCall, tool: Gated, args: unknown, prior?: Prior) => Effect.Effect<Permit, never, ToolEnv | Questions> =>
  Effect.fn("skein.permit")(function*(call: AnnouncedCall, tool: Gated, args: unknown, prior?: Prior) {
    const command = tool.kind === "execute" && typeof (args as { command?: unknown }).command === "string"
      ? (args as { command: string }).command
      : undefined
    const { ceiling, rules } = current(options)
    const requested = command !== undefined ? (args as { sandbox?: unknown; reason?: unknown }) : undefined
    const outsideRequested = requested?.sandbox === false
    const outsideReason = typeof requested?.reason === "string" ? requested.reason : undefined
    const placement = options.sandbox !== undefined && command !== undefined && tool.mutating
      ? yield* options.sandbox.placement(outsideRequested)
      : undefined
    if (placement?._tag === "outside" && placement.why === "unavailable" && options.sandbox?.firstFallback() === true) {
      yield* options.record({ type: "notice", data: { text: fallbackNotice(placement.reason), source: "sandbox" } }).pipe(
        Effect.catchCause((cause) => Effect.logError("could not log the sandbox's notice", cause))
      )
    }
    if (ceiling.readOnly && tool.mutating) {
      if (placement?._tag === "refused") return denied(placement.reason)
      if (outsideRequested) return denied(`This session is read-only: ${call.title} cannot run outside the sandbox.`)
      const readOnlyCommand = command !== undefined &&
        (yield* Confine.check(command, { cwd: options.cwd, roots: options.roots ?? [options.cwd], env: process.env })).ok
      return readOnlyCommand
        ? { _tag: "allow", readOnly: true } as Permit
        : denied(`This session is read-only (a read-only agent, or one started below it): ${call.title} was not run. Report what should change instead.`)
    }
    const known = yield* facts(options, ceiling.mode, call, tool, command, placement)
    const sandboxAdmits = yield* admits(options.sandbox, tool, args, options.cwd)
    const decide = (mode: ModeId, rules: ReadonlyArray<Permissions.Rule>) =>
      Permissions.decide({ mode, rules, tool, args, cwd: options.cwd, command, placement, outsideReason, sandboxAdmits, ...known })
    const decided = decide(ceiling.mode, rules)
    const verdict: Permissions.Verdict = decided._tag === "allow" && prior?.ask === true
      ? { _tag: "ask", scope: Permissions.scopeOf(tool, args, options.cwd) }
      : decided
    if (verdict._tag === "allow") return { _tag: "allow", ...(verdict.readOnly === true ? { readOnly: true } : {}) } as Permit
    if (verdict._tag === "deny") return denied(verdict.reason)
    if (prior?.granted === true && known.protectedEdit === undefined && verdict.outside !== true) return { _tag: "allow" } as Permit
    /** Logs a decision; whether the log took it. */
    const record = (body: CanonicalBody) =>
      options.record(body).pipe(Effect.as(true), Effect.catchCause((cause) => Effect.as(Effect.logError("could not log a permission answer", cause), false)))
    const unanswerable = Effect.as(
      record({ type: "permission", data: { toolCallId: call.id, outcome: "unanswerable" } }),
      denied(`Permission is needed to run ${call.title}, and no one is there to answer. It was not run.`)
    )
    const questions = yield* Questions
    if (!questions.canAsk()) return yield* unanswerable
    const choices = verdict.outside === true ? Permissions.outsideOptions : Permissions.options(tool, verdict.scope, command)
    // The change an edit would make, so the user sees it before answering (none if it cannot be worked out).
    const preview = tool.preview === undefined ? [] : yield* tool.preview(args, { cwd: options.cwd, roots: options.roots ?? [options.cwd] })
    const answer = yield* questions.ask({
      toolCall: {
        toolCallId: call.id,
        title: verdict.outside === true ? Permissions.outsideTitle(call.title, outsideReason) : call.title,
        kind: call.kind,
        status: "pending",
        rawInput: call.args,
        ...(call.locations !== undefined && call.locations.length > 0 ? { locations: call.locations } : {}),
        ...(preview.length > 0 ? { content: preview } : {})
      },
      options: choices
    }).pipe(
      Effect.timeoutOption(options.timeoutMs),
      Spans.permission(call.name, (answer) =>
        answer._tag === "None" ? "timeout" : answer.value === undefined ? "unanswerable" : answer.value.outcome === "selected" ? answer.value.optionId : "cancelled")
    )
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
      case "allow_always": {
        // The ceiling may have narrowed while the user was asked (a parent switched to plan).
        const now = current(options)
        if (now.ceiling.readOnly) {
          return denied(`This session became read-only while you were asked: ${call.title} was not run. Report what should change instead.`)
        }
        const again = decide(now.ceiling.mode, now.rules)
        // A command the policy allows only confined (read-only) stays confined, whatever was answered.
        return again._tag === "deny" ? denied(again.reason) : { _tag: "allow", ...(again._tag === "allow" && again.readOnly === true ? { readOnly: true } : {}) } as Permit
      }
      case "reject_once":
      case "reject_always":
        return denied(`The user denied permission for ${call.title}. It was not run.`)
      case "timeout":
        return denied(`No answer to the permission request for ${call.title} in time; it was not run.`)
      case "cancelled":
        return denied(`The permission request for ${call.title} was cancelled; it was not run.`)
      default:
        return outcome satisfies never
    }
  }, (decision, call) => Spans.permit(decision, call))

/** The session's gate as a turn's `Permission`: its questions go to the turn's `Questions`. */
export const make = (options: Options): Effect.Effect<Permission["Service"], never, Questions> =>
  Questions.useSync((questions) => {
    const gate = decide(options)
    return Permission.of({ permit: (call, tool, args, prior) => Effect.provideService(gate(call, tool, args, prior), Questions, questions) })
  })
