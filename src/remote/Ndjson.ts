/**
 * The NDJSON that `SessionRpcs` travels in over a socket, read in one pass: each chunk is
 * searched once for line ends, and the start of a long message is kept in pieces joined once
 * its end comes, however many chunks it arrives in. (effect's `RpcSerialization.ndjson`
 * searched its whole buffer again at every chunk: a message of 16 MiB sent a few bytes at a
 * time cost the server terabytes of scanning, and every other client waited.)
 *
 * A message longer than `maxLine` characters (16 Mi by default) fails the decoder with
 * `MaxBufferSizeExceeded`, which the RPC server answers by closing the connection (1009); what
 * was held of it is dropped at once, so a connection never holds more than that.
 */
import * as Layer from "effect/Layer"
import { RpcSerialization } from "effect/rpc"

/** The longest message, in characters (16 Mi). */
export const DEFAULT_MAX_LINE = 16 * 1024 * 1024

/** The serialization, with its bound on one message. */
export const make = (maxLine: number = DEFAULT_MAX_LINE): RpcSerialization.RpcSerialization["Service"] =>
  RpcSerialization.RpcSerialization.of({
    contentType: "application/x-ndjson",
    includesFraming: true,
    codecFor: RpcSerialization.ndjson.codecFor,
    makeUnsafe: () => {
      // Streaming: a character cut between two chunks is decoded whole.
      const decoder = new TextDecoder()
      /** The start of a message whose end has not come: pieces, joined once it does. */
      let held: Array<string> = []
      let heldLength = 0
      const tooLong = () => {
        held = []
        heldLength = 0
        return new RpcSerialization.MaxBufferSizeExceeded({ maxBufferSize: maxLine })
      }
      return {
        decode: (data) => {
          const text = typeof data === "string" ? data : decoder.decode(data, { stream: true })
          const items: Array<unknown> = []
          let start = 0
          // Only the new text is searched: what is held was searched when it came.
          for (let lf = text.indexOf("\n"); lf !== -1; lf = text.indexOf("\n", start)) {
            if (heldLength + lf - start > maxLine) throw tooLong()
            let line = held.length === 0 ? text.slice(start, lf) : held.join("") + text.slice(start, lf)
            held = []
            heldLength = 0
            start = lf + 1
            if (line.endsWith("\r")) line = line.slice(0, -1)
            if (line.length === 0) continue
            try {
              items.push(JSON.parse(line))
            } catch (cause) {
              throw new RpcSerialization.NdjsonDecodeError({ cause })
            }
          }
          if (start < text.length) {
            heldLength += text.length - start
            if (heldLength > maxLine) throw tooLong()
            held.push(start === 0 ? text : text.slice(start))
          }
          return items
        },
        encode: (message) => {
          if (!Array.isArray(message)) return `${JSON.stringify(message)}\n`
          if (message.length === 0) return undefined
          let out = ""
          for (const item of message) out += `${JSON.stringify(item)}\n`
          return out
        }
      }
    }
  })

export const layer = (maxLine?: number): Layer.Layer<RpcSerialization.RpcSerialization> =>
  Layer.succeed(RpcSerialization.RpcSerialization)(make(maxLine))
