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
import type * as AcpClient from "../acp/Client.ts"
import type * as Peer from "../jsonrpc/Peer.ts"
import * as Protocol from "../jsonrpc/Protocol.ts"
import type { SessionEvent } from "../log/Event.ts"
import type { Capabilities } from "../session/ClientCalls.ts"
import type { Answer, ClientCall, PermissionAsked } from "../Vocabulary.ts"

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

/**
 * The schemas of the client's answers, loaded with the first question or call: a session asks
 * none before its first turn, so neither `initialize` nor `session/new` builds them.
 */
const clientSchemas = Effect.promise(() => import("../acp/Client.ts"))

/** Decodes `response` with the schema `pick` takes from the client's answers. */
const decode = <S extends Schema.Top & { readonly DecodingServices: never }>(pick: (schemas: typeof AcpClient) => S) => (response: unknown) =>
  Effect.flatMap(clientSchemas, (schemas) => Schema.decodeUnknownEffect(pick(schemas))(response))

const decodePermission = decode((c) => c.RequestPermissionResponse)

const cancelled: Answer = { outcome: "cancelled" }

/** An id as it may be quoted in a warning: short, and JSON-quoted so nothing in it reads as our own words. */
const quoted = (id: string): string => JSON.stringify(id.length > 64 ? `${id.slice(0, 64)}…` : id)

/**
 * Asks a permission question. An answer naming an option that was not offered is a denial,
 * with a warning that names this request as the client knows it (its method and id, the tool
 * call and the session it was asked on), not the request that happened to start the session.
 */
const permission = (peer: Peer.Peer, sessionId: string, data: PermissionAsked, sent: Deferred.Deferred<void>) => {
  let id: Protocol.Id | undefined
  const named = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.annotateLogs(effect, { rpcMethod: "session/request_permission", rpcId: id })
  const request = () => `session/request_permission #${id} (tool call ${quoted(data.toolCall.toolCallId)} of session ${sessionId})`
  return peer.request(
    "session/request_permission",
    { sessionId, toolCall: data.toolCall, options: data.options } satisfies typeof AcpClient.RequestPermissionRequest.Encoded,
    { sent, assigned: (assigned) => (id = assigned) }
  ).pipe(
    Effect.flatMap(decodePermission),
    Effect.flatMap((response): Effect.Effect<Answer> => {
      if (response.outcome.outcome !== "selected") return Effect.succeed(cancelled)
      const optionId = response.outcome.optionId
      if (data.options.some((option) => option.optionId === optionId)) return Effect.succeed({ outcome: "selected", optionId })
      return named(Effect.logWarning(
        `The answer to ${request()} chose option ${quoted(optionId)}, which was not offered ` +
          `(offered: ${data.options.map((option) => option.optionId).join(", ")}); it counts as cancelled.`
      )).pipe(Effect.as(cancelled))
    }),
    Effect.catchCause((cause) =>
      named(Effect.logWarning(`${request()} failed; treating it as a denial`, cause)).pipe(Effect.as(cancelled))
    )
  )
}

const exitStatus = (status: AcpClient.TerminalExitStatus) => ({ exitCode: status.exitCode ?? null, signal: status.signal ?? null })

/** Each client method's response, decoded as ACP allows and put in the session's shape of its result. */
const results: Record<ClientCall["op"]["method"], (response: unknown) => Effect.Effect<unknown, Schema.SchemaError>> = {
  "fs/read_text_file": (r) => Effect.map(decode((c) => c.ReadTextFileResponse)(r), (x) => ({ content: x.content })),
  "fs/write_text_file": () => Effect.succeed({}),
  "terminal/create": (r) => Effect.map(decode((c) => c.CreateTerminalResponse)(r), (x) => ({ terminalId: x.terminalId })),
  "terminal/wait_for_exit": (r) => Effect.map(decode((c) => c.WaitForTerminalExitResponse)(r), exitStatus),
  "terminal/output": (r) =>
    Effect.map(decode((c) => c.TerminalOutputResponse)(r), (x) => ({
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
