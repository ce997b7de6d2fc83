/**
 * The services a turn provides its tools (`tools/Edges.ts`), built once when the turn starts:
 * which `Files` and `Terminals` run is decided here from what the client that presents the turn
 * offers and from the session's sandbox, never by a tool. A turn nobody presents has no client:
 * its tools use the disk and Skein's processes.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type { ClientAccess } from "../session/ClientCalls.ts"
import type { Emit } from "../session/TurnContract.ts"
import type { Agents } from "../tools/Delegation.ts"
import * as Edges from "../tools/Edges.ts"
import { Files } from "../tools/Files.ts"
import type { SessionSandbox } from "../tools/Sandboxed.ts"
import { Terminals } from "../tools/Terminals.ts"

export interface Parts {
  /** Where the tools' progress and the plan go. */
  readonly emit: Edges.Emit["Service"]
  /** What the turn's client offers (its editor's files, its terminal), when it offers something. */
  readonly client?: ClientAccess | undefined
  /** The session's sandbox, which its commands start through. */
  readonly sandbox?: SessionSandbox | undefined
  /** The session's children, when it may start some. */
  readonly agents?: Agents | undefined
  /** The session's skills, when it has some the model may load. */
  readonly skills?: Edges.Skills["Service"] | undefined
}

/** The files the turn's tools use: the client's editor for what it offers, else the disk. */
export const files = (client: ClientAccess | undefined): Files["Service"] =>
  client?.readTextFile !== undefined || client?.writeTextFile !== undefined ? Files.client(client) : Files.local

/** Where the turn's commands run: the sandbox when there is one; outside it, the client's terminal when offered, else Skein's processes. */
export const terminals = (client: ClientAccess | undefined, sandbox: SessionSandbox | undefined): Terminals["Service"] => {
  const outside = client?.terminal !== undefined ? Terminals.client(client.terminal) : Terminals.local
  return sandbox === undefined ? outside : Terminals.sandboxed(sandbox, outside)
}

export const make = (parts: Parts): Context.Context<Edges.Services> =>
  Context.make(Edges.Emit, parts.emit).pipe(
    Context.add(Files, files(parts.client)),
    Context.add(Terminals, terminals(parts.client, parts.sandbox)),
    Context.add(Edges.Delegation, parts.agents ?? Edges.Delegation.none),
    Context.add(Edges.Skills, parts.skills ?? Edges.Skills.none)
  )

/** The tools' `Emit` of a turn that emits `emit`: progress as `tool_progress`, the plan logged (a plan the log refused is logged as a problem, not the tool's). */
export const emitOf = (emit: Emit): Edges.Emit["Service"] => ({
  progress: (id, output) => emit.ephemeral({ type: "tool_progress", data: { id, output } }),
  plan: (entries) =>
    emit.canonical({ type: "plan", data: { entries } }).pipe(
      Effect.catchCause((cause) => Effect.logError("could not log a plan", cause))
    )
})
