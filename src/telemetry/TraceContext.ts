/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` value a client
 * sends (`_meta.traceparent` on `session/prompt`, ACP's telemetry RFD) so that a turn's spans
 * continue its trace, and the one Skein passes on (a child session's turn continues its
 * parent's). Pure; anything malformed is ignored (the turn starts its own trace).
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

export interface Parent {
  readonly traceId: string
  readonly spanId: string
  readonly sampled: boolean
}

// version - trace-id - parent-id - flags; a later version may add fields after the flags.
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/

/** The parent a `traceparent` names, or `undefined` when it is not a valid one. */
export const parse = (value: unknown): Parent | undefined => {
  if (typeof value !== "string" || value.length > 512) return undefined
  const match = TRACEPARENT.exec(value.trim())
  if (match === null) return undefined
  const [, version, traceId, spanId, flags, rest] = match
  // "ff" is forbidden; version 00 has exactly four fields.
  if (version === "ff" || (version === "00" && rest !== undefined)) return undefined
  if (/^0+$/.test(traceId!) || /^0+$/.test(spanId!)) return undefined
  return { traceId: traceId!, spanId: spanId!, sampled: (parseInt(flags!, 16) & 1) === 1 }
}

/** The `traceparent` of a span (version 00). */
export const format = (span: Parent): string => `00-${span.traceId}-${span.spanId}-${span.sampled ? "01" : "00"}`

/** The `traceparent` of the current span, if there is one. */
export const current: Effect.Effect<string | undefined> = Effect.map(
  Effect.option(Effect.currentParentSpan),
  Option.match({ onNone: () => undefined, onSome: (span) => format(span) })
)
