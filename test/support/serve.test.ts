/**
 * `freePort` never hands out the same port twice in a process: a test that picks a runner's
 * and a server's port before either listens (test/e2e/cluster.test.ts) gets two.
 */
import { describe, expect, it } from "vitest"
import { freePort } from "./Serve.ts"

/** A random source that gives `values`, then Math.random's. */
const drawing = (...values: Array<number>) => () => values.shift() ?? Math.random()

describe("freePort", () => {
  it("never gives a port it gave before, even when the random draw repeats", () => {
    const first = freePort(drawing(0.5))
    const second = freePort(drawing(0.5, 0.25))
    expect(second).not.toBe(first)
    expect([first, second].every((port) => port >= 1_024 && port < 65_536)).toBe(true)
  })
})
