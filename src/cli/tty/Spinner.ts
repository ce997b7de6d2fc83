/**
 * The status line of a running turn, on stderr: a spinner, what Skein waits for, the time the
 * turn has taken and how to interrupt it — `⠹ thinking · 12s · esc to interrupt`. It moves for
 * the whole turn, also while nothing streams (a silent command, a long model call, after text
 * has streamed), and is drawn in the screen's bottom area (`Screen.ts`), so it never lands in
 * the transcript. Only on a terminal, never with `--json`.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Screen from "./Screen.ts"
import * as Terminal from "./Terminal.ts"

export interface Spinner {
  /** A turn starts: the clock starts again from its next frame. */
  readonly reset: () => void
  /** Says what Skein waits for (and shows the line). */
  readonly start: (label: string) => void
  /** Something else takes the bottom of the screen (a question): the line goes until `resume`. */
  readonly stop: () => void
  /** Shows the line again, saying what it said before `stop`. */
  readonly resume: () => void
  /** The turn ended: the line goes, and says nothing until the next `start`. */
  readonly end: () => void
}

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]
const FRAME_MS = 100
/** Frames of silence after which a line left open by output is ended, so the line can be drawn. */
const OPEN_LINE_FRAMES = 10

const none: Spinner = { reset: () => {}, start: () => {}, stop: () => {}, resume: () => {}, end: () => {} }

/** `7s`, `1m 05s`, `1h 02m`. */
const elapsed = (ms: number): string => {
  const s = Math.floor(Math.max(0, ms) / 1000)
  if (s < 60) return `${s}s`
  const m = Math.floor(s / 60)
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, "0")}s`
  return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, "0")}m`
}

/** The status line's text. */
const line = (frame: number, label: string, ms: number, hint: string): string =>
  `${FRAMES[frame % FRAMES.length]} ${label} · ${elapsed(ms)}${hint.length > 0 ? ` · ${hint}` : ""}`

/** A spinner drawing while the scope is open, or `none` when stderr is not a terminal. */
export const make = (enabled: boolean, hint = "esc to interrupt"): Effect.Effect<Spinner, never, Scope.Scope> =>
  Effect.gen(function*() {
    if (!enabled || !Terminal.isTty("err")) return none
    let label: string | undefined
    let shown = false
    let since: number | undefined
    let frame = 0
    let quiet = 0
    Terminal.onAfterWrite(() => {
      quiet = 0
    })
    const tick = Effect.gen(function*() {
      if (label === undefined || !shown) return
      frame++
      quiet++
      // Output left a line open and then went quiet (a command printing a prompt, a progress
      // bar): end the line so the status can be drawn below it.
      if (!Terminal.lineStart("err") && quiet >= OPEN_LINE_FRAMES) Terminal.newline("err")
      const now = yield* Clock.currentTimeMillis
      since ??= now
      const text = line(frame, label, now - since, hint)
      const width = Math.max(10, (process.stderr.columns ?? 80) - 1)
      Screen.set("status", { lines: [Terminal.dim("err", text.length > width ? `${text.slice(0, width - 1)}…` : text)] })
    })
    yield* Effect.forkScoped(Effect.forever(Effect.andThen(Effect.sleep(FRAME_MS), tick)))
    yield* Effect.addFinalizer(() => Effect.sync(() => Screen.set("status", undefined)))
    const hide = () => {
      shown = false
      Screen.set("status", undefined)
    }
    return {
      reset: () => {
        since = undefined
      },
      start: (next) => {
        label = next
        shown = true
      },
      stop: hide,
      resume: () => {
        shown = label !== undefined
      },
      end: () => {
        label = undefined
        hide()
      }
    }
  })
