/**
 * The results `TurnEnd.closing` logs for the calls a turn left open say how each ended in their
 * `status`: cancelled by a cancel, not run when the turn failed, not logged when the log refused
 * the result of a call that was announced (it may have run). The text the model sees is as it was.
 */
import { assert, describe, it } from "@effect/vitest"
import type { CanonicalBody } from "../../src/log/Event.ts"
import * as History from "../../src/log/History.ts"
import { ioFailure, LogError } from "../../src/log/LogError.ts"
import { CANCELLED_TOOL, closing, NOT_LOGGED_TOOL, NOT_RUN_TOOL, refusal } from "../../src/runtime/TurnEnd.ts"

/** A history with call `a` announced and call `b` only asked for by the model. */
const open = () => {
  const history = History.make()
  History.apply(history, { type: "turn_start", data: { content: [{ type: "text", text: "Go" }] } })
  History.apply(history, {
    type: "model_response",
    data: { call: 1, parts: [{ type: "tool_call", id: "a", name: "bash", args: {} }, { type: "tool_call", id: "b", name: "read", args: {} }], stop: "tool_use" }
  })
  History.apply(history, { type: "tool_call", data: { id: "a", name: "bash", args: {}, title: "`x`", kind: "execute" } })
  return history
}

const results = (bodies: ReadonlyArray<CanonicalBody>) =>
  bodies.flatMap((b) => (b.type === "tool_result" ? [[b.data.id, b.data.ok, b.data.status, b.data.content] as const] : []))

const state = () => ({ partial: undefined, call: 1, requested: new Map<string, unknown>() })

describe("TurnEnd.closing", () => {
  it("a cancelled turn's open calls are cancelled", () => {
    assert.deepStrictEqual(results(closing(open(), state(), { stopReason: "cancelled" }, false)), [
      ["a", false, "cancelled", CANCELLED_TOOL],
      ["b", false, "cancelled", CANCELLED_TOOL]
    ])
  })

  it("a failed turn's open calls were not run", () => {
    assert.deepStrictEqual(results(closing(open(), state(), { stopReason: "end_turn", error: "boom" }, false)), [
      ["a", false, "not_run", NOT_RUN_TOOL],
      ["b", false, "not_run", NOT_RUN_TOOL]
    ])
  })

  it("when the log refused an event, an announced call is not logged (it may have run), one never announced was not run", () => {
    assert.deepStrictEqual(results(closing(open(), state(), { stopReason: "end_turn", error: "full" }, true)), [
      ["a", false, "not_logged", NOT_LOGGED_TOOL],
      ["b", false, "not_run", NOT_RUN_TOOL]
    ])
  })
})

describe("TurnEnd.refusal", () => {
  const errno = (code: string) => Object.assign(new Error("system"), { code })

  it("tells the user to free disk space by the failure's code, not by its text", () => {
    const full = ioFailure("Cannot append to session log x", errno("ENOSPC"))
    assert.deepStrictEqual([full.reason, full.code, full.message], ["io", "ENOSPC", "Cannot append to session log x: the disk is full (ENOSPC)"])
    assert.include(refusal(full, "The prompt was not run").message, "(free some disk space)")
    assert.include(refusal(ioFailure("Cannot sync", errno("EDQUOT")), "The prompt was not run").message, "(free some disk space)")
    // A message that only mentions the code (a path, a database's text) is not a full disk.
    const named = new LogError({ reason: "io", message: "Cannot append to session log /logs/ENOSPC/x: permission denied (EACCES)" })
    assert.notInclude(refusal(named, "The prompt was not run").message, "free some disk space")
    assert.notInclude(refusal(ioFailure("Cannot append", errno("EACCES")), "The prompt was not run").message, "free some disk space")
  })
})
