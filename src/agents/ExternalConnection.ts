/**
 * The process and client side of an external ACP agent: its process, started as the leader of
 * its own process group (`ProcessGroup`), in the session's sandbox when its settings ask for it,
 * with Skein's environment less its secrets plus the agent's configured `env` (whose values
 * become secrets themselves, as MCP servers' do); the JSON-RPC peer on its pipes; and its
 * ACP session: `initialize` (fs offered, no terminal), then `session/load` of the session a
 * lost connection had (when it offers that) or `session/new`.
 *
 * A connection is `lost` when the process exits or its output ends, with a bounded, redacted
 * tail of its stderr saying why. Closing the connection's scope kills the whole group.
 */
import * as NodeStream from "@effect/platform-node/NodeStream"
import type * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Initialize from "../acp/Initialize.ts"
import { AgentMethod, PROTOCOL_VERSION } from "../acp/Methods.ts"
import * as Peer from "../jsonrpc/Peer.ts"
import * as Diagnostics from "../mcp/Diagnostics.ts"
import type { Launch, SessionSandbox } from "../tools/Sandboxed.ts"
import * as ProcEnviron from "../secrets/ProcEnviron.ts"
import * as Secrets from "../secrets/Secrets.ts"
import type * as Ceiling from "../tools/Ceiling.ts"
import * as ProcessGroup from "../tools/process/ProcessGroup.ts"

/** An external agent as configured (`"agents": {"codex": {"acp": {command, args, env}}}`). */
export interface ExternalAgent {
  readonly name: string
  readonly command: string
  readonly args: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string>>
  /** Its process runs in the session's sandbox (`options.sandbox`), or does not start. */
  readonly sandbox?: boolean | undefined
}

export interface Options {
  /** Where the process runs (the child session's cwd). */
  readonly cwd: string
  /** Who Skein says it is in `initialize`. */
  readonly clientInfo: { readonly name: string; readonly version: string }
  /** How long one of the agent's permission questions may wait for an answer (default: until the turn ends). */
  readonly permissionTimeoutMs?: number | undefined
  /** The child session's sandbox, for an agent whose settings say `"sandbox": true`. */
  readonly sandbox?: SessionSandbox | undefined
  /** The child session's ceiling as it is now (default: nothing beyond its own gate). */
  readonly ceiling?: (() => Pick<Ceiling.Ceiling, "mode" | "readOnly">) | undefined
}

/** How long `initialize` and `session/new` (or `session/load`) may take: agents may start slowly. */
const START_TIMEOUT_MS = 60_000
/** Once its stdin is closed, how long the agent may take to exit by itself. */
const STDIN_GRACE_MS = 500

const STDERR_LINES_SHOWN = 8

/** Text from the agent (an error message): clipped, and without Skein's secrets. */
export const quoted = (text: string, max = 300): string => Secrets.redact(text.length > max ? `${text.slice(0, max)}…` : text)

export interface Connection {
  readonly scope: Scope.Closeable
  readonly peer: Peer.Peer
  readonly pid: number
  /** The agent's session id, once it has opened one. */
  sessionId: string
  prompts: Initialize.PromptCapabilities | undefined
  /** Completed, with what happened, when the agent can no longer answer. */
  readonly lost: Deferred.Deferred<string>
}

const describeExit = (exit: ProcessGroup.LeaderExit | undefined): string =>
  exit === undefined ? "closed its output" : exit.signal !== null ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`

/** What a connection is opened with, besides the agent and its options. */
interface Opening<H extends Peer.Handlers> {
  /** The scope the connection's own is forked from. */
  readonly parent: Scope.Scope
  /** The agent's session of a connection that was lost, to resume. */
  readonly resumable: string | undefined
  /** Where its session works: the turn's cwd, and its roots (the cwd first). */
  readonly cwd: string
  readonly roots: ReadonlyArray<string>
  /** The agent's requests and notifications, served on the connection. */
  readonly handlers: (conn: Connection) => H
  readonly services: Context.Context<Peer.HandlerServices<H>>
}

/** Starts the agent's process: in the session's sandbox when its settings ask for it (or not at all). */
const spawnAgent = (agent: ExternalAgent, options: Options, env: Record<string, string>) => {
  const cannot = (why: string | undefined) => `Cannot start the external agent ${agent.name}: \`${agent.command}\`${why !== undefined ? ` (${why})` : ""}`
  const start = (launch: Launch | undefined) =>
    ProcessGroup.spawnProgram(
      launch === undefined
        ? { file: agent.command, args: agent.args, cwd: options.cwd, env, stdin: "pipe" }
        : { ...launch, cwd: options.cwd, stdin: "pipe" }
    ).pipe(Effect.mapError(({ code }) => cannot(code)))
  if (agent.sandbox !== true) return start(undefined)
  if (options.sandbox === undefined) return Effect.fail(cannot("it asks for the sandbox, and this Skein runs none"))
  return options.sandbox.prepare({ file: agent.command, args: agent.args, cwd: options.cwd, env }, { readOnly: false, outside: false, required: true }, start).pipe(
    Effect.mapError((error) => (error.startsWith("Cannot start") ? error : cannot(`in the sandbox: ${error}`)))
  )
}

/** A request to the agent during start-up; its failure is a message. */
const startRequest = (who: string, peer: Peer.Peer, lost: Deferred.Deferred<string>, method: string, params: unknown) =>
  Effect.raceFirst(
    peer.request(method, params, { timeout: START_TIMEOUT_MS }).pipe(
      Effect.mapError((error) => `${who} failed ${method}: ${quoted(error.message)} (${error.code})`)
    ),
    Effect.flatMap(Deferred.await(lost), (message) => Effect.fail(message))
  )

const decodeAnswer = <S extends Schema.Constraint>(who: string, schema: S, method: string) => (value: unknown) =>
  Schema.decodeUnknownEffect(schema)(value).pipe(
    Effect.mapError(() => `${who} answered ${method} with something Skein cannot read`)
  ) as Effect.Effect<S["Type"], string, S["DecodingServices"]>

/**
 * Starts the agent and opens its session (resuming `opening.resumable` when it can); the
 * connection's scope, forked from `opening.parent`, owns the process.
 */
export const open = <H extends Peer.Handlers>(agent: ExternalAgent, options: Options, opening: Opening<H>): Effect.Effect<Connection, string> =>
  Effect.gen(function*() {
    const who = `The external agent ${agent.name}`
    const { resumable } = opening
    const scope = yield* Scope.fork(opening.parent)
    const setup = Effect.gen(function*() {
      // Its configured values are secrets from now on (redacted wherever they show up),
      // and Skein's own stay out of its environment and of /proc/<skein>/environ.
      const registry = Secrets.registry()
      for (const [name, value] of Object.entries(agent.env)) registry.addConfigured(name, value)
      // `--token=X`, `--api-key X`: a secret passed as an argument.
      agent.args.forEach((arg, i) => {
        const flag = /^--?([^=]+)(?:=(.*))?$/s.exec(arg)
        if (flag === null || !Secrets.isSecretName(flag[1]!)) return
        registry.addValue(flag[2] ?? agent.args[i + 1])
      })
      const env = { ...Secrets.childEnv(), ...agent.env }
      ProcEnviron.hideSecrets()
      const diagnostics = Diagnostics.make()
      const group = yield* Effect.acquireRelease(
        spawnAgent(agent, options, env),
        (group) =>
          Effect.gen(function*() {
            group.stdin?.end()
            yield* ProcessGroup.awaitFor(group.exited, STDIN_GRACE_MS)
            yield* ProcessGroup.release(group)
          })
      ).pipe(Scope.provide(scope))
      group.stderr.on("data", (chunk: Buffer) => diagnostics.push(chunk))
      const stdin = group.stdin!
      const transport: Peer.Transport = {
        input: NodeStream.fromReadable<Uint8Array, unknown>({ evaluate: () => group.stdout, onError: (error) => error, closeOnDone: false }),
        write: (chunk) =>
          Effect.callback<void>((resume) => {
            if (stdin.destroyed || stdin.writableEnded) return resume(Effect.void)
            const ok = stdin.write(chunk, () => {
              if (!ok) resume(Effect.void)
            })
            if (ok) resume(Effect.void)
          })
      }
      const peer = yield* Peer.make(transport).pipe(Scope.provide(scope))
      const lost = yield* Deferred.make<string>()
      const conn: Connection = { scope, peer, pid: group.pid, sessionId: "", prompts: undefined, lost }
      const serving = yield* Effect.forkIn(peer.serve(opening.handlers(conn)).pipe(Effect.provideContext(opening.services)), scope)
      // Gone when it exits or its output ends; what is still in its pipes is read first
      // (its last stderr lines explain why).
      yield* Effect.forkIn(
        Effect.raceFirst(Effect.asVoid(Deferred.await(group.exited)), Effect.asVoid(Fiber.await(serving))).pipe(
          Effect.andThen(ProcessGroup.awaitFor(group.exited, 200)),
          Effect.andThen(ProcessGroup.awaitFor(group.drained, 200)),
          Effect.andThen(Effect.suspend(() => {
            const tail = diagnostics.lines().slice(-STDERR_LINES_SHOWN)
            const said = tail.length > 0 ? `\nIts last output:\n${tail.map((line) => `  ${line}`).join("\n")}` : ""
            return Deferred.succeed(lost, `${who} ${describeExit(group.exitStatus())}.${said}`)
          }))
        ),
        scope
      )

      const init = yield* startRequest(who, peer, lost, AgentMethod.initialize, {
        protocolVersion: PROTOCOL_VERSION,
        clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: false },
        clientInfo: { name: options.clientInfo.name, version: options.clientInfo.version }
      }).pipe(Effect.flatMap(decodeAnswer(who, Initialize.InitializeResponse, AgentMethod.initialize)))
      if (init.protocolVersion !== PROTOCOL_VERSION) {
        return yield* Effect.fail(`${who} speaks ACP version ${init.protocolVersion}; Skein speaks version ${PROTOCOL_VERSION}`)
      }
      const caps = init.agentCapabilities
      const additional = opening.roots.slice(1)
      const where = {
        cwd: opening.cwd,
        mcpServers: [],
        ...(additional.length > 0 && caps?.sessionCapabilities?.additionalDirectories !== undefined ? { additionalDirectories: additional } : {})
      }
      // A connection that replaces a lost one resumes the agent's session when it can.
      const resumed = resumable !== undefined && caps?.loadSession === true
        ? yield* startRequest(who, peer, lost, AgentMethod.sessionLoad, { sessionId: resumable, ...where }).pipe(
          Effect.as(resumable),
          Effect.orElseSucceed(() => undefined)
        )
        : undefined
      const sessionId = resumed ?? (yield* startRequest(who, peer, lost, AgentMethod.sessionNew, where).pipe(
        Effect.flatMap((answer) =>
          Effect.flatMap(Effect.promise(() => import("../acp/Answers.ts")), (answers) => decodeAnswer(who, answers.NewSessionResponse, AgentMethod.sessionNew)(answer))
        ),
        Effect.map((answer) => answer.sessionId)
      ))
      conn.sessionId = sessionId
      conn.prompts = caps?.promptCapabilities
      return conn
    })
    return yield* setup.pipe(Effect.onExit((exit) => (Exit.isSuccess(exit) ? Effect.void : Scope.close(scope, exit))))
  })
