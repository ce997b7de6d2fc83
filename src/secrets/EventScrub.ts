/**
 * The redaction of a session's events, applied where they are emitted: what is
 * logged, folded into the model's history and published (to the client, the
 * terminal, an embedding program) is what comes out of here.
 *
 * Canonical bodies are redacted whole. Streamed text and thinking deltas go
 * through one stream redactor each, so a secret split across deltas is caught;
 * what a stream holds back is published by `flush` before the next canonical
 * event (which the session does), so every delta still comes before the
 * response that sums them up. Other ephemeral bodies are redacted whole.
 */
import type { CanonicalBody, EphemeralBody } from "../log/Event.ts"
import * as Secrets from "./Secrets.ts"

interface EventScrub {
  readonly canonical: <B extends CanonicalBody>(body: B) => B
  /** What to publish for an ephemeral body: usually the body itself, maybe nothing yet, maybe held text first. */
  readonly ephemeral: (body: EphemeralBody) => ReadonlyArray<EphemeralBody>
  /** The text the delta streams hold back, as deltas. */
  readonly flush: () => ReadonlyArray<EphemeralBody>
}

type DeltaType = "text_delta" | "thinking_delta"

export const make = (registry: Secrets.Registry = Secrets.registry()): EventScrub => {
  // Made at the first delta: a session that is only created does not pay for reading the environment.
  let made: Record<DeltaType, ReturnType<Secrets.Registry["stream"]>> | undefined
  const streams = () => (made ??= { text_delta: registry.stream(), thinking_delta: registry.stream() })
  let pending: DeltaType | undefined

  const flushOne = (type: DeltaType, into: Array<EphemeralBody>) => {
    const text = streams()[type].flush()
    if (text.length > 0) into.push({ type, data: { text } })
  }

  const flush = (): ReadonlyArray<EphemeralBody> => {
    if (pending === undefined) return []
    const out: Array<EphemeralBody> = []
    flushOne(pending, out)
    pending = undefined
    return out
  }

  return {
    canonical: (body) => registry.redactDeep(body),
    ephemeral: (body) => {
      // A client call is an operation, not something shown: redacting it would change what it does
      // (a file the editor writes back would lose the secret it holds).
      if (body.type === "client_call") return [body]
      // A child's event was scrubbed by the child that published it.
      if (body.type === "child_event") return [body]
      if (body.type !== "text_delta" && body.type !== "thinking_delta") return [registry.redactDeep(body)]
      // Text and thinking alternate: the other stream's held text comes first.
      const out = pending !== undefined && pending !== body.type ? (flush() as Array<EphemeralBody>) : []
      pending = body.type
      const text = streams()[body.type].push(body.data.text)
      if (text === body.data.text) out.push(body)
      else if (text.length > 0) out.push({ type: body.type, data: { text } })
      return out
    },
    flush
  }
}
