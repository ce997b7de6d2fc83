/**
 * Questions: what a session asks of whoever presents it, and the answers.
 *
 * A turn sometimes needs the presenter: the user's permission for a tool call, or (when the
 * client offers them) the editor's files and terminals. The session does not call out for
 * these; it publishes a question on its event stream (`permission_asked`, `client_call`) with
 * a `requestId`, and waits for `Session.answer(requestId, answer)`. Because a question travels
 * with the session's other events, a presenter that shows events in order shows it after
 * everything that led to it. A question the session stops waiting for (the turn was
 * cancelled, the wait timed out) is followed by `question_withdrawn`, so the presenter can
 * take it back.
 */
import type { Location, ToolKind } from "../log/Event.ts"

export type OptionKind = "allow_once" | "allow_always" | "reject_once" | "reject_always"

export interface PermissionOption {
  readonly optionId: OptionKind
  readonly name: string
  readonly kind: OptionKind
}

/** The change a `write` or `edit` would make, shown before the user answers. */
export interface ProposedDiff {
  readonly type: "diff"
  readonly path: string
  /** The file's text now; null when the file does not exist yet. */
  readonly oldText: string | null
  readonly newText: string
}

/** The tool call a permission question is about (ACP's `ToolCallUpdate` shape). */
export interface PermissionToolCall {
  readonly toolCallId: string
  readonly title: string
  readonly kind: ToolKind
  readonly status: "pending"
  readonly rawInput: unknown
  readonly locations?: ReadonlyArray<Location> | undefined
  readonly content?: ReadonlyArray<ProposedDiff> | undefined
}

export interface PermissionAsked {
  readonly requestId: string
  readonly toolCall: PermissionToolCall
  readonly options: ReadonlyArray<PermissionOption>
}

/** An operation on the client's side, as the ACP client method that does it (without `sessionId`). */
export type ClientOp =
  | { readonly method: "fs/read_text_file"; readonly params: { readonly path: string } }
  | { readonly method: "fs/write_text_file"; readonly params: { readonly path: string; readonly content: string } }
  | {
    readonly method: "terminal/create"
    readonly params: {
      readonly command: string
      readonly args: ReadonlyArray<string>
      readonly cwd: string
      readonly env?: ReadonlyArray<{ readonly name: string; readonly value: string }> | undefined
      readonly outputByteLimit: number
    }
  }
  | {
    readonly method: "terminal/wait_for_exit" | "terminal/output" | "terminal/kill" | "terminal/release"
    readonly params: { readonly terminalId: string }
  }

export interface ClientCall {
  readonly requestId: string
  /** The tool call it serves, when there is one. */
  readonly toolCallId?: string | undefined
  readonly op: ClientOp
}

/**
 * An answer. A permission question takes `selected` (one of the offered option ids) or
 * `cancelled`; a client call takes `result` (the client method's result, decoded by the
 * session) or `error` (a message).
 */
export type Answer =
  | { readonly outcome: "selected"; readonly optionId: string }
  | { readonly outcome: "cancelled" }
  | { readonly outcome: "result"; readonly result: unknown }
  | { readonly outcome: "error"; readonly message: string }
