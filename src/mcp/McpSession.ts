/**
 * The MCP servers of one session: started in the background when the session
 * starts, their tools offered to the model as `<server>__<tool>` once
 * discovered, and everything stopped when the session's scope closes.
 *
 * - `start` returns at once: nothing waits for a server. Each server connects
 *   in its own fiber; its tools join `tools()` when `tools/list` answers, so
 *   they reach the model from the next model call on.
 * - A server that cannot start, exits, closes its output, times out or sends
 *   what is not MCP is *failed*: its process group is killed, its tools are
 *   withdrawn (a call to one then says why, without asking permission), one
 *   notice is queued for the user (`takeNotices`) and a warning goes to
 *   stderr with the tail of the server's own stderr. The session goes on.
 * - A tool's own error (`isError`, a JSON-RPC error answer) is a failed tool
 *   result; the server stays.
 * - `notifications/tools/list_changed` makes the server's tools be listed again.
 * - `add` starts more servers later (a folder trusted mid-session), each replacing, stopped
 *   first with everything it started, a server of its name.
 *
 * The MCP client (Effect's, with its schemas for every protocol revision) is
 * loaded by the first server's fiber, not by `start`: a session with servers
 * is created as fast as one without.
 */
import type { McpClientError } from "effect/ai/McpClientError"
import type * as McpSchema from "effect/ai/McpSchema"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import type * as HttpClient from "effect/http/HttpClient"
import * as Queue from "effect/Queue"
import * as Scope from "effect/Scope"
import type { McpServer, McpServerHttp, McpServerSse, McpServerStatus, McpServerStdio } from "../Vocabulary.ts"
import * as ProcEnviron from "../secrets/ProcEnviron.ts"
import type * as Sandbox from "../tools/Sandboxed.ts"
import type { SessionSandbox } from "../tools/Sandboxed.ts"
import * as Secrets from "../secrets/Secrets.ts"
import * as Tool from "../tools/Tool.ts"
import type * as Connect from "./Connect.ts"
import * as Diagnostics from "./Diagnostics.ts"
import { describe, isToolLevel } from "./Failure.ts"
import * as McpTool from "./McpTool.ts"

const DEFAULT_INIT_TIMEOUT_MS = 10_000
const DEFAULT_CALL_TIMEOUT_MS = 5 * 60_000
/** How many lines of a failed server's stderr its notice quotes. */
const NOTICE_STDERR_LINES = 3

type Transport = "stdio" | "http" | "sse"

/** A server as it is now (the shape shared with presenters, `Vocabulary.McpServerStatus`). */
export type ServerStatus = McpServerStatus

/** Something the user should be told once, e.g. that a server failed. */
interface Notice {
  readonly server: string
  readonly text: string
}

export interface Options {
  readonly servers: ReadonlyArray<McpServer>
  /** The session's working directory: stdio servers run there. */
  readonly cwd: string
  /** Skein's environment (default `process.env`); secrets are removed before a server sees it. */
  readonly env?: Readonly<Record<string, string | undefined>> | undefined
  readonly initTimeoutMs?: number | undefined
  readonly callTimeoutMs?: number | undefined
  readonly clientInfo?: { readonly name: string; readonly version: string } | undefined
  readonly httpClient?: HttpClient.HttpClient | undefined
  /** The session's sandbox, for the stdio servers whose settings say `"sandbox": true`. */
  readonly sandbox?: SessionSandbox | undefined
}

export interface McpSession {
  /** The tools of every ready server, as they are now (a new array after each change). */
  readonly tools: () => ReadonlyArray<Tool.Tool>
  /** A live tool by name, or a stand-in saying why a server's tool cannot run. */
  readonly get: (name: string) => Tool.Tool | undefined
  readonly status: () => ReadonlyArray<ServerStatus>
  /** The notices not taken yet (each is given out once). */
  readonly takeNotices: () => ReadonlyArray<Notice>
  /** Completes when every server is ready or failed. */
  readonly settled: Effect.Effect<void>
  /**
   * Starts more servers in the background, each replacing a server of its name (stopped first);
   * what it returns completes when each of them is ready or failed. Nothing once the session closes.
   */
  readonly add: (servers: ReadonlyArray<McpServer>) => Effect.Effect<Effect.Effect<void>>
}

type State =
  | { readonly _tag: "connecting" }
  | { readonly _tag: "ready" }
  | { readonly _tag: "failed"; readonly reason: string }
  | { readonly _tag: "closed" }

interface Entry {
  readonly config: McpServer
  readonly transport: Transport
  readonly prefix: string
  readonly diagnostics: Diagnostics.Tail
  readonly scope: Scope.Closeable
  readonly settled: Deferred.Deferred<void>
  readonly relist: Queue.Queue<void>
  state: State
  tools: Map<string, Tool.Tool>
  connected: Connect.Connected | undefined
  pid: number | undefined
  serverInfo: { readonly name: string; readonly version: string } | undefined
}

const isHttp = (config: McpServer): config is McpServerHttp => "type" in config && config.type === "http"
const isSse = (config: McpServer): config is McpServerSse => "type" in config && config.type === "sse"
const transportOf = (config: McpServer): Transport => (isHttp(config) ? "http" : isSse(config) ? "sse" : "stdio")

/**
 * Resumes after the work already queued (e.g. writing the `session/new`
 * answer): loading the MCP client the first time takes tens of milliseconds of
 * CPU, which must not come before that answer. Native time on purpose, as in
 * `ProcessGroup.ts`: this orders work on the event loop, it measures nothing.
 */
const nextMacrotask: Effect.Effect<void> = Effect.callback<void>((resume) => {
  const timer = setTimeout(() => resume(Effect.void), 1)
  return Effect.sync(() => clearTimeout(timer))
})

/** Makes a server's configured secrets known: env values, header values, credentials in its URL. */
const register = (secrets: Secrets.Registry, config: McpServer) => {
  if (isHttp(config) || isSse(config)) {
    for (const header of config.headers) secrets.addConfigured(header.name, header.value)
    secrets.addConfigured("url", config.url)
  } else {
    const stdio = config as McpServerStdio
    for (const variable of stdio.env) secrets.addConfigured(variable.name, variable.value)
    // `--token=X`, `--api-key X`: a secret passed as an argument.
    stdio.args.forEach((arg, i) => {
      const flag = /^--?([^=]+)(?:=(.*))?$/s.exec(arg)
      if (flag === null || !Secrets.isSecretName(flag[1]!)) return
      const value = flag[2] ?? stdio.args[i + 1]
      if (value !== undefined) secrets.addValue(value)
    })
  }
}

/** Starts the servers in the background; the scope owns them. */
export const start = (options: Options): Effect.Effect<McpSession, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const initTimeoutMs = options.initTimeoutMs ?? DEFAULT_INIT_TIMEOUT_MS
    const callTimeoutMs = options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS
    const clientInfo = options.clientInfo ?? { name: "skein", version: "0" }
    // Every server's env and header values are secrets from now on, in every session: they are
    // redacted wherever they show up (a tool's output, another server's result, the log).
    const secrets = Secrets.registry()
    for (const config of options.servers) register(secrets, config)
    let baseEnv = secrets.childEnv(options.env ?? process.env)
    // A server (and what it runs) must not find Skein's own secrets in /proc/<skein>/environ.
    if (options.servers.length > 0) ProcEnviron.hideSecrets()
    const notices: Array<Notice> = []
    let closing = false
    let snapshot: ReadonlyArray<Tool.Tool> = []

    const entries: Array<Entry> = []
    const prefixes = new Set<string>()
    const entryOf = (config: McpServer) =>
      Effect.gen(function*() {
        const prefix = McpTool.serverPrefix(config.name, prefixes)
        prefixes.add(prefix)
        const entry: Entry = {
          config,
          transport: transportOf(config),
          prefix,
          diagnostics: Diagnostics.make(),
          scope: yield* Scope.make(),
          settled: yield* Deferred.make<void>(),
          relist: yield* Queue.unbounded<void>(),
          state: { _tag: "connecting" },
          tools: new Map(),
          connected: undefined,
          pid: undefined,
          serverInfo: undefined
        }
        entries.push(entry)
        return entry
      })
    for (const config of options.servers) yield* entryOf(config)

    const rebuild = () => {
      snapshot = entries.flatMap((entry) => (entry.state._tag === "ready" ? [...entry.tools.values()] : []))
    }

    /** Fails a server once: withdraws its tools, kills it, tells the user. */
    const markFailed = (entry: Entry, reason: string): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (closing || entry.state._tag === "failed" || entry.state._tag === "closed") return Effect.void
        entry.state = { _tag: "failed", reason }
        rebuild()
        const tail = entry.diagnostics.lines().slice(-NOTICE_STDERR_LINES)
        const said = tail.length > 0 ? `\nIts last output:\n${tail.map((line) => `  ${line.slice(0, 200)}`).join("\n")}` : ""
        notices.push({
          server: entry.config.name,
          text: `MCP server "${entry.config.name}" is unavailable: ${reason}. Its tools are withdrawn for the rest of this session.${said}`
        })
        return Effect.logWarning(`MCP server "${entry.config.name}" failed: ${reason}`, ...(tail.length > 0 ? [entry.diagnostics.lines().join("\n")] : [])).pipe(
          Effect.andThen(Deferred.succeed(entry.settled, undefined)),
          // The process goes in the background: the caller (maybe a tool call) does not wait for it.
          Effect.andThen(Effect.forkIn(Scope.close(entry.scope, Exit.void), scope)),
          Effect.asVoid
        )
      })

    const bind = (entry: Entry, client: Connect.Connected["client"], tools: ReadonlyArray<McpSchema.Tool>) => {
      const taken = new Set<string>()
      for (const other of entries) if (other !== entry) for (const name of other.tools.keys()) taken.add(name)
      const next = new Map<string, Tool.Tool>()
      for (const tool of tools) {
        const name = McpTool.exposedName(entry.prefix, tool.name, taken)
        taken.add(name)
        next.set(name, McpTool.make({ server: entry.config.name, name, tool, call: (args) => call(entry, client, tool, args) }))
      }
      entry.tools = next
      rebuild()
    }

    const call = (entry: Entry, client: Connect.Connected["client"], tool: McpSchema.Tool, args: McpTool.Arguments) =>
      Effect.suspend(() => {
        if (entry.state._tag !== "ready") return Effect.succeed(Tool.error(unavailableText(entry)))
        return client.callTool({ tool, arguments: args }, { timeout: callTimeoutMs }).pipe(
          Effect.map((result): Tool.ToolOutput => ({ ok: result.isError !== true, content: McpTool.render(result) })),
          Effect.catch((error: McpClientError) => {
            if (isToolLevel(error)) {
              const reason = error.reason
              const detail = reason._tag === "ProtocolError" ? `${reason.description ?? "error"} (code ${reason.code})` : describe(error, initTimeoutMs, callTimeoutMs)
              return Effect.succeed(Tool.error(`The MCP server "${entry.config.name}" refused the call: ${detail}`))
            }
            return failed(entry, describe(error, initTimeoutMs, callTimeoutMs))
          }),
          // A result Skein's client chokes on (e.g. nested too deep to decode) is garbage too.
          Effect.catchDefect(() => failed(entry, "it sent a result Skein cannot read"))
        )
      })

    const failed = (entry: Entry, reason: string) =>
      markFailed(entry, reason).pipe(
        Effect.as(Tool.error(`The MCP server "${entry.config.name}" failed: ${reason}. Its tools are no longer available.`))
      )

    const unavailableText = (entry: Entry): string =>
      entry.state._tag === "connecting"
        ? `The MCP server "${entry.config.name}" is still starting; its tools are not available yet.`
        : entry.state._tag === "failed"
        ? `The MCP server "${entry.config.name}" is unavailable (${entry.state.reason}); its tools were withdrawn.`
        : `The MCP server "${entry.config.name}" is closed.`

    const connect = (entry: Entry) => {
      const config = entry.config
      const common = { clientInfo, timeoutMs: initTimeoutMs }
      if (isSse(config)) {
        return Effect.fail(`its transport is SSE, which Skein does not support (it advertises \`mcpCapabilities.sse: false\`)`)
      }
      const stdio = config as McpServerStdio
      // A server that asks for the sandbox starts in it, or not at all.
      const sandbox = !isHttp(config) && stdio.sandbox === true
        ? options.sandbox === undefined
          ? () => Effect.fail("it asks for the sandbox, and this Skein runs none")
          : <A, E>(program: Sandbox.Program, use: (launch: Sandbox.Launch | undefined) => Effect.Effect<A, E>) =>
            options.sandbox!.prepare(program, { readOnly: false, outside: false, required: true }, use)
        : undefined
      const connecting = (client: typeof import("./Connect.ts")) => isHttp(config)
        ? client.http({
          ...common,
          url: config.url,
          headers: Object.fromEntries(config.headers.map((h) => [h.name, h.value])),
          httpClient: options.httpClient
        })
        : client.stdio({
          ...common,
          command: stdio.command,
          args: stdio.args,
          cwd: options.cwd,
          // Skein's environment without its secrets, then what the client set for this server.
          env: { ...baseEnv, ...Object.fromEntries(stdio.env.map((v) => [v.name, v.value])) },
          diagnostics: entry.diagnostics,
          sandbox,
          onSpawn: (pid) => {
            entry.pid = pid
          },
          onNotification: (method) => {
            if (method === "notifications/tools/list_changed") Queue.offerUnsafe(entry.relist, undefined)
          }
        })
      return Effect.andThen(nextMacrotask, Effect.promise(() => import("./Connect.ts"))).pipe(
        Effect.flatMap(connecting),
        Effect.tap((connected) => Effect.sync(() => {
          entry.connected = connected
        })),
        Scope.provide(entry.scope),
        Effect.mapError((error) => describe(error, initTimeoutMs, callTimeoutMs))
      )
    }

    /** One server's life: connect, list, serve until it is lost; any failure fails it once. */
    const run = (entry: Entry) =>
      Effect.gen(function*() {
        const connected = yield* connect(entry)
        const info = connected.client.serverInfo
        entry.serverInfo = info !== undefined ? { name: info.name, version: info.version } : undefined
        const list = connected.client.listTools().pipe(Effect.mapError((error) => describe(error, initTimeoutMs, callTimeoutMs)))
        bind(entry, connected.client, yield* list)
        entry.state = { _tag: "ready" }
        rebuild()
        yield* Effect.logInfo(
          `MCP server "${entry.config.name}" is ready: ${entry.tools.size} tool${entry.tools.size === 1 ? "" : "s"} (MCP ${connected.negotiation.version})`
        )
        yield* Deferred.succeed(entry.settled, undefined)
        const relisting = Effect.forever(Effect.andThen(Queue.takeAll(entry.relist), Effect.flatMap(list, (tools) => Effect.sync(() => bind(entry, connected.client, tools)))))
        return yield* Effect.raceFirst(Effect.flatMap(Deferred.await(connected.lost), Effect.fail), relisting)
      }).pipe(
        Effect.catch((reason: string) => markFailed(entry, reason)),
        Effect.catchDefect(() => markFailed(entry, "it sent a message Skein cannot read"))
      )

    const fibers = new Map<Entry, Fiber.Fiber<void>>()
    for (const entry of entries) fibers.set(entry, yield* Effect.forkIn(run(entry), scope))

    /** Stops a server for good and forgets it (another of its name replaces it). */
    const remove = (entry: Entry) =>
      Effect.gen(function*() {
        entry.state = { _tag: "closed" }
        entries.splice(entries.indexOf(entry), 1)
        prefixes.delete(entry.prefix)
        rebuild()
        const fiber = fibers.get(entry)
        fibers.delete(entry)
        if (fiber !== undefined) yield* Fiber.interrupt(fiber)
        yield* Scope.close(entry.scope, Exit.void)
        yield* Deferred.succeed(entry.settled, undefined)
      })

    const add = (servers: ReadonlyArray<McpServer>) =>
      Effect.gen(function*() {
        if (closing || servers.length === 0) return Effect.void
        for (const config of servers) register(secrets, config)
        baseEnv = secrets.childEnv(options.env ?? process.env)
        ProcEnviron.hideSecrets()
        const added: Array<Entry> = []
        for (const config of servers) {
          const old = entries.find((entry) => entry.config.name === config.name)
          if (old !== undefined) yield* remove(old)
          const entry = yield* entryOf(config)
          added.push(entry)
          fibers.set(entry, yield* Effect.forkIn(run(entry), scope))
        }
        return Effect.forEach(added, (entry) => Deferred.await(entry.settled), { discard: true })
      })

    // Registered after the first fibers, so it runs before their interruption: stop quietly, all at once.
    yield* Scope.addFinalizer(scope, Effect.suspend(() => {
      closing = true
      return Fiber.interruptAll([...fibers.values()]).pipe(
        Effect.andThen(Effect.forEach(entries, (entry) => Scope.close(entry.scope, Exit.void), { concurrency: "unbounded", discard: true })),
        Effect.andThen(Effect.sync(() => {
          for (const entry of entries) if (entry.state._tag !== "failed") entry.state = { _tag: "closed" }
          rebuild()
        })),
        // Whoever waits for a server that was still connecting (`settled`, `add`) is not left waiting.
        Effect.andThen(Effect.forEach(entries, (entry) => Deferred.succeed(entry.settled, undefined), { discard: true }))
      )
    }))

    const get = (name: string): Tool.Tool | undefined => {
      for (const entry of entries) {
        const tool = entry.tools.get(name)
        if (tool !== undefined) return entry.state._tag === "ready" ? tool : McpTool.unavailable(name, entry.config.name, unavailableText(entry))
      }
      // A name of a server still starting (the model may know it from an earlier session).
      const entry = entries.find((e) => name.startsWith(`${e.prefix}__`) && e.state._tag !== "ready")
      return entry === undefined ? undefined : McpTool.unavailable(name, entry.config.name, unavailableText(entry))
    }

    const status = (): ReadonlyArray<ServerStatus> =>
      entries.map((entry) => ({
        name: entry.config.name,
        transport: entry.transport,
        state: entry.state._tag,
        tools: entry.state._tag === "ready" ? [...entry.tools.keys()] : [],
        ...(entry.state._tag === "failed" ? { error: entry.state.reason } : {}),
        ...(entry.pid !== undefined ? { pid: entry.pid } : {}),
        ...(entry.connected !== undefined ? { protocolVersion: entry.connected.negotiation.version } : {}),
        ...(entry.serverInfo !== undefined ? { serverInfo: entry.serverInfo } : {}),
        stderr: entry.diagnostics.lines()
      }))

    return {
      tools: () => snapshot,
      get,
      status,
      takeNotices: () => notices.splice(0),
      settled: Effect.suspend(() => Effect.forEach([...entries], (entry) => Deferred.await(entry.settled), { discard: true })),
      add
    } satisfies McpSession
  })

/** Status as text, one server per paragraph (for `skein doctor` and logs), without secrets. */
export const statusText = (statuses: ReadonlyArray<ServerStatus>): string => Secrets.redact(statusLines(statuses))

const statusLines = (statuses: ReadonlyArray<ServerStatus>): string =>
  statuses.length === 0
    ? "No MCP servers."
    : statuses.map((s) => {
      const head = `${s.name} (${s.transport}${s.pid !== undefined ? `, pid ${s.pid}` : ""}${s.protocolVersion !== undefined ? `, MCP ${s.protocolVersion}` : ""}): `
      const body = s.state === "ready"
        ? `ready, ${s.tools.length} tool${s.tools.length === 1 ? "" : "s"}${s.tools.length > 0 ? `: ${s.tools.join(", ")}` : ""}`
        : s.state === "failed"
        ? `failed: ${s.error}`
        : s.state
      const tail = s.state === "failed" && s.stderr.length > 0 ? `\n${s.stderr.slice(-5).map((line) => `    ${line}`).join("\n")}` : ""
      return head + body + tail
    }).join("\n")

/**
 * Starts the servers, waits until each is ready or failed (at most `waitMs`),
 * returns their status and stops them: what `skein doctor` shows.
 */
export const probe = (options: Options & { readonly waitMs?: number | undefined }): Effect.Effect<ReadonlyArray<ServerStatus>> =>
  Effect.scoped(Effect.gen(function*() {
    const mcp = yield* start(options)
    yield* Effect.timeoutOption(mcp.settled, options.waitMs ?? (options.initTimeoutMs ?? DEFAULT_INIT_TIMEOUT_MS) + 1_000)
    return mcp.status()
  }))
