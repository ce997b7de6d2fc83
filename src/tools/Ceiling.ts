/**
 * A session's ceiling: the most it may do, whatever its own mode says. Pure; the permission
 * gate (`runtime/Gate.ts`) applies it to every call, and the delegating tools to what they
 * start.
 *
 * - A top-level session's ceiling is its own mode.
 * - A child's is its own mode (its parent's at the start, only ever narrowed) under its
 *   parent's ceiling *as it is now*: a parent switched to `plan` makes every running
 *   descendant read-only at its next permission decision, and a parent switched back gives
 *   them back no more than they started with.
 * - Read-only (an explorer, or anything below one) is inherited and never lifted: every
 *   descendant of a read-only session is read-only, whatever its agent.
 * - An ancestor's "always reject" rules hold below it, those made later included; its later
 *   "always allow" rules do not (a child keeps only the allowances it started with).
 */
import type { PermissionRule } from "../log/Event.ts"
import type { ModeId, ToolKind } from "../Vocabulary.ts"

export interface Ceiling {
  /** The widest mode the session may act in now. */
  readonly mode: ModeId
  /** Nothing that changes anything runs (read-only commands run, confined). */
  readonly readOnly: boolean
  /** "Always reject" rules of the session and its ancestors. */
  readonly rejects: ReadonlyArray<PermissionRule>
}

/** How much each mode allows without asking, to tell a narrowing from a broadening. */
export const REACH: Readonly<Record<ModeId, number>> = { plan: 0, default: 1, acceptEdits: 2, bypassPermissions: 3 }

/** The narrower of two modes. */
const narrower = (a: ModeId, b: ModeId): ModeId => (REACH[a] <= REACH[b] ? a : b)

/** Whether `mode` allows more than `than`. */
export const broader = (mode: ModeId, than: ModeId): boolean => REACH[mode] > REACH[than]

/** What a session is allowed by itself: its mode, whether its agent is read-only, its own rules. */
interface Own {
  readonly mode: ModeId
  readonly readOnly?: boolean | undefined
  readonly rules: ReadonlyArray<PermissionRule>
}

/** A session's ceiling: what it allows itself, under its parent's ceiling (none for a top-level session). */
export const under = (own: Own, above: Ceiling | undefined): Ceiling => {
  const rejects = own.rules.filter((rule) => rule.decision === "reject")
  if (above === undefined) return { mode: own.mode, readOnly: own.readOnly === true, rejects }
  return {
    mode: narrower(own.mode, above.mode),
    readOnly: own.readOnly === true || above.readOnly,
    rejects: above.rejects.length === 0 ? rejects : [...above.rejects, ...rejects]
  }
}

/** Whether anything that changes the workspace may run under this ceiling (even after asking). */
export const mayChange = (ceiling: Pick<Ceiling, "mode" | "readOnly">): boolean => !ceiling.readOnly && ceiling.mode !== "plan"

/** Why nothing that changes anything may run, for the model or the user; undefined when it may. */
export const whyReadOnly = (ceiling: Pick<Ceiling, "mode" | "readOnly">): string | undefined =>
  ceiling.readOnly
    ? "this session is read-only (a read-only agent, or one started below it)"
    : ceiling.mode === "plan"
    ? "this session is in plan mode (read-only), or works for one that is"
    : undefined

/**
 * Whether a tool call of this ACP kind only looks (reads, searches, thinks, fetches). Any
 * other kind, `other` and `switch_mode` included, may change something.
 */
export const onlyLooks = (kind: ToolKind): boolean => kind === "read" || kind === "search" || kind === "think" || kind === "fetch"

/**
 * Why an external agent may not be started or prompted under this ceiling; undefined when it
 * may. An external agent is a program of its own: Skein gates what it asks and what it writes
 * through Skein, not what it does by itself, so a session that may change nothing starts none.
 */
export const refusesExternal = (ceiling: Pick<Ceiling, "mode" | "readOnly">, agent: string): string | undefined => {
  const why = whyReadOnly(ceiling)
  return why === undefined
    ? undefined
    : `The agent ${agent} is an external agent, which acts on its own and could change files; ${why}, so it cannot be given work. Use explorer, or do it yourself.`
}
