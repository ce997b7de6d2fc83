/**
 * The update_plan tool: the full list reaches `ctx.plan` as given, and the model gets a summary.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Tool from "../../src/tools/Tool.ts"
import { update_plan } from "../../src/tools/update_plan.ts"
import * as TempDir from "../support/TempDir.ts"
import * as ToolServices from "../support/ToolServices.ts"

const setup = () => {
  const published: Array<ReadonlyArray<Tool.PlanEntry>> = []
  const ctx: Tool.ToolContext = {
    sessionId: "s-1",
    toolCallId: "c-1",
    cwd: "/nowhere",
    roots: ["/nowhere"]
  }
  const run = (args: unknown) => Tool.run(update_plan, args, ctx).pipe(ToolServices.provide({ plan: (entries) => Effect.sync(() => void published.push(entries)) }), Effect.provide(TempDir.platform))
  return { published, run }
}

describe("update_plan", () => {
  it.effect("publishes the full list through the turn's Emit and summarises it", () =>
    Effect.gen(function*() {
      const { published, run } = setup()
      const entries: Array<Tool.PlanEntry> = [
        { content: "Read the code", status: "completed", priority: "high" },
        { content: "Write the tool", status: "in_progress", priority: "high" },
        { content: "Test it", status: "pending", priority: "medium" },
        { content: "Document it", status: "pending", priority: "low" },
        { content: "Wire it", status: "completed", priority: "medium" }
      ]
      const out = yield* run({ entries })
      assert.deepStrictEqual(out, { ok: true, content: "Plan updated: 2 of 5 done; in progress: Write the tool.", details: undefined })
      assert.deepStrictEqual(published, [entries])
      const cleared = yield* run({ entries: [] })
      assert.strictEqual(cleared.content, "Plan cleared.")
      assert.deepStrictEqual(published, [entries, []])
    }))

  it.effect("a bad entry is a tool error and publishes nothing", () =>
    Effect.gen(function*() {
      const { published, run } = setup()
      const out = yield* run({ entries: [{ content: "x", status: "done", priority: "high" }] })
      assert.isFalse(out.ok)
      assert.match(out.content, /^Invalid arguments for update_plan/)
      assert.deepStrictEqual(published, [])
    }))

  it("is a read-only think tool", () => {
    assert.strictEqual(update_plan.kind, "think")
    assert.isFalse(update_plan.mutating)
    assert.strictEqual(update_plan.scope, undefined)
  })
})
