/**
 * The client's editor-side file access and terminals (`ClientAccess`, which the turn's `Files`
 * and `Terminals` are made of where the client offers them),
 * made of questions: each operation is a `client_call` on the session's stream, answered by
 * the presenter with the client's result (in the shapes of `Vocabulary.ClientResults`), which
 * is decoded here. A malformed or failed answer is a tool error, never a crash.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Lazy from "../Lazy.ts"
import type { ClientFiles } from "../tools/Files.ts"
import type { ClientTerminal } from "../tools/Terminals.ts"
import { type Answer, type ClientOp, ClientResults } from "../Vocabulary.ts"

/** What the client offers (ACP `clientCapabilities`), after the presenter's own settings. */
export interface Capabilities {
  readonly readTextFile: boolean
  readonly writeTextFile: boolean
  readonly terminal: boolean
}

/** What the client offers tools: its editor's files (`Files.client`) and its terminal (`Terminals.client`). */
export interface ClientAccess extends ClientFiles {
  readonly terminal?: ClientTerminal | undefined
}

/** Puts one operation to the presenter and waits for its answer (interruption withdraws it). */
type Call = (op: ClientOp, toolCallId?: string) => Effect.Effect<Answer>

const decodeRead = Lazy.fn(() => Schema.decodeUnknownEffect(ClientResults["fs/read_text_file"]))
const decodeCreate = Lazy.fn(() => Schema.decodeUnknownEffect(ClientResults["terminal/create"]))
const decodeOutput = Lazy.fn(() => Schema.decodeUnknownEffect(ClientResults["terminal/output"]))
const decodeExit = Lazy.fn(() => Schema.decodeUnknownEffect(ClientResults["terminal/wait_for_exit"]))

/** The client's result for `op`, or a message saying what failed. */
const result = (call: Call, what: string, op: ClientOp, toolCallId?: string): Effect.Effect<unknown, string> =>
  Effect.flatMap(call(op, toolCallId), (answer) =>
    answer.outcome === "result"
      ? Effect.succeed(answer.result)
      : Effect.fail(`${what} failed in the client: ${answer.outcome === "error" ? answer.message : "no answer"}`))

const decoded = <A>(decode: (u: unknown) => Effect.Effect<A, Schema.SchemaError>, what: string) => (u: unknown) =>
  Effect.mapError(decode(u), () => `${what} failed in the client: its answer was malformed`)

const terminal = (call: Call, announce: (toolCallId: string, terminalId: string) => Effect.Effect<void>): ClientTerminal => ({
  run: (options) => {
    const on = (method: "terminal/wait_for_exit" | "terminal/output" | "terminal/kill" | "terminal/release", terminalId: string) =>
      ({ method, params: { terminalId } }) as const
    return Effect.acquireUseRelease(
      result(call, "Creating a terminal", {
        method: "terminal/create",
        params: {
          command: "/bin/bash",
          // Without the user's ~/.bashrc, which bash reads for `-c` when it thinks sshd started
          // it (a client over ssh, or one whose terminal's stdin is a socket); see `ShellLevel`.
          args: ["--norc", "-c", options.command],
          cwd: options.cwd,
          ...(options.env !== undefined && Object.keys(options.env).length > 0
            ? { env: Object.entries(options.env).map(([name, value]) => ({ name, value })) }
            : {}),
          outputByteLimit: options.outputByteLimit
        }
      }, options.toolCallId).pipe(Effect.flatMap(decoded(decodeCreate, "Creating a terminal"))),
      ({ terminalId }) =>
        Effect.gen(function*() {
          // Let the user watch the command live inside the tool call.
          if (options.toolCallId !== undefined) yield* announce(options.toolCallId, terminalId)
          const exit = yield* result(call, "Waiting for the terminal", on("terminal/wait_for_exit", terminalId), options.toolCallId).pipe(
            Effect.flatMap(decoded(decodeExit, "Waiting for the terminal")),
            Effect.timeoutOption(options.timeoutMs)
          )
          if (exit._tag === "None") yield* Effect.ignore(call(on("terminal/kill", terminalId), options.toolCallId))
          const output = yield* result(call, "Reading the terminal's output", on("terminal/output", terminalId), options.toolCallId).pipe(
            Effect.flatMap(decoded(decodeOutput, "Reading the terminal's output"))
          )
          const status = exit._tag === "Some" ? exit.value : output.exitStatus
          return {
            terminalId,
            output: output.output,
            truncated: output.truncated,
            exitCode: status?.exitCode ?? null,
            signal: status?.signal ?? null,
            timedOut: exit._tag === "None"
          }
        }),
      ({ terminalId }) => Effect.ignore(call(on("terminal/release", terminalId), options.toolCallId))
    )
  }
})

/** The access tools get for what the client offers; undefined when it offers nothing. */
export const access = (
  offered: Capabilities,
  call: Call,
  announce: (toolCallId: string, terminalId: string) => Effect.Effect<void>
): ClientAccess | undefined => {
  if (!offered.readTextFile && !offered.writeTextFile && !offered.terminal) return undefined
  return {
    readTextFile: offered.readTextFile
      ? (path) =>
        result(call, "Reading the file", { method: "fs/read_text_file", params: { path } }).pipe(
          Effect.flatMap(decoded(decodeRead, "Reading the file")),
          Effect.map((response) => response.content)
        )
      : undefined,
    writeTextFile: offered.writeTextFile
      ? (path, content) => Effect.asVoid(result(call, "Writing the file", { method: "fs/write_text_file", params: { path, content } }))
      : undefined,
    terminal: offered.terminal ? terminal(call, announce) : undefined
  }
}
