/**
 * A session's turns as one ACP client is shown them: what to send for each event, live (a
 * prompt's turn, another presenter's turn being watched) and replayed (`session/load`,
 * `skein replay --acp`), in one place so that a load shows what the live session showed.
 *
 * Actions are updates by session id, questions to ask (with the session that takes the
 * answer) and questions to withdraw. Whatever made it, every update goes through its session's
 * `View` (message ids, cards that repeat their title and kind), and a permission question is
 * asked only about a call the client was told of, with what the call would change: it is
 * announced (or its card given the change) first.
 *
 * Pure, apart from the memory of the views and the children's presenter; one per turn, load or
 * watch.
 */
import { absurd } from "effect/Function"
import type { Canonical, SessionEvent, UsageShown } from "../log/Event.ts"
import * as Children from "./Children.ts"
import type * as Shown from "./Shown.ts"
import type { Action } from "./Shown.ts"
import * as Translate from "./Translate.ts"
import * as View from "./View.ts"

/**
 * Replay: the usage update the live session showed right after a logged event (after a model
 * call, after a compaction), when it showed one; fed every event in order (`runtime/Usage.meter`).
 */
export type Meter = (event: Canonical) => UsageShown | undefined

export interface Options {
  /** The client shows child sessions as sessions (`clientCapabilities.subagents`, unstable). */
  readonly native: boolean
  /** What else the client shows (`session.compaction`). */
  readonly shown?: Translate.Options | undefined
  /** Replay: a child's log, when it can be read. */
  readonly childLog?: ((id: string) => ReadonlyArray<Canonical> | undefined) | undefined
  /** Replay: the session's usage updates, where the live session showed them (none without). */
  readonly meter?: Meter | undefined
}

export interface Presenter {
  /** What to send for one event of a live turn. */
  readonly live: (event: SessionEvent) => ReadonlyArray<Action>
  /** What to send for one logged event, replayed. */
  readonly replay: (event: Canonical) => ReadonlyArray<Action>
}

const isQuestion = (event: SessionEvent): event is Shown.Question => event.type === "permission_asked" || event.type === "client_call"

export const make = (sessionId: string, options: Options): Presenter => {
  const views = new Map<string, View.View>()
  const viewOf = (id: string): View.View => {
    let view = views.get(id)
    // What the client can show holds for every session it is shown (a child's, in the native form).
    if (view === undefined) views.set(id, view = View.make(options.shown))
    return view
  }
  const own = viewOf(sessionId)
  const children = Children.presenter(sessionId, options.native, viewOf)
  const noLog = () => undefined

  const updates = (id: string, list: ReadonlyArray<Translate.Update>): Array<Action> => list.map((update) => ({ _tag: "update", sessionId: id, update }))

  /** Every update completed by its session's view; every permission question after its call's card. */
  const checked = (actions: ReadonlyArray<Action>): Array<Action> => {
    const out: Array<Action> = []
    for (const action of actions) {
      if (action._tag === "update") {
        const u = action.update
        out.push(u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update"
          ? { ...action, update: viewOf(action.sessionId).card(u) }
          : action)
        continue
      }
      if (action._tag === "ask" && action.question.type === "permission_asked") {
        out.push(...updates(action.sessionId, viewOf(action.sessionId).announce(action.question.data.toolCall)))
      }
      out.push(action)
    }
    return out
  }

  const live = (event: SessionEvent): ReadonlyArray<Action> => {
    // The hot path: a delta is one update of the session's own.
    if (event.type === "text_delta" || event.type === "thinking_delta") return [{ _tag: "update", sessionId, update: own.delta(event) }]
    if (isQuestion(event)) return checked([{ _tag: "ask", sessionId, answerTo: sessionId, question: event }])
    switch (event.type) {
      case "question_withdrawn":
        return [{ _tag: "withdraw", answerTo: sessionId, requestId: event.data.requestId }]
      case "child_event":
      case "subagent":
        return checked(children.live(event))
      case "tool_call":
        children.call(event)
        break
      case "tool_result":
        // The spawn_agent call that shows its child: the child's events finish it.
        if (children.isCard(event.data.id)) return []
        break
      case "turn_end":
        return [...checked(children.end()), ...updates(sessionId, own.live(event))]
      case "turn_start":
      case "model_response":
      case "model_partial":
      case "mode_changed":
      case "config_changed":
      case "plan":
      case "permission":
      case "notice":
      case "mcp_servers":
      case "compaction":
      case "skill_activation":
      case "turn_input":
      case "undo":
      case "hook":
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
    return updates(sessionId, own.live(event))
  }

  /** A logged event's updates, then the usage update the live session showed after it. */
  const replay = (event: Canonical): ReadonlyArray<Action> => {
    const actions = replayed(event)
    const usage = options.meter?.(event)
    return usage === undefined ? actions : [...actions, ...updates(sessionId, [Translate.usageUpdate(usage)])]
  }

  const replayed = (event: Canonical): ReadonlyArray<Action> => {
    const childLog = options.childLog ?? noLog
    switch (event.type) {
      case "subagent":
        return checked(children.replay(event, childLog))
      case "tool_call":
        children.call(event)
        break
      case "tool_result":
        if (children.isCard(event.data.id)) return []
        break
      case "turn_end":
        return [...checked(children.end(childLog)), ...updates(sessionId, own.replay(event))]
      case "turn_start":
      case "model_response":
      case "model_partial":
      case "mode_changed":
      case "config_changed":
      case "plan":
      case "permission":
      case "notice":
      case "mcp_servers":
      case "compaction":
      case "skill_activation":
      case "turn_input":
      case "undo":
      case "hook":
      case "checkpoint":
      case "rewound":
        break
      default:
        absurd(event)
    }
    return updates(sessionId, own.replay(event))
  }

  return { live, replay }
}
