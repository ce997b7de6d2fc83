/**
 * Hooks at the points of a turn, through the runtime with a scripted model and real hook
 * commands: what each decision does to the call, the question, the turn and the model's view.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import type { SessionEvent } from "../../src/log/Event.ts"
import type { Script } from "../../src/providers/Scripted.ts"
import type { Answer, ModeId } from "../../src/Vocabulary.ts"
import { MAX_STOP_CONTINUATIONS } from "../../src/runtime/Turn.ts"
import { localOf, text, withSkein } from "../support/Sessions.ts"

type Hooks = Record<string, ReadonlyArray<{ readonly matcher?: string; readonly command: string }>>

const settings = (cwd: string, hooks: Hooks) => {
  mkdirSync(join(cwd, ".claude"), { recursive: true })
  const json = Object.fromEntries(
    Object.entries(hooks).map(([event, list]) => [event, list.map((h) => ({ matcher: h.matcher ?? "", hooks: [{ type: "command", command: h.command }] }))])
  )
  writeFileSync(join(cwd, ".claude", "settings.json"), JSON.stringify({ hooks: json }))
}

const tool = (name: string, args: unknown, id: string) => ({ tool: name, args, id })


/** What a presented turn needs of a session. */
interface Presented {
  readonly turn: (content: ReturnType<typeof text>) => Stream.Stream<SessionEvent, unknown>
  readonly answer: (requestId: string, answer: Answer) => Effect.Effect<void, unknown>
}
/** Runs one presented turn, answering each permission question with `answer` (default: reject), and gives its events. */
const turn = (session: Presented, prompt: string, answer = "reject_once") =>
  Effect.gen(function*() {
    const seen: Array<SessionEvent> = []
    yield* session.turn(text(prompt)).pipe(
      Stream.runForEach((event) => {
        seen.push(event)
        return event.type === "permission_asked"
          ? Effect.ignore(session.answer(event.data.requestId, { outcome: "selected", optionId: answer }))
          : Effect.void
      })
    )
    return seen
  })

const withHooks = <A, E>(
  script: Script,
  hooks: (cwd: string) => Hooks,
  body: (env: { readonly cwd: string; readonly session: any }) => Effect.Effect<A, E, any>,
  mode: ModeId = "default"
) =>
  withSkein({ script, mode }, ({ cwd, runtime }) =>
    Effect.gen(function*() {
      settings(cwd, hooks(cwd))
      const session = yield* runtime.newSession({ cwd })
      return yield* body({ cwd, session })
    }))

const resultOf = (events: ReadonlyArray<SessionEvent>, id: string) => {
  const found = events.find((e) => e.type === "tool_result" && e.data.id === id)
  return found?.type === "tool_result" ? found.data : undefined
}
const hookEvents = (events: ReadonlyArray<SessionEvent>) => events.flatMap((e) => (e.type === "hook" ? [e.data] : []))

const DENY_RM = "jq -r .tool_input.command | grep -q 'rm -rf' && { echo 'rm -rf is not allowed in this repository' >&2; exit 2; }; exit 0"

describe("hooks in a turn", () => {
  it.live("a PreToolUse hook denies `rm -rf`: not run, and the model reads why", () =>
    withHooks(
      { turns: [{ calls: [[tool("bash", { command: "rm -rf keep && touch ran" }, "b1")], [{ text: "ok" }]] }] },
      () => ({ PreToolUse: [{ matcher: "Bash", command: DENY_RM }] }),
      ({ cwd, session }) =>
        Effect.gen(function*() {
          mkdirSync(join(cwd, "keep"))
          const events = yield* turn(session, "clean up", "allow_once")
          const result = resultOf(events, "b1")!
          assert.isFalse(result.ok)
          assert.include(result.content, "rm -rf is not allowed in this repository")
          assert.isTrue(existsSync(join(cwd, "keep")))
          assert.isFalse(existsSync(join(cwd, "ran")))
          // Denied before the gate: nobody was asked.
          assert.isFalse(events.some((e) => e.type === "permission_asked"))
          assert.deepStrictEqual(hookEvents(events).map((h) => [h.event, h.decision, h.toolCallId]), [["PreToolUse", "deny", "b1"]])
          const toolMessage = localOf(session).history.messages.find((m) => m.role === "tool")
          assert.include(toolMessage?.role === "tool" ? toolMessage.content : "", "rm -rf is not allowed in this repository")
        })
    ))

  it.live("allow spares the question, ask asks where the policy would not", () =>
    withHooks(
      { turns: [{ calls: [[tool("write", { path: "a.txt", content: "A" }, "w1"), tool("read", { path: "notes.txt" }, "r1")], [{ text: "ok" }]] }] },
      () => ({
        PreToolUse: [
          { matcher: "Write", command: "echo '{\"hookSpecificOutput\":{\"permissionDecision\":\"allow\"}}'" },
          { matcher: "Read", command: "echo '{\"hookSpecificOutput\":{\"permissionDecision\":\"ask\"}}'" }
        ]
      }),
      ({ cwd, session }) =>
        Effect.gen(function*() {
          const events = yield* turn(session, "go", "reject_once")
          assert.strictEqual(readFileSync(join(cwd, "a.txt"), "utf8"), "A")
          const asked = events.flatMap((e) => (e.type === "permission_asked" ? [e.data.toolCall.toolCallId] : []))
          assert.deepStrictEqual(asked, ["r1"])
          assert.isFalse(resultOf(events, "r1")!.ok)
          assert.isTrue(resultOf(events, "w1")!.ok)
        })
    ))

  it.live("allow never lifts a refusal: plan mode still refuses the write", () =>
    withHooks(
      { turns: [{ calls: [[tool("write", { path: "a.txt", content: "A" }, "w1")], [{ text: "ok" }]] }] },
      () => ({ PreToolUse: [{ command: "echo '{\"hookSpecificOutput\":{\"permissionDecision\":\"allow\"}}'" }] }),
      ({ cwd, session }) =>
        Effect.gen(function*() {
          const events = yield* turn(session, "go", "allow_once")
          assert.isFalse(resultOf(events, "w1")!.ok)
          assert.isFalse(existsSync(join(cwd, "a.txt")))
        }),
      "plan"
    ))

  it.live("PostToolUse: its note goes with the result the model reads", () =>
    withHooks(
      { turns: [{ calls: [[tool("read", { path: "notes.txt" }, "r1")], [{ text: "ok" }]] }] },
      () => ({ PostToolUse: [{ matcher: "Read", command: "echo '{\"hookSpecificOutput\":{\"additionalContext\":\"notes.txt is generated\"}}'" }] }),
      ({ session }) =>
        Effect.gen(function*() {
          yield* turn(session, "read it")
          const message = localOf(session).history.messages.find((m) => m.role === "tool")
          assert.strictEqual(message?.role === "tool" ? message.content.endsWith("[PostToolUse hook]\nnotes.txt is generated") : false, true)
        })
    ))

  it.live("UserPromptSubmit: exit 2 ends the turn before the model, the prompt leaves its view, the user reads why; stdout adds context", () =>
    withHooks(
      { turns: [{ calls: [[{ text: "answered" }]] }] },
      () => ({ UserPromptSubmit: [{ command: "jq -r .prompt | grep -q password && { echo 'no passwords in prompts' >&2; exit 2; }; echo 'on branch main'" }] }),
      ({ session }) =>
        Effect.gen(function*() {
          const blocked = yield* turn(session, "my password is hunter2")
          assert.isFalse(blocked.some((e) => e.type === "model_response"))
          assert.deepStrictEqual(hookEvents(blocked).map((h) => [h.decision, h.message]), [["block", "no passwords in prompts"]])
          assert.deepStrictEqual(localOf(session).history.messages, [])
          const answered = yield* turn(session, "hello")
          assert.isTrue(answered.some((e) => e.type === "model_response"))
          assert.deepStrictEqual(localOf(session).history.messages.slice(0, 2), [
            { role: "user", content: text("hello") },
            { role: "user", content: text("[UserPromptSubmit hook]\non branch main") }
          ])
        })
    ))

  it.live("Stop: a block sends the model back to work with the reason, a few times at most", () =>
    withHooks(
      { turns: [{ calls: Array.from({ length: MAX_STOP_CONTINUATIONS + 1 }, (_, i) => [{ text: `try ${i}` }]) }] },
      () => ({ Stop: [{ command: "echo '{\"decision\":\"block\",\"reason\":\"the tests still fail\"}'" }] }),
      ({ session }) =>
        Effect.gen(function*() {
          const events = yield* turn(session, "fix it")
          assert.strictEqual(events.filter((e) => e.type === "model_response").length, MAX_STOP_CONTINUATIONS + 1)
          const end = events.find((e) => e.type === "turn_end")
          assert.deepStrictEqual(end?.type === "turn_end" ? end.data : undefined, { stopReason: "end_turn" })
          const reasons = localOf(session).history.messages.filter((m) => m.role === "user" && JSON.stringify(m).includes("the tests still fail"))
          assert.strictEqual(reasons.length, MAX_STOP_CONTINUATIONS + 1)
        })
    ))

  it.live("SessionStart: its context at the session's first turn only", () =>
    withHooks(
      { turns: [{ calls: [[{ text: "one" }]] }, { calls: [[{ text: "two" }]] }] },
      () => ({ SessionStart: [{ matcher: "startup", command: "jq -r .source" }] }),
      ({ session }) =>
        Effect.gen(function*() {
          yield* turn(session, "first")
          yield* turn(session, "second")
          const notes = localOf(session).history.messages.filter((m) => m.role === "user" && JSON.stringify(m).includes("SessionStart"))
          assert.deepStrictEqual(notes, [{ role: "user", content: text("[SessionStart hook]\nstartup") }])
        })
    ))

  it.live("a hook that fails tells the user and decides nothing: the call runs", () =>
    withHooks(
      { turns: [{ calls: [[tool("read", { path: "notes.txt" }, "r1")], [{ text: "ok" }]] }] },
      () => ({ PreToolUse: [{ command: "echo broken >&2; exit 1" }] }),
      ({ session }) =>
        Effect.gen(function*() {
          const events = yield* turn(session, "read")
          assert.isTrue(resultOf(events, "r1")!.ok)
          assert.include(hookEvents(events)[0]?.message ?? "", "failed (exit code 1): broken")
        })
    ))

  it.live("hooks are read once per session: a settings file the model writes mid-session adds no hook to it; a new session runs it", () => {
    const settingsJson = JSON.stringify({ hooks: { PreToolUse: [{ matcher: "", hooks: [{ type: "command", command: "echo ran >> hook-runs" }] }] } })
    return withSkein({
      script: {
        turns: [
          { calls: [[tool("write", { path: ".claude/settings.json", content: settingsJson }, "w1")], [{ text: "written" }]] },
          { calls: [[tool("read", { path: "notes.txt" }, "r1")], [{ text: "read" }]] }
        ]
      },
      mode: "acceptEdits"
    }, ({ cwd, runtime }) =>
      Effect.gen(function*() {
        const runs = () => (existsSync(join(cwd, "hook-runs")) ? readFileSync(join(cwd, "hook-runs"), "utf8").split("\n").filter(Boolean).length : 0)
        const session = yield* runtime.newSession({ cwd })
        const first = yield* turn(session, "write the settings")
        assert.isTrue(resultOf(first, "w1")!.ok)
        assert.isTrue(existsSync(join(cwd, ".claude", "settings.json")))
        const second = yield* turn(session, "read the notes")
        assert.isTrue(resultOf(second, "r1")!.ok)
        assert.deepStrictEqual(hookEvents(second), [])
        assert.strictEqual(runs(), 0)
        // A new session reads the settings as they are now: its first tool call runs the hook.
        const next = yield* runtime.newSession({ cwd })
        const events = yield* turn(next, "write the settings again")
        assert.deepStrictEqual(hookEvents(events).map((h) => [h.event, h.toolCallId]), [["PreToolUse", "w1"]])
        assert.strictEqual(runs(), 1)
      }))
  })

  it.live("a subagent started after the model wrote a settings file runs its parent's hooks, not the new file's", () => {
    const settingsJson = JSON.stringify({ hooks: { PreToolUse: [{ matcher: "", hooks: [{ type: "command", command: "echo ran >> hook-runs" }] }] } })
    return withSkein({
      script: {
        turns: [{
          calls: [
            [tool("write", { path: ".claude/settings.json", content: settingsJson }, "w1")],
            [tool("spawn_agent", { task: "read the notes", agent: "general" }, "s1")],
            [tool("wait_agent", {}, "w2")],
            [{ text: "done" }]
          ]
        }],
        agents: { general: { turns: [{ calls: [[tool("read", { path: "notes.txt" }, "r1")], [{ text: "Hello notes" }]] }] } }
      },
      mode: "acceptEdits"
    }, ({ cwd, runtime }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        const events = yield* turn(session, "write the settings, then delegate")
        assert.isTrue(resultOf(events, "w1")!.ok)
        assert.include(resultOf(events, "w2")!.content, "Hello notes")
        assert.deepStrictEqual(hookEvents(events), [])
        assert.isFalse(existsSync(join(cwd, "hook-runs")))
      }))
  })
})
