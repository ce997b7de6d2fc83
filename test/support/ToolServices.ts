/**
 * The services a turn provides its tools (`runtime/TurnServices.ts`), for tests that run a
 * tool on its own: the same construction a session uses, with the parts a test names (a
 * client's files or terminal, a sandbox, children, skills) and progress and plans sent where
 * the test says (nowhere by default).
 */
import * as Effect from "effect/Effect"
import * as TurnServices from "../../src/runtime/TurnServices.ts"
import type * as Edges from "../../src/tools/Edges.ts"

export interface Parts extends Omit<TurnServices.Parts, "emit"> {
  readonly progress?: Edges.Emit["Service"]["progress"] | undefined
  readonly plan?: Edges.Emit["Service"]["plan"] | undefined
}

export const context = (parts: Parts = {}) =>
  TurnServices.make({
    ...parts,
    emit: { progress: parts.progress ?? (() => Effect.void), plan: parts.plan ?? (() => Effect.void) }
  })

/** Provides a tool run with the turn's services made of `parts`. */
export const provide = (parts: Parts = {}) => Effect.provideContext(context(parts))
