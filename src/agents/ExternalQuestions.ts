/**
 * An external agent's permission questions (`session/request_permission`), put to whoever
 * presents the child's turn (its `Questions`).
 *
 * The agent's options are offered one per kind, each named by its kind (as Skein's own are);
 * the agent is answered with its own option id. Nobody to answer, or no answer in time, is the
 * agent's "reject once" when it offers one. While the session may change nothing, a question
 * about anything but looking is answered "reject" without asking, and an allowance given
 * meanwhile becomes "reject". The answer is logged (`permission`); an allowed edit lets the
 * agent's writes of the files shown through the gate without asking again (`ExternalFold`).
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import type * as AcpClient from "../acp/Client.ts"
import { Questions } from "../session/TurnContract.ts"
import type { PermissionOption, PermissionToolCall, ToolKind } from "../Vocabulary.ts"
import type { Served } from "./ExternalFiles.ts"
import * as Fold from "./ExternalFold.ts"

const CANCELLED = { outcome: { outcome: "cancelled" } } as const

export interface Asking {
  /** How long a question may wait for an answer (default: until the turn ends). */
  readonly timeoutMs?: number | undefined
  /** Whether the session may change nothing now, and a call of this kind may change something. */
  readonly confining: (kind: ToolKind) => boolean
}

/** Asks the user the agent's question about a call; the agent's answer. Never fails. */
export const requestPermission = (served: Served, asking: Asking, params: AcpClient.RequestPermissionRequest) =>
  Effect.gen(function*() {
    const agentId = params.toolCall.toolCallId
    // The call the question is about, announced first if the agent never reported it.
    const outputs = yield* served.step({ _tag: "Asked", toolCall: params.toolCall })
    const subject = outputs?.find((output) => output._tag === "Subject")
    if (subject === undefined) return CANCELLED
    const tracked = subject.call
    // Skein's questions offer one option per kind, named by its kind; the agent's own id is given back.
    const byKind = new Map<PermissionOption["kind"], AcpClient.PermissionOption>()
    for (const option of params.options) if (!byKind.has(option.kind)) byKind.set(option.kind, option)
    if (byKind.size === 0) return CANCELLED
    const reject = byKind.get("reject_once")
    const refusal = reject !== undefined ? { outcome: { outcome: "selected", optionId: reject.optionId } } : CANCELLED
    // A session that may change nothing does not ask about a change: it refuses it.
    if (asking.confining(tracked.kind)) return refusal
    const offered = [...byKind.values()].map((o): PermissionOption => ({ optionId: o.kind, name: o.name, kind: o.kind }))
    // The question's content is what the call would do (a diff to approve), not what it did.
    const diffs = Fold.diffsOf(params.toolCall.content ?? tracked.content).map((d) => ({ type: "diff" as const, ...d }))
    const toolCall: PermissionToolCall = {
      toolCallId: tracked.id,
      title: tracked.title,
      kind: tracked.kind,
      status: "pending",
      rawInput: tracked.args,
      ...(tracked.locations.length > 0 ? { locations: tracked.locations } : {}),
      ...(diffs.length > 0 ? { content: diffs } : {})
    }
    const asked = Questions.use((questions) => questions.ask({ toolCall, options: offered }))
    const answer = yield* Effect.raceFirst(
      asking.timeoutMs === undefined
        ? Effect.map(asked, (a) => ({ _tag: "answer" as const, a }))
        : Effect.map(Effect.timeoutOption(asked, asking.timeoutMs), (o) =>
          o._tag === "Some" ? { _tag: "answer" as const, a: o.value } : { _tag: "timeout" as const }),
      Effect.as(Deferred.await(served.ended), { _tag: "ended" as const })
    )
    const chosen = answer._tag === "answer" && answer.a?.outcome === "selected" ? byKind.get(answer.a.optionId as PermissionOption["kind"]) : undefined
    const outcome = chosen !== undefined
      ? chosen.kind
      : answer._tag === "timeout"
      ? "timeout" as const
      : answer._tag === "answer" && answer.a === undefined
      ? "unanswerable" as const
      : "cancelled" as const
    const allowed = outcome === "allow_once" || outcome === "allow_always"
    // The session may have become read-only while the user was asked.
    const confined = allowed && asking.confining(tracked.kind)
    yield* served.step({ _tag: "Answered", agentId, id: tracked.id, outcome, granted: allowed && !confined ? tracked : undefined })
    if (confined) return refusal
    if (chosen !== undefined) return { outcome: { outcome: "selected", optionId: chosen.optionId } }
    // Nobody answered: a denial, as Skein's own gate makes it, when the agent offers one.
    return outcome === "timeout" || outcome === "unanswerable" ? refusal : CANCELLED
  })
