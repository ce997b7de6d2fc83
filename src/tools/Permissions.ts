/**
 * Permissions: whether a tool call may run without asking, must be refused,
 * or needs the user's answer — from the session's mode and the rules the user
 * made with "always" answers. Pure; the session does the asking.
 *
 * - `bypassPermissions` asks nothing.
 * - Read-only tools never ask, in any mode.
 * - `plan` refuses every mutating call without asking.
 * - A remembered rule decides when it covers the call (reject wins).
 * - `acceptEdits` allows edits (always inside the workspace: tools are confined).
 * - `default` and `acceptEdits` allow read-only shell commands whose paths stay
 *   inside the workspace (the gate checks that against the file system), and
 *   ask for everything else.
 * - An edit of a protected file (git's own files, see `Protected.ts`) always
 *   asks, unless a rule made for that very file allows it.
 *
 * With the sandbox (`src/sandbox`), a command's `placement` decides first:
 * - one it refuses (the sandbox is `required` and cannot take it) is denied, in every mode;
 * - one the model asked to run outside (`sandbox: false`) needs a reason and always asks,
 *   in every mode (`bypassPermissions` too), with no "always allow"; plan refuses it;
 * - one that runs inside runs without a question in `default` and `acceptEdits` (a reject
 *   rule still refuses it); in `plan`, read-only commands run (sandboxed, roots read-only).
 */
import type { ModeId } from "../Vocabulary.ts"
import { matchesCommandPrefix } from "./ReadOnlyCommands.ts"
import type { Placement } from "./Sandboxed.ts"
import type { PermissionScope, Tool } from "./Tool.ts"

/**
 * What the policy needs of a call's tool: a tool, or a change that is not one (creating an
 * isolated workspace) but is decided and remembered the same way.
 */
export type Subject<A = any> = Pick<Tool<A>, "name" | "kind" | "mutating" | "scope">

type OptionKind = "allow_once" | "allow_always" | "reject_once" | "reject_always"

export interface Rule {
  readonly decision: "allow" | "reject"
  readonly kind: PermissionScope["kind"]
  /** Directory, command prefix, or tool name. */
  readonly value: string
  readonly label: string
}

type Verdict =
  /** `readOnly`: allowed because the command only reads; it runs in its confined form. */
  | { readonly _tag: "allow"; readonly readOnly?: true | undefined }
  | { readonly _tag: "deny"; readonly reason: string }
  /** `outside`: the command would run outside the sandbox because the model asked: say so, offer no "always". */
  | { readonly _tag: "ask"; readonly scope: PermissionScope; readonly outside?: true | undefined }

export interface Option {
  readonly optionId: OptionKind
  readonly name: string
  readonly kind: OptionKind
}

const isInside = (dir: string, path: string): boolean =>
  path === dir || path.startsWith(dir.endsWith("/") ? dir : `${dir}/`)

/** Tools without a narrower scope are remembered as a whole. */
const toolScope = (tool: Subject): PermissionScope => ({ kind: "tool", value: tool.name, label: `${tool.name} calls` })

/** Whether a remembered rule covers a call with this scope (and full command, for commands). */
const covers = (rule: Rule, tool: Subject, scope: PermissionScope, command: string | undefined): boolean => {
  if (rule.kind === "tool") return rule.value === tool.name
  if (scope.kind !== rule.kind) return false
  if (rule.kind === "path") return tool.kind === "edit" && isInside(rule.value, scope.value)
  // A command rule covers its prefix word by word, with nothing chained after it
  // ("npm test" never covers "npm test && rm -rf ~"; it does cover "npm test 2>&1 | tail").
  return command !== undefined && matchesCommandPrefix(command, rule.value)
}

interface Input<A> {
  readonly mode: ModeId
  readonly rules: ReadonlyArray<Rule>
  readonly tool: Subject<A>
  readonly args: A
  readonly cwd: string
  /** The full command of an `execute` call, when there is one. */
  readonly command?: string | undefined
  /** Whether that command only reads, inside the workspace (the gate checks it against the file system). */
  readonly readOnlyCommand?: boolean | undefined
  /** The target of an edit when it is protected (absolute): asked for even where edits are allowed. */
  readonly protectedEdit?: string | undefined
  /** Where an `execute` call would run (the session's sandbox); absent where there is no sandbox. */
  readonly placement?: Placement | undefined
  /** The reason the model gave for running a command outside the sandbox. */
  readonly outsideReason?: string | undefined
}

const relative = (cwd: string, path: string): string =>
  isInside(cwd, path) && path !== cwd ? path.slice(cwd.length + (cwd.endsWith("/") ? 0 : 1)) : path

/** A protected file is remembered by itself, never by its directory. */
const fileScope = (path: string, cwd: string): PermissionScope => ({
  kind: "path",
  value: path,
  label: `edits of ${relative(cwd, path)}`
})

const PLAN_DENIED = (tool: Subject) => ({
  _tag: "deny",
  reason: `Plan mode is read-only: ${tool.name} is not allowed. Describe the change you would make instead; the user can switch modes to let you make it.`
} as const)

export const decide = <A>(input: Input<A>): Verdict => {
  const { mode, tool } = input
  if (!tool.mutating) return { _tag: "allow" }
  const placement = tool.kind === "execute" && input.command !== undefined ? input.placement : undefined
  if (placement?._tag === "refused") return { _tag: "deny", reason: placement.reason }
  if (placement?._tag === "outside" && placement.why === "requested") return outside(input)
  if (mode === "bypassPermissions") return { _tag: "allow" }
  if (mode === "plan") {
    // A read-only command runs in plan mode only where the sandbox makes it read-only.
    return placement?._tag === "inside" && input.readOnlyCommand === true ? { _tag: "allow", readOnly: true } : PLAN_DENIED(tool)
  }
  const protectedEdit = tool.kind === "edit" ? input.protectedEdit : undefined
  const scope = protectedEdit !== undefined
    ? fileScope(protectedEdit, input.cwd)
    : tool.scope !== undefined
    ? tool.scope(input.args, input.cwd)
    : toolScope(tool)
  const covering = input.rules.filter((rule) =>
    covers(rule, tool, scope, input.command) &&
    // "Always allow edits in DIR" does not reach a protected file inside it.
    (protectedEdit === undefined || rule.decision === "reject" || rule.value === protectedEdit)
  )
  const reject = covering.find((rule) => rule.decision === "reject")
  if (reject !== undefined) return { _tag: "deny", reason: `The user chose to always reject ${reject.label}.` }
  // Before the rules' allowances, so that a read-only command covered by a rule still runs confined.
  if (tool.kind === "execute" && input.command !== undefined && input.readOnlyCommand === true) {
    return { _tag: "allow", readOnly: true }
  }
  // Sandboxed, a command cannot reach outside the workspace: no question.
  if (placement?._tag === "inside") return { _tag: "allow" }
  if (covering.some((rule) => rule.decision === "allow")) return { _tag: "allow" }
  if (mode === "acceptEdits" && tool.kind === "edit" && protectedEdit === undefined) return { _tag: "allow" }
  return { _tag: "ask", scope }
}

/**
 * A command the model asked to run outside the sandbox: it needs a reason, plan mode refuses
 * it, a reject rule refuses it, and otherwise it is asked, whatever the mode.
 */
const outside = <A>(input: Input<A>): Verdict => {
  if (input.mode === "plan") return { _tag: "deny", reason: "Plan mode is read-only: commands run only inside the sandbox there." }
  const reason = input.outsideReason?.trim() ?? ""
  if (reason === "") {
    return { _tag: "deny", reason: "To run a command outside the sandbox, give a `reason` (it is shown to the user, who is asked)." }
  }
  const scope = input.tool.scope !== undefined ? input.tool.scope(input.args, input.cwd) : toolScope(input.tool)
  const reject = input.rules.find((rule) => rule.decision === "reject" && covers(rule, input.tool, scope, input.command))
  if (reject !== undefined) return { _tag: "deny", reason: `The user chose to always reject ${reject.label}.` }
  return { _tag: "ask", scope, outside: true }
}

/** The title of the question for a command that would run outside the sandbox: it says so, with the model's reason. */
export const outsideTitle = (title: string, reason: string | undefined): string => {
  const why = (reason ?? "").trim().replace(/\s+/g, " ")
  return `Run OUTSIDE the sandbox (full access to your files and network): ${title}${why === "" ? "" : ` — reason: ${why.length > 200 ? `${why.slice(0, 199)}…` : why}`}`
}

/** The options of that question: once only, nothing remembered as "always allow". */
export const outsideOptions: ReadonlyArray<Option> = [
  { optionId: "allow_once", name: "Allow once, outside the sandbox", kind: "allow_once" },
  { optionId: "reject_once", name: "Reject", kind: "reject_once" }
]

/**
 * The rule an "always" answer makes for a scope: of the scope's own kind, so that a grant for
 * one command prefix or one directory never covers a whole tool, whatever the prefix reads.
 */
export const ruleFor = (tool: Subject, scope: PermissionScope, decision: Rule["decision"]): Rule =>
  scope.kind === "tool"
    ? { decision, kind: "tool", value: tool.name, label: scope.label }
    : { decision, kind: scope.kind, value: scope.value, label: scope.label }

/**
 * The options of a permission request; the "always" ones name their scope. They are offered
 * only when the rule they would make covers this very call (`command`: its full command):
 * "Always allow `echo`" for `echo hi > a.txt && ls` would make a rule that never matches it,
 * so such a call is offered once-only answers.
 */
export const options = (tool: Subject, scope: PermissionScope, command?: string | undefined): ReadonlyArray<Option> => {
  const rule = ruleFor(tool, scope, "allow")
  const once: ReadonlyArray<Option> = [
    { optionId: "allow_once", name: "Allow once", kind: "allow_once" },
    { optionId: "reject_once", name: "Reject", kind: "reject_once" }
  ]
  if (!covers(rule, tool, scope, command)) return once
  return [
    once[0]!,
    { optionId: "allow_always", name: `Always allow ${rule.label}`, kind: "allow_always" },
    once[1]!,
    { optionId: "reject_always", name: `Always reject ${rule.label}`, kind: "reject_always" }
  ]
}
