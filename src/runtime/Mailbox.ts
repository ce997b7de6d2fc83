/**
 * The order of a session's turns, as a pure step: which prompt runs when, what a cancel
 * stops, when the next turn may start. The actor (`Session.ts`) feeds it its messages and
 * carries out what comes back; tests drive it directly.
 *
 * - Prompts run one at a time, in the order they were accepted.
 * - A turn is over when its loop is done *and* its presenter has let go (a presenter that runs
 *   the turn's stream lets go when the stream ends; a turn nobody presents has nobody to wait
 *   for). So whoever presents a turn finishes presenting it before the next one begins.
 * - A cancel interrupts the running turn and every prompt accepted before it: those start
 *   already cancelled (they end at once, as `cancelled`). Prompts accepted after it run.
 * - A presenter that lets go of a turn still queued leaves it unpresented: it still runs.
 */
import type { Capabilities } from "../session/Protocol.ts"
import type { UserBlock } from "../Vocabulary.ts"

export interface Queued {
  readonly turn: number
  readonly content: ReadonlyArray<UserBlock>
  /** Whether someone presents it (runs its stream): then its questions wait for answers. */
  readonly presented: boolean
  readonly client?: Capabilities | undefined
  readonly by?: string | undefined
  readonly key?: string | undefined
  /** The caller's trace context (W3C `traceparent`), the parent of the turn's span. */
  readonly traceparent?: string | undefined
  /** The cancel epoch it was accepted in: older than the state's means cancelled. */
  readonly epoch: number
}

interface Running {
  readonly turn: number
  readonly presented: boolean
  /** Its loop has ended (`turn_end` logged). */
  readonly done: boolean
}

export interface State {
  /** Turns accepted so far (the last turn number given out). */
  readonly accepted: number
  readonly epoch: number
  readonly queue: ReadonlyArray<Queued>
  readonly running: Running | undefined
}

export type Input =
  | {
    readonly _tag: "Submit"
    readonly content: ReadonlyArray<UserBlock>
    readonly presented: boolean
    readonly client?: Capabilities | undefined
    readonly by?: string | undefined
    readonly key?: string | undefined
    readonly traceparent?: string | undefined
  }
  | { readonly _tag: "Cancel" }
  /** The turn's loop ended. */
  | { readonly _tag: "TurnDone"; readonly turn: number }
  /** The turn's presenter let go of it. */
  | { readonly _tag: "Released"; readonly turn: number }

export type Output =
  /** The answer to a Submit: the turn number it was given. */
  | { readonly _tag: "Accepted"; readonly turn: number }
  /** Start this turn now; `cancelled` when a cancel came after it was accepted. */
  | { readonly _tag: "Start"; readonly turn: Queued; readonly cancelled: boolean }
  /** Interrupt the running turn's loop. */
  | { readonly _tag: "Interrupt"; readonly turn: number }
  /** The running turn's presenter left before it ended: its open questions go unanswered. */
  | { readonly _tag: "Abandoned"; readonly turn: number }

export const initial = (turnsSoFar: number): State => ({ accepted: turnsSoFar, epoch: 0, queue: [], running: undefined })

/** Starts the next queued turn when nothing runs. */
const next = (state: State): readonly [State, ReadonlyArray<Output>] => {
  if (state.running !== undefined || state.queue.length === 0) return [state, []]
  const [head, ...rest] = state.queue
  return [
    { ...state, queue: rest, running: { turn: head!.turn, presented: head!.presented, done: false } },
    [{ _tag: "Start", turn: head!, cancelled: head!.epoch < state.epoch }]
  ]
}

/** A turn is over once its loop is done and nobody presents it any more. */
const settle = (state: State): readonly [State, ReadonlyArray<Output>] =>
  state.running !== undefined && state.running.done && !state.running.presented ? next({ ...state, running: undefined }) : [state, []]

export const step = (state: State, input: Input): readonly [State, ReadonlyArray<Output>] => {
  switch (input._tag) {
    case "Submit": {
      const turn = state.accepted + 1
      const queued: Queued = {
        turn,
        content: input.content,
        presented: input.presented,
        ...(input.client !== undefined ? { client: input.client } : {}),
        ...(input.by !== undefined ? { by: input.by } : {}),
        ...(input.key !== undefined ? { key: input.key } : {}),
        ...(input.traceparent !== undefined ? { traceparent: input.traceparent } : {}),
        epoch: state.epoch
      }
      const [after, outputs] = next({ ...state, accepted: turn, queue: [...state.queue, queued] })
      return [after, [{ _tag: "Accepted", turn }, ...outputs]]
    }
    case "Cancel": {
      const running = state.running
      return [
        { ...state, epoch: state.epoch + 1 },
        running !== undefined && !running.done ? [{ _tag: "Interrupt", turn: running.turn }] : []
      ]
    }
    case "TurnDone":
      return state.running?.turn === input.turn ? settle({ ...state, running: { ...state.running, done: true } }) : [state, []]
    case "Released": {
      const running = state.running
      if (running?.turn === input.turn) {
        if (!running.presented) return [state, []]
        const [after, outputs] = settle({ ...state, running: { ...running, presented: false } })
        return [after, running.done ? outputs : [{ _tag: "Abandoned", turn: running.turn }, ...outputs]]
      }
      const queue = state.queue.map((q) => (q.turn === input.turn ? { ...q, presented: false } : q))
      return [{ ...state, queue }, []]
    }
  }
}

/** Whether nothing runs or waits. */
export const idle = (state: State): boolean => state.running === undefined && state.queue.length === 0
