/**
 * Child sessions (subagents) as an ACP client is shown them, in the two forms of the design,
 * the same live and in replay (`session/load`, from the children's logs):
 *
 * - **native**, for a client that declared `clientCapabilities.subagents` (unstable v1 schema):
 *   each child is announced on its parent by `subagent_update` (title, description, cancel
 *   capability, state) before any of its traffic; its updates carry its own session id; the
 *   prompts it is given and its answers are `session_message`s in both transcripts; it is
 *   `requires_action` while one of its questions is open and `idle` (with a stop reason) after.
 * - **fallback**, for every other client: each child is **one card** of its parent (kind
 *   `think`, titled `<agent> — <task>`): the `spawn_agent` call that started it (a workflow's
 *   children get a card each), which stays in progress while the child works and shows what it
 *   did, then its answer. A child's call that changes files, or that it asks about, is a card of
 *   its own on the parent (`<agent> — <title>`, with its diff), announced before any question
 *   about it; the question is asked on the parent's session id. Nothing is left pending: the
 *   parent's turn end closes what its events did not.
 *
 * Titles never take the `name: task` form (some clients cut a title at its first colon).
 * Pure, apart from the state it keeps per turn (live) or per load (replay).
 */
import { absurd } from "effect/Function"
import * as Blocks from "../acp/Blocks.ts"
import type * as Update from "../acp/Update.ts"
import type { Canonical, SessionEvent } from "../log/Event.ts"
import type { Location, ToolKind } from "../Vocabulary.ts"
import { supersededPartials } from "../log/Replay.ts"
import type { Action, SessionMessage, Shown } from "./Shown.ts"
import * as Translate from "./Translate.ts"
import type * as View from "./View.ts"

type AcpUpdate = typeof Update.SessionUpdate.Encoded
type ContentBlock = { readonly type: "text"; readonly text: string }

const text = (value: string): ContentBlock => ({ type: "text", text: value })

const short = (value: string, n = 80) => {
  const line = value.replace(/\s+/g, " ").trim()
  return line.length > n ? `${line.slice(0, n - 1)}…` : line
}

/** A child's (or its call's) title: who, then what; never `who: what`. */
export const titled = (who: string, what: string) => (what.length > 0 ? `${who} — ${what}` : who)

/** The parent's card of a child that no call of the parent shows by itself (a workflow step, a grandchild). */
export const cardId = (childId: string) => `subagent-${childId}`

/** The parent's card of a child's own call. */
const ownId = (childId: string, callId: string) => `${childId}/${callId}`

/** Calls of a child that change files: shown as cards of their own in the fallback form. */
const CHANGES: ReadonlySet<ToolKind> = new Set(["edit", "delete", "move"])

/** At most this many of a child's calls are listed on its card (the latest ones). */
const LISTED = 30

interface Call {
  readonly title: string
  readonly kind: ToolKind
  readonly args: unknown
  readonly locations: ReadonlyArray<Location> | undefined
  status: "pending" | "completed" | "failed"
  /** Its own card on the parent (fallback), once it has one. */
  own: boolean
}

interface Child {
  readonly id: string
  /** The session that started it: the parent, or a child (for a grandchild). */
  readonly owner: string
  /** Its name on the parent: its agent, after its owner's for a grandchild. */
  readonly who: string
  /** Fallback: the parent's card that shows it, and whether that card still shows it working. */
  readonly card: string
  open: boolean
  readonly calls: Map<string, Call>
  /** What its latest model call said. */
  said: string
  /** Answers given so far (their message ids, native). */
  answers: number
  /** Replay: how far its log has been shown. */
  shown: number
}

const answerText = (data: { readonly answer?: string | undefined; readonly error?: string | undefined; readonly state?: string | undefined }) =>
  data.error !== undefined ? `${data.state ?? "failed"}: ${data.error}${data.answer !== undefined ? `\n\n${data.answer}` : ""}` : data.answer ?? ""

/** A child's card content: what it did (the latest calls), then what it said (or its answer). */
const progressText = (child: Child, said: string) => {
  const calls = [...child.calls.values()]
  const lines = calls.slice(-LISTED).map((c) => `${c.status === "completed" ? "✓" : c.status === "failed" ? "✗" : "…"} ${c.title}`)
  if (calls.length > LISTED) lines.unshift(`(${calls.length - LISTED} earlier calls)`)
  if (said.length > 0) lines.push(...(lines.length > 0 ? [""] : []), said)
  return lines.join("\n")
}

export interface Presenter {
  /** A call of the parent: remembered (a `spawn_agent` call becomes its child's card). */
  readonly call: (event: SessionEvent & { readonly type: "tool_call" }) => void
  /** Whether a result of the parent's is its child's card's (fallback): the child's events finish that card, not the result. */
  readonly isCard: (toolCallId: string) => boolean
  /** A `child_event` or `subagent` event of the parent's turn, live. */
  readonly live: (event: SessionEvent) => Array<Action>
  /** A logged `subagent` event of the parent (`session/load`), with its children's logs. */
  readonly replay: (event: Canonical, childLog: (id: string) => ReadonlyArray<Canonical> | undefined) => Array<Action>
  /** The parent's turn ended: every card still open ends (failed), so none stays pending. */
  readonly end: (childLog?: (id: string) => ReadonlyArray<Canonical> | undefined) => Array<Action>
}

/**
 * The presenter of one client for one parent session. `native`: the client declared
 * `clientCapabilities.subagents`; `viewOf`: the view of a child's own session (native form).
 */
export const presenter = (parentId: string, native: boolean, viewOf: (sessionId: string) => View.View): Presenter => {
  const children = new Map<string, Child>()
  /** The parent's `spawn_agent` calls (a call of that tool starts one child: its card). */
  const spawns = new Set<string>()
  const cards = new Set<string>()

  const update = (sessionId: string, u: Shown): Action => ({ _tag: "update", sessionId, update: u })
  const onParent = (u: AcpUpdate) => update(parentId, u)

  const progress = (child: Child): Action =>
    onParent({
      sessionUpdate: "tool_call_update",
      toolCallId: child.card,
      content: [{ type: "content", content: text(progressText(child, child.said)) }]
    })

  /** A child's call with a card of its own on the parent, its event rewritten to show there. */
  const ownEvent = <E extends SessionEvent>(child: Child, event: E, id: string): E => {
    const call = child.calls.get(id)
    const title = titled(child.who, call?.title ?? id)
    const data = event.data as { readonly id: string; readonly title?: string }
    return { ...event, sessionId: parentId, data: { ...data, id: ownId(child.id, id), title } }
  }

  /** Shows a child's call as a card of the parent, once (its changes and its questions are seen there). */
  const announceOwn = (child: Child, callId: string, replayed: boolean): Array<Action> => {
    const call = child.calls.get(callId)
    if (call === undefined || call.own) return []
    call.own = true
    return [onParent({
      sessionUpdate: "tool_call",
      toolCallId: ownId(child.id, callId),
      title: titled(child.who, call.title),
      kind: call.kind,
      status: replayed ? "in_progress" : "pending",
      ...(call.args !== null && call.args !== undefined ? { rawInput: call.args } : {}),
      ...(call.locations !== undefined && call.locations.length > 0 ? { locations: call.locations } : {})
    })]
  }

  /** A `subagent` event of `owner` (the parent, or a child that has children of its own). */
  const subagent = (owner: string, event: SessionEvent & { readonly type: "subagent" }): Array<Action> => {
    const data = event.data
    const id = data.id
    switch (data.event) {
      case "spawned": {
        const ownerChild = children.get(owner)
        const who = ownerChild === undefined ? data.agent ?? "agent" : `${ownerChild.who} › ${data.agent ?? "agent"}`
        const task = data.task ?? ""
        const onSpawnCall = owner === parentId && data.toolCallId !== undefined && spawns.has(data.toolCallId) && !cards.has(data.toolCallId)
        const card = onSpawnCall ? data.toolCallId! : cardId(id)
        cards.add(card)
        const child: Child = { id, owner, who, card, open: true, calls: new Map(), said: "", answers: 0, shown: 0 }
        children.set(id, child)
        const title = titled(who, short(task))
        if (native) {
          return [update(owner, {
            sessionUpdate: "subagent_update",
            sessionId: id,
            title: titled(data.agent ?? "agent", short(task)),
            ...(data.task !== undefined ? { description: data.task } : {}),
            capabilities: { cancel: {} },
            state: { state: "running" }
          })]
        }
        // The spawn_agent call that started it is its card from now on; a workflow's children get one each.
        return [onParent(onSpawnCall
          ? { sessionUpdate: "tool_call_update", toolCallId: card, title, kind: "think", status: "in_progress" }
          : {
            sessionUpdate: "tool_call",
            toolCallId: card,
            title,
            kind: "think",
            status: "in_progress",
            rawInput: { agent: data.agent, task: data.task, workspace: data.workspace }
          })]
      }
      case "state": {
        const child = children.get(id)
        if (child !== undefined) child.open = true
        return native
          ? [update(owner, { sessionUpdate: "subagent_update", sessionId: id, state: { state: "running" } })]
          : child === undefined
          ? []
          : [onParent({ sessionUpdate: "tool_call_update", toolCallId: child.card, status: "in_progress" })]
      }
      case "result": {
        const child = children.get(id)
        const shown = answerText(data)
        if (native) {
          const out: Array<Action> = [update(owner, {
            sessionUpdate: "subagent_update",
            sessionId: id,
            state: { state: "idle", ...(data.stopReason !== undefined ? { stopReason: data.stopReason } : {}) }
          })]
          if (shown.length > 0) {
            const n = child === undefined ? 1 : ++child.answers
            const messageId = `${id}-answer-${n}`
            for (const sessionId of [id, owner]) {
              out.push(update(sessionId, { sessionUpdate: "session_message", messageId, senderSessionId: id, recipientSessionId: owner, content: [text(shown)] }))
            }
          }
          return out
        }
        if (child === undefined) return []
        child.open = false
        const ok = data.state === "idle" && data.error === undefined
        const content = progressText(child, shown)
        return [onParent({
          sessionUpdate: "tool_call_update",
          toolCallId: child.card,
          status: ok ? "completed" : "failed",
          content: content.length > 0 ? [{ type: "content", content: text(content) }] : []
        })]
      }
      case "closed":
      case "input":
        return []
    }
  }

  /** An event of child `event.sessionId`, published again by its parent `owner`. */
  const childEvent = (owner: string, event: SessionEvent, replayed: boolean): Array<Action> => {
    const id = event.sessionId
    const child = children.get(id)
    switch (event.type) {
      case "child_event":
        return childEvent(id, event.data.event as SessionEvent, replayed)
      case "subagent":
        return subagent(id, event)
      case "permission_asked": {
        if (native) {
          return [
            update(owner, { sessionUpdate: "subagent_update", sessionId: id, state: { state: "requires_action" } }),
            { _tag: "ask", sessionId: id, answerTo: id, question: event }
          ]
        }
        // On the parent's session: the call's own card (announced first), named after the child.
        const asked = event.data.toolCall
        const call = child?.calls.get(asked.toolCallId)
        if (call !== undefined) call.own = true
        const who = child?.who ?? "agent"
        return [{
          _tag: "ask",
          sessionId: parentId,
          answerTo: id,
          question: { ...event, data: { ...event.data, toolCall: { ...asked, toolCallId: ownId(id, asked.toolCallId), title: titled(who, asked.title) } } }
        }]
      }
      case "client_call":
        return [{ _tag: "ask", sessionId: native ? id : parentId, answerTo: id, question: event }]
      case "question_withdrawn":
        return [{ _tag: "withdraw", answerTo: id, requestId: event.data.requestId }]
      case "permission":
        // Answered: the child works again. (Replayed, fallback: a call it asked about has its own card.)
        if (native) return replayed ? [] : [update(owner, { sessionUpdate: "subagent_update", sessionId: id, state: { state: "running" } })]
        return replayed && child !== undefined && event.data.outcome !== "unanswerable" ? announceOwn(child, event.data.toolCallId, true) : []
      case "turn_start": {
        if (!native) return []
        const content = event.data.content.map(Blocks.fromUserBlock) as ReadonlyArray<ContentBlock>
        const message: SessionMessage = { sessionUpdate: "session_message", messageId: `${id}-prompt-${event.turn}`, senderSessionId: owner, recipientSessionId: id, content }
        return [update(id, message), update(owner, message)]
      }
      case "model_response":
      case "model_partial":
      case "tool_call":
      case "tool_result":
      case "turn_end":
      case "mode_changed":
      case "config_changed":
      case "plan":
      case "notice":
      case "mcp_servers":
      case "compaction":
      case "skill_activation":
      case "turn_input":
      case "undo":
      case "hook":
      case "text_delta":
      case "thinking_delta":
      case "tool_running":
      case "tool_progress":
      case "usage":
      case "tool_terminal":
      case "compacting":
      case "turn_aborted":
      case "checkpoint":
      case "rewound":
        break
      default:
        absurd(event)
    }
    if (native) {
      const view = viewOf(id)
      return (replayed ? view.replay(event as Canonical) : view.live(event)).map((u) => update(id, u))
    }
    if (child === undefined) return []
    // Fallback: the child's card lists its calls and what it says; calls that change files, or
    // that it asked about, have cards of their own.
    switch (event.type) {
      case "tool_call": {
        child.calls.set(event.data.id, { title: event.data.title, kind: event.data.kind, args: event.data.args, locations: event.data.locations, status: "pending", own: false })
        child.said = ""
        const own = CHANGES.has(event.data.kind) ? announceOwn(child, event.data.id, replayed) : []
        return replayed ? own : [...own, progress(child)]
      }
      case "tool_running":
        return child.calls.get(event.data.id)?.own === true ? Translate.live(ownEvent(child, event, event.data.id)).map(onParent) : []
      case "tool_result": {
        const call = child.calls.get(event.data.id)
        if (call !== undefined) call.status = event.data.ok ? "completed" : "failed"
        const own = call?.own === true
          ? (replayed ? Translate.replay(ownEvent(child, event, event.data.id) as Canonical) : Translate.live(ownEvent(child, event, event.data.id))).map(onParent)
          : []
        return replayed ? own : [...own, progress(child)]
      }
      case "model_response": {
        const said = event.data.parts.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("")
        if (said.length === 0 || event.data.compaction !== undefined) return []
        child.said = said
        return replayed ? [] : [progress(child)]
      }
      case "model_partial":
      case "turn_end":
      case "mode_changed":
      case "config_changed":
      case "plan":
      case "notice":
      case "mcp_servers":
      case "compaction":
      case "skill_activation":
      case "turn_input":
      case "undo":
      case "hook":
      case "text_delta":
      case "thinking_delta":
      case "tool_progress":
      case "usage":
      case "tool_terminal":
      case "compacting":
      case "turn_aborted":
      case "checkpoint":
      case "rewound":
        return []
      default:
        return absurd(event)
    }
  }

  /** Replays the log of child `id` of `owner` up to the end of its next prompt (its whole log: `all`). */
  const replayChild = (id: string, owner: string, childLog: (id: string) => ReadonlyArray<Canonical> | undefined, all: boolean): Array<Action> => {
    const child = children.get(id)
    const log = childLog(id)
    if (child === undefined || log === undefined) return []
    const out: Array<Action> = []
    const superseded = supersededPartials(log)
    while (child.shown < log.length) {
      const i = child.shown++
      const event = log[i]!
      if (superseded(event, i)) continue
      // A grandchild, as its parent's are: its own transcript once announced (native), what it
      // did in a prompt before that prompt's result (fallback).
      const grandchild = event.type === "subagent" ? event.data : undefined
      if (!native && grandchild?.event === "result") out.push(...replayChild(grandchild.id, id, childLog, false))
      for (const action of childEvent(owner, event, true)) out.push(action)
      if (native && grandchild?.event === "spawned") out.push(...replayChild(grandchild.id, id, childLog, true))
      if (!all && event.type === "turn_end") break
    }
    return out
  }

  const live = (event: SessionEvent): Array<Action> => {
    if (event.type === "child_event") return childEvent(parentId, event.data.event as SessionEvent, false)
    if (event.type === "subagent") return subagent(parentId, event)
    return []
  }

  const replay = (event: Canonical, childLog: (id: string) => ReadonlyArray<Canonical> | undefined): Array<Action> => {
    if (event.type !== "subagent") return []
    const data = event.data
    // Native: the child's own transcript right after it is announced. Fallback: what it did
    // in a prompt is shown where that prompt's result is.
    if (data.event === "spawned") return [...subagent(parentId, event), ...(native ? replayChild(data.id, parentId, childLog, true) : [])]
    if (data.event === "result" && !native) return [...replayChild(data.id, parentId, childLog, false), ...subagent(parentId, event)]
    return subagent(parentId, event)
  }

  const end = (childLog?: (id: string) => ReadonlyArray<Canonical> | undefined): Array<Action> => {
    if (native) return []
    const out: Array<Action> = []
    for (const child of children.values()) {
      if (childLog !== undefined) out.push(...replayChild(child.id, child.owner, childLog, true))
      for (const [callId, call] of child.calls) {
        if (!call.own || call.status !== "pending") continue
        call.status = "failed"
        out.push(onParent({ sessionUpdate: "tool_call_update", toolCallId: ownId(child.id, callId), status: "failed" }))
      }
      if (!child.open) continue
      child.open = false
      const content = progressText(child, child.said)
      out.push(onParent({
        sessionUpdate: "tool_call_update",
        toolCallId: child.card,
        status: "failed",
        content: [{ type: "content", content: text(content.length > 0 ? `${content}\n\nIt ended without an answer.` : "It ended without an answer.") }]
      }))
    }
    return out
  }

  return {
    call: (event) => {
      if (event.data.name === "spawn_agent") spawns.add(event.data.id)
    },
    isCard: (toolCallId) => !native && cards.has(toolCallId),
    live,
    replay,
    end
  }
}
