/**
 * The pure permission policy: a remembered rule covers the kind of change it was made for
 * and its own reach (a command prefix, a directory, one tool), never a whole tool or
 * another kind because of how its value reads.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
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
    assert.include(Permissions.options(bash, scope, args.command)[1]!.name, "`tool:bash`")
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

  it("\"always\" is offered for a command only when the rule it makes covers that command (and then it does)", () => {
    const offeredFor = (command: string) => {
      const verdict = decide([], bash, { command }, command)
      if (verdict._tag !== "ask") return undefined
      return { scope: verdict.scope, kinds: Permissions.options(bash, verdict.scope, command).map((o) => o.kind) }
    }
    // The example users met: a redirection and a chain after `echo`.
    const chained = "echo hi > a.txt && ls"
    assert.deepStrictEqual(offeredFor(chained)?.kinds, ["allow_once", "reject_once"])
    assert.deepStrictEqual(offeredFor("npm test")?.kinds, ["allow_once", "allow_always", "reject_once", "reject_always"])

    const word = fc.constantFrom("echo", "ls", "npm", "test", "run", "git", "push", "rm", "-rf", "a.txt", "$(id)", "`id`", "'x y'", "\"q\"", "./run.sh", "/bin/cat", "FOO=1", "make")
    const glue = fc.constantFrom(" ", " ", " ", " && ", " || ", "; ", " | ", " > ", " >> ", " < ", " 2>&1 ", " & ", "\n", " | tail ", " | grep x ")
    const command = fc.tuple(word, fc.array(fc.tuple(glue, word), { maxLength: 6 })).map(([first, rest]) => first + rest.map(([g, w]) => g + w).join(""))
    fc.assert(
      fc.property(command, (command) => {
        const offered = offeredFor(command)
        if (offered === undefined) return
        if (offered.kinds.includes("allow_always")) {
          const allow = Permissions.ruleFor(bash, offered.scope, "allow")
          assert.strictEqual(decide([allow], bash, { command }, command)._tag, "allow", `allow rule ${allow.value} for ${command}`)
        }
        if (offered.kinds.includes("reject_always")) {
          const reject = Permissions.ruleFor(bash, offered.scope, "reject")
          assert.strictEqual(decide([reject], bash, { command }, command)._tag, "deny", `reject rule ${reject.value} for ${command}`)
        }
      }),
      { numRuns: 2000 }
    )
  })
})
