/**
 * One session as one client is shown it: `Translate`'s mapping, plus what takes memory, the same
 * live and in replay:
 *
 * - **Message ids.** Every message chunk carries a `messageId` (ACP v1 `ContentChunk`), so a
 *   client never glues two messages together. Ids come from the log, so a message has the same
 *   id live and when the session is loaded again:
 *   - what a model call says: `m<turn>.<n>`, the n-th run of text or of thinking in the turn (a
 *     run ends where the kind changes or the call ends; tool calls inside a call do not end it);
 *   - a prompt, replayed: `u<turn>`;
 *   - a message of one logged event (steering, a notice, a failed turn's error): `e<seq>`.
 * - **The title** (`session_info_update`) once the first prompt is known, live and replayed.
 * - **Cards.** Every `tool_call_update` repeats its call's title and kind (a client that keeps
 *   only the last update's fields would show "Tool"), whoever made it (`card`); and a question
 *   is only asked about a call the client was told of, with what it would change (`announce`).
 *
 * Pure apart from that memory; one view per session and client, for a turn (live), a load
 * (replay) or a watch.
 */
import { absurd } from "effect/Function"
import type { Canonical, SessionEvent } from "../log/Event.ts"
import type { PermissionToolCall } from "../Vocabulary.ts"
import * as Translate from "./Translate.ts"

type Update = Translate.Update
type Chunk = Extract<Update, { readonly sessionUpdate: "agent_message_chunk" | "agent_thought_chunk" | "user_message_chunk" }>
type ToolKind = NonNullable<Extract<Update, { readonly sessionUpdate: "tool_call" }>["kind"]>

export interface View {
  /** Updates for an event while its turn is live. */
  readonly live: (event: SessionEvent) => ReadonlyArray<Update>
  /** The update of a text or thinking delta (the hot path of `live`). */
  readonly delta: (event: SessionEvent & { readonly type: "text_delta" | "thinking_delta" }) => Update
  /** Updates that rebuild a logged event (`session/load`). */
  readonly replay: (event: Canonical) => ReadonlyArray<Update>
  /** An update made elsewhere (a child's card on its parent), completed as this view's own are. */
  readonly card: (update: Update) => Update
  /** What to send before asking about `call`: its announcement, or what the question adds to its card. */
  readonly announce: (call: PermissionToolCall) => ReadonlyArray<Update>
}

const isChunk = (update: Update): update is Chunk =>
  update.sessionUpdate === "agent_message_chunk" || update.sessionUpdate === "agent_thought_chunk" ||
  update.sessionUpdate === "user_message_chunk"

/** The change a question is about, as card content (a new file has no `oldText`). */
const proposed = (call: PermissionToolCall) =>
  (call.content ?? []).map((d) => d.oldText === null
    ? { type: "diff" as const, path: d.path, newText: d.newText }
    : { type: "diff" as const, path: d.path, oldText: d.oldText, newText: d.newText })

export const make = (options: Translate.Options = {}): View => {
  /** Title and kind of each call announced through this view. */
  const cards = new Map<string, { title: string; kind: ToolKind }>()
  let turn: number | undefined
  /** Runs of the turn so far, the kind of the open one, and its id. */
  let runs = 0
  let open: Chunk["sessionUpdate"] | undefined
  let openId = ""
  /** Replay: the call whose checkpoints (`model_partial`) are being shown. */
  let call: number | undefined

  /** A turn's event: a new turn starts its runs anew (a session-level event, between or during turns, changes nothing). */
  const enter = (t: number | null) => {
    if (t === null || t === turn) return
    turn = t
    runs = 0
    open = undefined
    call = undefined
  }
  const runId = (kind: Chunk["sessionUpdate"]) => {
    if (open !== kind) {
      open = kind
      openId = `m${turn}.${++runs}`
    }
    return openId
  }
  const stamped = (updates: ReadonlyArray<Update>, id: (chunk: Chunk) => string): ReadonlyArray<Update> => {
    if (updates.length === 0) return updates
    return updates.map((u) => (isChunk(u) ? { ...u, messageId: id(u) } : card(u)))
  }

  const card = (update: Update): Update => {
    if (update.sessionUpdate === "tool_call") {
      cards.set(update.toolCallId, { title: update.title, kind: update.kind ?? "other" })
      return update
    }
    if (update.sessionUpdate !== "tool_call_update") return update
    const known = cards.get(update.toolCallId)
    if (known === undefined) return update
    if (update.title != null) known.title = update.title
    if (update.kind != null) known.kind = update.kind
    const { sessionUpdate, toolCallId, title: _title, kind: _kind, ...rest } = update
    return { sessionUpdate, toolCallId, title: known.title, kind: known.kind, ...rest }
  }

  const announce = (call: PermissionToolCall): ReadonlyArray<Update> => {
    const content = proposed(call)
    const locations = call.locations !== undefined && call.locations.length > 0 ? { locations: call.locations } : {}
    if (!cards.has(call.toolCallId)) {
      return [card({
        sessionUpdate: "tool_call",
        toolCallId: call.toolCallId,
        title: call.title,
        kind: call.kind,
        status: "pending",
        ...(call.rawInput !== null && call.rawInput !== undefined ? { rawInput: call.rawInput } : {}),
        ...locations,
        ...(content.length > 0 ? { content } : {})
      })]
    }
    return content.length === 0 ? [] : [card({ sessionUpdate: "tool_call_update", toolCallId: call.toolCallId, content, ...locations })]
  }

  const own = (event: SessionEvent) => () => `e${event.seq}`

  const delta = (event: SessionEvent & { readonly type: "text_delta" | "thinking_delta" }): Update => {
    enter(event.turn)
    const kind = event.type === "text_delta" ? "agent_message_chunk" : "agent_thought_chunk"
    return { sessionUpdate: kind, content: { type: "text", text: event.data.text }, messageId: runId(kind) }
  }

  const live = (event: SessionEvent): ReadonlyArray<Update> => {
    enter(event.turn)
    switch (event.type) {
      case "text_delta":
      case "thinking_delta":
        return [delta(event)]
      case "model_response": {
        open = undefined
        return stamped(Translate.live(event, options), own(event))
      }
      case "turn_start":
        return Translate.titleUpdate(event)
      case "model_partial":
      case "tool_call":
      case "tool_result":
      case "turn_end":
      case "mode_changed":
      case "config_changed":
      case "plan":
      case "permission":
      case "notice":
      case "mcp_servers":
      case "subagent":
      case "compaction":
      case "skill_activation":
      case "turn_input":
      case "undo":
      case "hook":
      case "tool_running":
      case "tool_progress":
      case "usage":
      case "permission_asked":
      case "client_call":
      case "question_withdrawn":
      case "tool_terminal":
      case "child_event":
      case "compacting":
      case "turn_aborted":
      case "checkpoint":
      case "rewound":
        return stamped(Translate.live(event, options), own(event))
      default:
        return absurd(event)
    }
  }

  const replay = (event: Canonical): ReadonlyArray<Update> => {
    enter(event.turn)
    switch (event.type) {
      case "turn_start":
        return [...Translate.titleUpdate(event), ...stamped(Translate.replay(event, options), () => `u${event.turn}`)]
      case "model_partial":
        if (event.data.call !== call) open = undefined
        call = event.data.call
        return stamped(Translate.replay(event, options), (chunk) => runId(chunk.sessionUpdate))
      case "model_response": {
        // Its call's checkpoints are not shown (it holds all of their text): it starts its runs.
        if (event.data.call !== call) open = undefined
        const out = stamped(Translate.replay(event, options), (chunk) => runId(chunk.sessionUpdate))
        open = undefined
        call = undefined
        return out
      }
      case "tool_call":
      case "tool_result":
      case "turn_end":
      case "mode_changed":
      case "config_changed":
      case "plan":
      case "permission":
      case "notice":
      case "mcp_servers":
      case "subagent":
      case "compaction":
      case "skill_activation":
      case "turn_input":
      case "undo":
      case "hook":
      case "checkpoint":
      case "rewound":
        return stamped(Translate.replay(event, options), own(event))
      default:
        return absurd(event)
    }
  }

  return { live, delta, replay, card, announce }
}
