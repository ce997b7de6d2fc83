/**
 * The ACP side of a session's questions. A `permission_asked` event becomes
 * `session/request_permission`; a `client_call` becomes the `fs/*` or `terminal/*` request it
 * names (only offered when the client advertised them). The client's response is the
 * session's answer: a malformed or failed one is a denial or a tool error, never a crash.
 * Interrupting a question (the session withdrew it) withdraws the request with
 * `$/cancel_request`.
 */
import type * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Acp from "../acp/index.ts"
import type * as Peer from "../jsonrpc/Peer.ts"
import * as Protocol from "../jsonrpc/Protocol.ts"
import type { SessionEvent } from "../log/Event.ts"
import type { Session } from "../session/Protocol.ts"
import type { Capabilities } from "../session/ClientCalls.ts"
import type { Answer, ClientCall, PermissionAsked } from "../Vocabulary.ts"

export type { Capabilities }

export interface Settings {
  /** Read and write files through the client when it offers `fs` (default true). */
  readonly useClientFs: boolean
  /** Run commands in client terminals when it offers `terminal` (default true). */
  readonly useClientTerminal: boolean
}

/** What a session may ask of this client: what it offered, as far as the settings allow. */
export const capabilities = (offered: Capabilities, settings: Settings): Capabilities => ({
  readTextFile: settings.useClientFs && offered.readTextFile,
  writeTextFile: settings.useClientFs && offered.writeTextFile,
  terminal: settings.useClientTerminal && offered.terminal
})

export type Question = SessionEvent & (
  | { readonly type: "permission_asked"; readonly data: PermissionAsked }
  | { readonly type: "client_call"; readonly data: ClientCall }
)

export const isQuestion = (event: SessionEvent): event is Question =>
  event.type === "permission_asked" || event.type === "client_call"

const decodePermission = Schema.decodeUnknownEffect(Acp.Client.RequestPermissionResponse)

const cancelled: Answer = { outcome: "cancelled" }

const permission = (peer: Peer.Peer, sessionId: string, data: PermissionAsked, sent: Deferred.Deferred<void>) =>
  peer.request(
    "session/request_permission",
    { sessionId, toolCall: data.toolCall, options: data.options } satisfies typeof Acp.Client.RequestPermissionRequest.Encoded,
    { sent }
  ).pipe(
    Effect.flatMap(decodePermission),
    Effect.map((response): Answer =>
      response.outcome.outcome === "selected" ? { outcome: "selected", optionId: response.outcome.optionId } : cancelled
    ),
    Effect.catchCause((cause) =>
      Effect.logWarning("permission request failed; treating it as a denial", cause).pipe(Effect.as(cancelled))
    )
  )

const exitStatus = (status: Acp.Client.TerminalExitStatus) => ({ exitCode: status.exitCode ?? null, signal: status.signal ?? null })

/** Each client method's response, decoded as ACP allows and put in the session's shape of its result. */
const results: Record<ClientCall["op"]["method"], (response: unknown) => Effect.Effect<unknown, Schema.SchemaError>> = {
  "fs/read_text_file": (r) => Effect.map(Schema.decodeUnknownEffect(Acp.Client.ReadTextFileResponse)(r), (x) => ({ content: x.content })),
  "fs/write_text_file": () => Effect.succeed({}),
  "terminal/create": (r) => Effect.map(Schema.decodeUnknownEffect(Acp.Client.CreateTerminalResponse)(r), (x) => ({ terminalId: x.terminalId })),
  "terminal/wait_for_exit": (r) => Effect.map(Schema.decodeUnknownEffect(Acp.Client.WaitForTerminalExitResponse)(r), exitStatus),
  "terminal/output": (r) =>
    Effect.map(Schema.decodeUnknownEffect(Acp.Client.TerminalOutputResponse)(r), (x) => ({
      output: x.output,
      truncated: x.truncated,
      exitStatus: x.exitStatus == null ? null : exitStatus(x.exitStatus)
    })),
  "terminal/kill": () => Effect.succeed({}),
  "terminal/release": () => Effect.succeed({})
}

const clientCall = (peer: Peer.Peer, sessionId: string, data: ClientCall, sent: Deferred.Deferred<void>) =>
  peer.request(data.op.method, { sessionId, ...data.op.params }, { sent }).pipe(
    Effect.flatMap((response) =>
      Effect.mapError(results[data.op.method](response), () => new Protocol.RpcError({ code: Protocol.ErrorCode.InternalError, message: `its answer to ${data.op.method} was malformed` }))
    ),
    Effect.map((result): Answer => ({ outcome: "result", result })),
    Effect.catch((error) => Effect.succeed<Answer>({ outcome: "error", message: error.message }))
  )

/**
 * Asks the client one of the session's questions and gives the session its answer. `sent`
 * completes once the request is queued for writing, so the caller can keep what follows the
 * question behind it.
 */
export const ask = (peer: Peer.Peer, session: Session, question: Question, sent: Deferred.Deferred<void>): Effect.Effect<void> =>
  askOn(peer, session.id, (answer) => session.answer(question.data.requestId, answer), question, sent)

/**
 * Asks the client a question on session `sessionId` and gives `answer` the response: for a
 * child session's question, asked on the child's id (a client that shows children) or on its
 * parent's (one that does not), and answered on the child.
 */
export const askOn = <E, R>(
  peer: Peer.Peer,
  sessionId: string,
  answer: (answer: Answer) => Effect.Effect<void, E, R>,
  question: Question,
  sent: Deferred.Deferred<void>
): Effect.Effect<void, never, R> =>
  Effect.flatMap(
    question.type === "permission_asked"
      ? permission(peer, sessionId, question.data, sent)
      : clientCall(peer, sessionId, question.data, sent),
    // Withdrawn meanwhile (the turn was cancelled): nobody waits for this answer any more.
    (value) => Effect.ignore(answer(value))
  )
