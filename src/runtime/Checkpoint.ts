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
import type { AssistantPart, CanonicalBody } from "../log/Event.ts"
import type { LogError } from "../log/SessionLog.ts"

/** At most this long between a delta and the checkpoint that logs it. */
export const CHECKPOINT_MS = 500
/** Or as soon as this many characters are pending. */
export const CHECKPOINT_CHARS = 8 * 1024

type PartialPart = Extract<AssistantPart, { readonly type: "text" | "thinking" }>

export interface Checkpoints {
  /**
   * After `chars` of streamed text were added to the parts: the checkpoint due now (or the
   * timer to start), or undefined when there is nothing to do (most deltas).
   */
  readonly streamed: (chars: number) => Effect.Effect<void> | undefined
}

/**
 * Checkpoints of call `call`, whose parts the stream builds in `parts` (read, never written).
 * The timer lives in the scope: close it before the call's `model_response` is logged.
 */
export const make = (
  call: number,
  parts: ReadonlyArray<AssistantPart>,
  log: (body: CanonicalBody) => Effect.Effect<void, LogError>
): Effect.Effect<Checkpoints, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const serial = yield* Semaphore.make(1)
    // Where the text not yet logged starts: part `index`, from its character `offset`.
    let index = 0
    let offset = 0
    let pending = 0
    let timed = false

    /** The text since the last checkpoint, and the new start. */
    const take = (): Array<PartialPart> => {
      const out: Array<PartialPart> = []
      for (let i = index; i < parts.length; i++) {
        const part = parts[i]!
        if (part.type === "tool_call") continue
        const text = i === index ? part.text.slice(offset) : part.text
        if (text.length === 0) continue
        out.push(part.type === "thinking" && part.signature !== undefined ? { type: "thinking", text, signature: part.signature } : { type: part.type, text })
      }
      const last = parts[parts.length - 1]
      index = last === undefined ? 0 : last.type === "tool_call" ? parts.length : parts.length - 1
      offset = last === undefined || last.type === "tool_call" ? 0 : last.text.length
      pending = 0
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
        return pending > 0 ? flush : Effect.void
      })
    )

    const streamed = (chars: number): Effect.Effect<void> | undefined => {
      pending += chars
      if (pending >= CHECKPOINT_CHARS) return flush
      if (timed) return undefined
      timed = true
      return Effect.asVoid(Effect.forkIn(timer, scope))
    }

    return { streamed }
  })
