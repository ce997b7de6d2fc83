/**
 * The CLI bundles answer two of Effect's load-time stack probes at build time instead of
 * formatting a stack trace at every start (scripts/build.mjs, V8_STACK_PROBES): `internalCall` is
 * the plain call, and continuation frames show their property name. This checks that the Node
 * running the tests (V8) answers the probes that way, with the probes as Effect writes them.
 */
import { assert, describe, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"

const effectDist = path.dirname(createRequire(import.meta.url).resolve("effect/Utils"))

const withLimit = <A>(limit: number, f: () => A): A => {
  const before = Error.stackTraceLimit
  Error.stackTraceLimit = limit
  try {
    return f()
  } finally {
    Error.stackTraceLimit = before
  }
}

describe("Effect's stack probes, as the build answers them", () => {
  it("a call through a method named by a computed key shows that key in the stack (effect/Utils: internalCall)", () => {
    const InternalTypeId = "~effect/Utils/internal"
    const standard = { [InternalTypeId]: <A>(body: () => A): A => body() }
    const error = withLimit(2, () => standard[InternalTypeId](() => new Error()))
    assert.isTrue(error.stack?.includes(InternalTypeId) === true)
  })

  it("a method whose name differs from its key is printed `[as key]` (effect/internal/effect: continuationMarksStack)", () => {
    const marker = "~effect/Effect/stackProbe"
    const probe = {
      [marker]: function stackProbe() {
        return new Error()
      }
    }
    const error = withLimit(1, () => probe[marker]())
    assert.isTrue(error.stack?.includes("[as " + marker + "]") === true)
  })

  it("the probes are still written as the build expects", () => {
    assert.include(readFileSync(path.join(effectDist, "Utils.js"), "utf8"), "return error.stack?.includes(InternalTypeId) === true ? standard[InternalTypeId] : forced[InternalTypeId];")
    assert.include(readFileSync(path.join(effectDist, "internal", "effect.js"), "utf8"), `return error.stack?.includes("[as " + marker + "]") === true;`)
  })
})
