/**
 * Child sessions (subagents) as an ACP client is shown them, in the two forms of the design:
 *
 * - **native**, for a client that declared `clientCapabilities.subagents` (unstable v1 schema):
 *   each child is announced on its parent by `subagent_update` (title, description, cancel
 *   capability, state) before any of its traffic; its updates carry its own session id; the
 *   prompts it is given and its answers are `session_message`s in both transcripts; it is
 *   `requires_action` while one of its questions is open and `idle` (with a stop reason) after.
 * - **fallback**, for every other client: a child is one tool call of the parent (kind `think`,
 *   titled `<agent>: <task>`), its progress the call's content, its answer the final content;
 *   its questions are asked on the parent's session id, with a tool call id unique in the
 *   parent and the title prefixed by the child's agent, and that call is brought to its final
 *   status when the child's call ends, so no card stays pending.
 *
 * A `Presenter` folds the events of a parent's turn (its own `subagent` events and its
 * children's `child_event`s, nested for grandchildren) into what to send: updates by session
 * id, and questions to ask (rewritten for the form) with the session that takes the answer.
 * Pure, apart from the state it keeps per turn; `replay` does the same from logs.
 */
import type * as Update from "../acp/Update.ts"
import type { Canonical, SessionEvent } from "../log/Event.ts"
import { supersededPartials } from "../log/Replay.ts"
import type { ClientCall, PermissionAsked } from "../Vocabulary.ts"
import * as Translate from "./Translate.ts"

type AcpUpdate = typeof Update.SessionUpdate.Encoded
type ContentBlock = { readonly type: "text"; readonly text: string }

/** The unstable updates of the subagents extension (schema.unstable.json). */
export type SubagentUpdate = {
  readonly sessionUpdate: "subagent_update"
  readonly sessionId: string
  readonly title?: string
  readonly description?: string
  readonly capabilities?: { readonly cancel: Record<string, never> }
  readonly state?:
    | { readonly state: "running" }
    | { readonly state: "requires_action" }
    | { readonly state: "idle"; readonly stopReason?: string }
  readonly cwd?: string
}
export type SessionMessage = {
  readonly sessionUpdate: "session_message"
  readonly messageId: string
  readonly senderSessionId: string
  readonly recipientSessionId: string
  readonly content: ReadonlyArray<ContentBlock>
}
export type Shown = AcpUpdate | SubagentUpdate | SessionMessage

/** What presenting a parent's turn takes. */
export type Action =
  | { readonly _tag: "update"; readonly sessionId: string; readonly update: Shown }
  | {
    readonly _tag: "ask"
    /** The session the client is asked on (the child's in native form, the parent's otherwise). */
    readonly sessionId: string
    /** The session that takes the answer (the child that asked). */
    readonly answerTo: string
    /** The question as the client sees it. */
    readonly question: SessionEvent & (
      | { readonly type: "permission_asked"; readonly data: PermissionAsked }
      | { readonly type: "client_call"; readonly data: ClientCall }
    )
  }
  | { readonly _tag: "withdraw"; readonly answerTo: string; readonly requestId: string }

const text = (value: string): ContentBlock => ({ type: "text", text: value })

const short = (value: string, n = 80) => {
  const line = value.replace(/\s+/g, " ").trim()
  return line.length > n ? `${line.slice(0, n - 1)}…` : line
}

/** The parent's tool call that shows a child in the fallback form. */
export const cardId = (childId: string) => `subagent-${childId}`

interface ChildView {
  readonly agent: string
  readonly task: string
  /** Fallback: the child's tool calls so far (title and status), its progress. */
  readonly calls: Map<string, { title: string; status: string }>
  /** Fallback: the calls of the child a question was asked about, shown as their own cards. */
  readonly asked: Set<string>
  /** Messages given to the child so far (session_message ids). */
  messages: number
  /** Fallback: the text of its latest model call. */
  said: string
}

const answerText = (data: { readonly answer?: string | undefined; readonly error?: string | undefined; readonly state?: string | undefined }) =>
  data.error !== undefined ? `${data.state ?? "failed"}: ${data.error}${data.answer !== undefined ? `\n\n${data.answer}` : ""}` : data.answer ?? ""

/**
 * The presenter of one client for one parent session. `native`: the client declared
 * `clientCapabilities.subagents`.
 */
export const presenter = (parentId: string, native: boolean) => {
  const children = new Map<string, ChildView>()

  const viewOf = (id: string): ChildView => {
    let view = children.get(id)
    if (view === undefined) {
      view = { agent: "agent", task: "", calls: new Map(), asked: new Set(), messages: 0, said: "" }
      children.set(id, view)
    }
    return view
  }

  const progress = (id: string, view: ChildView): Action => {
    const lines = [...view.calls.values()].map((call) => `${call.status === "completed" ? "✓" : call.status === "failed" ? "✗" : "…"} ${call.title}`)
    if (view.said.length > 0) lines.push("", view.said)
    return {
      _tag: "update",
      sessionId: parentId,
      update: { sessionUpdate: "tool_call_update", toolCallId: cardId(id), content: [{ type: "content", content: text(lines.join("\n")) }] }
    }
  }

  /** A `subagent` event of `owner` (the parent, or a child that has children of its own). */
  const subagent = (owner: string, event: SessionEvent & { readonly type: "subagent" }): Array<Action> => {
    const data = event.data
    const id = data.id
    switch (data.event) {
      case "spawned": {
        const view = viewOf(id)
        children.set(id, { ...view, agent: data.agent ?? view.agent, task: data.task ?? view.task })
        const title = `${data.agent ?? "agent"}: ${short(data.task ?? "")}`
        if (native) {
          return [{
            _tag: "update",
            sessionId: owner,
            update: {
              sessionUpdate: "subagent_update",
              sessionId: id,
              title,
              ...(data.task !== undefined ? { description: data.task } : {}),
              capabilities: { cancel: {} },
              state: { state: "running" }
            }
          }]
        }
        return [{
          _tag: "update",
          sessionId: parentId,
          update: {
            sessionUpdate: "tool_call",
            toolCallId: cardId(id),
            title: owner === parentId ? title : `${children.get(owner)?.agent ?? "agent"} › ${title}`,
            kind: "think",
            status: "in_progress",
            rawInput: { agent: data.agent, task: data.task, workspace: data.workspace }
          }
        }]
      }
      case "state":
        return native
          ? [{ _tag: "update", sessionId: owner, update: { sessionUpdate: "subagent_update", sessionId: id, state: { state: "running" } } }]
          : [{ _tag: "update", sessionId: parentId, update: { sessionUpdate: "tool_call_update", toolCallId: cardId(id), status: "in_progress" } }]
      case "result": {
        const view = viewOf(id)
        const shown = answerText(data)
        if (native) {
          const out: Array<Action> = [{
            _tag: "update",
            sessionId: owner,
            update: {
              sessionUpdate: "subagent_update",
              sessionId: id,
              state: { state: "idle", ...(data.stopReason !== undefined ? { stopReason: data.stopReason } : {}) }
            }
          }]
          if (shown.length > 0) {
            view.messages++
            const messageId = `${id}-answer-${view.messages}`
            for (const sessionId of [id, owner]) {
              out.push({
                _tag: "update",
                sessionId,
                update: { sessionUpdate: "session_message", messageId, senderSessionId: id, recipientSessionId: owner, content: [text(shown)] }
              })
            }
          }
          return out
        }
        const ok = data.state === "idle" && data.error === undefined
        return [{
          _tag: "update",
          sessionId: parentId,
          update: {
            sessionUpdate: "tool_call_update",
            toolCallId: cardId(id),
            status: ok ? "completed" : "failed",
            content: shown.length > 0 ? [{ type: "content", content: text(shown) }] : []
          }
        }]
      }
      case "closed":
      case "input":
        return []
    }
  }

  /** An event of child `id`, published again by its parent `owner`. */
  const childEvent = (owner: string, event: SessionEvent): Array<Action> => {
    const id = event.sessionId
    const view = viewOf(id)
    switch (event.type) {
      case "child_event":
        return childEvent(id, event.data.event as SessionEvent)
      case "subagent":
        return subagent(id, event)
      case "permission_asked": {
        const wait: Array<Action> = native
          ? [{ _tag: "update", sessionId: owner, update: { sessionUpdate: "subagent_update", sessionId: id, state: { state: "requires_action" } } }]
          : []
        if (native) return [...wait, { _tag: "ask", sessionId: id, answerTo: id, question: event }]
        // On the parent's session: an id unique there, the child named in the title.
        const call = event.data.toolCall
        view.asked.add(call.toolCallId)
        return [{
          _tag: "ask",
          sessionId: parentId,
          answerTo: id,
          question: {
            ...event,
            data: { ...event.data, toolCall: { ...call, toolCallId: `${id}/${call.toolCallId}`, title: `${view.agent}: ${call.title}` } }
          }
        }]
      }
      case "client_call":
        return [{ _tag: "ask", sessionId: native ? id : parentId, answerTo: id, question: event }]
      case "question_withdrawn":
        return [{ _tag: "withdraw", answerTo: id, requestId: event.data.requestId }]
      case "permission":
        // Answered: the child works again.
        return native ? [{ _tag: "update", sessionId: owner, update: { sessionUpdate: "subagent_update", sessionId: id, state: { state: "running" } } }] : []
      case "turn_start": {
        view.messages++
        const messageId = `${id}-prompt-${view.messages}`
        const content = event.data.content.map(Translate.userContent) as ReadonlyArray<ContentBlock>
        if (!native) return []
        return [id, owner].map((sessionId) => ({
          _tag: "update" as const,
          sessionId,
          update: { sessionUpdate: "session_message" as const, messageId, senderSessionId: owner, recipientSessionId: id, content }
        }))
      }
      default:
        break
    }
    if (native) return Translate.live(event).map((update) => ({ _tag: "update" as const, sessionId: id, update }))
    // Fallback: the child's card shows its calls and what it says; a call it asked about is finished on its own card.
    switch (event.type) {
      case "tool_call":
        view.calls.set(event.data.id, { title: event.data.title, status: "pending" })
        view.said = ""
        return [progress(id, view)]
      case "tool_result": {
        const call = view.calls.get(event.data.id)
        if (call !== undefined) call.status = event.data.ok ? "completed" : "failed"
        const out: Array<Action> = [progress(id, view)]
        if (view.asked.delete(event.data.id)) {
          out.push({
            _tag: "update",
            sessionId: parentId,
            update: {
              sessionUpdate: "tool_call_update",
              toolCallId: `${id}/${event.data.id}`,
              title: `${view.agent}: ${event.data.title ?? call?.title ?? event.data.id}`,
              status: event.data.ok ? "completed" : "failed"
            }
          })
        }
        return out
      }
      case "model_response": {
        const said = event.data.parts.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("")
        if (said.length === 0) return []
        view.said = said
        return [progress(id, view)]
      }
      default:
        return []
    }
  }

  /** What to send for one event of the parent's turn, beyond what `Translate.live` shows of it. */
  const present = (event: SessionEvent): Array<Action> => {
    if (event.type === "child_event") return childEvent(parentId, event.data.event as SessionEvent)
    if (event.type === "subagent") return subagent(parentId, event)
    return []
  }

  return { present }
}

/**
 * The children of a logged parent as `session/load` shows them: each `subagent` event of the
 * parent presented as it was live, and (native form) each child's own transcript from its log,
 * right after it was announced.
 */
export const replay = (
  parentId: string,
  native: boolean,
  event: Canonical,
  childLog: (id: string) => ReadonlyArray<Canonical> | undefined
): Array<Action> => {
  if (event.type !== "subagent") return []
  const shown = presenter(parentId, native)
  // A fresh presenter knows the child from this very event; later events need its name again.
  const actions = shown.present(event)
  if (!native || event.data.event !== "spawned") return actions
  const log = childLog(event.data.id) ?? []
  const superseded = supersededPartials(log)
  const out = [...actions]
  let prompt = 0
  for (let i = 0; i < log.length; i++) {
    const childEvent = log[i]!
    if (superseded(childEvent, i)) continue
    if (childEvent.type === "turn_start") {
      prompt++
      const content = childEvent.data.content.map(Translate.userContent) as ReadonlyArray<ContentBlock>
      const messageId = `${event.data.id}-prompt-${prompt}`
      out.push({
        _tag: "update",
        sessionId: event.data.id,
        update: { sessionUpdate: "session_message", messageId, senderSessionId: parentId, recipientSessionId: event.data.id, content }
      })
      continue
    }
    for (const action of replay(event.data.id, native, childEvent, childLog)) out.push(action)
    for (const update of Translate.replay(childEvent)) out.push({ _tag: "update", sessionId: event.data.id, update })
  }
  return out
}
