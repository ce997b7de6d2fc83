/**
 * `update_plan {entries: [{content, status, priority}]}`: the model's plan for
 * the task, published whole to presenters and the log (ACP `plan` updates
 * replace the previous plan, so every call sends the full list).
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Edges from "./Edges.ts"
import * as Tool from "./Tool.ts"

const Entry = Schema.Struct({
  content: Schema.String.annotate({ description: "What the step does, in a short sentence" }),
  status: Schema.Literals(["pending", "in_progress", "completed"]),
  priority: Schema.Literals(["high", "medium", "low"])
})

const Params = Schema.Struct({
  entries: Schema.Array(Entry).annotate({ description: "The whole plan, in order; it replaces the previous one" })
})
type Params = typeof Params.Type

export const update_plan = Tool.define<Params, Edges.Emit>({
  name: "update_plan",
  kind: "think",
  mutating: false,
  description: [
    "Record your plan for the current task as a list of steps, each with a status (pending, in_progress, completed) and a priority (high, medium, low).",
    "Send the whole list every time: it replaces the previous plan. Keep at most one step in_progress, and mark steps completed as soon as they are done.",
    "The user sees the plan; it changes nothing in the workspace. An empty list clears it."
  ].join(" "),
  parameters: Params,
  title: () => "Update plan",
  locations: () => [],
  execute: (args) =>
    Effect.gen(function*() {
      yield* (yield* Edges.Emit).plan(args.entries)
      const total = args.entries.length
      if (total === 0) return Tool.ok("Plan cleared.")
      const done = args.entries.filter((e) => e.status === "completed").length
      const current = args.entries.find((e) => e.status === "in_progress")
      return Tool.ok(`Plan updated: ${done} of ${total} done${current !== undefined ? `; in progress: ${current.content}` : ""}.`)
    })
})
