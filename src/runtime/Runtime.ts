/**
 * Runtime: the public API every presenter uses (the ACP server, `skein run`,
 * an embedding Effect program), as the wiring of its parts: the live
 * sessions (`Registry.ts`: each an actor in its own scope, a child of the
 * runtime's scope, so closing the runtime closes every session), the child
 * sessions (`ChildSessions.ts`) and forks (`Fork.ts`).
 *
 * A session is live in at most one process: creating or loading one takes the
 * lock of its log. Loading folds the log into the history once, closes a turn
 * a crash left open, and continues numbering where the log stopped.
 */
import * as os from "node:os"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { absurd } from "effect/Function"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Path from "effect/Path"
import * as References from "effect/References"
import * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import type { McpServer } from "../Vocabulary.ts"
import { type CanonicalBody, LOG_VERSION } from "../log/Event.ts"
import * as History from "../log/History.ts"
import { isSessionId } from "../log/Listing.ts"
import type * as Reader from "../log/Reader.ts"
import { SessionLog } from "../log/SessionLog.ts"
import type { Writer } from "../log/Store.ts"
import { LogError } from "../log/LogError.ts"
import * as DynamicToolkit from "../mcp/DynamicToolkit.ts"
import * as McpSession from "../mcp/McpSession.ts"
import * as McpConfig from "../mcp/Config.ts"
import * as McpRecord from "../mcp/Record.ts"
import * as ProviderConfig from "../providers/ProviderConfig.ts"
import * as Sandbox from "../sandbox/Sandbox.ts"
import type { SessionSandbox } from "../tools/Sandboxed.ts"
import type { ToolEnv } from "../tools/Tool.ts"
import * as Commands from "../commands/Commands.ts"
import * as Skills from "../skills/Skills.ts"
import * as Workspace from "../trust/Workspace.ts"
import * as Prompt from "../providers/Prompt.ts"
import * as Bus from "./Bus.ts"
import * as ChildReads from "./ChildReads.ts"
import * as ChildSessions from "./ChildSessions.ts"
import { Config, DEFAULT_MAX_LIVE_SESSIONS } from "./Config.ts"
import * as Journal from "./Journal.ts"
import * as Registry from "./Registry.ts"
import { isModeId, type ModeId } from "../Vocabulary.ts"
import { SessionError } from "../session/Protocol.ts"
import * as Session from "./Session.ts"
import type * as SessionCommands from "./SessionCommands.ts"
import type * as SessionDeps from "./SessionDeps.ts"
import * as SessionId from "./SessionId.ts"
import * as SessionMcp from "./SessionMcp.ts"

import * as Fork from "./Fork.ts"
import {
  type ForkSessionOptions,
  type ListQuery,
  type LoadedSession,
  type LoadSessionOptions,
  type NewSessionOptions,
  Runtime,
  RuntimeError,
  type SessionRecord
} from "./Api.ts"

const fromLogError = (error: LogError): RuntimeError =>
  new RuntimeError({
    reason: error.reason === "not_found" ? "not_found" : error.reason === "locked" ? "locked" : "log",
    message: error.message
  })

/** A session's MCP servers, started (when it has some, or a folder's wait for trust), and what to log about them. */
interface Mcp {
  readonly session: McpSession.McpSession | undefined
  /** The `mcp_servers` event to log at start, when the session's servers changed. */
  readonly record: ReadonlyArray<CanonicalBody>
  /** Before each turn: the folder's servers, once it is trusted (`SessionMcp.late`). */
  readonly late?: Effect.Effect<SessionMcp.Started | undefined> | undefined
}

/**
 * What a session starts (its actor, its MCP servers, an external agent) logs under the session's
 * id, not under the request that opened it: those fibers outlive that request.
 */
const asSession = (id: string) => Effect.provideService(References.CurrentLogAnnotations, { session: id })

/** The Runtime, over the services it needs. */
export const layer: Layer.Layer<Runtime, never, Config | Bus.Bus | SessionLog | FileSystem.FileSystem | Path.Path> = Layer.effect(
  Runtime,
  Effect.gen(function*() {
    const config = yield* Config
    const bus = yield* Bus.Bus
    const log = yield* SessionLog
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const services = Context.make(FileSystem.FileSystem, fs).pipe(Context.add(Path.Path, path)) as Context.Context<ToolEnv>
    const parent = yield* Effect.scope
    // Nothing is probed or made until a session runs a command.
    const sandboxes = config.sandbox === undefined ? undefined : yield* Sandbox.make(config.sandbox, { skeinHome: config.home, userHome: config.userHome })
    /** What may load from a session's folder (workspace trust), and its hooks. */
    const workspace = Workspace.make({ home: config.home, userHome: config.userHome ?? os.homedir(), policy: config.trust, replay: config.hookReplay })
    /** A session's sandbox, in its scope. */
    const sandboxFor = (cwd: string, additionalDirectories: ReadonlyArray<string>, scope: Scope.Scope) =>
      sandboxes === undefined ? Effect.succeed(undefined) : sandboxes.session({ cwd, roots: [cwd, ...additionalDirectories] }).pipe(Scope.provide(scope))
    // The keys of config.json are secrets whichever provider answers (the scripted one too). Read
    // in the background: session/new need not wait for it, and no tool output can come before a
    // prompt, a round trip of the client's later.
    yield* Effect.forkIn(
      ProviderConfig.load(config.home).pipe(
        Effect.map((configured) => ProviderConfig.registerSecrets(configured.file, process.env)),
        Effect.provideService(FileSystem.FileSystem, fs),
        Effect.provideService(Path.Path, path)
      ),
      parent
    )
    const registry = yield* Registry.make(config.maxLiveSessions ?? DEFAULT_MAX_LIVE_SESSIONS)
    // Loading, deleting and making room must not interleave (each looks at the registry, then the disk).
    const lifecycle = yield* Semaphore.make(1)

    const checkDirectory = (dir: string, what: string) =>
      Effect.gen(function*() {
        if (!path.isAbsolute(dir)) {
          return yield* new RuntimeError({ reason: "invalid_cwd", message: `${what} must be an absolute path` })
        }
        const info = yield* fs.stat(dir).pipe(Effect.option)
        if (info._tag === "None" || info.value.type !== "Directory") {
          return yield* new RuntimeError({ reason: "invalid_cwd", message: `${what} is not an existing directory` })
        }
      })

    const provideFs = <A, E>(effect: Effect.Effect<A, E, FileSystem.FileSystem | Path.Path>) =>
      effect.pipe(Effect.provideService(FileSystem.FileSystem, fs), Effect.provideService(Path.Path, path))
    // A folder's own skills and commands only once it is trusted (`trust/Workspace.ts`: `project`).
    const discoverSkills = (cwd: string, project: boolean) =>
      provideFs(Skills.discover({ cwd, home: config.home, userHome: config.userHome ?? os.homedir(), project }))
    const childReads = yield* ChildReads.make({
      skills: (cwd) => Effect.flatMap(workspace.loadsProject(cwd), (project) => Effect.map(discoverSkills(cwd, project), (found) => found.skills)),
      project: (cwd) => provideFs(Prompt.load(cwd))
    })

    /** The skills and commands of a session in `cwd` (children get the skills only: nobody types their prompts). */
    const extensionsFor = (cwd: string, commands: boolean): Effect.Effect<SessionCommands.Extensions> =>
      Effect.gen(function*() {
        if (!commands) return { skills: yield* childReads.skills(cwd), commands: [] }
        const project = yield* workspace.loadsProject(cwd)
        const found = yield* discoverSkills(cwd, project)
        yield* childReads.remember(cwd, found.skills)
        const listed = yield* provideFs(Commands.discover({ cwd, home: config.home, skills: found.skills, project }))
        return { skills: found.skills, commands: listed.commands }
      })

    const depsFor = (id: string, cwd: string, writer: Writer, mcp: Mcp, sandbox: SessionSandbox | undefined): SessionDeps.Deps => {
      const servers = mcp.session
      const trust = workspace.forSession({ id, cwd, sandbox, child: false })
      return {
        bus,
        writer,
        readLog: log.read(id).pipe(
          Effect.map((contents) => contents.events),
          Effect.mapError((error) => new SessionError({ reason: "log", message: error.message }))
        ),
        close: (reason) => registry.close(id, reason),
        provider: config.provider,
        // With MCP servers, the toolkit changes as their tools are discovered or withdrawn.
        toolkit: servers === undefined ? config.toolkit : DynamicToolkit.make(config.toolkit, servers),
        maxTurnRequests: config.maxTurnRequests,
        model: config.model,
        models: config.models,
        services,
        permissionTimeoutMs: config.permissionTimeoutMs,
        notices: servers === undefined ? undefined : () => servers.takeNotices().map((notice) => ({ text: notice.text, source: "mcp" })),
        mcpStatus: servers?.status,
        startEvents: mcp.record,
        extensions: extensionsFor(cwd, true),
        compactAt: config.compactAt,
        userHome: config.userHome,
        sandbox,
        trustQuestion: trust.question,
        projectMcp: mcp.late,
        hooks: trust.hooks
      }
    }

    const children = ChildSessions.make({
      config,
      log,
      registry,
      provideFs,
      depsFor: (id, cwd, writer, sandbox) => depsFor(id, cwd, writer, { session: undefined, record: [] }, sandbox),
      sandboxFor,
      extensions: (cwd) => extensionsFor(cwd, false),
      project: childReads.project,
      workspace
    })

    /** A top-level session's deps, with what it needs to start children. */
    const withChildren = (deps: SessionDeps.Deps, history: History.History): SessionDeps.Deps => ({
      ...deps,
      children: children.factory(0, deps.toolkit, () => history, deps.hooks?.settings),
      checkpointsHome: config.home,
      checkpointLimits: config.checkpoints
    })

    const userHome = config.userHome ?? os.homedir()
    /**
     * A session's MCP plan, at its open: the user's and the client's servers, and the folder's own
     * while it is trusted. Where the folder stands is read here, once for the session (`Workspace.open`).
     */
    const mcpPlan = (cwd: string, below: ReadonlyArray<McpServer>, above: ReadonlyArray<McpServer>) =>
      Effect.flatMap(Effect.andThen(workspace.open(cwd), workspace.loadsProject(cwd)), (trusted) => SessionMcp.plan({ cwd, userHome, trusted, below, above }))

    /**
     * Starts a session's MCP servers in its scope, in the background (the MCP
     * client loads only for sessions that have servers, and not before the
     * session answers), and records them when they changed: their settings
     * beside the log, what identifies them in it.
     */
    const startMcp = (plan: SessionMcp.Plan, changed: boolean, writer: Writer, cwd: string, scope: Scope.Scope, sandbox: SessionSandbox | undefined) =>
      Effect.gen(function*() {
        const servers = SessionMcp.servers(plan)
        const record = changed ? yield* SessionMcp.record(writer, plan) : []
        if (servers.length === 0 && !plan.pending) return { session: undefined, record } satisfies Mcp
        const session = yield* McpSession.start({ servers, cwd, clientInfo: { name: "skein", version: config.version }, sandbox }).pipe(
          Scope.provide(scope)
        )
        const late = plan.pending ? SessionMcp.late({ plan, cwd, userHome, trusted: workspace.loadsProject(cwd), mcp: session, writer }) : undefined
        return { session, record, late } satisfies Mcp
      })

    const newSession = Effect.fn("Runtime.newSession")(function*(options: NewSessionOptions, as?: { readonly id: string }) {
      if (as !== undefined && !isSessionId(as.id)) return yield* new RuntimeError({ reason: "invalid_request", message: `Not a session id: ${as.id}` })
      const mode: ModeId = options.mode === undefined ? config.defaultMode : isModeId(options.mode)
        ? options.mode
        : yield* new RuntimeError({ reason: "invalid_mode", message: `Unknown mode "${options.mode}"` })
      yield* checkDirectory(options.cwd, "cwd")
      const additionalDirectories = options.additionalDirectories ?? []
      for (const dir of additionalDirectories) yield* checkDirectory(dir, "An additional directory")
      yield* lifecycle.withPermits(1)(registry.makeRoom)
      const id = as?.id ?? SessionId.make()
      const created = yield* Clock.currentTimeMillis
      const scope = yield* Scope.fork(parent)
      const session = yield* Effect.gen(function*() {
        const writer = yield* log.create({
          type: "session",
          v: LOG_VERSION,
          id,
          cwd: options.cwd,
          created,
          mode,
          ...(additionalDirectories.length > 0 ? { additionalDirectories } : {}),
          skein: config.version
        }).pipe(Scope.provide(scope))
        const plan = yield* mcpPlan(options.cwd, config.mcpServers ?? [], options.mcpServers ?? [])
        const sandbox = yield* sandboxFor(options.cwd, additionalDirectories, scope)
        const mcp = yield* startMcp(plan, SessionMcp.servers(plan).length > 0, writer, options.cwd, scope, sandbox)
        const history = History.make()
        history.mode = mode
        return yield* Session.make({ id, cwd: options.cwd, additionalDirectories, created }, history, withChildren(depsFor(id, options.cwd, writer, mcp, sandbox), history), scope)
      }).pipe(
        asSession(id),
        Effect.mapError(fromLogError),
        Effect.onError(() => Scope.close(scope, Exit.void))
      )
      return yield* registry.add(session, scope)
    })

    /** Whether two absolute paths name the same directory. */
    const sameDirectory = (a: string, b: string) =>
      path.resolve(a) === path.resolve(b)
        ? Effect.succeed(true)
        : Effect.map(
          Effect.all([fs.realPath(a), fs.realPath(b)]).pipe(Effect.orElseSucceed(() => [a, b] as const)),
          ([x, y]) => x === y
        )

    const childRefused = (id: string, parent: string) =>
      new RuntimeError({
        reason: "invalid_request",
        message: `${id} is a child session (a subagent of ${parent}): it is driven by its parent; load the parent to see it`
      })

    const checkCwd = (requested: string | undefined, cwd: string) =>
      Effect.gen(function*() {
        if (requested === undefined || (yield* sameDirectory(requested, cwd))) return
        return yield* new RuntimeError({ reason: "invalid_cwd", message: "cwd does not match the session's working directory" })
      })

    /** Loads, recovers and starts a session that is not live here. */
    const start = (options: LoadSessionOptions) =>
      Effect.gen(function*() {
        const scope = yield* Scope.fork(parent)
        const loaded = yield* Effect.gen(function*() {
          // Refusals come before anything is written: a refused load leaves the log as it was.
          const check = (contents: Reader.Contents) =>
            Effect.gen(function*() {
              if (contents.header.parent !== undefined) return yield* childRefused(options.sessionId, contents.header.parent.sessionId)
              yield* checkCwd(options.cwd, contents.header.cwd)
              for (const dir of options.additionalDirectories ?? contents.header.additionalDirectories ?? []) {
                yield* checkDirectory(dir, "An additional directory")
              }
            })
          const { contents, writer } = yield* log.open(options.sessionId, check).pipe(
            Scope.provide(scope),
            Effect.mapError((error) => (error instanceof LogError ? fromLogError(error) : error))
          )
          const header = contents.header
          const additionalDirectories = options.additionalDirectories ?? header.additionalDirectories ?? []
          const history = History.make()
          const events = contents.events
          for (const event of events) History.apply(history, event)
          const recovered = yield* Effect.mapError(Journal.recover({ sessionId: header.id, writer, history, events }), fromLogError)
          events.push(...recovered)
          const lastSeq = events.length > 0 ? events[events.length - 1]!.seq : 0
          // A crash mid-turn also left the children of that turn open: their logs are closed the same way.
          if (recovered.length > 0) yield* children.recover(events)
          // The mode it started in, unless its log changed it since.
          if (history.mode === undefined || !isModeId(history.mode)) history.mode = header.mode !== undefined && isModeId(header.mode) ? header.mode : config.defaultMode
          // The client's servers win over the configured ones; without any from the client, the
          // ones the session used last time, under the configuration as it is now. The project's
          // are read again, and start only while the folder is trusted (never from the record).
          const recorded = yield* McpRecord.load(writer)
          const fromClient = options.mcpServers ?? []
          const plan = yield* mcpPlan(
            header.cwd,
            fromClient.length > 0 ? config.mcpServers ?? [] : McpConfig.merge(recorded.servers.filter((s) => !recorded.project.includes(s.name)), config.mcpServers ?? []),
            fromClient
          )
          const sandbox = yield* sandboxFor(header.cwd, additionalDirectories, scope)
          const changed = !McpRecord.same(SessionMcp.servers(plan), recorded.servers) || SessionMcp.projectNames(plan).join() !== recorded.project.join()
          const mcp = yield* startMcp(plan, changed, writer, header.cwd, scope, sandbox)
          const session = yield* Session.make(
            { id: header.id, cwd: header.cwd, additionalDirectories, created: header.created },
            history,
            withChildren(depsFor(header.id, header.cwd, writer, mcp, sandbox), history),
            scope,
            lastSeq
          )
          return { session, events } satisfies LoadedSession
        }).pipe(asSession(options.sessionId), Effect.onError(() => Scope.close(scope, Exit.void)))
        yield* registry.add(loaded.session, scope)
        return loaded
      })


    const loadSession = Effect.fn("Runtime.loadSession")(function*(options: LoadSessionOptions) {
      return yield* lifecycle.withPermits(1)(Effect.gen(function*() {
        const session = yield* registry.use(options.sessionId)
        if (session === undefined) {
          yield* registry.opening(options.sessionId)
          yield* registry.makeRoom
          const loaded = yield* start(options)
          yield* registry.opened(options.sessionId)
          return loaded
        }
        if (session.parent !== undefined) return yield* childRefused(options.sessionId, session.parent.sessionId)
        yield* checkCwd(options.cwd, session.cwd)
        const contents = yield* Effect.mapError(log.read(options.sessionId), fromLogError)
        return { session, events: contents.events } satisfies LoadedSession
      }))
    })

    const listSessions = (query?: ListQuery) =>
      log.list(query ?? {}).pipe(
        Effect.mapError((error) =>
          error.reason === "cursor" ? new RuntimeError({ reason: "invalid_request", message: error.message }) : fromLogError(error)
        )
      )

    const readSession = (sessionId: string) =>
      log.read(sessionId).pipe(
        Effect.map((contents): SessionRecord => ({ header: contents.header, events: contents.events, file: contents.file })),
        Effect.mapError(fromLogError)
      )

    const forkSession = Effect.fn("Runtime.forkSession")(function*(options: ForkSessionOptions) {
      if (options.cwd !== undefined) yield* checkDirectory(options.cwd, "cwd")
      for (const dir of options.additionalDirectories ?? []) yield* checkDirectory(dir, "An additional directory")
      return yield* Fork.fork(log, { ...options, id: SessionId.make(), version: config.version })
    })

    const getSession = (sessionId: string): Effect.Effect<SessionDeps.Session, RuntimeError> =>
      Effect.flatMap(registry.find(sessionId), (found) => {
        switch (found._tag) {
          case "Live":
            return Effect.succeed(found.session)
          case "Ended":
            return Effect.fail(new RuntimeError({ reason: "locked", message: found.reason }))
          case "Evicted":
            // Closed only to make room: it comes back from its log, as it was.
            return Effect.map(loadSession({ sessionId }), (loaded) => loaded.session as SessionDeps.Session)
          case "Missing":
            return Effect.fail(new RuntimeError({ reason: "not_found", message: `Session not found: ${sessionId}` }))
          default:
            return absurd(found)
        }
      })

    const closeSession = (sessionId: string) => registry.close(sessionId)

    const deleteSession = Effect.fn("Runtime.deleteSession")(function*(sessionId: string) {
      // The log store removes the session's side files (its MCP servers' secrets) before its log.
      yield* lifecycle.withPermits(1)(Effect.andThen(closeSession(sessionId), Effect.mapError(log.remove(sessionId), fromLogError)))
      // Its checkpoints go with it.
      yield* Effect.flatMap(Effect.promise(() => import("../checkpoints/Shadow.ts")), (Shadow) => Shadow.removeAll(config.home, sessionId))
    })

    return Runtime.of({
      newSession,
      loadSession,
      listSessions,
      readSession,
      forkSession,
      deleteSession,
      getSession,
      closeSession,
      liveSessions: registry.list,
      events: Stream.unwrap(Effect.map(bus.subscribeAll, Bus.toStream)),
      models: config.models,
      contextWindow: config.provider.contextWindow,
      commands: (cwd) =>
        Effect.map(extensionsFor(cwd, true), (found) =>
          found.commands.map((c) => ({ name: c.name, description: c.description, ...(c.argumentHint !== undefined ? { hint: c.argumentHint } : {}) })))
    })
  })
)
