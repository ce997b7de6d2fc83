/**
 * The stdio transport Skein gives Effect's `McpClient`: the MCP server runs as
 * the leader of its own process group, and the whole group is dead when the
 * connection's scope closes.
 *
 * Why not `McpClient.stdio`: it spawns through `effect/process` (see
 * `tools/process/ProcessGroup.ts` for why bash does not either: fixed 1 s
 * waits, no process-exit safety net), it drains the server's stderr into
 * nothing (we keep a bounded tail for diagnosis), and one line on stdout that
 * is not JSON-RPC ends its connection (servers that print a banner there are
 * common; we keep such lines as diagnostics and go on). The client protocol
 * itself — initialize, discovery, calls — stays Effect's.
 *
 * Shutdown follows the MCP lifecycle: close the server's stdin, give it a
 * moment to exit, then SIGTERM and SIGKILL everything it started
 * (grandchildren included, e.g. the real server behind `npx`, and daemons it
 * detached). The server is spawned and contained exactly as a bash command
 * is (`tools/process/ProcessGroup.ts`): the same exit hook and watchdog cover
 * Skein exiting without closing scopes or being killed outright.
 */
import type { Writable } from "node:stream"
import type * as McpClient from "effect/ai/McpClient"
import { ClosedError, LimitError, McpClientError, ProtocolError, TransportError } from "effect/ai/McpClientError"
import type * as McpProtocol from "effect/ai/McpProtocol"
import type * as McpSchema from "effect/ai/McpSchema"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Scope from "effect/Scope"
import * as Framing from "../jsonrpc/Framing.ts"
import type * as Sandbox from "../tools/Sandboxed.ts"
import * as ProcessGroup from "../tools/process/ProcessGroup.ts"
import type * as Diagnostics from "./Diagnostics.ts"

/** How long a server may take to exit by itself once its stdin is closed. */
const STDIN_GRACE_MS = 100
/** The largest message (one line) accepted from a server. */
export const DEFAULT_MAX_MESSAGE_BYTES = 8 * 1024 * 1024

export interface Options {
  readonly command: string
  readonly args: ReadonlyArray<string>
  readonly cwd: string
  readonly env: Readonly<Record<string, string>>
  readonly protocol: McpProtocol.ProtocolAdapter<McpClient.ProtocolVersion>
  /** Where stderr and stray stdout lines go. */
  readonly diagnostics: Diagnostics.Tail
  /** Server notifications (e.g. `notifications/tools/list_changed`), called synchronously. */
  readonly onNotification?: ((method: string, params: unknown) => void) | undefined
  readonly maxMessageBytes?: number | undefined
  /** Told the server's pid as soon as it runs (before `initialize`). */
  readonly onSpawn?: ((pid: number) => void) | undefined
  /**
   * Runs the server in the session's sandbox (its settings say `"sandbox": true`): gives the
   * command line to spawn, or fails with why it cannot run sandboxed (then it is not started).
   */
  readonly sandbox?: (<A, E>(program: Sandbox.Program, use: (launch: Sandbox.Launch | undefined) => Effect.Effect<A, E>) => Effect.Effect<A, E | string>) | undefined
}

interface Connection {
  readonly transport: McpClient.Transport
  readonly pid: number
  /** Completed, with what happened, when the server can no longer answer (exit, closed output, garbage). */
  readonly lost: Deferred.Deferred<string>
}

const fail = (reason: McpClientError["reason"]) => new McpClientError({ reason })

/** The server process groups this process still owns (for tests and diagnostics). */
const open = new Set<number>()
export const openGroups = (): ReadonlySet<number> => open

const describeExit = (exit: ProcessGroup.LeaderExit): string =>
  exit.signal !== null ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`

interface Spawned {
  readonly group: ProcessGroup.Group
  readonly stdin: Writable
  readonly stdoutEnded: Deferred.Deferred<void>
}

const cannotStart = (options: Options, why: string) =>
  fail(new TransportError({ description: `Cannot start \`${options.command}\`${why === "" ? "" : ` (${why})`}` }))

const spawnIn = (options: Options, launch: Sandbox.Launch | undefined) =>
  ProcessGroup.spawnProgram(
    launch === undefined
      ? { file: options.command, args: options.args, cwd: options.cwd, env: options.env, stdin: "pipe" }
      : { ...launch, cwd: options.cwd, stdin: "pipe" }
  ).pipe(Effect.mapError(({ code }) => cannotStart(options, code ?? "")))

const spawn = (options: Options): Effect.Effect<Spawned, McpClientError> =>
  (options.sandbox === undefined
    ? spawnIn(options, undefined)
    : options.sandbox({ file: options.command, args: options.args, cwd: options.cwd, env: options.env }, (launch) => spawnIn(options, launch)).pipe(
      Effect.mapError((error) => (typeof error === "string" ? cannotStart(options, `in the sandbox: ${error}`) : error))
    )).pipe(
    Effect.map((group) => {
      const stdoutEnded = Deferred.makeUnsafe<void>()
      group.stdout.once("end", () => Deferred.doneUnsafe(stdoutEnded, Effect.void))
      group.stdout.once("close", () => Deferred.doneUnsafe(stdoutEnded, Effect.void))
      open.add(group.pid)
      return { group, stdin: group.stdin!, stdoutEnded }
    })
  )

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)
const idKey = (id: unknown): string => `${typeof id}:${String(id)}`

/**
 * Starts the server and connects to it; the scope owns the process group.
 * Fails (with a `TransportError`) only when the command cannot be started.
 */
export const connect = (options: Options): Effect.Effect<Connection, McpClientError, Scope.Scope> =>
  Effect.gen(function*() {
    const maxBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES
    const { group, stdin, stdoutEnded } = yield* Effect.acquireRelease(spawn(options), ({ group, stdin }) =>
      Effect.gen(function*() {
        lose(fail(new ClosedError({ description: "The MCP connection was closed" })))
        stdin.end()
        yield* ProcessGroup.awaitFor(group.exited, STDIN_GRACE_MS)
        yield* ProcessGroup.release(group)
        open.delete(group.pid)
      }).pipe(Effect.uninterruptible))

    options.onSpawn?.(group.pid)
    const pending = new Map<string, Deferred.Deferred<McpSchema.JsonRpcResponse, McpClientError>>()
    const lost = Deferred.makeUnsafe<string>()
    let failure: McpClientError | undefined

    /** Marks the connection unusable (first reason wins) and fails every waiting request. */
    function lose(error: McpClientError): void {
      if (failure !== undefined) return
      failure = error
      Deferred.doneUnsafe(lost, Effect.succeed(error.reason.message))
      for (const deferred of pending.values()) Deferred.doneUnsafe(deferred, Exit.fail(error))
      pending.clear()
    }

    const write = (message: unknown): void => {
      if (failure !== undefined || stdin.destroyed || stdin.writableEnded) return
      // Escaped U+2028/U+2029: servers that read with Node's `readline` would split there.
      stdin.write(Framing.encode(message))
    }

    const receive = (message: unknown): void => {
      if (!isObject(message) || message.jsonrpc !== "2.0") {
        options.diagnostics.line(`[stdout, not JSON-RPC] ${JSON.stringify(message).slice(0, 200)}`)
        return
      }
      const method = message.method
      if (typeof method === "string") {
        if ("id" in message && message.id !== undefined && message.id !== null) {
          // Skein advertises no client capabilities: it answers pings and declines the rest.
          write(method === "ping"
            ? { jsonrpc: "2.0", id: message.id, result: {} }
            : { jsonrpc: "2.0", id: message.id, error: { code: -32601, message: `Unsupported MCP method: ${method}` } })
        } else {
          options.onNotification?.(method, message.params)
        }
        return
      }
      if (!("result" in message) && !isObject(message.error)) {
        options.diagnostics.line(`[stdout, not JSON-RPC] ${JSON.stringify(message).slice(0, 200)}`)
        return
      }
      if (message.id === undefined || message.id === null) {
        // An error that names no request: none of the waiting ones can be trusted.
        const error = message.error as { readonly message?: unknown } | undefined
        lose(fail(new ProtocolError({ description: `The server sent an error for no request: ${String(error?.message ?? "").slice(0, 200)}` })))
        return
      }
      const deferred = pending.get(idKey(message.id))
      if (deferred === undefined) return
      pending.delete(idKey(message.id))
      Deferred.doneUnsafe(deferred, Exit.succeed(message as McpSchema.JsonRpcResponse))
    }

    // Newline-delimited JSON on stdout, split as Skein's own input is (`\n` only: U+2028 and
    // U+2029 inside strings are not line breaks). A message that passes the bound cannot be
    // matched to its request: the connection is lost at once, without waiting for its end.
    const splitter = Framing.makeSplitter({ maxLineBytes: maxBytes })
    const read = (line: Framing.Line): void => {
      if (line._tag === "TooLong") {
        lose(fail(new LimitError({ description: `The server sent a message larger than ${maxBytes} bytes` })))
        return
      }
      let parsed: unknown
      try {
        parsed = JSON.parse(line.text)
      } catch {
        options.diagnostics.line(`[stdout] ${line.text.trim()}`)
        return
      }
      try {
        receive(parsed)
      } catch {
        // E.g. a message nested too deep to walk: the server is not speaking MCP.
        lose(fail(new ProtocolError({ description: "The server sent a message Skein cannot read" })))
      }
    }
    group.stdout.on("data", (chunk: Buffer) => {
      if (failure !== undefined) return
      for (const line of splitter.push(chunk)) {
        read(line)
        if (failure !== undefined) return
      }
    })
    group.stderr.on("data", (chunk: Buffer) => options.diagnostics.push(chunk))

    // The server is gone when it exits or closes its output; what is still in the pipes is read
    // first (its last stderr lines explain the failure, and the notice quotes them).
    yield* Effect.forkScoped(
      Effect.raceFirst(Deferred.await(group.exited), Deferred.await(stdoutEnded)).pipe(
        Effect.andThen(ProcessGroup.awaitFor(stdoutEnded, 100)),
        Effect.andThen(ProcessGroup.awaitFor(group.exited, 100)),
        Effect.andThen(ProcessGroup.awaitFor(group.drained, 100)),
        Effect.andThen(Effect.sync(() => {
          const exit = group.exitStatus()
          lose(fail(new TransportError({
            description: exit !== undefined ? `The server ${describeExit(exit)}` : "The server closed its output"
          })))
        }))
      )
    )

    const transport: McpClient.Transport = {
      "~effect/ai/McpClient/Transport": "~effect/ai/McpClient/Transport",
      protocol: options.protocol,
      isCallable: () => true,
      notify: (message) =>
        Effect.suspend(() => {
          if (failure !== undefined) return Effect.fail(failure)
          write(message)
          return Effect.void
        }),
      request: (message) =>
        Effect.suspend(() => {
          if (failure !== undefined) return Effect.fail(failure)
          const key = idKey(message.id)
          const response = Deferred.makeUnsafe<McpSchema.JsonRpcResponse, McpClientError>()
          pending.set(key, response)
          write(message)
          return Deferred.await(response).pipe(
            // A call the turn gave up on (cancel) is cancelled on the server too.
            Effect.onInterrupt(() =>
              Effect.sync(() => {
                if (message.method !== "initialize" && pending.has(key)) {
                  write({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: message.id, reason: "cancelled" } })
                }
              })
            ),
            Effect.ensuring(Effect.sync(() => pending.delete(key)))
          )
        })
    }
    return { transport, pid: group.pid, lost }
  })
