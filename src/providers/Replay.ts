/**
 * The replay provider: answers every model call from a session's log. Turn N
 * of the session that uses it (counted from 1, in the order the log started
 * them) consumes the log's N-th turn; model call M of it streams exactly the
 * logged `model_response` with call number M: its text, thinking (with
 * signatures) and tool calls (same ids and arguments) in order, its usage and
 * its stop reason. A logged failure is streamed as the same failure.
 *
 * A call the log ended by a cancel, or a call the log never got to in a turn
 * that was cancelled (or cut by a crash), is a *cancel point*: the logged
 * parts stream, `onCancelPoint` runs (a re-run cancels its turn there), and
 * the stream waits to be interrupted. Anything else the log does not have is
 * a failure naming the turn and call.
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { Canonical, ModelResponse } from "../log/Event.ts"
import type { UserBlock } from "../Vocabulary.ts"
import type { Provider, StreamPart } from "./Provider.ts"

type ResponseData = typeof ModelResponse.Type["data"]

/** One logged turn, as the replay provider and a re-run read it. */
interface RecordedTurn {
  /** The turn's number in the log. */
  readonly turn: number
  readonly content: ReadonlyArray<UserBlock>
  /** Logged model responses by call number. */
  readonly calls: ReadonlyMap<number, ResponseData>
  /** How the turn ended in the log (undefined: the log stops inside it). */
  readonly stopReason: string | undefined
}

/** The log's turns, in the order they started. */
export const turnsOf = (events: ReadonlyArray<Canonical>): Array<RecordedTurn> => {
  const turns: Array<{ turn: number; content: ReadonlyArray<UserBlock>; calls: Map<number, ResponseData>; stopReason: string | undefined }> = []
  const byNumber = new Map<number, (typeof turns)[number]>()
  for (const event of events) {
    if (event.type === "turn_start" && event.turn !== null) {
      const t = { turn: event.turn, content: event.data.content, calls: new Map<number, ResponseData>(), stopReason: undefined }
      turns.push(t)
      byNumber.set(event.turn, t)
    } else if (event.type === "model_response" && event.turn !== null) {
      byNumber.get(event.turn)?.calls.set(event.data.call, event.data)
    } else if (event.type === "turn_end" && event.turn !== null) {
      const t = byNumber.get(event.turn)
      if (t !== undefined) t.stopReason = event.data.stopReason
    }
  }
  return turns
}

interface Options {
  /** Runs at a cancel point, with the log's turn number; the stream then waits to be interrupted. */
  readonly onCancelPoint?: ((turn: number) => Effect.Effect<void>) | undefined
}

const partsOf = (data: ResponseData): Array<StreamPart> => {
  const out: Array<StreamPart> = []
  for (const part of data.parts) {
    switch (part.type) {
      case "text":
        out.push({ _tag: "TextDelta", text: part.text })
        break
      case "thinking":
        out.push(part.signature !== undefined ? { _tag: "ThinkingDelta", text: part.text, signature: part.signature } : { _tag: "ThinkingDelta", text: part.text })
        break
      case "tool_call":
        out.push({ _tag: "ToolCall", id: part.id, name: part.name, args: part.args })
        break
    }
  }
  if (data.usage !== undefined) out.push({ _tag: "Usage", usage: data.usage })
  return out
}

const failure = (message: string): Stream.Stream<StreamPart> => Stream.succeed({ _tag: "Failure", message, retryable: false })

/**
 * Where the log compacted because of the threshold: `turn:call` of each compaction call that
 * neither a `/compact` turn nor a context overflow (a failed call just before it) started.
 */
const thresholdCompactions = (turns: ReadonlyArray<RecordedTurn>, manual: ReadonlySet<number>): Set<string> => {
  const out = new Set<string>()
  for (const [index, turn] of turns.entries()) {
    if (manual.has(turn.turn)) continue
    for (const [call, data] of turn.calls) {
      if (data.compaction === undefined) continue
      if (turn.calls.get(call - 1)?.stop === "error") continue
      out.add(`${index + 1}:${call}`)
    }
  }
  return out
}

/** The steering content each turn took, by `turn:call` (the replay's turn order, the call it followed). */
const steeringOf = (events: ReadonlyArray<Canonical>): Map<string, Array<ReadonlyArray<UserBlock>>> => {
  const out = new Map<string, Array<ReadonlyArray<UserBlock>>>()
  let index = 0
  let call = 0
  for (const event of events) {
    if (event.type === "turn_start" && event.turn !== null) {
      index++
      call = 0
    } else if (event.type === "model_response" && event.turn !== null) {
      call = event.data.call
    } else if (event.type === "turn_input" && event.turn !== null) {
      const key = `${index}:${call}`
      out.set(key, [...(out.get(key) ?? []), event.data.content])
    }
  }
  return out
}

export const make = (events: ReadonlyArray<Canonical>, options?: Options): Provider => {
  const turns = turnsOf(events)
  const steering = steeringOf(events)
  const manual = new Set(events.flatMap((e) => (e.type === "turn_start" && e.turn !== null && e.data.command?.local === true ? [e.turn] : [])))
  const due = thresholdCompactions(turns, manual)
  const window = events.findLast((e) => e.type === "compaction" && e.data.window !== undefined)
  const windowOf = window?.type === "compaction" ? window.data.window : undefined
  const cancelPoint = (turn: number, parts: Array<StreamPart>): Stream.Stream<StreamPart> =>
    Stream.concat(
      Stream.fromArray(parts),
      Stream.fromEffect(Effect.andThen(options?.onCancelPoint?.(turn) ?? Effect.void, Effect.never))
    )
  return {
    name: "replay",
    // The log decides where compactions happened; the threshold never does in a replay.
    compactionDue: (at) => due.has(`${at.turn}:${at.call}`),
    injected: (at) => steering.get(`${at.turn}:${at.call}`) ?? [],
    // The window the log's compactions measured against, so a re-run keeps the same part.
    ...(windowOf !== undefined ? { contextWindow: windowOf } : {}),
    stream: (request) =>
      Stream.suspend(() => {
        const turn = turns[request.turn - 1]
        if (turn === undefined) return failure(`The log has no turn ${request.turn} (it has ${turns.length})`)
        const data = turn.calls.get(request.call)
        const interrupted = turn.stopReason === "cancelled" || turn.stopReason === undefined
        if (data === undefined) {
          return interrupted
            ? cancelPoint(turn.turn, [])
            : failure(`The log's turn ${turn.turn} has no model call ${request.call}`)
        }
        const parts = partsOf(data)
        switch (data.stop) {
          case "cancelled":
            return cancelPoint(turn.turn, parts)
          case "error": {
            // A failure the log followed with a compaction was a context overflow.
            const overflow = turn.calls.get(request.call + 1)?.compaction !== undefined
            return Stream.fromArray([...parts, {
              _tag: "Failure",
              message: data.error ?? "The logged model call failed",
              retryable: false,
              ...(overflow ? { overflow: true } : {})
            }])
          }
          default:
            return Stream.fromArray([...parts, { _tag: "Finish", stop: data.stop }])
        }
      })
  }
}
