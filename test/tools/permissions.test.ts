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
import { web_fetch } from "../../src/tools/web_fetch.ts"
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

  describe("web_fetch", () => {
    const fetchIn = (mode: Parameters<typeof Permissions.decide>[0]["mode"], rules: ReadonlyArray<Permissions.Rule>, url: string, sandboxAdmits?: boolean) =>
      Permissions.decide({ mode, rules, tool: web_fetch, args: { url }, cwd, sandboxAdmits })

    it("asks per host, naming it, in default, acceptEdits and plan; bypassPermissions does not ask", () => {
      for (const mode of ["default", "acceptEdits", "plan"] as const) {
        const verdict = fetchIn(mode, [], "http://127.0.0.1:8080/page")
        assert.deepStrictEqual(verdict, {
          _tag: "ask",
          scope: { kind: "host", value: "127.0.0.1:8080", label: "fetches from 127.0.0.1:8080 (this machine)" }
        }, mode)
      }
      assert.deepStrictEqual(fetchIn("bypassPermissions", [], "http://127.0.0.1:8080/page"), { _tag: "allow" })
      const asked = fetchIn("default", [], "https://docs.example.com/a")
      if (asked._tag !== "ask") return assert.fail("expected a question")
      assert.deepStrictEqual(Permissions.options(web_fetch, asked.scope).map((o) => o.name), [
        "Allow once",
        "Always allow fetches from docs.example.com",
        "Reject",
        "Always reject fetches from docs.example.com"
      ])
    })

    it("an \"always\" answer covers that host alone: not another port, not the same machine by another name", () => {
      const asked = fetchIn("default", [], "http://127.0.0.1:8080/page")
      if (asked._tag !== "ask") return assert.fail("expected a question")
      const allow = Permissions.ruleFor(web_fetch, asked.scope, "allow")
      assert.deepStrictEqual(allow, { decision: "allow", kind: "host", value: "127.0.0.1:8080", label: "fetches from 127.0.0.1:8080 (this machine)" })
      assert.strictEqual(fetchIn("default", [allow], "http://127.0.0.1:8080/other?q=1")._tag, "allow")
      assert.strictEqual(fetchIn("plan", [allow], "http://127.0.0.1:8080/")._tag, "allow")
      for (const other of ["http://localhost:8080/page", "http://127.0.0.1:5432/", "http://127.0.0.1/", "http://127.0.0.1.nip.io:8080/"]) {
        assert.strictEqual(fetchIn("default", [allow], other)._tag, "ask", other)
      }
      // Nor does it cover anything but a fetch, whatever its value reads like.
      assert.strictEqual(decide([allow], bash, { command: "127.0.0.1:8080" }, "127.0.0.1:8080")._tag, "ask")
      const reject = Permissions.ruleFor(web_fetch, asked.scope, "reject")
      assert.deepStrictEqual(fetchIn("acceptEdits", [allow, reject], "http://127.0.0.1:8080/"), {
        _tag: "deny",
        reason: "The user chose to always reject fetches from 127.0.0.1:8080 (this machine)."
      })
    })

    it("a host the sandbox admits runs without a question, in plan too; a reject rule still refuses it", () => {
      assert.strictEqual(fetchIn("default", [], "https://registry.npmjs.org/skein", true)._tag, "allow")
      assert.strictEqual(fetchIn("plan", [], "https://registry.npmjs.org/skein", true)._tag, "allow")
      assert.strictEqual(fetchIn("default", [], "https://registry.npmjs.org/skein", false)._tag, "ask")
      const reject: Permissions.Rule = { decision: "reject", kind: "host", value: "registry.npmjs.org", label: "fetches from registry.npmjs.org" }
      assert.strictEqual(fetchIn("default", [reject], "https://registry.npmjs.org/skein", true)._tag, "deny")
    })
  })
})
