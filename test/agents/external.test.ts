/**
 * External ACP agents, driven for real: the agent is Skein itself (`dist/skein.mjs acp` with a
 * scripted provider), run by `External.make(...).run(io)` as an ACP client would run it. The
 * test's `io` plays the session: it stamps and logs the events into a real History; the turn's
 * `Questions` and `Permission` it is provided answer the agent's questions and play the
 * permission gate; and it finalizes each turn the way the
 * session's supervisor does. Then the log must hold together (every tool call part of a model
 * response, every call answered once) and replay into the expected transcript.
 */
import { assert, describe, expectTypeOf, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import * as External from "../../src/agents/External.ts"
import type * as Connection from "../../src/agents/ExternalConnection.ts"
import * as Files from "../../src/agents/ExternalFiles.ts"
import * as Fold from "../../src/agents/ExternalFold.ts"
import { type Canonical, CanonicalBody, type EphemeralBody } from "../../src/log/Event.ts"
import * as History from "../../src/log/History.ts"
import type { TurnOutcome } from "../../src/session/Protocol.ts"
import * as TurnContract from "../../src/session/TurnContract.ts"
import type { ToolEnv } from "../../src/tools/Tool.ts"
import * as Replay from "../../src/translate/Replay.ts"
import type { PermissionOption, PermissionToolCall } from "../../src/Vocabulary.ts"
import * as TempDir from "../support/TempDir.ts"

/** The replayed updates of the conversation (the session's title is not what these tests are about). */
const conversation = (events: Parameters<typeof Replay.updates>[0]) => Replay.updates(events).filter((u) => u.sessionUpdate !== "session_info_update")

const REPO = resolve(import.meta.dirname, "../..")
const NODE = join(REPO, "node_modules/.bin/node")
const SKEIN = join(REPO, "dist/skein.mjs")
/** A scripted ACP agent: each prompt's text is the JSON list of what it does (see the file). */
const FAKE = join(REPO, "test/fixtures/acp/agent.mjs")

type Part = Record<string, unknown>
interface Script {
  readonly turns: ReadonlyArray<{ readonly calls: ReadonlyArray<ReadonlyArray<Part>> }>
}

interface Question {
  readonly toolCall: PermissionToolCall
  readonly options: ReadonlyArray<PermissionOption>
}

/** The session side of the test: its log, its history, its answers. */
interface Harness {
  readonly cwd: string
  readonly agent: Connection.ExternalAgent
  readonly history: History.History
  readonly events: Array<Canonical>
  readonly ephemeral: Array<{ readonly turn: number; readonly body: EphemeralBody }>
  readonly asked: Array<Question>
  /** What the gate was asked; `granted` when told the user allowed this very edit in the agent's question. */
  readonly permits: Array<{ readonly call: TurnContract.AnnouncedCall; readonly tool: string; readonly args: unknown; readonly granted?: true }>
  /** How the user answers the agent's questions. */
  answer: (question: Question) => TurnContract.PermissionAnswer | undefined
  /** Overrides `answer` with an effect (one that never ends: a question nobody answers yet). */
  askWith: ((question: Question) => Effect.Effect<TurnContract.PermissionAnswer | undefined>) | undefined
  /** What the permission gate says (`granted`: it was told the user allowed this very edit). */
  permit: (call: TurnContract.AnnouncedCall, granted: boolean) => TurnContract.Permit
}

/** Whether a process can still run (a zombie counts as dead). */
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  if (process.platform !== "linux" || !existsSync(`/proc/${pid}/stat`)) return true
  const stat = readFileSync(`/proc/${pid}/stat`, "latin1")
  return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z"
}

const waitUntil = (done: () => boolean, what: string, ms = 10_000) =>
  Effect.gen(function*() {
    const start = performance.now()
    while (!done()) {
      if (performance.now() - start > ms) return assert.fail(`timed out waiting for ${what}`)
      yield* Effect.sleep(10)
    }
  })

/** A workspace with `files`, a home and a script for an inner Skein; its events go to a fresh history. */
const harness = (script: Script, options: { readonly files?: Record<string, string>; readonly args?: ReadonlyArray<string> } = {}) =>
  Effect.gen(function*() {
    const root = yield* TempDir.make("skein-external-")
    const cwd = join(root, "workspace")
    const home = join(root, "home")
    mkdirSync(cwd)
    mkdirSync(home)
    for (const [file, content] of Object.entries(options.files ?? {})) writeFileSync(join(cwd, file), content)
    const scriptPath = join(root, "script.json")
    writeFileSync(scriptPath, JSON.stringify(script))
    const h: Harness = {
      cwd,
      agent: {
        name: "inner",
        command: NODE,
        args: [SKEIN, "acp", "--home", home, "--script", scriptPath, ...(options.args ?? [])],
        // The flags decide: a developer's own settings and keys must not reach the inner agent.
        env: { SKEIN_HOME: "", SKEIN_PROVIDER: "", SKEIN_SCRIPT: "", SKEIN_MODEL: "", SKEIN_MODE: "" }
      },
      history: History.make(),
      events: [],
      ephemeral: [],
      asked: [],
      permits: [],
      answer: () => ({ outcome: "selected", optionId: "allow_once" }),
      askWith: undefined,
      permit: () => ({ _tag: "allow" })
    }
    return h
  })

/** Logs one canonical event as the session does: checked, stamped, folded, kept. */
const log = (h: Harness, turn: number, body: CanonicalBody) =>
  Effect.sync(() => {
    Schema.decodeUnknownSync(CanonicalBody)(body)
    History.apply(h.history, body)
    h.events.push({ ...body, sessionId: "child", seq: h.events.length + 1, ts: 0, turn } as Canonical)
  })

const ioFor = (h: Harness, turn: number, state: TurnContract.TurnState): TurnContract.TurnIO => ({
  sessionId: "child",
  turn,
  content: [],
  cwd: h.cwd,
  roots: [h.cwd],
  history: h.history,
  emit: {
    // A logged model response is no longer partial (as in the session).
    canonical: (body) =>
      Effect.map(log(h, turn, body), () => {
        if (body.type === "model_response") state.partial = undefined
      }),
    ephemeral: (body) => Effect.sync(() => void h.ephemeral.push({ turn, body }))
  },
  state
})

/** The turn's edges as the test plays them: the permission gate (records, answers `h.permit`) and the presenter's questions. */
const edgesFor = (h: Harness) =>
  Context.make(TurnContract.Permission, {
    permit: (call, tool, args, prior) =>
      Effect.sync(() => {
        h.permits.push({ call, tool: tool.name, args, ...(prior?.granted === true ? { granted: true as const } : {}) })
        return h.permit(call, prior?.granted === true)
      })
  }).pipe(Context.add(TurnContract.Questions, {
    ask: (question) =>
      Effect.suspend(() => {
        h.asked.push(question)
        return h.askWith !== undefined ? h.askWith(question) : Effect.succeed(h.answer(question))
      }),
    canAsk: () => true
  }))

/**
 * One turn as the session supervises it: `turn_start`, the runner (with `meanwhile` alongside
 * it, which may interrupt it), then what the supervisor logs for what was left open.
 */
const turn = (
  h: Harness,
  runner: External.Runner,
  text: string,
  meanwhile?: (fiber: Fiber.Fiber<TurnOutcome>, turn: number) => Effect.Effect<void>
) =>
  Effect.gen(function*() {
    const n = h.history.turns + 1
    const content = [{ type: "text" as const, text }]
    yield* log(h, n, { type: "turn_start", data: { content } })
    const state: TurnContract.TurnState = { partial: undefined, call: 0, requested: new Map() }
    const fiber = yield* Effect.forkChild(runner.run({ ...ioFor(h, n, state), content }).pipe(Effect.provideContext(edgesFor(h))))
    if (meanwhile !== undefined) yield* meanwhile(fiber, n)
    const exit = yield* Fiber.await(fiber)
    const outcome: TurnOutcome = Exit.isSuccess(exit) ? exit.value : { stopReason: "cancelled" }
    if (state.partial !== undefined) {
      yield* log(h, n, { type: "model_response", data: { call: state.call, parts: state.partial, stop: outcome.stopReason === "cancelled" ? "cancelled" : "error" } })
    }
    for (const [id, name] of [...h.history.openToolCalls]) {
      if (!h.history.announced.has(id)) yield* log(h, n, { type: "tool_call", data: { id, name, args: state.requested.get(id) ?? {}, title: name, kind: "other" } })
      yield* log(h, n, { type: "tool_result", data: { id, ok: false, status: "cancelled", content: "Cancelled by the user" } })
    }
    yield* log(h, n, { type: "turn_end", data: { stopReason: outcome.stopReason, ...(outcome.error !== undefined ? { error: outcome.error } : {}) } })
    return outcome
  })

/** The log holds together: each tool call is part of an earlier model response, announced once, answered once. */
const assertConsistent = (h: Harness) => {
  const requested = new Set<string>()
  const announced = new Set<string>()
  const answered = new Set<string>()
  for (const event of h.events) {
    if (event.type === "model_response") {
      for (const part of event.data.parts) {
        if (part.type !== "tool_call") continue
        assert.isFalse(requested.has(part.id), `tool call ${part.id} requested twice`)
        requested.add(part.id)
      }
    } else if (event.type === "tool_call") {
      assert.isTrue(requested.has(event.data.id), `tool call ${event.data.id} announced before any response asked for it`)
      assert.isFalse(announced.has(event.data.id), `tool call ${event.data.id} announced twice`)
      announced.add(event.data.id)
    } else if (event.type === "tool_result") {
      assert.isTrue(announced.has(event.data.id), `result of ${event.data.id}, which was never announced`)
      assert.isFalse(answered.has(event.data.id), `tool call ${event.data.id} answered twice`)
      answered.add(event.data.id)
    }
  }
  assert.deepStrictEqual([...requested].sort(), [...answered].sort())
  assert.strictEqual(h.history.openToolCalls.size, 0)
  assert.strictEqual(h.history.partial, undefined)
}

const types = (h: Harness, turn: number) => h.events.filter((e) => e.turn === turn).map((e) => e.type)
const ofType = <T extends Canonical["type"]>(h: Harness, type: T) => h.events.filter((e): e is Extract<Canonical, { type: T }> => e.type === type)
const deltas = (h: Harness, turn: number) =>
  h.ephemeral.filter((e) => e.turn === turn && e.body.type === "text_delta").map((e) => (e.body as { data: { text: string } }).data.text).join("")

/** Runs `body` with a runner made in a scope of its own, closed (with the agent) at the end. */
const withRunner = <A, E, R>(
  h: Harness,
  body: (runner: External.Runner, scope: Scope.Closeable) => Effect.Effect<A, E, R>,
  ceiling?: Connection.Options["ceiling"]
) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
    const runner = yield* External.make(h.agent, { cwd: h.cwd, clientInfo: { name: "skein-test", version: "0" }, ceiling }).pipe(Scope.provide(scope))
    return yield* body(runner, scope)
  })

const live = <A, E>(name: string, body: () => Effect.Effect<A, E, Scope.Scope | ToolEnv>, timeout = 60_000) =>
  it.live(name, () => Effect.scoped(body()).pipe(Effect.provide(TempDir.platform)), timeout)

describe("External", () => {
  it("a turn's context is a TurnIO (the runtime's seam)", () => {
    expectTypeOf<TurnContract.TurnContext>().toExtend<TurnContract.TurnIO>()
  })

  it("the built agent is there", () => {
    assert.isTrue(existsSync(SKEIN), `${SKEIN} is missing: run \`npm run build\` first`)
  })

  live("streamed text becomes deltas, then one model response; the log replays as the transcript", () =>
    Effect.gen(function*() {
      const h = yield* harness({ turns: [{ calls: [[{ text: "Hello " }, { text: "from inside" }]] }] })
      yield* withRunner(h, (runner) =>
        Effect.gen(function*() {
          const outcome = yield* turn(h, runner, "say hello")
          assert.deepStrictEqual(outcome, { stopReason: "end_turn" })
          assert.strictEqual(deltas(h, 1), "Hello from inside")
          assert.deepStrictEqual(types(h, 1), ["turn_start", "model_response", "turn_end"])
          assert.deepStrictEqual(ofType(h, "model_response")[0]!.data, { call: 1, parts: [{ type: "text", text: "Hello from inside" }], stop: "end_turn" })
          assertConsistent(h)
          assert.deepStrictEqual(conversation(h.events), [
            { sessionUpdate: "user_message_chunk", content: { type: "text", text: "say hello" }, messageId: "u1" },
            { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Hello from inside" }, messageId: "m1.1" }
          ])
        }))
    }))

  live("the agent's read is a tool call with its result, read through Skein inside the roots", () =>
    Effect.gen(function*() {
      const h = yield* harness(
        { turns: [{ calls: [[{ text: "Let me look." }, { tool: "read", args: { path: "notes.txt" } }], [{ text: "It says hi." }]] }] },
        { files: { "notes.txt": "hi there\n" } }
      )
      yield* withRunner(h, (runner) =>
        Effect.gen(function*() {
          const outcome = yield* turn(h, runner, "read notes.txt")
          assert.deepStrictEqual(outcome, { stopReason: "end_turn" })
          assert.deepStrictEqual(types(h, 1), ["turn_start", "model_response", "tool_call", "tool_result", "model_response", "turn_end"])
          const [first, last] = ofType(h, "model_response")
          const id = "ext-1-call_1_1_1"
          assert.deepStrictEqual(first!.data, {
            call: 1,
            parts: [{ type: "text", text: "Let me look." }, { type: "tool_call", id, name: "inner:read", args: { path: "notes.txt" } }],
            stop: "tool_use"
          })
          assert.deepStrictEqual(last!.data, { call: 2, parts: [{ type: "text", text: "It says hi." }], stop: "end_turn" })
          const call = ofType(h, "tool_call")[0]!.data
          assert.deepStrictEqual(call, {
            id,
            name: "inner:read",
            args: { path: "notes.txt" },
            title: "Read notes.txt",
            kind: "read",
            locations: [{ path: join(h.cwd, "notes.txt") }]
          })
          const result = ofType(h, "tool_result")[0]!.data
          assert.strictEqual(result.id, id)
          assert.isTrue(result.ok)
          assert.include(result.content, "hi there")
          assert.isTrue(h.ephemeral.some((e) => e.body.type === "tool_running" && e.body.data.id === id))
          assertConsistent(h)
          assert.deepStrictEqual(conversation(h.events), [
            { sessionUpdate: "user_message_chunk", content: { type: "text", text: "read notes.txt" }, messageId: "u1" },
            { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Let me look." }, messageId: "m1.1" },
            {
              sessionUpdate: "tool_call",
              toolCallId: id,
              title: "Read notes.txt",
              kind: "read",
              status: "in_progress",
              rawInput: { path: "notes.txt" },
              locations: [{ path: join(h.cwd, "notes.txt") }]
            },
            {
              sessionUpdate: "tool_call_update",
              toolCallId: id,
              title: "Read notes.txt",
              kind: "read",
              status: "completed",
              content: [{ type: "content", content: { type: "text", text: result.content } }],
              rawOutput: { ok: true, content: result.content }
            },
            { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "It says hi." }, messageId: "m1.2" }
          ])
        }))
    }))

  live("a read outside the session's roots is refused to the agent", () =>
    Effect.gen(function*() {
      const h = yield* harness(
        { turns: [{ calls: [[{ tool: "read", args: { path: "notes.txt" } }], [{ text: "Refused." }]] }] },
        { files: { "notes.txt": "secret plans\n" } }
      )
      const inner = join(h.cwd, "sub")
      mkdirSync(inner)
      yield* withRunner(h, (runner) =>
        Effect.gen(function*() {
          const n = 1
          yield* log(h, n, { type: "turn_start", data: { content: [{ type: "text", text: "read it" }] } })
          const state: TurnContract.TurnState = { partial: undefined, call: 0, requested: new Map() }
          // The agent runs in the workspace, but this session may only touch `sub/`.
          const outcome = yield* runner.run({ ...ioFor(h, n, state), roots: [inner], content: [{ type: "text", text: "read it" }] }).pipe(
            Effect.provideContext(edgesFor(h))
          )
          yield* log(h, n, { type: "turn_end", data: { stopReason: outcome.stopReason } })
          const result = ofType(h, "tool_result")[0]!.data
          assert.isFalse(result.ok)
          assert.notInclude(result.content, "secret plans")
          assert.include(result.content, "outside the directories this session may use")
          assertConsistent(h)
        }))
    }))

  describe("a write of the agent, in its default mode", () => {
    const script: Script = { turns: [{ calls: [[{ tool: "write", args: { path: "out.txt", content: "written\n" } }], [{ text: "Done." }]] }] }

    live("reaches the user as the agent's own question; allowed, it is written once, without asking twice", () =>
      Effect.gen(function*() {
        const h = yield* harness(script)
        yield* withRunner(h, (runner) =>
          Effect.gen(function*() {
            const outcome = yield* turn(h, runner, "write it")
            assert.deepStrictEqual(outcome, { stopReason: "end_turn" })
            const id = "ext-1-call_1_1_1"
            assert.strictEqual(h.asked.length, 1)
            const question = h.asked[0]!
            assert.strictEqual(question.toolCall.toolCallId, id)
            assert.strictEqual(question.toolCall.kind, "edit")
            assert.strictEqual(question.toolCall.title, "Write out.txt")
            assert.deepStrictEqual(question.toolCall.locations, [{ path: join(h.cwd, "out.txt") }])
            assert.deepStrictEqual(question.options.map((o) => o.kind), ["allow_once", "allow_always", "reject_once", "reject_always"])
            // The user said yes to the agent: the gate is told so, and does not ask again.
            assert.deepStrictEqual(h.permits.map((p) => [p.call.id, p.granted]), [[id, true]])
            assert.strictEqual(readFileSync(join(h.cwd, "out.txt"), "utf8"), "written\n")
            assert.deepStrictEqual(ofType(h, "permission").map((e) => e.data), [{ toolCallId: id, outcome: "allow_once" }])
            const result = ofType(h, "tool_result")[0]!.data
            assert.isTrue(result.ok)
            assert.deepStrictEqual(result.details?.diff, [{ path: join(h.cwd, "out.txt"), oldText: null, newText: "written\n" }])
            assert.deepStrictEqual(types(h, 1), ["turn_start", "model_response", "tool_call", "permission", "tool_result", "model_response", "turn_end"])
            assertConsistent(h)
          }))
      }))

    live("denied by the user, nothing is written and the call fails", () =>
      Effect.gen(function*() {
        const h = yield* harness(script)
        h.answer = () => ({ outcome: "selected", optionId: "reject_once" })
        yield* withRunner(h, (runner) =>
          Effect.gen(function*() {
            const outcome = yield* turn(h, runner, "write it")
            assert.deepStrictEqual(outcome, { stopReason: "end_turn" })
            assert.strictEqual(h.asked.length, 1)
            assert.isFalse(existsSync(join(h.cwd, "out.txt")))
            assert.deepStrictEqual(ofType(h, "permission").map((e) => e.data.outcome), ["reject_once"])
            const result = ofType(h, "tool_result")[0]!.data
            assert.isFalse(result.ok)
            assert.include(result.content, "denied")
            assertConsistent(h)
          }))
      }))

    live("nobody to answer: the agent hears a rejection", () =>
      Effect.gen(function*() {
        const h = yield* harness(script)
        h.answer = () => undefined
        yield* withRunner(h, (runner) =>
          Effect.gen(function*() {
            yield* turn(h, runner, "write it")
            assert.isFalse(existsSync(join(h.cwd, "out.txt")))
            assert.deepStrictEqual(ofType(h, "permission").map((e) => e.data.outcome), ["unanswerable"])
            assert.isFalse(ofType(h, "tool_result")[0]!.data.ok)
            assertConsistent(h)
          }))
      }))
  })

  describe("a write of an agent that asks nobody (bypassPermissions) goes through Skein's gate", () => {
    const script: Script = { turns: [{ calls: [[{ tool: "write", args: { path: "out.txt", content: "gated\n" } }], [{ text: "Done." }]] }] }

    live("allowed: written inside the roots", () =>
      Effect.gen(function*() {
        const h = yield* harness(script, { args: ["--mode", "bypassPermissions"] })
        yield* withRunner(h, (runner) =>
          Effect.gen(function*() {
            yield* turn(h, runner, "write it")
            assert.deepStrictEqual(h.asked, [])
            assert.strictEqual(h.permits.length, 1)
            const { call, tool, args } = h.permits[0]!
            assert.strictEqual(tool, "write")
            assert.deepStrictEqual(args, { path: join(h.cwd, "out.txt"), content: "gated\n" })
            // The gate is asked about the agent's own call that names the file.
            assert.deepStrictEqual(call, {
              id: "ext-1-call_1_1_1",
              name: "write",
              args,
              title: "Write out.txt",
              kind: "edit",
              locations: [{ path: join(h.cwd, "out.txt") }]
            })
            assert.strictEqual(readFileSync(join(h.cwd, "out.txt"), "utf8"), "gated\n")
            assert.isTrue(ofType(h, "tool_result")[0]!.data.ok)
            assertConsistent(h)
          }))
      }))

    live("denied: the agent gets the reason as an error, nothing is written", () =>
      Effect.gen(function*() {
        const h = yield* harness(script, { args: ["--mode", "bypassPermissions"] })
        h.permit = () => ({ _tag: "deny", reason: "Plan mode is read-only here" })
        yield* withRunner(h, (runner) =>
          Effect.gen(function*() {
            yield* turn(h, runner, "write it")
            assert.strictEqual(h.permits.length, 1)
            assert.isFalse(existsSync(join(h.cwd, "out.txt")))
            const result = ofType(h, "tool_result")[0]!.data
            assert.isFalse(result.ok)
            assert.include(result.content, "Plan mode is read-only here")
            assertConsistent(h)
          }))
      }))
  })

  live("a cancel is sent to the agent, which stops its turn; the same process runs the next one", () =>
    Effect.gen(function*() {
      const h = yield* harness({
        turns: [
          { calls: [[{ text: "Starting" }, { sleep_ms: 30_000 }, { text: "never" }]] },
          { calls: [[{ text: "Second turn" }]] }
        ]
      })
      yield* withRunner(h, (runner) =>
        Effect.gen(function*() {
          const outcome = yield* turn(h, runner, "take long", (fiber, n) =>
            Effect.gen(function*() {
              yield* waitUntil(() => deltas(h, n) === "Starting", "the first text")
              yield* Fiber.interrupt(fiber)
            }))
          assert.deepStrictEqual(outcome, { stopReason: "cancelled" })
          assert.deepStrictEqual(ofType(h, "model_response").map((e) => e.data), [{ call: 1, parts: [{ type: "text", text: "Starting" }], stop: "cancelled" }])
          const pid = runner.pid()
          assert.isDefined(pid)
          const next = yield* turn(h, runner, "again")
          assert.deepStrictEqual(next, { stopReason: "end_turn" })
          // The agent answered the cancel: it was not killed after the bound (that one would be gone).
          assert.strictEqual(runner.pid(), pid)
          assert.strictEqual(deltas(h, 2), "Second turn")
          assertConsistent(h)
          assert.deepStrictEqual(conversation(h.events).map((u) => u.sessionUpdate === "agent_message_chunk" || u.sessionUpdate === "user_message_chunk" ? u.content : u), [
            { type: "text", text: "take long" },
            { type: "text", text: "Starting" },
            { type: "text", text: "again" },
            { type: "text", text: "Second turn" }
          ])
        }))
    }))

  live("closing the scope leaves no process behind", () =>
    Effect.gen(function*() {
      const h = yield* harness({ turns: [{ calls: [[{ text: "hi" }]] }] })
      const scope = yield* Scope.make()
      const runner = yield* External.make(h.agent, { cwd: h.cwd, clientInfo: { name: "skein-test", version: "0" } }).pipe(Scope.provide(scope))
      assert.isUndefined(runner.pid(), "nothing runs before the first turn")
      yield* turn(h, runner, "hello")
      const pid = runner.pid()!
      assert.isTrue(alive(pid))
      yield* Scope.close(scope, Exit.void)
      assert.isFalse(alive(pid))
    }))

  live("closing the scope in the middle of a turn ends it and the process", () =>
    Effect.gen(function*() {
      const h = yield* harness({ turns: [{ calls: [[{ text: "Working" }, { sleep_ms: 30_000 }]] }] })
      const scope = yield* Scope.make()
      const runner = yield* External.make(h.agent, { cwd: h.cwd, clientInfo: { name: "skein-test", version: "0" } }).pipe(Scope.provide(scope))
      let pid = 0
      const outcome = yield* turn(h, runner, "work", (_fiber, n) =>
        Effect.gen(function*() {
          yield* waitUntil(() => deltas(h, n) === "Working", "the first text")
          pid = runner.pid()!
          yield* Scope.close(scope, Exit.void)
        }))
      assert.strictEqual(outcome.stopReason, "end_turn")
      assert.isDefined(outcome.error)
      assert.isFalse(alive(pid))
      assertConsistent(h)
    }))

  live("a command that cannot start is an error outcome", () =>
    Effect.gen(function*() {
      const h = yield* harness({ turns: [] })
      const missing = { ...h, agent: { ...h.agent, command: join(h.cwd, "no-such-agent") } }
      yield* withRunner(missing, (runner) =>
        Effect.gen(function*() {
          const outcome = yield* turn(missing, runner, "hello")
          assert.strictEqual(outcome.stopReason, "end_turn")
          assert.match(outcome.error ?? "", /^Cannot start the external agent inner: `.*no-such-agent` \(ENOENT\)$/)
          assert.isUndefined(runner.pid())
          assert.deepStrictEqual(types(missing, 1), ["turn_start", "turn_end"])
        }))
    }))

  live("an agent that dies mid-turn ends the turn with its exit; the next turn starts it again and resumes its session", () =>
    Effect.gen(function*() {
      const h = yield* harness({
        turns: [
          { calls: [[{ text: "Going" }, { sleep_ms: 30_000 }]] },
          { calls: [[{ text: "Back again" }]] }
        ]
      })
      yield* withRunner(h, (runner) =>
        Effect.gen(function*() {
          let pid = 0
          const outcome = yield* turn(h, runner, "go", (_fiber, n) =>
            Effect.gen(function*() {
              yield* waitUntil(() => deltas(h, n) === "Going", "the first text")
              pid = runner.pid()!
              process.kill(pid, "SIGKILL")
            }))
          assert.strictEqual(outcome.stopReason, "end_turn")
          assert.match(outcome.error ?? "", /^The external agent inner was killed by SIGKILL\./)
          assert.deepStrictEqual(ofType(h, "model_response").map((e) => e.data), [
            { call: 1, parts: [{ type: "text", text: "Going" }], stop: "error", error: outcome.error! }
          ])
          const next = yield* turn(h, runner, "again")
          assert.deepStrictEqual(next, { stopReason: "end_turn" })
          assert.notStrictEqual(runner.pid(), pid)
          // Its second turn: the agent's session was loaded again, not started anew.
          assert.strictEqual(deltas(h, 2), "Back again")
          assertConsistent(h)
        }))
    }))

  describe("against a scripted agent", () => {
    /** A harness whose agent is the scripted one; its prompts are lists of steps. */
    const fake = (files: Record<string, string> = {}) =>
      Effect.map(harness({ turns: [] }, { files }), (h): Harness => ({ ...h, agent: { name: "fake", command: NODE, args: [FAKE], env: {} } }))
    /** What the agent was answered to each of its requests (it reports them as text), in order. */
    const answers = (h: Harness, n: number) =>
      h.ephemeral.flatMap((e) => {
        if (e.turn !== n || e.body.type !== "text_delta") return []
        try {
          return [JSON.parse(e.body.data.text) as unknown]
        } catch {
          return []
        }
      })
    const steps = (...list: ReadonlyArray<unknown>) => JSON.stringify(list)
    const text = (t: string) => ({ update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: t } } })

    live("fs/read_text_file reads a window of lines, only inside the roots; terminals are not offered", () =>
      Effect.gen(function*() {
        const h = yield* fake({ "lines.txt": "a\nb\nc\nd\n" })
        const file = join(h.cwd, "lines.txt")
        yield* withRunner(h, (runner) =>
          Effect.gen(function*() {
            const outcome = yield* turn(h, runner, steps(
              { request: "fs/read_text_file", params: { path: file, line: 2, limit: 2 } },
              { request: "fs/read_text_file", params: { path: file, line: 4 } },
              { request: "fs/read_text_file", params: { path: file } },
              { request: "fs/read_text_file", params: { path: "/etc/hostname" } },
              { request: "fs/read_text_file", params: { path: join(h.cwd, "missing.txt") } },
              { request: "terminal/create", params: { command: "ls" } }
            ))
            assert.deepStrictEqual(outcome, { stopReason: "end_turn" })
            assert.deepStrictEqual(answers(h, 1), [
              { result: { content: "b\nc\n" } },
              { result: { content: "d\n" } },
              { result: { content: "a\nb\nc\nd\n" } },
              { error: { code: -32602, message: "The path is outside the directories this session may use" } },
              { error: { code: -32002, message: "Resource not found: no such file" } },
              { error: { code: -32601, message: "Method not found: terminal/create" } }
            ])
            assertConsistent(h)
          }))
      }))

    live("fs/read_text_file refuses a binary or non-UTF-8 file, as an edit of Skein's own does", () =>
      Effect.gen(function*() {
        const h = yield* fake()
        writeFileSync(join(h.cwd, "image.bin"), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01, 0x0a]))
        writeFileSync(join(h.cwd, "latin1.txt"), Buffer.from("caf\u00e9\n", "latin1"))
        yield* withRunner(h, (runner) =>
          Effect.gen(function*() {
            yield* turn(h, runner, steps(
              { request: "fs/read_text_file", params: { path: join(h.cwd, "image.bin") } },
              { request: "fs/read_text_file", params: { path: join(h.cwd, "latin1.txt") } }
            ))
            assert.deepStrictEqual(answers(h, 1), [
              { error: { code: Files.REFUSED, message: "The file is binary; fs/read_text_file reads text files only" } },
              { error: { code: Files.REFUSED, message: "The file is not valid UTF-8 text" } }
            ])
            assertConsistent(h)
          }))
      }))

    live("a write outside any of the agent's tool calls is a call of Skein's write, through the gate", () =>
      Effect.gen(function*() {
        const h = yield* fake()
        const file = join(h.cwd, "new.txt")
        yield* withRunner(h, (runner) =>
          Effect.gen(function*() {
            yield* turn(h, runner, steps(text("Writing. "), { request: "fs/write_text_file", params: { path: file, content: "one" } }))
            assert.strictEqual(readFileSync(file, "utf8"), "one")
            const call: TurnContract.AnnouncedCall = { id: "write-1-1", name: "write", args: { path: file, content: "one" }, title: "Write new.txt", kind: "edit", locations: [{ path: file }] }
            assert.deepStrictEqual(h.permits, [{ call, tool: "write", args: call.args }])
            assert.deepStrictEqual(answers(h, 1), [{ result: {} }])
            assert.deepStrictEqual(types(h, 1), ["turn_start", "model_response", "tool_call", "tool_result", "model_response", "turn_end"])
            assert.deepStrictEqual(ofType(h, "model_response")[0]!.data, {
              call: 1,
              parts: [{ type: "text", text: "Writing. " }, { type: "tool_call", id: "write-1-1", name: "write", args: call.args }],
              stop: "tool_use"
            })
            assert.deepStrictEqual(ofType(h, "tool_call")[0]!.data, call)
            assert.deepStrictEqual(ofType(h, "tool_result")[0]!.data, {
              id: "write-1-1",
              title: "Write new.txt",
              ok: true,
              status: "done",
              content: "Created new.txt (1 line)",
              details: { diff: [{ path: file, oldText: null, newText: "one" }] }
            })

            h.permit = () => ({ _tag: "deny", reason: "The user denied permission for Write new.txt. It was not run." })
            yield* turn(h, runner, steps({ request: "fs/write_text_file", params: { path: file, content: "two" } }))
            assert.strictEqual(readFileSync(file, "utf8"), "one")
            assert.deepStrictEqual(answers(h, 2), [{ error: { code: Files.REFUSED, message: "The user denied permission for Write new.txt. It was not run." } }])
            const denied = ofType(h, "tool_result").filter((e) => e.turn === 2).map((e) => e.data)
            assert.deepStrictEqual(denied, [{ id: "write-2-1", title: "Write new.txt", ok: false, status: "denied", content: "The user denied permission for Write new.txt. It was not run." }])
            assertConsistent(h)
          }))
      }))

    live("thoughts, a plan, progress, the agent's own option ids, and a call left open", () =>
      Effect.gen(function*() {
        const h = yield* fake()
        yield* withRunner(h, (runner) =>
          Effect.gen(function*() {
            const entries = [{ content: "Run the tests", status: "in_progress", priority: "high" }] as const
            const outcome = yield* turn(h, runner, steps(
              { update: { sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "Hmm" } } },
              { update: { sessionUpdate: "plan", entries } },
              { update: { sessionUpdate: "tool_call", toolCallId: "t1", title: "Run tests", kind: "execute", status: "pending", rawInput: { cmd: "npm test" } } },
              { update: { sessionUpdate: "tool_call_update", toolCallId: "t1", status: "in_progress", content: [{ type: "content", content: { type: "text", text: "3 passed" } }] } },
              {
                request: "session/request_permission",
                params: {
                  toolCall: { toolCallId: "t2", title: "Delete tmp", kind: "delete", rawInput: { path: "tmp" } },
                  options: [
                    { optionId: "yes", name: "Yes", kind: "allow_once" },
                    { optionId: "yes-again", name: "Yes again", kind: "allow_once" },
                    { optionId: "no", name: "No", kind: "reject_once" }
                  ]
                }
              },
              { update: { sessionUpdate: "tool_call_update", toolCallId: "t1", status: "completed" } },
              text("Done")
            ))
            assert.deepStrictEqual(outcome, { stopReason: "end_turn" })
            assert.deepStrictEqual(h.asked, [{
              toolCall: { toolCallId: "ext-1-t2", title: "Delete tmp", kind: "delete", status: "pending", rawInput: { path: "tmp" } },
              options: [{ optionId: "allow_once", name: "Yes", kind: "allow_once" }, { optionId: "reject_once", name: "No", kind: "reject_once" }]
            }])
            // The agent is answered with its own option id.
            assert.deepStrictEqual(answers(h, 1), [{ result: { outcome: { outcome: "selected", optionId: "yes" } } }])
            assert.deepStrictEqual(types(h, 1), [
              "turn_start", "plan", "model_response", "tool_call", "model_response", "tool_call", "permission", "tool_result", "tool_result", "model_response", "turn_end"
            ])
            assert.deepStrictEqual(ofType(h, "plan")[0]!.data, { entries })
            assert.deepStrictEqual(ofType(h, "model_response").map((e) => e.data.parts), [
              [{ type: "thinking", text: "Hmm" }, { type: "tool_call", id: "ext-1-t1", name: "fake:execute", args: { cmd: "npm test" } }],
              [{ type: "tool_call", id: "ext-1-t2", name: "fake:delete", args: { path: "tmp" } }],
              [{ type: "text", text: `${JSON.stringify({ result: { outcome: { outcome: "selected", optionId: "yes" } } })}Done` }]
            ])
            assert.deepStrictEqual(ofType(h, "tool_result").map((e) => e.data), [
              // Its last content stands when the final update brings none.
              { id: "ext-1-t1", title: "Run tests", ok: true, status: "done", content: "3 passed" },
              { id: "ext-1-t2", title: "Delete tmp", ok: false, status: "unfinished", content: Fold.UNFINISHED_TOOL }
            ])
            assert.deepStrictEqual(
              h.ephemeral.filter((e) => e.body.type !== "text_delta").map((e) => e.body),
              [
                { type: "thinking_delta", data: { text: "Hmm" } },
                { type: "tool_running", data: { id: "ext-1-t1" } },
                { type: "tool_progress", data: { id: "ext-1-t1", output: "3 passed" } }
              ]
            )
            assertConsistent(h)
          }))
      }))

    live("an error answer to the prompt is the turn's error", () =>
      Effect.gen(function*() {
        const h = yield* fake()
        yield* withRunner(h, (runner) =>
          Effect.gen(function*() {
            const outcome = yield* turn(h, runner, steps(text("Trying"), { fail: "quota exceeded" }))
            const error = "The external agent fake failed the prompt: quota exceeded (-32603)"
            assert.deepStrictEqual(outcome, { stopReason: "end_turn", error })
            assert.deepStrictEqual(ofType(h, "model_response")[0]!.data, { call: 1, parts: [{ type: "text", text: "Trying" }], stop: "error", error })
            // The agent is still there for the next turn.
            const pid = runner.pid()
            assert.deepStrictEqual(yield* turn(h, runner, steps(text("fine"))), { stopReason: "end_turn" })
            assert.strictEqual(runner.pid(), pid)
            assertConsistent(h)
          }))
      }))

    live("a cancel answers the agent's open question `cancelled` before the agent stops", () =>
      Effect.gen(function*() {
        const h = yield* fake()
        h.askWith = () => Effect.never
        yield* withRunner(h, (runner) =>
          Effect.gen(function*() {
            const outcome = yield* turn(
              h,
              runner,
              steps(
                { update: { sessionUpdate: "tool_call", toolCallId: "t1", title: "Edit a.txt", kind: "edit" } },
                { request: "session/request_permission", params: { toolCall: { toolCallId: "t1" }, options: [{ optionId: "ok", name: "OK", kind: "allow_once" }] } },
                { hang: true }
              ),
              (fiber) =>
                Effect.gen(function*() {
                  yield* waitUntil(() => h.asked.length === 1, "the question")
                  yield* Fiber.interrupt(fiber)
                })
            )
            assert.deepStrictEqual(outcome, { stopReason: "cancelled" })
            assert.deepStrictEqual(answers(h, 1), [{ result: { outcome: { outcome: "cancelled" } } }])
            assert.deepStrictEqual(ofType(h, "permission").map((e) => e.data), [{ toolCallId: "ext-1-t1", outcome: "cancelled" }])
            assert.deepStrictEqual(ofType(h, "tool_result").map((e) => e.data), [{ id: "ext-1-t1", ok: false, status: "cancelled", content: "Cancelled by the user" }])
            assertConsistent(h)
          }))
      }))

    live("an agent that ignores the cancel is stopped after the bound; the next turn starts another", () =>
      Effect.gen(function*() {
        const h = yield* fake()
        yield* withRunner(h, (runner) =>
          Effect.gen(function*() {
            let pid = 0
            let took = 0
            const outcome = yield* turn(h, runner, steps(text("Stuck"), { hang: "forever" }), (fiber, n) =>
              Effect.gen(function*() {
                yield* waitUntil(() => deltas(h, n) === "Stuck", "the first text")
                pid = runner.pid()!
                const start = performance.now()
                yield* Fiber.interrupt(fiber)
                took = performance.now() - start
              }))
            assert.deepStrictEqual(outcome, { stopReason: "cancelled" })
            // It was given the bound (how soon after it is stopped is the bench's to measure), then stopped.
            assert.isAtLeast(took, External.CANCEL_WAIT_MS - 100)
            assert.isFalse(alive(pid))
            assert.isUndefined(runner.pid())
            assert.deepStrictEqual(yield* turn(h, runner, steps(text("Fresh"))), { stopReason: "end_turn" })
            assert.notStrictEqual(runner.pid(), pid)
            assert.strictEqual(deltas(h, 2), "Fresh")
            assertConsistent(h)
          }))
      }), 30_000)
    live("a grant covers the kind and the files the user was shown: a read, a file named later, a kind changed later are asked for again", () =>
      Effect.gen(function*() {
        const h = yield* fake()
        // The gate as it is for these writes: it would ask, and nobody answers; only a grant spares the question.
        h.permit = (_call, granted) => (granted ? { _tag: "allow" } : { _tag: "deny", reason: "asked again, and refused" })
        const at = (name: string) => join(h.cwd, name)
        const ask = (id: string, title: string, kind: string, file: string) => ({
          request: "session/request_permission",
          params: {
            toolCall: { toolCallId: id, title, kind, locations: [{ path: at(file) }] },
            options: [{ optionId: "yes", name: "Yes", kind: "allow_once" }, { optionId: "no", name: "No", kind: "reject_once" }]
          }
        })
        const write = (file: string) => ({ request: "fs/write_text_file", params: { path: at(file), content: file } })
        yield* withRunner(h, (runner) =>
          Effect.gen(function*() {
            yield* turn(h, runner, steps(
              ask("t1", "Read a.txt", "read", "a.txt"),
              write("a.txt"),
              ask("t2", "Edit b.txt", "edit", "b.txt"),
              write("b.txt"),
              { update: { sessionUpdate: "tool_call_update", toolCallId: "t2", locations: [{ path: at("c.txt") }] } },
              write("c.txt"),
              ask("t3", "Look at d.txt", "read", "d.txt"),
              { update: { sessionUpdate: "tool_call_update", toolCallId: "t3", kind: "edit" } },
              write("d.txt")
            ))
            assert.deepStrictEqual(h.asked.map((q) => q.toolCall.title), ["Read a.txt", "Edit b.txt", "Look at d.txt"])
            assert.deepStrictEqual(h.permits.map((p) => [(p.args as { path: string }).path, p.granted]), [
              [at("a.txt"), undefined],
              [at("b.txt"), true],
              [at("c.txt"), undefined],
              [at("d.txt"), undefined]
            ])
            assert.deepStrictEqual(["a.txt", "b.txt", "c.txt", "d.txt"].map((f) => existsSync(at(f))), [false, true, false, false])
            const refused = answers(h, 1).filter((a) => (a as { error?: unknown }).error !== undefined)
            assert.deepStrictEqual(refused, [1, 2, 3].map(() => ({ error: { code: Files.REFUSED, message: "asked again, and refused" } })))
            assertConsistent(h)
          }))
      }))

    live("while the session may change nothing, the agent's questions about changes are refused without asking", () =>
      Effect.gen(function*() {
        const h = yield* fake()
        const ask = (id: string, kind: string) => ({
          request: "session/request_permission",
          params: {
            toolCall: { toolCallId: id, title: `${kind} it`, kind },
            options: [{ optionId: "yes", name: "Yes", kind: "allow_once" }, { optionId: "no", name: "No", kind: "reject_once" }]
          }
        })
        yield* withRunner(h, (runner) =>
          Effect.gen(function*() {
            yield* turn(h, runner, steps(ask("t1", "edit"), ask("t2", "execute"), ask("t3", "other"), ask("t4", "read")))
            assert.deepStrictEqual(h.asked.map((q) => q.toolCall.title), ["read it"])
            const chosen = (optionId: string) => ({ result: { outcome: { outcome: "selected", optionId } } })
            assert.deepStrictEqual(answers(h, 1), [chosen("no"), chosen("no"), chosen("no"), chosen("yes")])
            assertConsistent(h)
          }), () => ({ mode: "plan", readOnly: false }))
      }))

    live("an agent that starts a change after its session became read-only is stopped, and the turn says why", () =>
      Effect.gen(function*() {
        const h = yield* fake()
        let readOnly = false
        h.answer = () => {
          // The parent is switched to plan while the agent is looking.
          readOnly = true
          return { outcome: "selected", optionId: "allow_once" }
        }
        yield* withRunner(h, (runner) =>
          Effect.gen(function*() {
            const outcome = yield* turn(h, runner, steps(
              { request: "session/request_permission", params: { toolCall: { toolCallId: "t1", title: "Read a.txt", kind: "read" }, options: [{ optionId: "ok", name: "OK", kind: "allow_once" }] } },
              { update: { sessionUpdate: "tool_call", toolCallId: "t2", title: "Run make", kind: "execute", status: "in_progress" } },
              text("kept going"),
              { hang: "forever" }
            ))
            assert.strictEqual(outcome.stopReason, "end_turn")
            assert.include(outcome.error, "was stopped")
            assert.include(outcome.error, "Run make")
            assert.include(outcome.error, "read-only")
            assert.isUndefined(runner.pid())
            assert.deepStrictEqual(ofType(h, "tool_result").map((e) => [e.data.id, e.data.ok]), [["ext-1-t1", false], ["ext-1-t2", false]])
            assertConsistent(h)
          }), () => ({ mode: "default", readOnly }))
      }))
  })
})
