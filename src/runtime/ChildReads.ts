/**
 * What a child reads once its parent has, per cwd, kept for a minute: the skills of the
 * parent's turn (a child runs inside it) and what the system prompt says of the project.
 * Effect `Cache`s: bounded, expiring by the `Clock`, and one read for concurrent children.
 */
import * as Cache from "effect/Cache"
import * as Effect from "effect/Effect"
import type * as Prompt from "../providers/Prompt.ts"
import type * as Skills from "../skills/Skills.ts"

export interface ChildReads {
  /** The skills last found in `cwd` (by a parent, or read now). */
  readonly skills: (cwd: string) => Effect.Effect<ReadonlyArray<Skills.Skill>>
  /** A parent found these skills in `cwd`: its children take them. */
  readonly remember: (cwd: string, skills: ReadonlyArray<Skills.Skill>) => Effect.Effect<void>
  /** The project as the system prompt shows it, read at most once a minute per cwd. */
  readonly project: (cwd: string) => Effect.Effect<Prompt.Project>
}

const KEPT = "1 minute"
const CAPACITY = 256

export const make = (read: {
  readonly skills: (cwd: string) => Effect.Effect<ReadonlyArray<Skills.Skill>>
  readonly project: (cwd: string) => Effect.Effect<Prompt.Project>
}): Effect.Effect<ChildReads> =>
  Effect.gen(function*() {
    const skills = yield* Cache.make({ lookup: read.skills, capacity: CAPACITY, timeToLive: KEPT })
    const projects = yield* Cache.make({ lookup: read.project, capacity: CAPACITY, timeToLive: KEPT })
    return {
      skills: (cwd) => Cache.get(skills, cwd),
      remember: (cwd, found) => Cache.set(skills, cwd, found),
      project: (cwd) => Cache.get(projects, cwd)
    }
  })
