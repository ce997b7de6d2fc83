import { describe, expect, it } from "vitest"
import * as SessionId from "../../src/runtime/SessionId.ts"

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

describe("session ids", () => {
  it("formats 16 bytes as a version 4 UUID", () => {
    expect(SessionId.fromBytes(new Uint8Array(16).fill(0xff))).toBe("ffffffff-ffff-4fff-bfff-ffffffffffff")
    expect(SessionId.fromBytes(new Uint8Array(16))).toBe("00000000-0000-4000-8000-000000000000")
    expect(SessionId.fromBytes(Uint8Array.from({ length: 16 }, (_, i) => i))).toBe("00010203-0405-4607-8809-0a0b0c0d0e0f")
  })

  it("are version 4 UUIDs, all different, across many batches of random bytes", () => {
    const ids = Array.from({ length: 1_000 }, () => SessionId.make())
    for (const id of ids) expect(id).toMatch(UUID_V4)
    expect(new Set(ids).size).toBe(ids.length)
  })
})
