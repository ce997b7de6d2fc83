/**
 * Runtime: the public API every presenter uses (the ACP server, `skein run`,
 * an embedding Effect program). It owns the session registry: each live
 * session is an actor in its own scope, a child of the runtime's scope, so
 * closing the runtime closes every session (turns interrupted, logs synced,
 * locks released).
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
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Path from "effect/Path"
import * as References from "effect/References"
import * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import type { McpServer } from "../Vocabulary.ts"
import { type Canonical, type CanonicalBody, LOG_VERSION } from "../log/Event.ts"
import * as History from "../log/History.ts"
import * as Recovery from "../log/Recovery.ts"
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
import * as Shadow from "../checkpoints/Shadow.ts"
import type { SessionSandbox } from "../tools/Sandboxed.ts"
import type { ToolEnv } from "../tools/Tool.ts"
import * as Definitions from "../agents/Definitions.ts"
import * as Commands from "../commands/Commands.ts"
import * as Skills from "../skills/Skills.ts"
import * as Prompt from "../providers/Prompt.ts"
import { AGENT_TOOLS } from "../tools/agents.ts"
import * as Toolkit from "../tools/Toolkit.ts"
import * as BackgroundTools from "../tools/background.ts"
import * as Bus from "./Bus.ts"
import * as ChildReads from "./ChildReads.ts"
import * as Ceiling from "../tools/Ceiling.ts"
import type * as Children from "./Children.ts"
import { Config, DEFAULT_MAX_LIVE_SESSIONS, EVICT_AFTER_IDLE_MS } from "./Config.ts"
import { isModeId, type ModeId } from "../Vocabulary.ts"
import { SessionError } from "../session/Protocol.ts"
import * as Session from "./Session.ts"
import * as SessionId from "./SessionId.ts"

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

/** A session's MCP servers, started (when it has some), and what to log about them. */
interface Mcp {
  readonly session: McpSession.McpSession | undefined
  /** The `mcp_servers` event to log at start, when the session's servers changed. */
  readonly record: ReadonlyArray<CanonicalBody>
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
    /** The live sessions, with when each was last used (to choose which to close past the cap). */
    /** `child`: a child session (a subagent): its parent's turn owns it; it is never evicted nor counted against the cap. */
    const live = new Map<string, { readonly session: Session.Session; readonly scope: Scope.Closeable; used: number; readonly child?: boolean }>()
    const maxLive = config.maxLiveSessions ?? DEFAULT_MAX_LIVE_SESSIONS
    /** Sessions closed to make room: they come back when asked for (`getSession`). */
    const evicted = new Set<string>()
    /**
     * Sessions closed for a reason (another Skein took them over), with it: a request for one is
     * answered with it until the session is opened (or closed, or deleted) again. The latest few.
     */
    const ended = new Map<string, string>()
    const ENDED_KEPT = 1024
    // Loading, deleting and making room must not interleave (each looks at the registry, then the disk).
    const lifecycle = yield* Semaphore.make(1)

    const closeAll = Effect.suspend(() =>
      Effect.forEach([...live.values()], (entry) => Scope.close(entry.scope, Exit.void), { concurrency: "unbounded", discard: true })
    )
    yield* Effect.addFinalizer(() => closeAll)

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

    /** The agents and limits for sessions in `cwd` (read at the first use in each turn: a new agent file counts from the next turn). */
    const catalog = (cwd: string) =>
      Definitions.load({ cwd, home: config.home }).pipe(
        Effect.map((loaded) => ({ agents: loaded.agents, limits: loaded.limits })),
        Effect.provideService(FileSystem.FileSystem, fs),
        Effect.provideService(Path.Path, path)
      )

    /** What a session at `depth` needs to start children; `toolkit` is the tools its children may be given. */
    const childrenFor = (depth: number, toolkit: Toolkit.Toolkit, history: () => History.History): Children.Factory => ({
      depth,
      home: config.home,
      catalog,
      started: () => history().subagents,
      open: (request, scope) => openChild(request, toolkit, scope)
    })

    /** The tools an agent gets: its list (or all of its parent's), without the agent tools at the last depth. */
    const toolsOf = (agent: Definitions.AgentDefinition, parentTools: Toolkit.Toolkit, depth: number, maxDepth: number) =>
      Toolkit.only(parentTools, (name) =>
        (agent.tools === undefined || BackgroundTools.listed(agent.tools, name)) && (!AGENT_TOOLS.has(name) || depth < maxDepth))

    const childPrompt = (agent: Definitions.AgentDefinition) =>
      [
        "# You are a subagent",
        `You are the ${agent.name} agent: another agent (your parent) delegated a task to you. You see only the task, not its conversation.`,
        "Do the task with your tools, then end with your answer: your last message is all the parent receives, so make it complete and self-contained (what you found or changed, where, and anything left undone).",
        ...(agent.readOnly ? ["You are read-only: you may read, search and run read-only commands; nothing you do may change the workspace."] : []),
        ...(agent.instructions !== undefined && agent.instructions.trim().length > 0 ? ["", agent.instructions.trim()] : [])
      ].join("\n")

    /** Opens a child session (a subagent) in `scope`, which its parent's turn owns. */
    const openChild = (request: Children.OpenRequest, parentTools: Toolkit.Toolkit, scope: Scope.Closeable): Effect.Effect<Session.Session, string> =>
      Effect.gen(function*() {
        const { agent, id, limits } = request
        if (agent.acp !== undefined && config.external === undefined) {
          return yield* Effect.fail(`The agent ${agent.name} is an external ACP agent, and this runtime cannot run external agents`)
        }
        const created = yield* Clock.currentTimeMillis
        const writer = yield* log.create({
          type: "session",
          v: LOG_VERSION,
          id,
          cwd: request.cwd,
          created,
          mode: request.mode,
          ...(request.additionalDirectories.length > 0 ? { additionalDirectories: request.additionalDirectories } : {}),
          skein: config.version,
          parent: request.parent,
          agent: agent.name
        }).pipe(Scope.provide(scope), Effect.mapError((error) => `Could not start the child session: ${error.message}`))
        const history = History.make()
        history.mode = request.mode
        // Its parent's "always" answers hold for it too; its own answers stay its own.
        history.rules.push(...request.rules)
        const depth = request.parent.depth
        const toolkit = toolsOf(agent, parentTools, depth, limits.maxDepth)
        const sandbox = yield* sandboxFor(request.cwd, request.additionalDirectories, scope)
        const base = {
          ...depsFor(id, request.cwd, writer, { session: undefined, record: [] }, sandbox),
          extensions: extensionsFor(request.cwd, false),
          project: childProject(request.cwd)
        }
        // The child's ceiling as the gate reads it (an external agent's questions are held to it too).
        const reach = () =>
          Ceiling.under({ mode: history.mode !== undefined && isModeId(history.mode) ? history.mode : request.mode, readOnly: agent.readOnly, rules: history.rules }, request.above())
        const runTurn = agent.acp !== undefined && config.external !== undefined
          ? (yield* config.external({ name: agent.name, ...agent.acp }, {
            cwd: request.cwd,
            clientInfo: { name: "skein", version: config.version },
            permissionTimeoutMs: config.permissionTimeoutMs,
            ceiling: reach,
            sandbox
          }).pipe(Scope.provide(scope))).run
          : undefined
        const deps: Session.Deps = {
          ...base,
          toolkit,
          agent: agent.name,
          instructions: childPrompt(agent),
          readOnly: agent.readOnly,
          above: request.above,
          model: agent.model !== undefined && config.models?.info(agent.model) !== undefined ? agent.model : config.model,
          children: depth < limits.maxDepth && agent.acp === undefined ? childrenFor(depth, toolkit, () => history) : undefined,
          checkpoint: request.checkpoint,
          ...(runTurn !== undefined ? { runTurn } : {})
        }
        const session = yield* Session.make(
          { id, cwd: request.cwd, additionalDirectories: request.additionalDirectories, created, parent: request.parent, agent: agent.name },
          history,
          deps,
          scope
        )
        live.set(id, { session, scope, used: created, child: true })
        yield* Scope.addFinalizer(scope, Effect.sync(() => live.delete(id)))
        return session
      }).pipe(asSession(request.id))

    const provideFs = <A, E>(effect: Effect.Effect<A, E, FileSystem.FileSystem | Path.Path>) =>
      effect.pipe(Effect.provideService(FileSystem.FileSystem, fs), Effect.provideService(Path.Path, path))
    const discoverSkills = (cwd: string) =>
      provideFs(Skills.discover({ cwd, home: config.home, userHome: config.userHome ?? os.homedir() }))
    const childReads = yield* ChildReads.make({
      skills: (cwd) => Effect.map(discoverSkills(cwd), (found) => found.skills),
      project: (cwd) => provideFs(Prompt.load(cwd))
    })

    /** The skills and commands of a session in `cwd` (children get the skills only: nobody types their prompts). */
    const extensionsFor = (cwd: string, commands: boolean): Effect.Effect<Session.Extensions> =>
      Effect.gen(function*() {
        if (!commands) return { skills: yield* childReads.skills(cwd), commands: [] }
        const found = yield* discoverSkills(cwd)
        yield* childReads.remember(cwd, found.skills)
        const listed = yield* provideFs(Commands.discover({ cwd, home: config.home, skills: found.skills }))
        return { skills: found.skills, commands: listed.commands }
      })

    /** A child's project (its parent's, read once a minute at most per cwd). */
    const childProject = childReads.project

    const depsFor = (id: string, cwd: string, writer: Writer, mcp: Mcp, sandbox: SessionSandbox | undefined): Session.Deps => {
      const servers = mcp.session
      return {
        bus,
        writer,
        readLog: log.read(id).pipe(
          Effect.map((contents) => contents.events),
          Effect.mapError((error) => new SessionError({ reason: "log", message: error.message }))
        ),
        close: (reason) => (reason === undefined ? closeSession(id) : closeFor(id, reason)),
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
        sandbox
      }
    }

    /** A top-level session's deps, with what it needs to start children. */
    const withChildren = (deps: Session.Deps, history: History.History): Session.Deps => ({
      ...deps,
      children: childrenFor(0, deps.toolkit, () => history),
      checkpointsHome: config.home
    })

    /**
     * Starts a session's MCP servers in its scope, in the background (the MCP
     * client loads only for sessions that have servers, and not before the
     * session answers), and records them when they changed: their settings
     * beside the log, what identifies them in it.
     */
    const startMcp = (servers: ReadonlyArray<McpServer>, changed: boolean, writer: Writer, cwd: string, scope: Scope.Scope, sandbox: SessionSandbox | undefined) =>
      Effect.gen(function*() {
        if (changed) yield* McpRecord.save(writer, servers)
        const record: ReadonlyArray<CanonicalBody> = changed ? [{ type: "mcp_servers", data: { servers: McpRecord.summary(servers) } }] : []
        if (servers.length === 0) return { session: undefined, record } satisfies Mcp
        const session = yield* McpSession.start({ servers, cwd, clientInfo: { name: "skein", version: config.version }, sandbox }).pipe(
          Scope.provide(scope)
        )
        return { session, record } satisfies Mcp
      })

    /** Registers a live session; it leaves the registry when its scope closes. */
    const register = (session: Session.Session, scope: Scope.Closeable) =>
      Effect.gen(function*() {
        live.set(session.id, { session, scope, used: yield* Clock.currentTimeMillis })
        yield* Scope.addFinalizer(scope, Effect.sync(() => live.delete(session.id)))
        return session
      })

    /**
     * Makes room for one more live session. Past the cap, closes the session used least
     * recently among those with no turn running or queued and not used for
     * `EVICT_AFTER_IDLE_MS` (its log has everything; it can be loaded again). When none
     * qualifies, the new session is refused: memory stays bounded whatever a client does.
     */
    const makeRoom = Effect.gen(function*() {
      const topLevel = () => {
        let n = 0
        for (const entry of live.values()) if (entry.child !== true) n++
        return n
      }
      while (topLevel() >= maxLive) {
        const now = yield* Clock.currentTimeMillis
        let oldest: { readonly session: Session.Session; readonly scope: Scope.Closeable; used: number } | undefined
        let oldestUse = Infinity
        for (const entry of live.values()) {
          if (entry.child === true) continue
          const idleSince = entry.session.idleSince()
          if (idleSince === undefined) continue
          const lastUse = Math.max(entry.used, idleSince)
          if (now - lastUse < EVICT_AFTER_IDLE_MS || lastUse >= oldestUse) continue
          oldest = entry
          oldestUse = lastUse
        }
        if (oldest === undefined) {
          return yield* new RuntimeError({
            reason: "limit",
            message: `Too many live sessions (${maxLive}) and none idle to close: close one (session/close) or allow more (--max-live-sessions)`
          })
        }
        yield* Effect.logInfo(`Closed the idle session ${oldest.session.id} to stay within ${maxLive} live sessions; it can be loaded again`)
        yield* Scope.close(oldest.scope, Exit.void)
        evicted.add(oldest.session.id)
      }
    })

    const newSession = Effect.fn("Runtime.newSession")(function*(options: NewSessionOptions, as?: { readonly id: string }) {
      if (as !== undefined && !isSessionId(as.id)) return yield* new RuntimeError({ reason: "invalid_request", message: `Not a session id: ${as.id}` })
      const mode: ModeId = options.mode === undefined ? config.defaultMode : isModeId(options.mode)
        ? options.mode
        : yield* new RuntimeError({ reason: "invalid_mode", message: `Unknown mode "${options.mode}"` })
      yield* checkDirectory(options.cwd, "cwd")
      const additionalDirectories = options.additionalDirectories ?? []
      for (const dir of additionalDirectories) yield* checkDirectory(dir, "An additional directory")
      yield* lifecycle.withPermits(1)(makeRoom)
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
        const servers = McpConfig.merge(config.mcpServers ?? [], options.mcpServers ?? [])
        const sandbox = yield* sandboxFor(options.cwd, additionalDirectories, scope)
        const mcp = yield* startMcp(servers, servers.length > 0, writer, options.cwd, scope, sandbox)
        const history = History.make()
        history.mode = mode
        return yield* Session.make({ id, cwd: options.cwd, additionalDirectories, created }, history, withChildren(depsFor(id, options.cwd, writer, mcp, sandbox), history), scope)
      }).pipe(
        asSession(id),
        Effect.mapError(fromLogError),
        Effect.onError(() => Scope.close(scope, Exit.void))
      )
      return yield* register(session, scope)
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

    /**
     * Closes the turns a crash left open in the logs of the children `events` started (and of
     * theirs), as loading would: children are never loaded on their own, so their parent's load
     * does it. A log another process holds, or that cannot be read, is left as it is.
     */
    const closeChildren = (events: ReadonlyArray<Canonical>): Effect.Effect<void> =>
      Effect.forEach(events, (event) => {
        if (event.type !== "subagent" || event.data.event !== "spawned" || live.has(event.data.id)) return Effect.void
        return Effect.scoped(Effect.gen(function*() {
          const { contents, writer } = yield* log.open(event.data.id)
          const history = History.make()
          for (const e of contents.events) History.apply(history, e)
          const closing = Recovery.closing(contents.events, history)
          if (closing !== undefined) {
            const ts = yield* Clock.currentTimeMillis
            const last = contents.events.length > 0 ? contents.events[contents.events.length - 1]!.seq : 0
            yield* writer.append(closing.bodies.map((body, i) =>
              ({ ...body, sessionId: event.data.id, seq: last + 1 + i, ts, turn: closing.turn }) as Canonical
            ))
            yield* writer.sync
          }
          yield* closeChildren(contents.events)
        })).pipe(Effect.ignore)
      }, { discard: true })

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
          let lastSeq = events.length > 0 ? events[events.length - 1]!.seq : 0
          const closing = Recovery.closing(events, history)
          if (closing !== undefined) {
            const ts = yield* Clock.currentTimeMillis
            const stamped = closing.bodies.map((body, i) =>
              ({ ...body, sessionId: header.id, seq: lastSeq + 1 + i, ts, turn: closing.turn }) as Canonical
            )
            yield* Effect.mapError(Effect.andThen(writer.append(stamped), writer.sync), fromLogError)
            for (const event of stamped) {
              History.apply(history, event)
              events.push(event)
            }
            lastSeq += stamped.length
          }
          // A crash mid-turn also left the children of that turn open: their logs are closed the same way.
          if (closing !== undefined) yield* closeChildren(events)
          // The mode it started in, unless its log changed it since.
          if (history.mode === undefined || !isModeId(history.mode)) history.mode = header.mode !== undefined && isModeId(header.mode) ? header.mode : config.defaultMode
          // The client's servers win over the configured ones; without any from the client, the
          // ones the session used last time, under the configuration as it is now.
          const recorded = yield* McpRecord.load(writer)
          const fromClient = options.mcpServers ?? []
          const servers = fromClient.length > 0
            ? McpConfig.merge(config.mcpServers ?? [], fromClient)
            : McpConfig.merge(recorded, config.mcpServers ?? [])
          const sandbox = yield* sandboxFor(header.cwd, additionalDirectories, scope)
          const mcp = yield* startMcp(servers, !McpRecord.same(servers, recorded), writer, header.cwd, scope, sandbox)
          const session = yield* Session.make(
            { id: header.id, cwd: header.cwd, additionalDirectories, created: header.created },
            history,
            withChildren(depsFor(header.id, header.cwd, writer, mcp, sandbox), history),
            scope,
            lastSeq
          )
          return { session, events } satisfies LoadedSession
        }).pipe(asSession(options.sessionId), Effect.onError(() => Scope.close(scope, Exit.void)))
        yield* register(loaded.session, scope)
        return loaded
      })


    const loadSession = Effect.fn("Runtime.loadSession")(function*(options: LoadSessionOptions) {
      return yield* lifecycle.withPermits(1)(Effect.gen(function*() {
        const entry = live.get(options.sessionId)
        if (entry === undefined) {
          ended.delete(options.sessionId)
          yield* makeRoom
          const loaded = yield* start(options)
          evicted.delete(options.sessionId)
          return loaded
        }
        if (entry.session.parent !== undefined) return yield* childRefused(options.sessionId, entry.session.parent.sessionId)
        entry.used = yield* Clock.currentTimeMillis
        yield* checkCwd(options.cwd, entry.session.cwd)
        const contents = yield* Effect.mapError(log.read(options.sessionId), fromLogError)
        return { session: entry.session, events: contents.events } satisfies LoadedSession
      }))
    })

    const listSessions = (query?: ListQuery) =>
      log.list(query ?? {}).pipe(
        Effect.mapError((error) =>
          error.message === "Invalid cursor" ? new RuntimeError({ reason: "invalid_request", message: error.message }) : fromLogError(error)
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

    const getSession = (sessionId: string): Effect.Effect<Session.Session, RuntimeError> =>
      Effect.suspend(() => {
        const entry = live.get(sessionId)
        if (entry !== undefined) {
          return Effect.map(Clock.currentTimeMillis, (now) => {
            entry.used = now
            return entry.session
          })
        }
        const reason = ended.get(sessionId)
        if (reason !== undefined) return Effect.fail(new RuntimeError({ reason: "locked", message: reason }))
        // Closed only to make room: it comes back from its log, as it was.
        if (evicted.has(sessionId)) return Effect.map(loadSession({ sessionId }), (loaded) => loaded.session as Session.Session)
        return Effect.fail(new RuntimeError({ reason: "not_found", message: `Session not found: ${sessionId}` }))
      })

    /** Closes a session for a reason its later requests are answered with. */
    const closeFor = (sessionId: string, reason: string) =>
      Effect.suspend(() => {
        ended.delete(sessionId)
        ended.set(sessionId, reason)
        if (ended.size > ENDED_KEPT) ended.delete(ended.keys().next().value!)
        evicted.delete(sessionId)
        const entry = live.get(sessionId)
        return entry === undefined ? Effect.void : Scope.close(entry.scope, Exit.void)
      })

    const closeSession = (sessionId: string) =>
      Effect.suspend(() => {
        ended.delete(sessionId)
        evicted.delete(sessionId)
        const entry = live.get(sessionId)
        return entry === undefined ? Effect.void : Scope.close(entry.scope, Exit.void)
      })

    const deleteSession = Effect.fn("Runtime.deleteSession")(function*(sessionId: string) {
      // The log store removes the session's side files (its MCP servers' secrets) before its log.
      yield* lifecycle.withPermits(1)(Effect.andThen(closeSession(sessionId), Effect.mapError(log.remove(sessionId), fromLogError)))
      // Its checkpoints go with it.
      yield* Shadow.removeAll(config.home, sessionId)
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
      liveSessions: Effect.sync(() =>
        [...live.values()].map(({ session }) => ({
          id: session.id,
          cwd: session.cwd,
          additionalDirectories: session.additionalDirectories,
          created: session.created,
          ...(session.parent !== undefined ? { parent: session.parent } : {}),
          ...(session.agent !== undefined ? { agent: session.agent } : {})
        }))
      ),
      events: Stream.unwrap(Effect.map(bus.subscribeAll, Bus.toStream)),
      models: config.models,
      commands: (cwd) =>
        Effect.map(extensionsFor(cwd, true), (found) =>
          found.commands.map((c) => ({ name: c.name, description: c.description, ...(c.argumentHint !== undefined ? { hint: c.argumentHint } : {}) })))
    })
  })
)
