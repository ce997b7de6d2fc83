/**
 * A spinner on stderr while Skein waits: for the model's first token, for the next model call
 * between tool calls, for a command that prints nothing. Only on a terminal, never with
 * `--json`, and only at the start of a line; it is erased before anything else is written, so
 * it never lands in the transcript.
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Terminal from "./Terminal.ts"

export interface Spinner {
  /** Shows the spinner with this label (from the next frame on). */
  readonly start: (label: string) => void
  readonly stop: () => void
}

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]
const FRAME_MS = 80

export const none: Spinner = { start: () => {}, stop: () => {} }

/** A spinner that draws while the scope is open, or `none` when stderr is not a terminal. */
export const make = (enabled: boolean): Effect.Effect<Spinner, never, Scope.Scope> =>
  Effect.gen(function*() {
    if (!enabled || !Terminal.isTty("err")) return none
    let label: string | undefined
    let drawn = false
    let frame = 0
    const clear = () => {
      if (!drawn) return
      drawn = false
      Terminal.overlay("\r\x1b[K")
    }
    Terminal.onBeforeWrite(clear)
    const tick = Effect.sync(() => {
      if (label === undefined || !Terminal.lineStart("err")) return
      frame = (frame + 1) % FRAMES.length
      // Kept to one row: a wrapped line could not be erased.
      const width = Math.max(10, (process.stderr.columns ?? 80) - 1)
      const text = `${FRAMES[frame]} ${label}`
      Terminal.overlay(`\r\x1b[K${Terminal.dim("err", text.length > width ? `${text.slice(0, width - 1)}…` : text)}`)
      drawn = true
    })
    yield* Effect.forkScoped(Effect.forever(Effect.andThen(Effect.sleep(FRAME_MS), tick)))
    yield* Effect.addFinalizer(() => Effect.sync(clear))
    return {
      start: (next) => {
        label = next
      },
      stop: () => {
        label = undefined
        clear()
      }
    }
  })
