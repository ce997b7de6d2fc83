/**
 * Bridges from a session to the ACP client: the permission asker
 * (`session/request_permission`) and, when the client offers them, editor
 * file access (`fs/*`) and terminals (`terminal/*`). Every answer is decoded;
 * a malformed or failed one is a denial or a tool error, never a crash.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Acp from "../acp/index.ts"
import type * as Peer from "../jsonrpc/Peer.ts"
import type { Asker, PermissionAnswer } from "../runtime/Gate.ts"
import type { ClientAccess, ClientTerminal } from "../tools/Tool.ts"

export interface Capabilities {
  readonly readTextFile: boolean
  readonly writeTextFile: boolean
  readonly terminal: boolean
}

export interface Settings {
  /** Read and write files through the client when it offers `fs` (default true). */
  readonly useClientFs: boolean
  /** Run commands in client terminals when it offers `terminal` (default true). */
  readonly useClientTerminal: boolean
}

const decodePermission = Schema.decodeUnknownEffect(Acp.Client.RequestPermissionResponse)
const decodeRead = Schema.decodeUnknownEffect(Acp.Client.ReadTextFileResponse)
const decodeCreate = Schema.decodeUnknownEffect(Acp.Client.CreateTerminalResponse)
const decodeOutput = Schema.decodeUnknownEffect(Acp.Client.TerminalOutputResponse)
const decodeExit = Schema.decodeUnknownEffect(Acp.Client.WaitForTerminalExitResponse)

const cancelled: PermissionAnswer = { outcome: "cancelled" }

/** Asks the client; interruption withdraws the request with `$/cancel_request`. */
export const asker = (peer: Peer.Peer): Asker => (request) =>
  peer.request("session/request_permission", request).pipe(
    Effect.flatMap(decodePermission),
    Effect.map((response): PermissionAnswer =>
      response.outcome.outcome === "selected" ? { outcome: "selected", optionId: response.outcome.optionId } : cancelled
    ),
    Effect.catchCause((cause) =>
      Effect.logWarning("permission request failed; treating it as a denial", cause).pipe(Effect.as(cancelled))
    )
  )

const message = (what: string) => (error: { readonly message?: string }) =>
  `${what} failed in the client: ${error.message ?? "unknown error"}`

const terminal = (peer: Peer.Peer, sessionId: string): ClientTerminal => ({
  run: (options) =>
    Effect.acquireUseRelease(
      peer.request("terminal/create", {
        sessionId,
        command: "/bin/bash",
        args: ["-c", options.command],
        cwd: options.cwd,
        ...(options.env !== undefined && Object.keys(options.env).length > 0
          ? { env: Object.entries(options.env).map(([name, value]) => ({ name, value })) }
          : {}),
        outputByteLimit: options.outputByteLimit
      }).pipe(Effect.flatMap(decodeCreate), Effect.mapError(message("Creating a terminal"))),
      ({ terminalId }) =>
        Effect.gen(function*() {
          if (options.toolCallId !== undefined) {
            // Let the user watch the command live inside the tool call.
            yield* peer.notify("session/update", {
              sessionId,
              update: { sessionUpdate: "tool_call_update", toolCallId: options.toolCallId, content: [{ type: "terminal", terminalId }] }
            })
          }
          const exit = yield* peer.request("terminal/wait_for_exit", { sessionId, terminalId }).pipe(
            Effect.flatMap(decodeExit),
            Effect.mapError(message("Waiting for the terminal")),
            Effect.timeoutOption(options.timeoutMs)
          )
          if (exit._tag === "None") {
            yield* Effect.ignore(peer.request("terminal/kill", { sessionId, terminalId }))
          }
          const output = yield* peer.request("terminal/output", { sessionId, terminalId }).pipe(
            Effect.flatMap(decodeOutput),
            Effect.mapError(message("Reading the terminal's output"))
          )
          const status = exit._tag === "Some" ? exit.value : output.exitStatus
          return {
            output: output.output,
            truncated: output.truncated,
            exitCode: status?.exitCode ?? null,
            signal: status?.signal ?? null,
            timedOut: exit._tag === "None"
          }
        }),
      ({ terminalId }) => Effect.ignore(peer.request("terminal/release", { sessionId, terminalId }))
    )
})

/** The client access a session gets, from what the client offers and the settings. */
export const access = (peer: Peer.Peer, sessionId: string, offered: Capabilities, settings: Settings): ClientAccess | undefined => {
  const useFs = settings.useClientFs
  const readTextFile = useFs && offered.readTextFile
    ? (path: string) =>
      peer.request("fs/read_text_file", { sessionId, path }).pipe(
        Effect.flatMap(decodeRead),
        Effect.map((response) => response.content),
        Effect.mapError(message("Reading the file"))
      )
    : undefined
  const writeTextFile = useFs && offered.writeTextFile
    ? (path: string, content: string) =>
      peer.request("fs/write_text_file", { sessionId, path, content }).pipe(
        Effect.asVoid,
        Effect.mapError(message("Writing the file"))
      )
    : undefined
  const term = settings.useClientTerminal && offered.terminal ? terminal(peer, sessionId) : undefined
  if (readTextFile === undefined && writeTextFile === undefined && term === undefined) return undefined
  return { readTextFile, writeTextFile, terminal: term }
}
