/**
 * An in-memory `Peer.Transport` for tests: push input, end it, and read back
 * everything the peer wrote (raw, per write call, or line by line).
 *
 *   const mt = yield* MemoryTransport.make
 *   const peer = yield* Peer.make(mt.transport)
 *   yield* mt.send({ jsonrpc: "2.0", id: 1, method: "ping" })
 *   const response = yield* mt.next        // waits for the next written line
 *   yield* mt.end                          // input EOF
 */
import { Cause, Effect, Queue, Stream } from "effect"
import type { Transport } from "../../src/jsonrpc/Peer.ts"

export interface MemoryTransport {
  readonly transport: Transport
  /** Writes each message as one JSON line of input (`JSON.stringify` + `\n`). */
  readonly send: (...messages: ReadonlyArray<unknown>) => Effect.Effect<void>
  /** Pushes raw input as it is: text (UTF-8 encoded) or bytes, no newline added. */
  readonly sendRaw: (...chunks: ReadonlyArray<string | Uint8Array>) => Effect.Effect<void>
  /** Ends the input (EOF). */
  readonly end: Effect.Effect<void>
  /** Waits for the next line written by the peer and parses it. */
  readonly next: Effect.Effect<unknown>
  /** Waits for the next line written by the peer, without its `\n`. */
  readonly nextLine: Effect.Effect<string>
  /** Every line written so far, parsed (not consumed by `next`). */
  readonly messages: Effect.Effect<ReadonlyArray<unknown>>
  /** Everything written so far, as raw text. */
  readonly output: Effect.Effect<string>
  /** The chunks passed to each `write` call, in order. */
  readonly writes: Effect.Effect<ReadonlyArray<string>>
}

export const make: Effect.Effect<MemoryTransport> = Effect.gen(function*() {
  const input = yield* Queue.unbounded<Uint8Array, Cause.Done>()
  const lines = yield* Queue.unbounded<string>()
  const encoder = new TextEncoder()
  const writes: Array<string> = []
  const written: Array<string> = []
  let partial = ""

  const write = (chunk: string) =>
    Effect.suspend(() => {
      writes.push(chunk)
      const parts = (partial + chunk).split("\n")
      partial = parts.pop() ?? ""
      for (const line of parts) written.push(line)
      return Queue.offerAll(lines, parts)
    }).pipe(Effect.asVoid)

  const sendRaw = (...chunks: ReadonlyArray<string | Uint8Array>) =>
    Queue.offerAll(input, chunks.map((c) => (typeof c === "string" ? encoder.encode(c) : c))).pipe(Effect.asVoid)

  return {
    transport: { input: Stream.fromQueue(input), write },
    send: (...messages) => sendRaw(messages.map((m) => `${JSON.stringify(m)}\n`).join("")),
    sendRaw,
    end: Effect.asVoid(Queue.end(input)),
    next: Effect.map(Queue.take(lines), (line) => JSON.parse(line) as unknown),
    nextLine: Queue.take(lines),
    messages: Effect.sync(() => written.map((line) => JSON.parse(line) as unknown)),
    output: Effect.sync(() => writes.join("")),
    writes: Effect.sync(() => [...writes])
  }
})
