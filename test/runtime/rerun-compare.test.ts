/**
 * Comparing a re-run with its log decides by each result's `status`, never by its text: two
 * calls that did not run to their end are the same whatever they say, and a call that ran is
 * never taken for one that was stopped because its output reads like a cancel.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Canonical, CanonicalBody, ToolStatus } from "../../src/log/Event.ts"
import { compare } from "../../src/runtime/RerunCompare.ts"
import { INTERRUPTED_TURN } from "../../src/log/Recovery.ts"
import { CANCELLED_TOOL, NOT_RUN_TOOL } from "../../src/runtime/TurnEnd.ts"

/** A one-turn log whose one call `c1` ended with this result. */
const log = (result: { readonly status: ToolStatus; readonly content: string }, stopReason: "end_turn" | "cancelled" = "end_turn"): Array<Canonical> => {
  const bodies: Array<CanonicalBody> = [
    { type: "turn_start", data: { content: [{ type: "text", text: "Go" }] } },
    { type: "tool_call", data: { id: "c1", name: "bash", args: { command: "x" }, title: "`x`", kind: "execute" } },
    { type: "tool_result", data: { id: "c1", ok: result.status === "done", ...result } },
    { type: "turn_end", data: { stopReason } }
  ]
  return bodies.map((body, i) => ({ ...body, sessionId: "s", seq: i + 1, ts: i, turn: 1 }) as Canonical)
}

const differences = (recorded: Array<Canonical>, rerun: Array<Canonical>) =>
  compare({ recorded, rerun, recordedCwd: "/w", rerunCwd: "/w" }).turns[0]!.differences

describe("RerunCompare", () => {
  it("two calls stopped before their end are the same, whatever their texts", () => {
    assert.deepStrictEqual(differences(log({ status: "cancelled", content: CANCELLED_TOOL }), log({ status: "not_run", content: NOT_RUN_TOOL })), [])
    assert.deepStrictEqual(differences(log({ status: "interrupted", content: "stopped" }), log({ status: "not_logged", content: "unknown" })), [])
  })

  it("a call that ran and failed with the text of a cancel differs from one that was cancelled", () => {
    const ran = log({ status: "failed", content: CANCELLED_TOOL })
    const cancelled = log({ status: "cancelled", content: CANCELLED_TOOL })
    assert.deepStrictEqual(differences(ran, cancelled), [
      { kind: "changed", toolCallId: "c1", tool: "`x`", field: "status", recorded: "failed", rerun: "cancelled" }
    ])
    assert.deepStrictEqual(differences(cancelled, ran), [
      { kind: "changed", toolCallId: "c1", tool: "`x`", field: "status", recorded: "cancelled", rerun: "failed" }
    ])
    assert.deepStrictEqual(differences(ran, ran), [])
  })

  it("a call that ran fine with the text of a cancel is compared as one that ran", () => {
    const done = log({ status: "done", content: CANCELLED_TOOL })
    assert.deepStrictEqual(differences(done, done), [])
    assert.deepStrictEqual(differences(done, log({ status: "done", content: "other" })).map((d) => d.field), ["content"])
  })

  it("two refused calls are the same however they were refused (a rule, a question, the mode)", () => {
    assert.deepStrictEqual(differences(log({ status: "denied", content: "The user chose to always reject `x`." }), log({ status: "denied", content: "Plan mode is read-only." })), [])
    assert.deepStrictEqual(differences(log({ status: "denied", content: "No." }), log({ status: "done", content: "ran" })).map((d) => d.field), ["ok", "content"])
  })

  it("how a turn ended is compared by its stop reason: two cancelled turns are the same whatever their notes say; failures are compared by their errors", () => {
    const ended = (end: { readonly stopReason: "end_turn" | "cancelled"; readonly error?: string }) =>
      log({ status: "cancelled", content: CANCELLED_TOOL }, end.stopReason).map((event) => (event.type === "turn_end" ? { ...event, data: end } as Canonical : event))
    const cancelled = ended({ stopReason: "cancelled" })
    // A crash recovered (in today's words, or an older Skein's), against a cancel, either way round.
    assert.deepStrictEqual(differences(ended({ stopReason: "cancelled", error: INTERRUPTED_TURN }), cancelled), [])
    assert.deepStrictEqual(differences(cancelled, ended({ stopReason: "cancelled", error: INTERRUPTED_TURN })), [])
    assert.deepStrictEqual(differences(ended({ stopReason: "cancelled", error: "Skein stopped before this turn ended." }), cancelled), [])
    // A failure is not a cancel, and two failures that say different things differ.
    assert.deepStrictEqual(differences(ended({ stopReason: "end_turn", error: "The model failed" }), cancelled).map((d) => d.field), ["stopReason"])
    assert.deepStrictEqual(differences(ended({ stopReason: "end_turn", error: "The model failed" }), ended({ stopReason: "end_turn", error: "The disk is full" })), [
      { kind: "outcome", field: "error", recorded: "The model failed", rerun: "The disk is full" }
    ])
  })
})
