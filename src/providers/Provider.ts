/**
 * The Provider contract: one wire dialect to a model.
 *
 * A provider turns a model request into a stream of parts. The stream never
 * fails: a failure is its last part (`Failure`), so the turn loop handles every
 * outcome as data. Interrupting the stream aborts the call.
 */
import type * as Effect from "effect/Effect"
import type * as Stream from "effect/Stream"
import type { Message, ModelStop, ToolSpec, Usage, UserBlock } from "../Vocabulary.ts"

export interface ModelRequest {
  readonly sessionId: string
  /** 1-based number of the turn within the session. */
  readonly turn: number
  /** 1-based number of the model call within the turn. */
  readonly call: number
  readonly system: string
  readonly messages: ReadonlyArray<Message>
  readonly tools: ReadonlyArray<ToolSpec>
  readonly model?: string | undefined
  /** The session's reasoning effort (its `thought_level` option), when the model supports one. */
  readonly reasoningEffort?: string | undefined
  /** The agent the session runs as, when it is a child session (a subagent). */
  readonly agent?: string | undefined
  /** `compaction`: the call summarises the conversation (no tools; its answer is the summary). */
  readonly purpose?: "compaction" | undefined
}

export type StreamPart =
  | { readonly _tag: "TextDelta"; readonly text: string }
  | { readonly _tag: "ThinkingDelta"; readonly text: string; readonly signature?: string }
  | { readonly _tag: "ToolCall"; readonly id: string; readonly name: string; readonly args: unknown }
  | { readonly _tag: "Usage"; readonly usage: Usage }
  | { readonly _tag: "Finish"; readonly stop: Exclude<ModelStop, "error" | "cancelled"> }
  /** `overflow`: the conversation no longer fits the model's context window (a compaction may help). */
  | { readonly _tag: "Failure"; readonly message: string; readonly retryable: boolean; readonly overflow?: boolean | undefined }

export interface Provider {
  /** The dialect name, e.g. `scripted`, `openai-chat`. */
  readonly name: string
  readonly stream: (request: ModelRequest) => Stream.Stream<StreamPart>
  /**
   * Loads and runs once what the first call needs, without calling the model, so that a
   * first prompt does not pay for it; for a server to run while it waits for one. Never fails.
   */
  readonly warm?: Effect.Effect<void> | undefined
  /** The context window (tokens) of its models, when the provider itself knows it (the scripted provider). */
  readonly contextWindow?: number | undefined
  /**
   * Whether the conversation is compacted before that call, when the provider
   * decides it (a replay: where the log compacted); `undefined`: the session's threshold decides.
   */
  readonly compactionDue?: ((at: CallPoint) => boolean | undefined) | undefined
  /**
   * The content a user steered into that turn after that call, when the provider decides
   * it (a replay: what the log had there); when defined, the session's own steering is not used.
   */
  readonly injected?: ((at: CallPoint) => ReadonlyArray<ReadonlyArray<UserBlock>>) | undefined
}

/** A place in a session's turns: model call `call` of turn `turn` of session `sessionId`. */
interface CallPoint {
  readonly sessionId: string
  readonly turn: number
  readonly call: number
}
