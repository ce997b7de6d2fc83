/**
 * The turn's contract: what a turn is given by its session (its context: the prompt, the
 * model, the tools, emit and its children), the edges it is provided as services for the
 * turn (`Permission` and `Questions` here; what its tools use, in `tools/Edges.ts`), what it
 * shares with the session's supervisor (its state), what the permission gate is shown and
 * says, and how a turn ends (`TurnOutcome`, in `Protocol.ts`).
 *
 * It lives below the runtime so that whatever runs a turn imports it instead of each other:
 * the loop (`runtime/Turn.ts`), the gate (`runtime/Gate.ts`), compaction, the children of a
 * turn, and a turn run by an external agent (`agents/External.ts`). Values that cross a
 * boundary (into the log, from a presenter) are Schemas; the rest, which holds functions, are
 * plain types.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Lazy from "../Lazy.ts"
import { type CanonicalBody, type EphemeralBody, ToolCall } from "../log/Event.ts"
import type { TurnHooks } from "../hooks/Hooks.ts"
import type { History } from "../log/History.ts"
import type { LogError } from "../log/LogError.ts"
import type { Provider } from "../providers/Provider.ts"
import type { Agents } from "../tools/Delegation.ts"
import type { Subject } from "../tools/Permissions.ts"
import type { Tool, ToolEnv } from "../tools/Tool.ts"
import type { Toolkit } from "../tools/Toolkit.ts"
import type { AssistantPart, PermissionOption, PermissionToolCall, UserBlock } from "../Vocabulary.ts"

/** A tool call as the log announces it (the data of its `tool_call` event) and the permission gate is shown it. */
export const AnnouncedCall = Lazy.schema("AnnouncedCall", () => ToolCall.fields.data)
export type AnnouncedCall = typeof AnnouncedCall.Type

/** An answer to a permission question, from whoever presents the turn. */
export const PermissionAnswer = Schema.Union([
  Schema.Struct({ outcome: Schema.Literal("selected"), optionId: Schema.String }),
  Schema.Struct({ outcome: Schema.Literal("cancelled") })
])
export type PermissionAnswer = typeof PermissionAnswer.Type

/**
 * The gate's verdict on a call. `readOnly`: the gate allowed it without asking because it only
 * reads; the tool runs it confined. A denial's reason goes to the model.
 */
export type Permit =
  | { readonly _tag: "allow"; readonly readOnly?: true | undefined }
  | { readonly _tag: "deny"; readonly reason: string }

/** What a call's tool is to the gate: the policy's subject, and the change it would make, to show. */
export type Gated = Subject & Pick<Tool, "preview">

/** What is known of a call before the gate decides. */
export interface Prior {
  /**
   * The user allowed this very change already, in a question about it (an external agent's
   * own question about an edit of this file): where the gate would ask, it does not ask again.
   * It never lifts a denial, and a protected file is asked about anyway.
   */
  readonly granted?: boolean | undefined
  /** A PreToolUse hook said to ask: the user is asked even where the policy would allow it (never where it denies). */
  readonly ask?: boolean | undefined
}

/**
 * The permission gate of a turn (`runtime/Gate.ts`): may this announced call run? A denial's
 * reason goes to the model. Provided to the turn's fiber when the turn starts; the loop, the
 * children's isolated workspaces and an external agent's writes all ask it.
 */
export class Permission extends Context.Service<Permission, {
  readonly permit: (call: AnnouncedCall, tool: Gated, args: unknown, prior?: Prior) => Effect.Effect<Permit, never, ToolEnv>
}>()("skein/session/Permission") {}

/** A question as it is put to whoever presents the turn: a tool call and the options offered. */
export interface Question {
  readonly toolCall: PermissionToolCall
  readonly options: ReadonlyArray<PermissionOption>
}

/**
 * Whoever presents the turn, asked a question as it is: the permission gate's, an external
 * agent's own, `/rewind`'s and the folder's trust question. Provided to the turn's fiber when
 * the turn starts. `ask` never fails: `undefined` when nobody answers (nobody presents the turn,
 * or they went away meanwhile); `canAsk` says whether anyone presents it now.
 */
export class Questions extends Context.Service<Questions, {
  readonly ask: (question: Question) => Effect.Effect<PermissionAnswer | undefined>
  readonly canAsk: () => boolean
}>()("skein/session/Questions") {
  /** A turn nobody presents: nobody is asked. */
  static readonly none: Questions["Service"] = { ask: () => Effect.succeed(undefined), canAsk: () => false }
}

/** What the loop shares with its supervisor, so an interrupted call can be finalized honestly. */
export interface TurnState {
  /** Parts of the model call in progress, streamed but not yet logged. */
  partial: Array<AssistantPart> | undefined
  call: number
  /** The id of the compaction whose summary call is in progress (its `partial` is that summary). */
  compaction?: string | undefined
  /** Arguments of the tool calls of the current call, by id (for finalizing unstarted ones). */
  readonly requested: Map<string, unknown>
}

export interface Emit {
  /** Logs then publishes a canonical event of this turn. */
  readonly canonical: (body: CanonicalBody) => Effect.Effect<void, LogError>
  /** Publishes an ephemeral event of this turn. */
  readonly ephemeral: (body: EphemeralBody) => Effect.Effect<void>
}

/** The children of a turn as the turn uses them: the agent tools', and what its end waits for. */
export interface TurnAgents extends Agents {
  /**
   * Waits for the children still working and gives back, once, the results the model has not
   * read (as the text of its next input); `undefined` when there are none.
   */
  readonly settle: Effect.Effect<{ readonly ids: ReadonlyArray<string>; readonly text: string } | undefined>
}

export interface TurnContext {
  readonly sessionId: string
  readonly turn: number
  /** The prompt this turn answers (already in `history`). */
  readonly content: ReadonlyArray<UserBlock>
  readonly cwd: string
  /** Every directory the session may touch, the cwd first. */
  readonly roots: ReadonlyArray<string>
  readonly system: string
  readonly model?: string | undefined
  /** The session's reasoning effort (`thought_level`), if it chose one. */
  readonly reasoningEffort?: string | undefined
  readonly provider: Provider
  readonly toolkit: Toolkit
  /** Read only: the session folds into it what `emit` logs. */
  readonly history: History
  readonly maxTurnRequests: number
  readonly emit: Emit
  readonly state: TurnState
  /** The agent a child session runs as (the provider is told). */
  readonly agent?: string | undefined
  /**
   * The session's children, when it may start some: the turn's end waits for them. (The agent
   * tools use them as the `Delegation` service the turn is provided with, with its files,
   * terminals and skills: `runtime/TurnServices.ts`.)
   */
  readonly agents?: TurnAgents | undefined
  /** Folders tools that only read may read without asking, besides the roots (the skills' folders). */
  readonly readRoots?: ReadonlyArray<string> | undefined
  /**
   * Messages for the user that arose outside the model (an MCP server failed),
   * each given out once; the loop logs them as `notice` events before each
   * model call, so they are shown inside a turn.
   */
  readonly notices?: (() => ReadonlyArray<{ readonly text: string; readonly source?: string }>) | undefined
  /** The model's context window (tokens), when known: compaction is measured against it. */
  readonly window?: number | undefined
  /** The share of the window at which the conversation is compacted before a model call (default 0.8). */
  readonly compactAt?: number | undefined
  /**
   * Content the user sent while the turn ran (steering), taken at each safe point: after the
   * tool calls of a model call, before the next call, and once more when the model stopped
   * (`final`: nothing taken then means the turn takes no more). Logged as `turn_input` there.
   */
  readonly steering?: ((final: boolean) => ReadonlyArray<ReadonlyArray<UserBlock>>) | undefined
  /**
   * The session's hooks (`src/hooks`), when it has some: `starting` says the turn is the first
   * of the session in this process (SessionStart fires before UserPromptSubmit).
   */
  readonly hooks?: (TurnHooks & { readonly starting?: "startup" | "resume" | undefined }) | undefined
}

/**
 * What a turn run elsewhere (by an external agent) uses of its context: the prompt, where it
 * runs, the log's view, emit. The agent brings its own model and tools; it is provided the
 * turn's `Permission` and `Questions` as the loop is.
 */
export type TurnIO = Pick<TurnContext, "sessionId" | "turn" | "content" | "cwd" | "roots" | "history" | "emit" | "state">
