/**
 * The permission policy with the sandbox (pure): where a command runs decides whether it is
 * asked for, in every mode.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Placement } from "../../src/tools/Sandboxed.ts"
import { bash } from "../../src/tools/bash.ts"
import * as Permissions from "../../src/tools/Permissions.ts"
import { write } from "../../src/tools/write.ts"
import type { ModeId } from "../../src/Vocabulary.ts"

const inside: Placement = { _tag: "inside" }
const requested: Placement = { _tag: "outside", why: "requested" }
const unavailable: Placement = { _tag: "outside", why: "unavailable", reason: "no bwrap" }
const off: Placement = { _tag: "outside", why: "off" }
const refused: Placement = { _tag: "refused", reason: "The sandbox is required here: no command runs outside it." }

const decide = (mode: ModeId, placement: Placement | undefined, options: { readonly command?: string; readonly reason?: string; readonly readOnly?: boolean; readonly rules?: ReadonlyArray<Permissions.Rule> } = {}) => {
  const command = options.command ?? "npm test"
  return Permissions.decide({
    mode,
    rules: options.rules ?? [],
    tool: bash,
    args: { command },
    cwd: "/w",
    command,
    readOnlyCommand: options.readOnly,
    placement,
    outsideReason: options.reason
  })
}

describe("Permissions with the sandbox", () => {
  it("a sandboxed command runs without a question in default and acceptEdits, as before in bypassPermissions", () => {
    for (const mode of ["default", "acceptEdits", "bypassPermissions"] as const) assert.deepStrictEqual(decide(mode, inside), { _tag: "allow" }, mode)
  })

  it("without a sandbox (off, or none here) commands are asked for as before", () => {
    for (const placement of [off, unavailable, undefined]) {
      assert.strictEqual(decide("default", placement)._tag, "ask")
      assert.strictEqual(decide("acceptEdits", placement)._tag, "ask")
      assert.deepStrictEqual(decide("bypassPermissions", placement), { _tag: "allow" })
    }
  })

  it("a reject rule still refuses a sandboxed command", () => {
    const rules: ReadonlyArray<Permissions.Rule> = [{ decision: "reject", kind: "command", value: "npm test", label: "`npm test`" }]
    assert.strictEqual(decide("default", inside, { rules })._tag, "deny")
  })

  it("sandbox: false always asks, bypassPermissions included, with no 'always'; it needs a reason; plan refuses it", () => {
    for (const mode of ["default", "acceptEdits", "bypassPermissions"] as const) {
      const verdict = decide(mode, requested, { reason: "needs the network" })
      assert.strictEqual(verdict._tag, "ask", mode)
      assert.isTrue(verdict._tag === "ask" && verdict.outside === true)
      assert.strictEqual(decide(mode, requested)._tag, "deny")
    }
    // An allow rule for the command does not cover running it outside.
    const rules: ReadonlyArray<Permissions.Rule> = [{ decision: "allow", kind: "command", value: "npm test", label: "`npm test`" }]
    assert.strictEqual(decide("default", requested, { reason: "x", rules })._tag, "ask")
    assert.strictEqual(decide("plan", requested, { reason: "x" })._tag, "deny")
    assert.deepStrictEqual(Permissions.outsideOptions.map((o) => o.optionId), ["allow_once", "reject_once"])
    assert.include(Permissions.outsideTitle("`npm i`", "fetch packages"), "OUTSIDE the sandbox")
  })

  it("the sandbox required and unable refuses in every mode, without a question", () => {
    for (const mode of ["default", "acceptEdits", "bypassPermissions", "plan"] as const) {
      assert.deepStrictEqual(decide(mode, refused), { _tag: "deny", reason: "The sandbox is required here: no command runs outside it." })
    }
  })

  it("plan mode: read-only commands run sandboxed (read-only), nothing else, and nothing unsandboxed", () => {
    assert.deepStrictEqual(decide("plan", inside, { command: "ls", readOnly: true }), { _tag: "allow", readOnly: true })
    assert.strictEqual(decide("plan", inside, { command: "npm test" })._tag, "deny")
    assert.strictEqual(decide("plan", unavailable, { command: "ls", readOnly: true })._tag, "deny")
    assert.strictEqual(decide("plan", off, { command: "ls", readOnly: true })._tag, "deny")
  })

  it("edits are not commands: the sandbox does not change how they are asked for", () => {
    const verdict = Permissions.decide({ mode: "default", rules: [], tool: write, args: { path: "a", content: "" }, cwd: "/w", placement: inside })
    assert.strictEqual(verdict._tag, "ask")
  })
})
