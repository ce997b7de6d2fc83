/**
 * What a child may do is bounded by its parent as the parent is *now*: a read-only session
 * produces no writer (not through a replaced `explorer.md`, not through an external agent), a
 * parent switched to `plan` holds its running child at the child's next call, and creating an
 * isolated workspace is a change the parent's gate decides like any other.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import type { Canonical, SessionEvent } from "../../src/log/Event.ts"
import { text, withSkein } from "../support/Sessions.ts"

const call = (tool: string, args: unknown, id?: string) => ({ tool, args, ...(id !== undefined ? { id } : {}) })

const toolResults = (events: ReadonlyArray<Canonical | SessionEvent>) =>
  events.filter((e) => e.type === "tool_result").map((e) => e.data as { id: string; ok: boolean; content: string })

const spawned = (events: ReadonlyArray<Canonical | SessionEvent>) =>
  events.filter((e) => e.type === "subagent" && (e.data as { event: string }).event === "spawned").map((e) => (e.data as { id: string }).id)

const gitRepo = (cwd: string) => {
  const git = (...args: Array<string>) =>
    execFileSync("git", args, { cwd, encoding: "utf8", env: { ...process.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@t", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@t" } })
  git("init", "-q")
  git("add", ".")
  git("commit", "-qm", "start")
  return git
}

/** A question a child or the parent asked, as the parent's presenter sees it. */
interface Asked {
  readonly sessionId: string
  readonly requestId: string
  readonly toolCallId: string
  readonly title: string
}

const questionOf = (event: SessionEvent): Asked | undefined => {
  const inner = event.type === "child_event" ? (event.data as { event: SessionEvent }).event : event
  if (inner.type !== "permission_asked") return undefined
  const data = inner.data as { requestId: string; toolCall: { toolCallId: string; title: string } }
  return { sessionId: inner.sessionId, requestId: data.requestId, toolCallId: data.toolCall.toolCallId, title: data.toolCall.title }
}

describe("child permissions", () => {
  it.live("a project's explorer.md without a tools line cannot start a writer, even under bypassPermissions", () =>
    withSkein({
      mode: "bypassPermissions",
      script: {
        turns: [{ calls: [[call("spawn_agent", { task: "look", agent: "explorer" }, "s1")], [call("wait_agent", {}, "w1")], [{ text: "ok" }]] }],
        agents: {
          explorer: {
            turns: [{
              calls: [
                [call("spawn_agent", { task: "write", agent: "general" }, "e1"), call("write", { path: "x.txt", content: "no" }, "e2")],
                [call("wait_agent", {}, "e3")],
                [{ text: "tried" }]
              ]
            }]
          },
          general: { turns: [{ calls: [[call("write", { path: "y.txt", content: "no" }, "g1"), call("bash", { command: "touch z.txt" }, "g2")], [{ text: "wrote" }]] }] }
        }
      }
    }, ({ runtime, cwd, readLog }) =>
      Effect.gen(function*() {
        mkdirSync(join(cwd, ".skein/agents"), { recursive: true })
        writeFileSync(join(cwd, ".skein/agents/explorer.md"), "---\nname: explorer\ndescription: the project's explorer\n---\nExplore.\n")
        const session = yield* runtime.newSession({ cwd })
        yield* session.prompt(text("go"))
        const [explorerId] = spawned((yield* readLog(session.id)).events as never)
        const explorer = yield* readLog(explorerId!)
        const results = toolResults(explorer.events as never)
        // It has the built-in explorer's tools only: no spawn_agent, no write.
        assert.deepStrictEqual(results.filter((r) => r.id === "e1" || r.id === "e2").map((r) => [r.id, r.ok]), [["e1", false], ["e2", false]])
        assert.include(results.find((r) => r.id === "e1")!.content, "Unknown tool")
        assert.deepStrictEqual(spawned(explorer.events as never), [])
        for (const file of ["x.txt", "y.txt", "z.txt"]) assert.isFalse(existsSync(join(cwd, file)), file)
      })))

  it.live("a parent switched to plan holds its running child: an answer given meanwhile and the next call are refused", () =>
    withSkein({
      script: {
        turns: [{ calls: [[call("spawn_agent", { task: "write three files" }, "s1")], [call("wait_agent", {}, "w1")], [{ text: "ok" }]] }],
        agents: {
          general: {
            turns: [{
              calls: [
                [call("write", { path: "a.txt", content: "a" }, "a")],
                [call("write", { path: "b.txt", content: "b" }, "b")],
                [call("write", { path: "c.txt", content: "c" }, "c")],
                [{ text: "done" }]
              ]
            }]
          }
        }
      }
    }, ({ runtime, cwd, readLog }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        const asked: Array<string> = []
        yield* session.turn(text("go")).pipe(Stream.runForEach((event) =>
          Effect.gen(function*() {
            const question = questionOf(event)
            if (question === undefined) return
            asked.push(question.toolCallId)
            // While the child's second question is open, the user switches the parent to plan.
            if (question.toolCallId === "b") yield* session.setMode("plan")
            const child = yield* runtime.getSession(question.sessionId)
            yield* child.answer(question.requestId, { outcome: "selected", optionId: "allow_once" })
          })
        ))
        assert.deepStrictEqual(asked, ["a", "b"])
        assert.isTrue(existsSync(join(cwd, "a.txt")))
        assert.isFalse(existsSync(join(cwd, "b.txt")))
        assert.isFalse(existsSync(join(cwd, "c.txt")))
        const [childId] = spawned((yield* readLog(session.id)).events as never)
        const results = toolResults((yield* readLog(childId!)).events as never)
        assert.deepStrictEqual(results.map((r) => [r.id, r.ok]), [["a", true], ["b", false], ["c", false]])
        assert.include(results[1]!.content, "Plan mode")
        assert.include(results[2]!.content, "Plan mode")
      })))

  it.live("an isolated child of a parent in plan creates no branch and no worktree", () =>
    withSkein({
      mode: "plan",
      script: {
        turns: [{ calls: [[call("spawn_agent", { task: "edit in isolation", workspace: "isolated" }, "s1")], [{ text: "ok" }]] }],
        agents: { general: { turns: [{ calls: [[{ text: "never" }]] }] } }
      }
    }, ({ runtime, cwd, home, readLog }) =>
      Effect.gen(function*() {
        const git = gitRepo(cwd)
        const session = yield* runtime.newSession({ cwd })
        yield* session.prompt(text("go"))
        const [result] = toolResults((yield* readLog(session.id)).events as never)
        assert.isFalse(result!.ok)
        assert.include(result!.content, "Plan mode")
        assert.strictEqual(git("branch", "--list", "skein/*"), "")
        assert.isFalse(existsSync(join(home, "worktrees")) && readdirSync(join(home, "worktrees")).length > 0)
        assert.deepStrictEqual(spawned((yield* readLog(session.id)).events as never), [])
      })))

  it.live("in default mode an isolated workspace is asked for; refused, nothing is made", () =>
    withSkein({
      script: {
        turns: [{ calls: [[call("spawn_agent", { task: "edit in isolation", workspace: "isolated" }, "s1")], [{ text: "ok" }]] }],
        agents: { general: { turns: [{ calls: [[{ text: "never" }]] }] } }
      }
    }, ({ runtime, cwd, readLog }) =>
      Effect.gen(function*() {
        const git = gitRepo(cwd)
        const session = yield* runtime.newSession({ cwd })
        const asked: Array<Asked> = []
        yield* session.turn(text("go")).pipe(Stream.runForEach((event) =>
          Effect.gen(function*() {
            const question = questionOf(event)
            if (question === undefined) return
            asked.push(question)
            yield* session.answer(question.requestId, { outcome: "selected", optionId: "reject_once" })
          })
        ))
        assert.strictEqual(asked.length, 1)
        assert.strictEqual(asked[0]!.sessionId, session.id)
        assert.strictEqual(asked[0]!.toolCallId, "s1")
        assert.match(asked[0]!.title, /branch skein\/.+ and its worktree/)
        const [result] = toolResults((yield* readLog(session.id)).events as never)
        assert.isFalse(result!.ok)
        assert.include(result!.content, "denied")
        assert.strictEqual(git("branch", "--list", "skein/*"), "")
        // Nothing of the parent's state was recorded in the repository either.
        assert.strictEqual(git("worktree", "list").trim().split("\n").length, 1)
      })))

  it.live("a parent in plan cannot start an external agent (it acts on its own)", () =>
    withSkein({
      mode: "plan",
      script: { turns: [{ calls: [[call("spawn_agent", { task: "change things", agent: "outside" }, "s1")], [{ text: "ok" }]] }] }
    }, ({ runtime, cwd, home, readLog }) =>
      Effect.gen(function*() {
        const repo = resolve(import.meta.dirname, "../..")
        mkdirSync(home, { recursive: true })
        writeFileSync(join(home, "config.json"), JSON.stringify({
          agents: { outside: { acp: { command: join(repo, "node_modules/.bin/node"), args: [join(repo, "test/fixtures/acp/agent.mjs")] } } }
        }))
        const session = yield* runtime.newSession({ cwd })
        yield* session.prompt(text("go"))
        const [result] = toolResults((yield* readLog(session.id)).events as never)
        assert.isFalse(result!.ok)
        assert.include(result!.content, "external agent")
        assert.include(result!.content, "plan mode")
        assert.deepStrictEqual(spawned((yield* readLog(session.id)).events as never), [])
      })))

  it.live("in plan mode /undo changes no file, and says why; switched back, it undoes", () =>
    withSkein({
      mode: "bypassPermissions",
      script: { turns: [{ calls: [[call("write", { path: "made.txt", content: "made\n" }, "w1")], [{ text: "wrote it" }]] }] }
    }, ({ runtime, cwd, readLog }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd })
        yield* session.prompt(text("make it"))
        assert.isTrue(existsSync(join(cwd, "made.txt")))
        yield* session.setMode("plan")
        yield* session.prompt(text("/undo"))
        assert.isTrue(existsSync(join(cwd, "made.txt")))
        const notices = (yield* readLog(session.id)).events.filter((e) => e.type === "notice").map((e) => (e.data as { text: string }).text)
        assert.include(notices.at(-1), "plan mode")
        assert.isFalse((yield* readLog(session.id)).events.some((e) => e.type === "undo"))
        yield* session.setMode("default")
        yield* session.prompt(text("/undo"))
        assert.isFalse(existsSync(join(cwd, "made.txt")))
      })))
})
