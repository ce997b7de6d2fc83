/**
 * A bounded view of a command's output: the first `headBytes` and the last
 * `tailBytes` are kept, the middle is counted and dropped. Memory stays fixed
 * whatever the command prints (two preallocated arrays, the tail a ring).
 *
 * Bytes are kept, not text, and decoded only when rendered, so a UTF-8
 * character split across chunks is never mangled; at the cut points a
 * partial character is dropped (and counted) rather than shown as U+FFFD.
 */

interface Rendered {
  readonly text: string
  readonly truncated: boolean
  /** Bytes dropped from the middle (0 when nothing was dropped). */
  readonly omitted: number
  readonly totalBytes: number
}

export interface OutputBuffer {
  readonly push: (chunk: Uint8Array) => void
  /** Incremented at every push that carried bytes: a cheap "changed?" test. */
  readonly version: () => number
  readonly totalBytes: () => number
  readonly render: () => Rendered
}

export const DEFAULT_HEAD_BYTES = 32 * 1024
export const DEFAULT_TAIL_BYTES = 32 * 1024

const isContinuation = (byte: number): boolean => (byte & 0b1100_0000) === 0b1000_0000

/** Length of `bytes` without a trailing incomplete UTF-8 sequence. */
const completePrefix = (bytes: Uint8Array): number => {
  const end = bytes.length
  let i = end - 1
  // Walk back over at most 3 continuation bytes to the lead byte.
  while (i >= 0 && end - i <= 4 && isContinuation(bytes[i]!)) i--
  if (i < 0) return end
  const lead = bytes[i]!
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1
  return end - i < need ? i : end
}

/** Index of the first byte that starts a character (skips up to 3 orphan continuation bytes). */
const firstBoundary = (bytes: Uint8Array): number => {
  let i = 0
  while (i < bytes.length && i < 3 && isContinuation(bytes[i]!)) i++
  return i
}

const decode = (bytes: Uint8Array): string => new TextDecoder("utf-8").decode(bytes)

export const omittedMarker = (bytes: number): string => `\n… ${bytes} bytes omitted …\n`

export const make = (headBytes: number = DEFAULT_HEAD_BYTES, tailBytes: number = DEFAULT_TAIL_BYTES): OutputBuffer => {
  const head = new Uint8Array(headBytes)
  const tail = new Uint8Array(tailBytes)
  let headLength = 0
  /** Next write position in the ring, and how much of it is filled. */
  let tailPos = 0
  let tailLength = 0
  let total = 0
  let version = 0

  const pushTail = (chunk: Uint8Array) => {
    if (tailBytes === 0 || chunk.length === 0) return
    const bytes = chunk.length > tailBytes ? chunk.subarray(chunk.length - tailBytes) : chunk
    const first = Math.min(bytes.length, tailBytes - tailPos)
    tail.set(bytes.subarray(0, first), tailPos)
    if (first < bytes.length) tail.set(bytes.subarray(first), 0)
    tailPos = (tailPos + bytes.length) % tailBytes
    tailLength = Math.min(tailBytes, tailLength + bytes.length)
  }

  const tailBytesInOrder = (): Uint8Array => {
    if (tailLength < tailBytes) return tail.subarray(0, tailLength)
    const out = new Uint8Array(tailBytes)
    out.set(tail.subarray(tailPos), 0)
    out.set(tail.subarray(0, tailPos), tailBytes - tailPos)
    return out
  }

  return {
    push: (chunk) => {
      if (chunk.length === 0) return
      total += chunk.length
      version++
      const room = headBytes - headLength
      if (room > 0) {
        const taken = Math.min(room, chunk.length)
        head.set(chunk.subarray(0, taken), headLength)
        headLength += taken
        pushTail(chunk.subarray(taken))
      } else {
        pushTail(chunk)
      }
    },
    version: () => version,
    totalBytes: () => total,
    render: () => {
      const tailPart = tailBytesInOrder()
      const dropped = total - headLength - tailPart.length
      if (dropped === 0) {
        // Nothing lost: head and tail are contiguous, decode them as one.
        const all = new Uint8Array(headLength + tailPart.length)
        all.set(head.subarray(0, headLength), 0)
        all.set(tailPart, headLength)
        return { text: decode(all), truncated: false, omitted: 0, totalBytes: total }
      }
      const headEnd = completePrefix(head.subarray(0, headLength))
      const tailStart = firstBoundary(tailPart)
      const omitted = dropped + (headLength - headEnd) + tailStart
      const text = decode(head.subarray(0, headEnd)) + omittedMarker(omitted) + decode(tailPart.subarray(tailStart))
      return { text, truncated: true, omitted, totalBytes: total }
    }
  }
}

/** Bounds a string already in memory (e.g. a client terminal's output) the same way. */
export const boundString = (text: string, headBytes: number = DEFAULT_HEAD_BYTES, tailBytes: number = DEFAULT_TAIL_BYTES): Rendered => {
  const buffer = make(headBytes, tailBytes)
  buffer.push(new TextEncoder().encode(text))
  return buffer.render()
}
