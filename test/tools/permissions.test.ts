/**
 * The pure permission policy: a remembered rule covers the kind of change it was made for
 * and its own reach (a command prefix, a directory, one tool), never a whole tool or
 * another kind because of how its value reads.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Permissions from "../../src/tools/Permissions.ts"
import { bash } from "../../src/tools/bash.ts"
import { edit } from "../../src/tools/edit.ts"
import { write } from "../../src/tools/write.ts"

const cwd = "/ws"
const decide = <A>(rules: ReadonlyArray<Permissions.Rule>, tool: Permissions.Subject<A>, args: A, command?: string) =>
  Permissions.decide({ mode: "default", rules, tool, args, cwd, command })

describe("Permissions", () => {
  it("\"always\" for a command whose prefix reads like a tool name covers that prefix, not every command", () => {
    const args = { command: "tool:bash --version" }
    const scope = bash.scope!(args, cwd)
    const rule = Permissions.ruleFor(bash, scope, "allow")
    assert.strictEqual(rule.kind, "command")
    assert.strictEqual(rule.value, "tool:bash")
    assert.strictEqual(decide([rule], bash, args, args.command)._tag, "allow")
    const other = { command: "rm -rf src" }
    assert.strictEqual(decide([rule], bash, other, other.command)._tag, "ask")
    // What the user is offered says so.
    assert.include(Permissions.options(bash, scope)[1]!.name, "`tool:bash`")
  })

  it("a tool without a narrower scope is remembered as that tool, and covers only it", () => {
    const subject: Permissions.Subject = { name: "isolated_workspace", kind: "other", mutating: true, scope: undefined }
    const asked = decide([], subject, {})
    assert.strictEqual(asked._tag, "ask")
    if (asked._tag !== "ask") return assert.fail("expected a question")
    const rule = Permissions.ruleFor(subject, asked.scope, "allow")
    assert.deepStrictEqual(rule, { decision: "allow", kind: "tool", value: "isolated_workspace", label: "isolated_workspace calls" })
    assert.strictEqual(decide([rule], subject, {})._tag, "allow")
    assert.strictEqual(decide([rule], bash, { command: "make" }, "make")._tag, "ask")
  })

  it("a directory rule covers edits in it, never a command that names it", () => {
    const rule = Permissions.ruleFor(write, write.scope!({ path: "/ws/src/a.ts", content: "" }, cwd), "allow")
    assert.strictEqual(rule.kind, "path")
    assert.strictEqual(decide([rule], edit, { path: "/ws/src/b.ts", edits: [] })._tag, "allow")
    assert.strictEqual(decide([rule], bash, { command: "/ws/src/run.sh" }, "/ws/src/run.sh")._tag, "ask")
    assert.strictEqual(decide([rule], write, { path: "/ws/other/c.ts", content: "" })._tag, "ask")
  })
})
