/**
 * Checkpoints of a model call's streamed text: what the user has seen is logged as the call
 * goes (`model_partial`), so that a crash (`kill -9`, a power cut after the next sync) loses at
 * most the last moments of it, not the whole answer.
 *
 * The rate is bounded, so a fast stream costs a few appends, not one per delta: a checkpoint
 * is logged once `CHECKPOINT_CHARS` of new text are pending, or `CHECKPOINT_MS` after the
 * first delta that is not logged yet. Each holds only the text that came since the previous
 * one. Never synced by itself: the turn's end syncs the log. A call that ends quickly logs
 * none: its `model_response` holds everything.
 *
 * The call's `model_response` supersedes its checkpoints, and is logged before any of its
 * tool calls runs or asks for permission; the model call's scope stops the timer first, so no
 * checkpoint is logged after it.
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import type { CanonicalBody } from "../log/Event.ts"
import type { AssistantPart } from "../Vocabulary.ts"
import type { LogError } from "../log/LogError.ts"

/** At most this long between a delta and the checkpoint that logs it. */
const CHECKPOINT_MS = 500
/** Or as soon as this many characters are pending. */
export const CHECKPOINT_CHARS = 8 * 1024

type PartialPart = Extract<AssistantPart, { readonly type: "text" | "thinking" }>

export interface Checkpoints {
  /**
   * After a delta of streamed text (or thinking) was added to the call's parts: the checkpoint
   * due now (or the timer to start), or undefined when there is nothing to do (most deltas).
   */
  readonly streamed: (type: PartialPart["type"], text: string, signature?: string) => Effect.Effect<void> | undefined
  /** Ends the text not logged yet at a tool call, so what follows it is a new part. */
  readonly toolCall: () => void
}

/**
 * Checkpoints of call `call`. The text not logged yet is kept here, delta by delta, and joined
 * once per checkpoint: a long answer costs its length, not its length for each checkpoint.
 * The timer lives in the scope: close it before the call's `model_response` is logged.
 */
export const make = (
  call: number,
  log: (body: CanonicalBody) => Effect.Effect<void, LogError>
): Effect.Effect<Checkpoints, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const serial = yield* Semaphore.make(1)
    /** The parts not logged yet, each as its deltas. */
    let pending: Array<{ readonly type: PartialPart["type"]; readonly chunks: Array<string>; signature: string | undefined; split: boolean }> = []
    let chars = 0
    let timed = false

    const take = (): Array<PartialPart> => {
      const out = pending.map((part): PartialPart => {
        const text = part.chunks.join("")
        return part.type === "thinking" && part.signature !== undefined ? { type: "thinking", text, signature: part.signature } : { type: part.type, text }
      })
      pending = []
      chars = 0
      return out
    }

    // Serialized: two checkpoints never log out of order. A failed append is left to the
    // call's model_response to report; a checkpoint is a safety net, not the record.
    const flush = serial.withPermits(1)(Effect.suspend(() => {
      const taken = take()
      return taken.length === 0 ? Effect.void : Effect.ignore(log({ type: "model_partial", data: { call, parts: taken } }))
    }))

    const timer = Effect.andThen(
      Effect.sleep(CHECKPOINT_MS),
      Effect.suspend(() => {
        timed = false
        return chars > 0 ? flush : Effect.void
      })
    )

    const streamed = (type: PartialPart["type"], text: string, signature?: string): Effect.Effect<void> | undefined => {
      const last = pending[pending.length - 1]
      if (last !== undefined && last.type === type && !last.split) {
        last.chunks.push(text)
        if (signature !== undefined) last.signature = signature
      } else {
        pending.push({ type, chunks: [text], signature, split: false })
      }
      chars += text.length
      if (chars >= CHECKPOINT_CHARS) return flush
      if (timed) return undefined
      timed = true
      return Effect.asVoid(Effect.forkIn(timer, scope))
    }

    const toolCall = () => {
      const last = pending[pending.length - 1]
      if (last !== undefined) last.split = true
    }

    return { streamed, toolCall }
  })
