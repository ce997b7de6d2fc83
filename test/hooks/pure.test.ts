import { describe, expect, it } from "vitest"
import * as Decision from "../../src/hooks/Decision.ts"
import * as Match from "../../src/hooks/Match.ts"
import * as Settings from "../../src/hooks/Settings.ts"

const exited = (code: number, stdout = "", stderr = ""): Decision.Raw => ({ _tag: "exited", code, stdout, stderr })

describe("hook settings", () => {
  it("reads Claude Code's format, with the default timeout and each source", () => {
    const parsed = Settings.parse(
      JSON.stringify({
        hooks: {
          PreToolUse: [{ matcher: "Bash|Write", hooks: [{ type: "command", command: "./check.sh", timeout: 5 }] }],
          Stop: [{ hooks: [{ type: "command", command: "./stop.sh" }] }]
        },
        permissions: { allow: [] }
      }),
      "/p/.claude/settings.json",
      "project"
    )
    expect(parsed.problems).toEqual([])
    expect(parsed.hooks).toEqual([
      { event: "PreToolUse", matcher: "Bash|Write", command: "./check.sh", timeoutMs: 5000, source: "/p/.claude/settings.json", scope: "project" },
      { event: "Stop", matcher: "", command: "./stop.sh", timeoutMs: 60_000, source: "/p/.claude/settings.json", scope: "project" }
    ])
  })

  it("keeps what is good in a file with bad entries, and names every problem", () => {
    const parsed = Settings.parse(
      JSON.stringify({
        hooks: {
          Notification: [{ hooks: [{ type: "command", command: "x" }] }],
          PreToolUse: [
            { matcher: 3, hooks: [] },
            { hooks: [{ type: "prompt", prompt: "?" }, { type: "command", command: "" }, { type: "command", command: "ok", timeout: 9999 }] }
          ]
        }
      }),
      "f",
      "user"
    )
    expect(parsed.hooks.map((h) => [h.command, h.timeoutMs])).toEqual([["ok", Settings.MAX_TIMEOUT_S * 1000]])
    expect(parsed.problems.map((p) => p.message)).toEqual([
      expect.stringContaining("hooks.Notification: Skein does not fire this event"),
      expect.stringContaining("hooks.PreToolUse[0].matcher is not a string"),
      expect.stringContaining("only hooks of type \"command\""),
      expect.stringContaining("hooks.PreToolUse[1].hooks[1].command is not a non-empty string"),
      expect.stringContaining("timeout is over 600 s")
    ])
  })

  it("a file that is not JSON is a problem, not a crash", () => {
    expect(Settings.parse("{ nope", "f", "user")).toEqual({ hooks: [], problems: [{ file: "f", message: expect.stringContaining("not valid JSON") }] })
    expect(Settings.parse("[]", "f", "user").problems).toHaveLength(1)
    expect(Settings.parse("{\"hooks\": []}", "f", "user").problems).toHaveLength(1)
  })

  it("merges files in order, running a command under the same event and matcher once", () => {
    const hook = { hooks: [{ type: "command", command: "same" }] }
    const a = Settings.parse(JSON.stringify({ hooks: { PreToolUse: [{ matcher: "Bash", ...hook }] } }), "a", "user")
    const b = Settings.parse(JSON.stringify({ hooks: { PreToolUse: [{ matcher: "Bash", ...hook }, { matcher: "Write", ...hook }] } }), "b", "project")
    expect(Settings.merge([a, b]).hooks.map((h) => [h.source, h.matcher])).toEqual([["a", "Bash"], ["b", "Write"]])
  })
})

describe("hook matchers", () => {
  const bash = Match.namesOf("bash")
  it("matches every tool when empty or *", () => {
    expect(Match.matches("", bash)).toBe(true)
    expect(Match.matches("*", Match.namesOf("read"))).toBe(true)
  })
  it("matches Skein's names and Claude Code's, exactly and case-sensitively", () => {
    expect(Match.matches("Bash", bash)).toBe(true)
    expect(Match.matches("bash", bash)).toBe(true)
    expect(Match.matches("BASH", bash)).toBe(false)
    expect(Match.matches("Bas", bash)).toBe(false)
    expect(Match.matches("Edit|Write", Match.namesOf("write"))).toBe(true)
    expect(Match.matches("Edit|Write", Match.namesOf("read"))).toBe(false)
    expect(Match.matches("MultiEdit", Match.namesOf("edit"))).toBe(true)
  })
  it("takes other matchers as regular expressions over the whole name", () => {
    expect(Match.matches("mcp__github__.*", ["mcp__github__create_issue"])).toBe(true)
    expect(Match.matches("Notebook.*", ["Read"])).toBe(false)
    expect(Match.matches("ea.", Match.namesOf("read"))).toBe(false)
    expect(Match.matches(".*ead", Match.namesOf("read"))).toBe(true)
  })
  it("an invalid regular expression matches nothing", () => {
    expect(Match.compile("(")._tag).toBe("invalid")
    expect(Match.matches("(", bash)).toBe(false)
  })
  it("tells hooks Claude Code's tool name where there is one", () => {
    expect(Match.hookName("bash")).toBe("Bash")
    expect(Match.hookName("run_workflow")).toBe("run_workflow")
  })
})

describe("hook decisions", () => {
  it("exit 2 blocks, with stderr as the reason, each event its own way", () => {
    expect(Decision.decide("PreToolUse", "c", exited(2, "", "no rm -rf\n"))).toEqual({ decision: "deny", reason: "no rm -rf" })
    expect(Decision.decide("PostToolUse", "c", exited(2, "", "lint failed"))).toEqual({ decision: "block", reason: "lint failed" })
    expect(Decision.decide("Stop", "c", exited(2, "", "tests fail"))).toEqual({ decision: "block", reason: "tests fail" })
    expect(Decision.decide("UserPromptSubmit", "c", exited(2, "", "secret in prompt"))).toEqual({ decision: "block", message: "secret in prompt" })
    expect(Decision.decide("SessionStart", "c", exited(2, "", "hm"))).toEqual({ decision: "none", message: "hm" })
  })

  it("plain stdout is context for UserPromptSubmit and SessionStart only", () => {
    expect(Decision.decide("SessionStart", "c", exited(0, "branch: main\n"))).toEqual({ decision: "none", context: "branch: main" })
    expect(Decision.decide("UserPromptSubmit", "c", exited(0, "today is Friday"))).toEqual({ decision: "none", context: "today is Friday" })
    expect(Decision.decide("PreToolUse", "c", exited(0, "chatter"))).toEqual({ decision: "none" })
  })

  it("JSON output decides a PreToolUse, the older decision field too", () => {
    const json = (value: unknown) => exited(0, JSON.stringify(value))
    expect(Decision.decide("PreToolUse", "c", json({ hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: "not here" } })))
      .toEqual({ decision: "deny", reason: "not here" })
    expect(Decision.decide("PreToolUse", "c", json({ hookSpecificOutput: { permissionDecision: "allow", permissionDecisionReason: "safe" } })))
      .toEqual({ decision: "allow", message: "safe" })
    expect(Decision.decide("PreToolUse", "c", json({ hookSpecificOutput: { permissionDecision: "ask" } }))).toEqual({ decision: "ask" })
    expect(Decision.decide("PreToolUse", "c", json({ decision: "block", reason: "old style" }))).toEqual({ decision: "deny", reason: "old style" })
    expect(Decision.decide("PreToolUse", "c", json({ decision: "approve" }))).toEqual({ decision: "allow" })
  })

  it("JSON output blocks the other events, adds context, stops the turn, shows a message", () => {
    const json = (value: unknown) => exited(0, JSON.stringify(value))
    expect(Decision.decide("Stop", "c", json({ decision: "block", reason: "run the tests first" }))).toEqual({ decision: "block", reason: "run the tests first" })
    expect(Decision.decide("PostToolUse", "c", json({ hookSpecificOutput: { additionalContext: "formatted" } }))).toEqual({ decision: "none", context: "formatted" })
    expect(Decision.decide("UserPromptSubmit", "c", json({ continue: false, stopReason: "paused", systemMessage: "see you" })))
      .toEqual({ decision: "none", stop: "paused", message: "see you" })
  })

  it("a failure, a timeout or another exit code decides nothing and says why", () => {
    expect(Decision.decide("PreToolUse", "c", exited(1, "", "boom"))).toEqual({ decision: "none", message: "The PreToolUse hook `c` failed (exit code 1): boom." })
    expect(Decision.decide("PreToolUse", "c", { _tag: "timedOut", timeoutMs: 2000, stdout: "", stderr: "" }).decision).toBe("none")
    expect(Decision.decide("Stop", "c", { _tag: "failed", reason: "the sandbox is required" }).message).toContain("did not run: the sandbox is required")
    // Output that looks like JSON but is not: plain output.
    expect(Decision.decide("SessionStart", "c", exited(0, "{oops"))).toEqual({ decision: "none", context: "{oops" })
  })

  it("combines the hooks of one point: the strictest decision wins, and what each said is kept", () => {
    const combined = Decision.combine([
      { decision: "allow", message: "fine by me" },
      { decision: "deny", reason: "no" },
      { decision: "ask", context: "ctx" }
    ])
    expect(combined).toEqual({ decision: "deny", reason: "no", context: "ctx", message: "fine by me" })
    expect(Decision.combine([{ decision: "allow" }, { decision: "ask" }]).decision).toBe("ask")
    expect(Decision.combine([])).toEqual({ decision: "none" })
  })
})
