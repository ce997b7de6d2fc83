/**
 * Child sessions (subagents) through the Runtime, with the scripted provider playing parents
 * and children: parallel children, the turn waiting for them, failures and time-outs reported
 * as such, cancel of the parent stopping every descendant before its turn ends, workflows,
 * limits, read-only explorers, the logs linking children to their parent.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import { execFileSync } from "node:child_process"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import type { Canonical, SessionEvent } from "../../src/log/Event.ts"
import type * as Scripted from "../../src/providers/Scripted.ts"
import { record, text, withSkein } from "../support/Sessions.ts"

type Turns = Scripted.Script["turns"]

const call = (tool: string, args: unknown, id?: string) => ({ tool, args, ...(id !== undefined ? { id } : {}) })

const subagentEvents = (events: ReadonlyArray<Canonical | SessionEvent>) =>
  events.filter((e) => e.type === "subagent").map((e) => e.data as { event: string; id: string; state?: string; answer?: string; error?: string })

const toolResults = (events: ReadonlyArray<Canonical | SessionEvent>) =>
  events.filter((e) => e.type === "tool_result").map((e) => e.data as { id: string; ok: boolean; content: string })

/** Runs one prompt nobody presents and returns the parent's logged events. */
const runParent = (script: Scripted.Script, prompt = "go", mode?: string) =>
  withSkein({ script, ...(mode !== undefined ? { mode: mode as "default" } : {}) }, ({ runtime, cwd, readLog }) =>
    Effect.gen(function*() {
      const session = yield* runtime.newSession({ cwd })
      const outcome = yield* session.prompt(text(prompt))
      const parent = yield* readLog(session.id)
      const spawned = subagentEvents(parent.events as never).filter((e) => e.event === "spawned").map((e) => e.id)
      const children = yield* Effect.forEach(spawned, (id) => readLog(id))
      const live = yield* runtime.liveSessions
      const listed = yield* runtime.listSessions()
      const all = yield* runtime.listSessions({ children: true })
      return { session, outcome, parent, children, live, listed, all, cwd }
    }))

describe("child sessions", () => {
  it.live("two explorers run in parallel; wait_agent gives both answers; the logs link them", () =>
    Effect.gen(function*() {
      const turns: Turns = [{
        calls: [
          [call("spawn_agent", { task: "Find the notes", agent: "explorer" }, "s1"), call("spawn_agent", { task: "Find the rest", agent: "explorer" }, "s2")],
          [call("wait_agent", {}, "w1")],
          [{ text: "Both reported." }]
        ]
      }]
      const explorer: Turns = [{ calls: [[call("read", { path: "notes.txt" })], [{ sleep_ms: 30 }, { text: "The notes say hello." }]] }]
      const r = yield* runParent({ turns, agents: { explorer: { turns: explorer } } })
      assert.strictEqual(r.outcome.stopReason, "end_turn")
      const subs = subagentEvents(r.parent.events as never)
      assert.deepStrictEqual(subs.map((s) => s.event), ["spawned", "spawned", "result", "result", "closed", "closed"])
      const waited = JSON.parse(toolResults(r.parent.events as never).find((t) => t.id === "w1")!.content)
      assert.deepStrictEqual(waited.children.map((c: any) => [c.agent, c.state, c.answer]), [
        ["explorer", "idle", "The notes say hello."],
        ["explorer", "idle", "The notes say hello."]
      ])
      // Both ran at once: each started before the other ended.
      const [a, b] = r.children
      const start = (log: typeof a) => log!.events.find((e) => e.type === "turn_start")!.ts
      const end = (log: typeof a) => log!.events.find((e) => e.type === "turn_end")!.ts
      assert.isTrue(start(a) <= end(b) && start(b) <= end(a))
      for (const child of r.children) {
        assert.deepStrictEqual(child.header.parent, { sessionId: r.session.id, toolCallId: child === a ? "s1" : "s2", depth: 1 })
        assert.strictEqual(child.header.agent, "explorer")
        assert.strictEqual(child.events.at(-1)!.type, "turn_end")
      }
      // Closed with the turn, and listed only when asked for.
      assert.deepStrictEqual(r.live.map((s) => s.id), [r.session.id])
      assert.deepStrictEqual(r.listed.sessions.map((s) => s.id), [r.session.id])
      assert.strictEqual(r.all.sessions.length, 3)
      // The parent's `subagent` events come before its turn_end.
      assert.strictEqual(r.parent.events.at(-1)!.type, "turn_end")
    }))

  it.live("a model that stops while children run gets their results as its next input", () =>
    Effect.gen(function*() {
      const turns: Turns = [{
        calls: [
          [call("spawn_agent", { task: "Slow work" }, "s1")],
          [{ text: "Started it." }],
          [{ text: "It said: done." }]
        ]
      }]
      const general: Turns = [{ calls: [[{ sleep_ms: 50 }, { text: "done" }]] }]
      const r = yield* runParent({ turns, agents: { general: { turns: general } } })
      const events = r.parent.events as unknown as ReadonlyArray<Canonical>
      const input = events.find((e) => e.type === "subagent" && e.data.event === "input")
      assert.isDefined(input)
      assert.include((input!.data as { text: string }).text, "done")
      const responses = events.filter((e) => e.type === "model_response")
      assert.strictEqual(responses.length, 3)
      assert.isTrue(events.indexOf(input!) < events.indexOf(responses[2]!))
    }))

  it.live("a failing child and a timed-out child are reported as such, never as success", () =>
    Effect.gen(function*() {
      const turns: Turns = [{
        calls: [
          [call("spawn_agent", { task: "fail", agent: "breaker" }, "s1"), call("spawn_agent", { task: "sleep", agent: "sleeper", timeout_ms: 100 }, "s2")],
          [call("wait_agent", {}, "w1")],
          [{ text: "Reported." }]
        ]
      }]
      const script: Scripted.Script = {
        turns,
        agents: {
          breaker: { turns: [{ calls: [[{ fail: "the model is down" }]] }] },
          sleeper: { turns: [{ calls: [[{ sleep_ms: 30_000 }, { text: "late" }]] }] }
        }
      }
      const r = yield* withSkein({ script }, ({ runtime, cwd, readLog, home }) =>
        Effect.gen(function*() {
          // Custom agents from the project's folder.
          const { mkdirSync, writeFileSync } = yield* Effect.promise(() => import("node:fs"))
          mkdirSync(join(cwd, ".skein/agents"), { recursive: true })
          for (const name of ["breaker", "sleeper"]) {
            writeFileSync(join(cwd, ".skein/agents", `${name}.md`), `---\nname: ${name}\ndescription: test agent ${name}\n---\nDo it.\n`)
          }
          void home
          const session = yield* runtime.newSession({ cwd })
          const outcome = yield* session.prompt(text("go"))
          return { outcome, parent: yield* readLog(session.id) }
        }))
      assert.strictEqual(r.outcome.stopReason, "end_turn")
      const waited = JSON.parse(toolResults(r.parent.events as never).find((t) => t.id === "w1")!.content)
      const byAgent = Object.fromEntries(waited.children.map((c: any) => [c.agent, c]))
      assert.strictEqual(byAgent.breaker.state, "failed")
      assert.include(byAgent.breaker.error, "the model is down")
      assert.strictEqual(byAgent.sleeper.state, "timed_out")
      assert.include(byAgent.sleeper.error, "Timed out")
    }))

  it.live("cancelling the parent stops its three running children before its turn ends", () =>
    withSkein({
      script: {
        turns: [{
          calls: [
            [call("spawn_agent", { task: "a" }, "s1"), call("spawn_agent", { task: "b" }, "s2"), call("spawn_agent", { task: "c" }, "s3")],
            [call("wait_agent", {}, "w1")],
            [{ text: "never" }]
          ]
        }],
        agents: { general: { turns: [{ calls: [[{ text: "working" }, { sleep_ms: 60_000 }]] }] } }
      }
    }, ({ runtime, cwd, readLog }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        const events = yield* record(session)
        const fiber = yield* Effect.forkChild(session.prompt(text("go")))
        // All three announced and working.
        yield* events.until((e) => e.type === "tool_running" && (e.data as { id: string }).id === "w1")
        assert.strictEqual((yield* runtime.liveSessions).length, 4)
        yield* session.cancel
        const outcome = yield* Fiber.join(fiber)
        assert.strictEqual(outcome.stopReason, "cancelled")
        const parent = yield* readLog(session.id)
        const subs = subagentEvents(parent.events as never)
        const ids = subs.filter((s) => s.event === "spawned").map((s) => s.id)
        assert.strictEqual(ids.length, 3)
        for (const id of ids) {
          assert.deepStrictEqual(subs.filter((s) => s.id === id).map((s) => s.event), ["spawned", "result", "closed"])
          assert.strictEqual(subs.find((s) => s.id === id && s.event === "result")!.state, "cancelled")
          const child = yield* readLog(id)
          const end = child.events.at(-1)!
          assert.strictEqual(end.type, "turn_end")
          assert.strictEqual((end.data as { stopReason: string }).stopReason, "cancelled")
        }
        // Every child's end is logged in the parent before the parent's turn_end.
        assert.strictEqual(parent.events.at(-1)!.type, "turn_end")
        assert.deepStrictEqual((yield* runtime.liveSessions).map((s) => s.id), [session.id])
      })))

  it.live("a workflow runs in waves; a failed step skips its dependants; the outcome is partial", () =>
    Effect.gen(function*() {
      const turns: Turns = [{
        calls: [
          [call("run_workflow", {
            steps: [
              { id: "scan", task: "scan the code", agent: "explorer" },
              { id: "broken", task: "this one fails", agent: "breaker" },
              { id: "report", task: "write the report", agent: "explorer", depends_on: ["scan"] },
              { id: "after-broken", task: "never runs", depends_on: ["broken"] }
            ]
          }, "wf")],
          [{ text: "Partly done." }]
        ]
      }]
      const script: Scripted.Script = {
        turns,
        agents: {
          explorer: { turns: [{ calls: [[{ text: "explored" }]] }] },
          breaker: { turns: [{ calls: [[{ fail: "broken model" }]] }] }
        }
      }
      const r = yield* withSkein({ script }, ({ runtime, cwd, readLog }) =>
        Effect.gen(function*() {
          const { mkdirSync, writeFileSync } = yield* Effect.promise(() => import("node:fs"))
          mkdirSync(join(cwd, ".claude/agents"), { recursive: true })
          writeFileSync(join(cwd, ".claude/agents/breaker.md"), "---\nname: breaker\ndescription: breaks\n---\n")
          const session = yield* runtime.newSession({ cwd })
          yield* session.prompt(text("go"))
          const parent = yield* readLog(session.id)
          const reportStep = subagentEvents(parent.events as never).find((s) => s.event === "spawned" && (s as any).task.startsWith("write the report"))
          const reportChild = reportStep === undefined ? undefined : yield* readLog(reportStep.id)
          return { parent, reportChild }
        }))
      const result = JSON.parse(toolResults(r.parent.events as never).find((t) => t.id === "wf")!.content)
      assert.strictEqual(result.outcome, "partial")
      const outcomes = Object.fromEntries(result.steps.map((s: any) => [s.step, s.outcome]))
      assert.deepStrictEqual(outcomes, { scan: "succeeded", broken: "failed", report: "succeeded", "after-broken": "skipped" })
      // The dependant step was given its dependency's answer.
      const prompt = r.reportChild!.events.find((e) => e.type === "turn_start")!.data as { content: Array<{ text: string }> }
      assert.include(prompt.content[0]!.text, "explored")
    }))

  it.live("an explorer cannot write, even when its parent may do anything", () =>
    Effect.gen(function*() {
      const turns: Turns = [{ calls: [[call("spawn_agent", { task: "try to write", agent: "explorer" }, "s1")], [call("wait_agent", {}, "w1")], [{ text: "ok" }]] }]
      const explorer: Turns = [{ calls: [[call("write", { path: "x.txt", content: "no" }, "wx"), call("bash", { command: "touch y.txt" }, "bx")], [{ text: "could not" }]] }]
      const r = yield* runParent({ turns, agents: { explorer: { turns: explorer } } }, "go", "bypassPermissions")
      const child = r.children[0]!
      const results = toolResults(child.events as never)
      assert.deepStrictEqual(results.map((t) => [t.id, t.ok]), [["wx", false], ["bx", false]])
      // It has no write tool, and its commands may only read.
      assert.include(results[0]!.content, "Unknown tool")
      assert.include(results[1]!.content, "read-only")
      assert.isFalse(existsSync(join(r.cwd, "x.txt")))
      assert.isFalse(existsSync(join(r.cwd, "y.txt")))
    }))

  it.live("past the running limit, spawn_agent answers with an error the model reads", () =>
    Effect.gen(function*() {
      const spawns = Array.from({ length: 9 }, (_, i) => call("spawn_agent", { task: `t${i}` }, `s${i}`))
      const turns: Turns = [{ calls: [spawns, [{ text: "ok" }]] }]
      const r = yield* runParent({ turns, agents: { general: { turns: [{ calls: [[{ sleep_ms: 200 }, { text: "done" }]] }] } } })
      const results = toolResults(r.parent.events as never)
      assert.strictEqual(results.filter((t) => t.ok).length, 8)
      const refused = results.find((t) => !t.ok)!
      assert.strictEqual(refused.id, "s8")
      assert.include(refused.content, "running already")
    }))

  it.live("an unknown agent is an error that names the agents there are", () =>
    Effect.gen(function*() {
      const turns: Turns = [{ calls: [[call("spawn_agent", { task: "x", agent: "nobody" }, "s1")], [{ text: "ok" }]] }]
      const r = yield* runParent({ turns })
      const [result] = toolResults(r.parent.events as never)
      assert.isFalse(result!.ok)
      assert.include(result!.content, "Unknown agent")
      assert.include(result!.content, "explorer")
    }))

  it.live("a child's turn stream carries its events inside the parent's turn", () =>
    withSkein({
      script: {
        turns: [{ calls: [[call("spawn_agent", { task: "say hi" }, "s1")], [call("wait_agent", {}, "w1")], [{ text: "done" }]] }],
        agents: { general: { turns: [{ calls: [[{ text: "hi from the child" }]] }] } }
      }
    }, ({ runtime, cwd }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        const events = yield* session.turn(text("go")).pipe(Stream.runCollect)
        const inner = events.filter((e) => e.type === "child_event").map((e) => (e.data as { event: SessionEvent }).event)
        const spawnedAt = events.findIndex((e) => e.type === "subagent" && (e.data as { event: string }).event === "spawned")
        const firstInner = events.findIndex((e) => e.type === "child_event")
        assert.isTrue(spawnedAt >= 0 && spawnedAt < firstInner, "the child is announced before its traffic")
        assert.include(inner.map((e) => e.type), "turn_start")
        assert.include(inner.map((e) => e.type), "text_delta")
        assert.strictEqual(inner.at(-1)!.type, "turn_end")
      })))

  it.live("an isolated child works in a git worktree on skein/<id> from the parent's state; its result names the branch and the diff", () =>
    withSkein({
      mode: "bypassPermissions",
      script: {
        turns: [{
          calls: [
            [call("spawn_agent", { task: "edit in isolation", workspace: "isolated" }, "s1")],
            [call("wait_agent", {}, "w1")],
            [{ text: "ok" }]
          ]
        }],
        agents: { general: { turns: [{ calls: [[call("write", { path: "notes.txt", content: "isolated edit\n" }, "wr")], [{ text: "edited" }]] }] } }
      }
    }, ({ runtime, cwd, readLog }) =>
      Effect.gen(function*() {
        const git = (...args: Array<string>) => execFileSync("git", args, { cwd, encoding: "utf8", env: { ...process.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@t", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@t" } })
        git("init", "-q")
        git("add", ".")
        git("commit", "-qm", "start")
        // An uncommitted change of the parent's, which the child starts from.
        writeFileSync(join(cwd, "notes.txt"), "Hello notes\nparent's uncommitted line\n")
        const session = yield* runtime.newSession({ cwd })
        yield* session.prompt(text("go"))
        const parent = yield* readLog(session.id)
        const spawn = JSON.parse(toolResults(parent.events as never).find((t) => t.id === "s1")!.content)
        assert.strictEqual(spawn.workspace, "isolated")
        assert.strictEqual(spawn.branch, `skein/${spawn.id}`)
        // The parent's own file is untouched.
        assert.strictEqual(readFileSync(join(cwd, "notes.txt"), "utf8"), "Hello notes\nparent's uncommitted line\n")
        const closed = subagentEvents(parent.events as never).find((s) => s.event === "closed") as { branch?: string; diff?: string }
        assert.strictEqual(closed.branch, `skein/${spawn.id}`)
        assert.include(closed.diff, "notes.txt")
        // The branch holds the child's change on top of the parent's state.
        const shown = git("show", `skein/${spawn.id}:notes.txt`)
        assert.strictEqual(shown, "Hello notes\nparent's uncommitted line\n")
        assert.include(git("branch", "--list", "skein/*"), `skein/${spawn.id}`)
      })))

  it.live("outside a git repository, an isolated child is refused with a message", () =>
    Effect.gen(function*() {
      const turns: Turns = [{ calls: [[call("spawn_agent", { task: "x", workspace: "isolated" }, "s1")], [{ text: "ok" }]] }]
      const r = yield* runParent({ turns })
      const [result] = toolResults(r.parent.events as never)
      assert.isFalse(result!.ok)
      assert.include(result!.content, "git")
    }))

  it.live("a child's mode can be narrowed through the session protocol, never broadened", () =>
    withSkein({
      script: {
        turns: [{ calls: [[call("spawn_agent", { task: "wait" }, "s1")], [call("wait_agent", {}, "w1")], [{ text: "ok" }]] }],
        agents: { general: { turns: [{ calls: [[{ sleep_ms: 300 }, { text: "done" }]] }] } }
      }
    }, ({ runtime, cwd }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        const events = yield* record(session)
        const fiber = yield* Effect.forkChild(session.prompt(text("go")))
        const spawned = yield* events.until((e) => e.type === "subagent" && (e.data as { event: string }).event === "spawned")
        const child = yield* runtime.getSession((spawned.data as { id: string }).id)
        const broadened = yield* Effect.flip(child.setMode("bypassPermissions"))
        assert.strictEqual(broadened.reason, "invalid_mode")
        assert.include(broadened.message, "only be narrowed")
        const viaSend = yield* Effect.flip(child.send({ _tag: "SetMode", mode: "acceptEdits" }))
        assert.strictEqual(viaSend.reason, "invalid_mode")
        yield* child.setMode("plan")
        assert.strictEqual((yield* child.settings).mode, "plan")
        yield* Fiber.join(fiber)
      })))
})
