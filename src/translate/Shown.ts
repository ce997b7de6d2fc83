/**
 * What presenting a turn produces: the updates a client is shown (ACP's, and the unstable
 * ones of the subagents extension) and the questions it is asked, as data.
 */
import type * as Update from "../acp/Update.ts"
import type { SessionEvent } from "../log/Event.ts"
import type { ClientCall, PermissionAsked } from "../Vocabulary.ts"

type AcpUpdate = typeof Update.SessionUpdate.Encoded
type ContentBlock = { readonly type: "text"; readonly text: string }

/** The unstable updates of the subagents extension (schema.unstable.json). */
export type SubagentUpdate = {
  readonly sessionUpdate: "subagent_update"
  readonly sessionId: string
  readonly title?: string
  readonly description?: string
  readonly capabilities?: { readonly cancel: Record<string, never> }
  readonly state?:
    | { readonly state: "running" }
    | { readonly state: "requires_action" }
    | { readonly state: "idle"; readonly stopReason?: string }
  readonly cwd?: string
}
export type SessionMessage = {
  readonly sessionUpdate: "session_message"
  readonly messageId: string
  readonly senderSessionId: string
  readonly recipientSessionId: string
  readonly content: ReadonlyArray<ContentBlock>
}
export type Shown = AcpUpdate | SubagentUpdate | SessionMessage

export type Question = SessionEvent & (
  | { readonly type: "permission_asked"; readonly data: PermissionAsked }
  | { readonly type: "client_call"; readonly data: ClientCall }
)

/** What presenting a turn takes. */
export type Action =
  | { readonly _tag: "update"; readonly sessionId: string; readonly update: Shown }
  | {
    readonly _tag: "ask"
    /** The session the client is asked on (the child's in native form, the parent's otherwise). */
    readonly sessionId: string
    /** The session that takes the answer (the child that asked). */
    readonly answerTo: string
    /** The question as the client sees it. */
    readonly question: Question
  }
  | { readonly _tag: "withdraw"; readonly answerTo: string; readonly requestId: string }
