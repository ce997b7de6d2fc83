/**
 * Retrying a model call, only while nothing of it has reached the client.
 *
 * An attempt is a stream of parts that may fail with a `ProviderError`. While
 * no part has been emitted downstream, a retryable error (429, 5xx, network,
 * idle timeout) starts a new attempt after a backoff: exponential with jitter,
 * or what the provider asked for in `retry-after` (capped). Once a part went
 * out, a failure ends the stream as its last part, `Failure`, so text already
 * shown is never sent twice.
 */
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import * as Stream from "effect/Stream"
import type { ProviderError } from "./Errors.ts"
import type { StreamPart } from "./Provider.ts"

export interface Policy {
  /** Attempts in all, the first included. */
  readonly maxAttempts: number
  readonly baseDelayMs: number
  readonly maxDelayMs: number
  /** A `retry-after` longer than this is not waited for: the call fails and says how long to wait. */
  readonly maxRetryAfterMs: number
}

export const defaultPolicy: Policy = { maxAttempts: 4, baseDelayMs: 1_000, maxDelayMs: 16_000, maxRetryAfterMs: 60_000 }

/** The pause before attempt `attempt + 1`: what the provider asked, else exponential with equal jitter. */
export const delayMs = (policy: Policy, attempt: number, error: ProviderError): Effect.Effect<number> =>
  error.retryAfterMs !== undefined
    ? Effect.succeed(Math.max(0, error.retryAfterMs))
    : Effect.map(Random.next, (r) => {
      const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1))
      return Math.round(ceiling / 2 + r * ceiling / 2)
    })

const canRetry = (policy: Policy, attempt: number, error: ProviderError) =>
  error.retryable && attempt < policy.maxAttempts && (error.retryAfterMs === undefined || error.retryAfterMs <= policy.maxRetryAfterMs)

/** The user-facing text of the error that ended the call. */
const finalMessage = (policy: Policy, attempt: number, error: ProviderError): string => {
  if (error.retryAfterMs !== undefined && error.retryAfterMs > policy.maxRetryAfterMs) {
    return `${error.message} (The provider asks to wait ${Math.ceil(error.retryAfterMs / 1000)} s before trying again.)`
  }
  return attempt > 1 ? `${error.message} (Gave up after ${attempt} attempts.)` : error.message
}

/**
 * Runs `attempt(1)`, `attempt(2)`… as described above. The result never fails:
 * its last part is `Finish` or `Failure`. A defect in an attempt also becomes
 * a `Failure`; interruption propagates.
 */
export const stream = (
  policy: Policy,
  attempt: (n: number) => Stream.Stream<StreamPart, ProviderError>,
  onRetry: (n: number, error: ProviderError, waitMs: number) => Effect.Effect<void> = () => Effect.void
): Stream.Stream<StreamPart> =>
  Stream.suspend(() => {
    let emitted = false
    const loop = (n: number): Stream.Stream<StreamPart> =>
      attempt(n).pipe(
        Stream.mapArray((parts) => {
          emitted = true
          return parts
        }),
        Stream.catch((error: ProviderError): Stream.Stream<StreamPart> =>
          !emitted && canRetry(policy, n, error)
            ? Stream.unwrap(Effect.gen(function*() {
              const wait = yield* delayMs(policy, n, error)
              yield* onRetry(n, error, wait)
              yield* Effect.sleep(wait)
              return loop(n + 1)
            }))
            : Stream.succeed({
              _tag: "Failure",
              message: finalMessage(policy, n, error),
              retryable: error.retryable,
              ...(error.reason === "context_overflow" ? { overflow: true } : {})
            })
        )
      )
    return loop(1).pipe(
      Stream.catchDefect((defect) =>
        Stream.unwrap(Effect.as(
          Effect.logError("a provider stream failed unexpectedly", defect),
          Stream.succeed<StreamPart>({ _tag: "Failure", message: "The model call failed inside Skein (see the log on stderr).", retryable: false })
        ))
      )
    )
  })
