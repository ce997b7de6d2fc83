/**
 * The process's stdin and stdout as a JSON-RPC transport. stdout is written
 * only here, by the peer's single writer, and each write waits for Node to
 * accept the chunk, so a slow client applies backpressure instead of growing
 * memory.
 */
import * as NodeStream from "@effect/platform-node/NodeStream"
import * as Effect from "effect/Effect"
import type { Transport } from "../jsonrpc/Peer.ts"

export const transport = (
  input: NodeJS.ReadableStream = process.stdin,
  output: NodeJS.WritableStream = process.stdout
): Transport => ({
  input: NodeStream.fromReadable<Uint8Array, unknown>({ evaluate: () => input, onError: (error) => error, closeOnDone: false }),
  write: (chunk) =>
    Effect.callback<void>((resume) => {
      const ok = output.write(chunk, () => {
        if (ok) return
        resume(Effect.void)
      })
      if (ok) resume(Effect.void)
    })
})
