/**
 * The files Skein serves an external agent (it offers `fs`, and no terminal): its
 * `fs/read_text_file` reads inside the session's roots; its `fs/write_text_file` goes through
 * the turn's permission gate (`Permission`) as a call of the built-in `write` tool (told
 * whether the user allowed this very edit in the agent's own question), then writes inside the
 * roots with that tool over the local `Files` (Skein is the agent's editor: there is no other). Both go
 * through `SafeFs`, so a path that changes under them (a symbolic link appears) is refused.
 * A refusal is a JSON-RPC error whose message the agent reads; nothing reaches Skein's stdout.
 */
import * as NodePath from "node:path"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import type * as AcpClient from "../acp/Client.ts"
import * as Rpc from "../jsonrpc/Protocol.ts"
import * as SafeFs from "../fs/SafeFs.ts"
import type { ToolStatus } from "../log/Event.ts"
import type { ToolDetails } from "../Vocabulary.ts"
import { Permission, type Permit, type TurnIO } from "../session/TurnContract.ts"
import * as Files from "../tools/Files.ts"
import * as Tool from "../tools/Tool.ts"
import * as Workspace from "../tools/Workspace.ts"
import { describeError, write } from "../tools/write.ts"
import type * as Fold from "./ExternalFold.ts"

/** The largest file an agent may read through `fs/read_text_file`. */
const MAX_READ_BYTES = 8 * 1024 * 1024
/** A JSON-RPC error code of Skein's own (the implementation-defined range): the request was refused. */
export const REFUSED = -32010

const refused = (message: string) => new Rpc.RpcError({ code: REFUSED, message })
export const noPrompt = () => new Rpc.RpcError({ code: Rpc.ErrorCode.InvalidRequest, message: "No prompt of this session is running" })

/** The running prompt as a handler of the agent's requests sees it. */
export interface Served {
  readonly io: TurnIO
  /** Folds an input into the turn and carries out its outputs; `undefined` once the prompt no longer folds (or its log refused an event). */
  readonly step: (input: Fold.Input) => Effect.Effect<ReadonlyArray<Fold.Output> | undefined>
  /** Completed when the turn stops waiting for the agent (a cancel, or the end): what is pending gives up. */
  readonly ended: Deferred.Deferred<void>
}

/** The path an `fs/*` request names, resolved inside the session's roots (its real path). */
const resolveIn = (io: TurnIO, input: string) => {
  const absolute = NodePath.resolve(io.cwd, input)
  const named = io.roots.some((root) => {
    const rel = NodePath.relative(root, absolute)
    return rel !== ".." && !rel.startsWith(`..${NodePath.sep}`) && !NodePath.isAbsolute(rel)
  })
  return Workspace.resolve(input, io).pipe(
    Effect.mapError(() =>
      Rpc.invalidParams(
        named
          ? "The path leads outside the directories this session may use, or cannot be resolved"
          : "The path is outside the directories this session may use"
      )
    )
  )
}

const fsFailure = (error: SafeFs.Failure, verb: string): Rpc.RpcError =>
  error._tag === "SafeFsChanged"
    ? Rpc.invalidParams(`The path changed while it was in use (${error.reason === "link" ? "a symbolic link appeared on it" : "it now leads elsewhere"})`)
    : SafeFs.isNotFound(error)
    ? Rpc.resourceNotFound("no such file")
    : new Rpc.RpcError({ code: Rpc.ErrorCode.InternalError, message: `Cannot ${verb} the file: ${describeError(error)}` })

/** `fs/read_text_file`: the file (or a window of its lines) as text. */
export const readTextFile = (io: TurnIO, params: AcpClient.ReadTextFileRequest) =>
  Effect.gen(function*() {
    const target = yield* resolveIn(io, params.path)
    const roots = yield* SafeFs.realRoots(io.roots)
    const bytes = yield* Effect.scoped(Effect.gen(function*() {
      const { handle, stat } = yield* SafeFs.openRead(target, roots)
      if (!stat.isFile()) return yield* Effect.fail(Rpc.invalidParams("The path is not a regular file"))
      if (stat.size > BigInt(MAX_READ_BYTES)) {
        return yield* Effect.fail(Rpc.invalidParams(`The file is larger than ${MAX_READ_BYTES / 1024 / 1024} MiB`))
      }
      return yield* SafeFs.readAll(handle)
    })).pipe(Effect.mapError((error) => (error._tag === "RpcError" ? error : fsFailure(error, "read"))))
    // Text only, as an edit of Skein's own takes it: a binary or non-UTF-8 file read as text and
    // written back would have every byte that is not text changed.
    const text = yield* Files.strictText(bytes).pipe(
      Effect.mapError((problem) =>
        refused(problem._tag === "Binary" ? "The file is binary; fs/read_text_file reads text files only" : "The file is not valid UTF-8 text")
      )
    )
    if (params.line === undefined && params.limit === undefined) return { content: text }
    // Lines keep their ends, so a window joins back into the file's own text.
    const lines = text.split(/(?<=\n)/)
    const from = Math.max(0, (params.line ?? 1) - 1)
    return { content: lines.slice(from, params.limit === undefined ? undefined : from + params.limit).join("") }
  })

/**
 * `fs/write_text_file`: announced as part of the agent's open call that names the file, else
 * as a call of Skein's own `write`; asked of the gate; written with the `write` tool.
 */
export const writeTextFile = (served: Served, params: AcpClient.WriteTextFileRequest) =>
  Effect.gen(function*() {
    const { io } = served
    const outputs = yield* served.step({ _tag: "Write", path: params.path, content: params.content })
    const writing = outputs?.find((output) => output._tag === "Writing")
    if (writing === undefined) return yield* noPrompt()
    const { call, args, own } = writing
    const permit = yield* Effect.raceFirst(
      Permission.use((gate) => gate.permit(call, write, args, { granted: writing.granted })),
      Effect.as(Deferred.await(served.ended), { _tag: "deny", reason: "The turn was cancelled" } satisfies Permit)
    )
    /** Ends Skein's own call of this write, if it is one. */
    const report = (status: ToolStatus, content: string, details?: ToolDetails) =>
      own === undefined ? Effect.void : served.step({ _tag: "Wrote", id: own, status, content, details })
    if (permit._tag === "deny") {
      yield* report("denied", permit.reason)
      return yield* Effect.fail(refused(permit.reason))
    }
    // Skein is the agent's editor: the file is written on disk, as the `write` tool writes it.
    const output = yield* Tool.run(write, args, { sessionId: io.sessionId, toolCallId: call.id, cwd: io.cwd, roots: io.roots }).pipe(
      Effect.provideService(Files.Files, Files.Files.local)
    )
    yield* report(output.ok ? "done" : "failed", output.content, output.details)
    if (!output.ok) return yield* Effect.fail(refused(output.content))
    return {}
  })
