/**
 * A session's ceiling, pure: a child never goes beyond its parent as the parent is now,
 * read-only is inherited and never lifted, an ancestor's rejections hold below it, and only
 * calls that look are let through where nothing may change.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import type { PermissionRule } from "../../src/log/Event.ts"
import * as Ceiling from "../../src/tools/Ceiling.ts"
import { type ModeId, modes, ToolKind } from "../../src/Vocabulary.ts"

const mode = fc.constantFrom(...modes.map((m) => m.id))
const reject = (value: string): PermissionRule => ({ decision: "reject", kind: "command", value, label: value })
const allow = (value: string): PermissionRule => ({ decision: "allow", kind: "command", value, label: value })

/** A chain of sessions from the top, each with its own mode and agent. */
const chain = (links: ReadonlyArray<{ readonly mode: ModeId; readonly readOnly: boolean }>) =>
  links.reduce<Ceiling.Ceiling | undefined>((above, link) => Ceiling.under({ ...link, rules: [] }, above), undefined)!

describe("Ceiling", () => {
  it("a top-level session's ceiling is its own mode", () => {
    assert.deepStrictEqual(Ceiling.under({ mode: "acceptEdits", rules: [allow("npm test")] }, undefined), { mode: "acceptEdits", readOnly: false, rejects: [] })
  })

  it("a descendant's mode is never broader than any ancestor's, nor than its own", () =>
    fc.assert(fc.property(fc.array(fc.record({ mode, readOnly: fc.boolean() }), { minLength: 1, maxLength: 6 }), (links) => {
      const ceiling = chain(links)
      for (const link of links) assert.isFalse(Ceiling.broader(ceiling.mode, link.mode))
      // The narrowest of them, exactly.
      assert.strictEqual(Ceiling.REACH[ceiling.mode], Math.min(...links.map((l) => Ceiling.REACH[l.mode])))
      // Read-only anywhere above (or here) is read-only here.
      assert.strictEqual(ceiling.readOnly, links.some((l) => l.readOnly))
      assert.strictEqual(Ceiling.mayChange(ceiling), !ceiling.readOnly && ceiling.mode !== "plan")
    })))

  it("a parent narrowed to plan holds its child; broadened again, the child has no more than it started with", () => {
    let parent: ModeId = "bypassPermissions"
    const child = () => Ceiling.under({ mode: "bypassPermissions", rules: [] }, Ceiling.under({ mode: parent, rules: [] }, undefined))
    assert.strictEqual(child().mode, "bypassPermissions")
    parent = "plan"
    assert.strictEqual(child().mode, "plan")
    assert.isFalse(Ceiling.mayChange(child()))
    parent = "default"
    assert.strictEqual(child().mode, "default")
  })

  it("an ancestor's rejections hold below it; its allowances do not", () => {
    const top = Ceiling.under({ mode: "default", rules: [allow("npm test"), reject("rm")] }, undefined)
    const child = Ceiling.under({ mode: "default", rules: [reject("curl")] }, top)
    assert.deepStrictEqual(child.rejects, [reject("rm"), reject("curl")])
  })

  it("only calls that look are let through where nothing may change; an external agent is refused", () => {
    const looking = ToolKind.literals.filter(Ceiling.onlyLooks)
    assert.deepStrictEqual([...looking].sort(), ["fetch", "read", "search", "think"])
    assert.isUndefined(Ceiling.refusesExternal({ mode: "default", readOnly: false }, "codex"))
    assert.include(Ceiling.refusesExternal({ mode: "plan", readOnly: false }, "codex"), "plan mode")
    assert.include(Ceiling.refusesExternal({ mode: "bypassPermissions", readOnly: true }, "codex"), "read-only")
  })
})
