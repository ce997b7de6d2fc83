/**
 * What a hook's run decides, as Claude Code's hooks reference defines it; pure.
 *
 * - Exit 0: stdout that is a JSON object decides (below); other stdout is context for the
 *   model for `UserPromptSubmit` and `SessionStart`, and ignored for the others.
 * - Exit 2: blocks. `PreToolUse`: the call is denied, stderr is the reason the model reads.
 *   `PostToolUse`: stderr goes to the model (the tool ran already). `UserPromptSubmit`: the
 *   prompt is not answered (and leaves the model's view), stderr is shown to the user.
 *   `Stop`: the model goes on, with stderr as its next input. `SessionStart`: stderr is shown.
 * - Any other exit, a timeout, or a hook that could not start: nothing is decided; the user is
 *   told why (a hook's failure never fails the turn).
 * - JSON: `continue: false` stops the turn (`stopReason` shown to the user); `systemMessage`
 *   is shown to the user; `hookSpecificOutput.permissionDecision` (`allow` | `deny` | `ask`)
 *   with `permissionDecisionReason` decides a `PreToolUse` (the older `decision: "approve" |
 *   "block"` too); `decision: "block"` with `reason` blocks the other events as exit 2 does;
 *   `hookSpecificOutput.additionalContext` adds context for the model.
 */
import type { HookEvent } from "./Settings.ts"

/** How a hook's process ended. */
export type Raw =
  | { readonly _tag: "exited"; readonly code: number; readonly stdout: string; readonly stderr: string }
  | { readonly _tag: "timedOut"; readonly timeoutMs: number; readonly stdout: string; readonly stderr: string }
  /** It could not start (the sandbox refused it, no shell), or it was killed by a signal. */
  | { readonly _tag: "failed"; readonly reason: string }

export type Verdict = "none" | "allow" | "ask" | "deny" | "block"

export interface Outcome {
  readonly decision: Verdict
  /** What the model reads: why a call was denied, why it must go on (Stop), a PostToolUse note. */
  readonly reason?: string | undefined
  /** Text added to what the model reads (additional context). */
  readonly context?: string | undefined
  /** What the user is told: a failure, a `systemMessage`, why a prompt was blocked. */
  readonly message?: string | undefined
  /** `continue: false`: the turn stops, and the user is told this. */
  readonly stop?: string | undefined
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value)
const text = (value: unknown): string | undefined => (typeof value === "string" && value.trim().length > 0 ? value.trim() : undefined)

/** Context events: their plain stdout is context for the model. */
const takesStdout = (event: HookEvent) => event === "UserPromptSubmit" || event === "SessionStart"

const blocked = (event: HookEvent, why: string | undefined, fallback: string): Outcome => {
  const reason = why ?? fallback
  switch (event) {
    case "PreToolUse":
      return { decision: "deny", reason }
    case "PostToolUse":
    case "Stop":
      return { decision: "block", reason }
    case "UserPromptSubmit":
      return { decision: "block", message: reason }
    case "SessionStart":
      return { decision: "none", message: reason }
  }
}

const fromJson = (event: HookEvent, json: Record<string, unknown>): Outcome => {
  const specific = isRecord(json.hookSpecificOutput) ? json.hookSpecificOutput : {}
  const context = text(specific.additionalContext)
  const stop = json.continue === false ? text(json.stopReason) ?? "A hook stopped the turn." : undefined
  const shown = text(json.systemMessage)
  const base = { ...(context !== undefined ? { context } : {}), ...(stop !== undefined ? { stop } : {}) }
  const withMessage = (outcome: Outcome): Outcome =>
    shown === undefined ? outcome : { ...outcome, message: outcome.message === undefined ? shown : `${shown}\n${outcome.message}` }
  if (event === "PreToolUse") {
    const said = specific.permissionDecision ?? (json.decision === "approve" ? "allow" : json.decision === "block" ? "deny" : undefined)
    const why = text(specific.permissionDecisionReason) ?? text(json.reason)
    if (said === "deny") return withMessage({ ...base, decision: "deny", reason: why ?? "A PreToolUse hook denied it." })
    if (said === "allow" || said === "ask") return withMessage({ ...base, decision: said, ...(why !== undefined ? { message: why } : {}) })
    return withMessage({ ...base, decision: "none" })
  }
  if (json.decision === "block") return withMessage({ ...base, ...blocked(event, text(json.reason), `A ${event} hook blocked it.`) })
  return withMessage({ ...base, decision: "none" })
}

/** What one hook's run decides for `event`; `command` names it in messages. */
export const decide = (event: HookEvent, command: string, raw: Raw): Outcome => {
  const name = command.length > 60 ? `${command.slice(0, 59)}…` : command
  switch (raw._tag) {
    case "failed":
      return { decision: "none", message: `The ${event} hook \`${name}\` did not run: ${raw.reason}.` }
    case "timedOut":
      return { decision: "none", message: `The ${event} hook \`${name}\` was stopped after its timeout (${raw.timeoutMs / 1000} s); it decided nothing.` }
    case "exited": {
      if (raw.code === 2) return blocked(event, text(raw.stderr), `A ${event} hook blocked it (exit code 2).`)
      if (raw.code !== 0) {
        const why = text(raw.stderr)
        return { decision: "none", message: `The ${event} hook \`${name}\` failed (exit code ${raw.code})${why !== undefined ? `: ${why}` : ""}.` }
      }
      const out = raw.stdout.trim()
      if (out.startsWith("{")) {
        let json: unknown
        try {
          json = JSON.parse(out)
        } catch {
          json = undefined
        }
        if (isRecord(json)) return fromJson(event, json)
      }
      return takesStdout(event) && out.length > 0 ? { decision: "none", context: out } : { decision: "none" }
    }
  }
}

const RANK: Readonly<Record<Verdict, number>> = { none: 0, allow: 1, ask: 2, block: 3, deny: 4 }

const joined = (parts: ReadonlyArray<string | undefined>): string | undefined => {
  const present = parts.filter((part): part is string => part !== undefined)
  return present.length === 0 ? undefined : present.join("\n")
}

/** The outcomes of every hook that fired at one point, as one: the strictest decision wins, and everything said is kept. */
export const combine = (outcomes: ReadonlyArray<Outcome>): Outcome => {
  let decision: Verdict = "none"
  for (const outcome of outcomes) if (RANK[outcome.decision] > RANK[decision]) decision = outcome.decision
  // A denial's reasons are the denying hooks' (another's "allow" reason would confuse the model).
  const reason = joined(outcomes.filter((o) => decision === "deny" || decision === "block" ? o.decision === decision : true).map((o) => o.reason))
  const context = joined(outcomes.map((o) => o.context))
  const message = joined(outcomes.map((o) => o.message))
  const stop = outcomes.find((o) => o.stop !== undefined)?.stop
  return {
    decision,
    ...(reason !== undefined ? { reason } : {}),
    ...(context !== undefined ? { context } : {}),
    ...(message !== undefined ? { message } : {}),
    ...(stop !== undefined ? { stop } : {})
  }
}
