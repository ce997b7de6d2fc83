/**
 * The fold of an external agent's prompt into canonical events, as a pure step
 * (`ExternalFold.step`): fed ACP updates and the agent's requests, read the outputs. No agent,
 * no Effect: the history the log would hold is checked by folding the canonical outputs into a
 * real `History`.
 */
import { assert, describe, it } from "@effect/vitest"
import type * as AcpUpdate from "../../src/acp/Update.ts"
import * as Fold from "../../src/agents/ExternalFold.ts"
import type { CanonicalBody } from "../../src/log/Event.ts"
import * as History from "../../src/log/History.ts"

const CWD = "/work/repo"

/** Runs inputs through the step; the final state and every output. */
const run = (inputs: ReadonlyArray<Fold.Input>, state = Fold.initial("codex", 3, CWD)) => {
  const outputs: Array<Fold.Output> = []
  for (const input of inputs) {
    const [next, out] = Fold.step(state, input)
    state = next
    outputs.push(...out)
  }
  return { state, outputs }
}

const canonical = (outputs: ReadonlyArray<Fold.Output>): Array<CanonicalBody> =>
  outputs.flatMap((o) => (o._tag === "Canonical" ? [o.body] : []))

/** The outputs in short: `type` for events, the tag for the rest. */
const shape = (outputs: ReadonlyArray<Fold.Output>): Array<string> =>
  outputs.map((o) => (o._tag === "Canonical" || o._tag === "Ephemeral" ? o.body.type : o._tag))

const update = (u: AcpUpdate.SessionUpdate, readOnly = false): Fold.Input => ({ _tag: "Update", update: u, readOnly })
const say = (text: string): Fold.Input => update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text } })
const think = (text: string): Fold.Input => update({ sessionUpdate: "agent_thought_chunk", content: { type: "text", text } })

describe("ExternalFold", () => {
  it("chunks are deltas and the model call's parts; the answer logs them as one response", () => {
    const { outputs } = run([think("Let me "), think("see."), say("Hello"), say(", world"), { _tag: "Conclude", stop: "end_turn" }])
    assert.deepStrictEqual(shape(outputs), [
      "Streaming",
      "thinking_delta",
      "Streaming",
      "thinking_delta",
      "Streaming",
      "text_delta",
      "Streaming",
      "text_delta",
      "model_response"
    ])
    const last = outputs.findLast((o) => o._tag === "Streaming")
    assert.deepStrictEqual(last, {
      _tag: "Streaming",
      call: 1,
      parts: [{ type: "thinking", text: "Let me see." }, { type: "text", text: "Hello, world" }]
    })
    assert.deepStrictEqual(canonical(outputs), [{
      type: "model_response",
      data: { call: 1, parts: [{ type: "thinking", text: "Let me see." }, { type: "text", text: "Hello, world" }], stop: "end_turn" }
    }])
  })

  it("a tool call ends the model call: its response, then the call, named for the turn; its end is a result", () => {
    const { outputs, state } = run([
      say("Reading."),
      update({ sessionUpdate: "tool_call", toolCallId: "t1", title: "Read a.txt", kind: "read", status: "pending", locations: [{ path: "a.txt" }], rawInput: { path: "a.txt" } }),
      update({ sessionUpdate: "tool_call_update", toolCallId: "t1", status: "in_progress" }),
      update({ sessionUpdate: "tool_call_update", toolCallId: "t1", status: "in_progress", content: [{ type: "content", content: { type: "text", text: "partial" } }] }),
      update({ sessionUpdate: "tool_call_update", toolCallId: "t1", status: "completed", content: [{ type: "content", content: { type: "text", text: "contents" } }] }),
      // A late update of a finished call changes nothing.
      update({ sessionUpdate: "tool_call_update", toolCallId: "t1", status: "failed" }),
      say("Done."),
      { _tag: "Conclude", stop: "end_turn" }
    ])
    assert.deepStrictEqual(shape(outputs).filter((s) => s !== "Streaming"), [
      "text_delta",
      "Requested",
      "model_response",
      "tool_call",
      "tool_running",
      "tool_progress",
      "tool_result",
      "text_delta",
      "model_response"
    ])
    assert.deepStrictEqual(canonical(outputs), [
      {
        type: "model_response",
        data: { call: 1, parts: [{ type: "text", text: "Reading." }, { type: "tool_call", id: "ext-3-t1", name: "codex:read", args: { path: "a.txt" } }], stop: "tool_use" }
      },
      { type: "tool_call", data: { id: "ext-3-t1", name: "codex:read", args: { path: "a.txt" }, title: "Read a.txt", kind: "read", locations: [{ path: "a.txt" }] } },
      { type: "tool_result", data: { id: "ext-3-t1", title: "Read a.txt", ok: true, status: "done", content: "contents" } },
      { type: "model_response", data: { call: 2, parts: [{ type: "text", text: "Done." }], stop: "end_turn" } }
    ])
    assert.strictEqual(state.open.size, 0)
  })

  it("what the log holds keeps the history's invariants: every call in a response, each answered once", () => {
    const { outputs } = run([
      update({ sessionUpdate: "tool_call_update", toolCallId: "never-reported", status: "in_progress", kind: "execute" }),
      update({ sessionUpdate: "tool_call", toolCallId: "t2", title: "Delete tmp", kind: "delete", status: "pending" }),
      { _tag: "Write", path: "notes.md", content: "x" },
      { _tag: "Conclude", stop: "end_turn" }
    ])
    const history = History.make()
    History.apply(history, { type: "turn_start", data: { content: [{ type: "text", text: "go" }] } })
    for (const body of canonical(outputs)) History.apply(history, body)
    const results = canonical(outputs).filter((b) => b.type === "tool_result").map((b) => (b as Extract<CanonicalBody, { type: "tool_result" }>).data)
    // Every call announced is answered once, and the ones the agent left open say so.
    assert.deepStrictEqual(results.map((r) => [r.id, r.ok, r.content]), [
      ["ext-3-never-reported", false, Fold.UNFINISHED_TOOL],
      ["ext-3-t2", false, Fold.UNFINISHED_TOOL],
      ["write-3-1", false, Fold.UNFINISHED_TOOL]
    ])
    const responses = canonical(outputs).filter((b) => b.type === "model_response")
    assert.deepStrictEqual(responses.map((b) => (b as Extract<CanonicalBody, { type: "model_response" }>).data.call), [1, 2, 3, 4])
    // Nothing announced is left open in the history, and every result follows its call.
    assert.strictEqual(history.announced.size, 0)
    assert.strictEqual(history.messages.filter((m) => m.role === "tool").length, 3)
  })

  it("a write names the agent's open call on that file, else is Skein's own write call", () => {
    const edit = update({ sessionUpdate: "tool_call", toolCallId: "e1", title: "Edit a.txt", kind: "edit", status: "pending", locations: [{ path: "a.txt" }] })
    const inside = run([edit, { _tag: "Write", path: "a.txt", content: "new" }])
    const writing = inside.outputs.find((o) => o._tag === "Writing")
    assert.deepStrictEqual(writing, {
      _tag: "Writing",
      call: { id: "ext-3-e1", name: "write", args: { path: `${CWD}/a.txt`, content: "new" }, title: "Edit a.txt", kind: "edit", locations: [{ path: `${CWD}/a.txt` }] },
      args: { path: `${CWD}/a.txt`, content: "new" },
      granted: false,
      own: undefined
    })
    // Another file: a call of Skein's own, announced, and ended by what the write did.
    const own = run([{ _tag: "Write", path: "b.txt", content: "b" }, { _tag: "Wrote", id: "write-3-1", status: "done", content: "Wrote b.txt" }, {
      _tag: "Wrote",
      id: "write-3-1",
      status: "failed",
      content: "twice"
    }], inside.state)
    assert.deepStrictEqual(shape(own.outputs), ["Requested", "model_response", "Streaming", "tool_call", "Writing", "tool_result"])
    assert.deepStrictEqual(canonical(own.outputs).at(-1), { type: "tool_result", data: { id: "write-3-1", title: "Write b.txt", ok: true, status: "done", content: "Wrote b.txt" } })
  })

  it("an allowed edit grants a write of the files the question showed, not a file reported later, nor after a read", () => {
    const asked = run([{ _tag: "Asked", toolCall: { toolCallId: "e1", title: "Edit a.txt", kind: "edit", locations: [{ path: "a.txt" }] } }])
    const subject = asked.outputs.find((o) => o._tag === "Subject")
    assert.ok(subject !== undefined && subject._tag === "Subject")
    assert.strictEqual(subject.call.id, "ext-3-e1")
    const granted = run([
      { _tag: "Answered", agentId: "e1", id: subject.call.id, outcome: "allow_once", granted: subject.call },
      // Reported after the question: not covered.
      update({ sessionUpdate: "tool_call_update", toolCallId: "e1", locations: [{ path: "a.txt" }, { path: "b.txt" }] }),
      { _tag: "Write", path: "a.txt", content: "A" },
      { _tag: "Write", path: "b.txt", content: "B" }
    ], asked.state)
    assert.deepStrictEqual(canonical(granted.outputs)[0], { type: "permission", data: { toolCallId: "ext-3-e1", outcome: "allow_once" } })
    const writes = granted.outputs.flatMap((o) => (o._tag === "Writing" ? [[o.args.path, o.granted]] : []))
    assert.deepStrictEqual(writes, [[`${CWD}/a.txt`, true], [`${CWD}/b.txt`, false]])

    const read = run([
      { _tag: "Asked", toolCall: { toolCallId: "r1", title: "Read a.txt", kind: "read", locations: [{ path: "a.txt" }] } },
      { _tag: "Answered", agentId: "r1", id: "ext-3-r1", outcome: "allow_once", granted: { kind: "read", locations: [{ path: "a.txt" }] } },
      { _tag: "Write", path: "a.txt", content: "A" }
    ])
    assert.deepStrictEqual(read.outputs.flatMap((o) => (o._tag === "Writing" ? [o.granted] : [])), [false])
  })

  it("a question about a finished call has no subject; its answer is still logged", () => {
    const { outputs } = run([
      update({ sessionUpdate: "tool_call", toolCallId: "t1", title: "Run", kind: "execute", status: "completed" }),
      { _tag: "Asked", toolCall: { toolCallId: "t1" } },
      { _tag: "Answered", agentId: "t1", id: "ext-3-t1", outcome: "cancelled" }
    ])
    assert.isFalse(outputs.some((o) => o._tag === "Subject"))
    assert.deepStrictEqual(canonical(outputs).at(-1), { type: "permission", data: { toolCallId: "ext-3-t1", outcome: "cancelled" } })
  })

  it("while the session may change nothing, a change going on is Confined; looking is not", () => {
    const { outputs } = run([
      update({ sessionUpdate: "tool_call", toolCallId: "r", title: "Read", kind: "read", status: "in_progress" }, true),
      update({ sessionUpdate: "tool_call", toolCallId: "w", title: "Edit a.txt", kind: "edit", status: "in_progress" }, true),
      update({ sessionUpdate: "tool_call_update", toolCallId: "w", status: "completed" }, true)
    ])
    assert.deepStrictEqual(outputs.filter((o) => o._tag === "Confined"), [{ _tag: "Confined", title: "Edit a.txt" }])
    // The same updates in a session that may change: nothing is confined.
    const free = run([update({ sessionUpdate: "tool_call", toolCallId: "w", title: "Edit a.txt", kind: "edit", status: "in_progress" })])
    assert.isFalse(free.outputs.some((o) => o._tag === "Confined"))
  })

  it("a plan is logged, usage published; the agent's own session business is not", () => {
    const { outputs } = run([
      update({ sessionUpdate: "plan", entries: [{ content: "step", status: "pending", priority: "high" }] }),
      update({ sessionUpdate: "usage_update", used: 10, size: 100, cost: { amount: 0.5, currency: "USD" } }),
      update({ sessionUpdate: "current_mode_update", currentModeId: "plan" }),
      update({ sessionUpdate: "session_info_update", title: "Theirs" })
    ])
    assert.deepStrictEqual(outputs, [
      { _tag: "Canonical", body: { type: "plan", data: { entries: [{ content: "step", status: "pending", priority: "high" }] } } },
      { _tag: "Ephemeral", body: { type: "usage", data: { used: 10, size: 100, cost: 0.5 } } }
    ])
  })

  it("a failed prompt fails every open call with its error and logs the response with it", () => {
    const { outputs, state } = run([
      update({ sessionUpdate: "tool_call", toolCallId: "t1", title: "Build", kind: "execute", status: "in_progress" }),
      say("half"),
      { _tag: "Conclude", stop: "error", error: "The agent went away" }
    ])
    assert.deepStrictEqual(canonical(outputs).slice(-2), [
      { type: "tool_result", data: { id: "ext-3-t1", title: "Build", ok: false, status: "unfinished", content: "The agent went away" } },
      { type: "model_response", data: { call: 2, parts: [{ type: "text", text: "half" }], stop: "error", error: "The agent went away" } }
    ])
    assert.strictEqual(state.open.size, 0)
  })
})
