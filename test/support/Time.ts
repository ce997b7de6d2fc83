/**
 * Time in tests on the `TestClock` (`it.effect`): a sleep ends only when the test moves the
 * clock, and work that needs no time runs when the test yields to it.
 *
 * - `settle` lets in-memory work finish: it yields (each yield is one turn of the event loop)
 *   until a condition holds, a bounded number of times, and says whether it held. Use it where
 *   nothing waits on the disk or a process: the bound is what turns a hang into a failed
 *   assertion.
 * - `advance` moves the clock a step at a time until a condition holds or the time allowed has
 *   passed, and says whether it held. Each step lets the fibers it woke run until they wait
 *   again (`TestClock.adjust` does), so the condition is looked at once per step.
 * - `driven` runs an effect that needs time of its own (a library's timers and retries) to its
 *   end, moving the clock meanwhile.
 */
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/testing/TestClock"

/** Yields to other fibers until `done` holds, at most `rounds` times; whether it holds. */
export const settle = <E, R>(done: Effect.Effect<boolean, E, R>, rounds = 1_000): Effect.Effect<boolean, E, R> =>
  Effect.gen(function*() {
    for (let i = 0; i < rounds; i++) {
      if (yield* done) return true
      yield* Effect.yieldNow
    }
    return yield* done
  })

/** Moves the clock `stepMs` at a time, at most `maxMs` in all, until `done` holds; whether it holds. */
export const advance = <E, R>(
  done: Effect.Effect<boolean, E, R>,
  options: { readonly stepMs: number; readonly maxMs: number }
): Effect.Effect<boolean, E, R> =>
  Effect.gen(function*() {
    for (let passed = 0; passed < options.maxMs; passed += options.stepMs) {
      if (yield* settle(done, 10)) return true
      yield* TestClock.adjust(options.stepMs)
    }
    return yield* settle(done)
  })

/**
 * Runs `effect` to its end, moving the clock `stepMs` at a time meanwhile (at most `maxMs`, then
 * it waits for the effect with the clock still).
 */
export const driven = <A, E, R>(effect: Effect.Effect<A, E, R>, options: { readonly stepMs: number; readonly maxMs: number }): Effect.Effect<A, E, R> =>
  Effect.gen(function*() {
    const fiber = yield* Effect.forkChild(effect, { startImmediately: true })
    yield* advance(Effect.sync(() => fiber.pollUnsafe() !== undefined), options)
    return yield* Fiber.join(fiber)
  })
