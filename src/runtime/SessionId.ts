/**
 * Session ids: random (version 4) UUIDs. The bytes come from /dev/urandom where there is one:
 * the first `crypto.randomUUID()` loads Node's Web Crypto modules, about 3 ms of a session's
 * start. Bytes are read 64 ids at a time, as Node's own `randomUUID` caches them; elsewhere,
 * or if the device cannot be read, `crypto.randomUUID()` it is.
 */
import * as NodeFs from "node:fs"

const BATCH = 16 * 64
let pool: Buffer | undefined
let offset = BATCH

const readUrandom = (): Buffer | undefined => {
  if (process.platform === "win32") return undefined
  try {
    const fd = NodeFs.openSync("/dev/urandom", "r")
    try {
      const bytes = Buffer.allocUnsafe(BATCH)
      let read = 0
      while (read < BATCH) {
        const n = NodeFs.readSync(fd, bytes, read, BATCH - read, null)
        if (n <= 0) return undefined
        read += n
      }
      return bytes
    } finally {
      NodeFs.closeSync(fd)
    }
  } catch {
    return undefined
  }
}

/** Formats 16 random bytes as a version 4, variant 1 UUID. */
export const fromBytes = (bytes: Uint8Array): string => {
  const b = Array.from(bytes.subarray(0, 16))
  b[6] = (b[6]! & 0x0f) | 0x40
  b[8] = (b[8]! & 0x3f) | 0x80
  const hex = b.map((x) => x.toString(16).padStart(2, "0")).join("")
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

export const make = (): string => {
  if (offset >= BATCH) {
    pool = readUrandom()
    offset = 0
  }
  if (pool === undefined) return crypto.randomUUID()
  const id = fromBytes(pool.subarray(offset, offset + 16))
  offset += 16
  return id
}
