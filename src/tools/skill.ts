/**
 * `skill {name}`: loads one of the skills listed in the system prompt's catalog. The answer is
 * the skill's instructions (its `SKILL.md` without the front matter) and its folder, whose
 * other files the model may then read without asking. The session logs the activation
 * (`skill_activation`, with the body's sha256), and an active skill stays in force through
 * compactions.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Edges from "./Edges.ts"
import * as Tool from "./Tool.ts"

const Params = Schema.Struct({
  name: Schema.String.annotate({ description: "The skill's name, as the catalog lists it" })
})
type Params = typeof Params.Type

export const skill = Tool.define<Params, Edges.Skills>({
  name: "skill",
  kind: "read",
  mutating: false,
  description: [
    "Load a skill: instructions for a kind of task, listed by name in the skills catalog of the system prompt.",
    "Load one when the task matches its description, before doing the task, and follow what it says.",
    "Files the skill refers to are in its folder; read them with the read tool when it says to."
  ].join(" "),
  parameters: Params,
  title: (args) => `Load skill ${args.name}`,
  locations: () => [],
  execute: (args) => Effect.flatMap(Effect.service(Edges.Skills), (skills) => skills.activate(args.name))
})
