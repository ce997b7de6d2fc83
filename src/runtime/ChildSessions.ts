/**
 * Child sessions (subagents), as the runtime makes them: a child's log (under its parent), its
 * tools (its agent's, within its parent's), its prompt, its sandbox, its external agent when it
 * runs one, and the children it may start in turn. Its parent's turn owns its scope.
 *
 * Children are never loaded on their own: loading their parent closes the turns a crash left
 * open in their logs (`recover`).
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import type * as Path from "effect/Path"
import * as References from "effect/References"
import * as Scope from "effect/Scope"
import * as Definitions from "../agents/Definitions.ts"
import { type Canonical, LOG_VERSION } from "../log/Event.ts"
import * as History from "../log/History.ts"
import type { SessionLog } from "../log/SessionLog.ts"
import type { Writer } from "../log/Store.ts"
import { AGENT_TOOLS } from "../tools/agents.ts"
import * as BackgroundTools from "../tools/background.ts"
import * as Ceiling from "../tools/Ceiling.ts"
import type { SessionSandbox } from "../tools/Sandboxed.ts"
import * as Toolkit from "../tools/Toolkit.ts"
import type * as Workspace from "../trust/Workspace.ts"
import { isModeId } from "../Vocabulary.ts"
import type * as Children from "./Children.ts"
import type { Config } from "./Config.ts"
import * as Journal from "./Journal.ts"
import type * as Registry from "./Registry.ts"
import * as Session from "./Session.ts"
import type * as SessionCommands from "./SessionCommands.ts"
import type * as SessionDeps from "./SessionDeps.ts"

interface Options {
  readonly config: Config["Service"]
  readonly log: SessionLog["Service"]
  readonly registry: Registry.Registry
  readonly provideFs: <A, E>(effect: Effect.Effect<A, E, FileSystem.FileSystem | Path.Path>) => Effect.Effect<A, E>
  /** A session's deps, without MCP servers (children have none). */
  readonly depsFor: (id: string, cwd: string, writer: Writer, sandbox: SessionSandbox | undefined) => SessionDeps.Deps
  /** A session's sandbox, in its scope. */
  readonly sandboxFor: (cwd: string, additionalDirectories: ReadonlyArray<string>, scope: Scope.Scope) => Effect.Effect<SessionSandbox | undefined>
  /** A child's skills (and no commands: nobody types its prompts). */
  readonly extensions: (cwd: string) => Effect.Effect<SessionCommands.Extensions>
  /** A child's project (its parent's, read once a minute at most per cwd). */
  readonly project: (cwd: string) => SessionDeps.Deps["project"]
  /** What may load from a folder (workspace trust), and a session's hooks. */
  readonly workspace: Workspace.Workspace
}

/** The tools an agent gets: its list (or all of its parent's), without the agent tools at the last depth. */
const toolsOf = (agent: Definitions.AgentDefinition, parentTools: Toolkit.Toolkit, depth: number, maxDepth: number) =>
  Toolkit.only(parentTools, (name) => (agent.tools === undefined || BackgroundTools.listed(agent.tools, name)) && (!AGENT_TOOLS.has(name) || depth < maxDepth))

const childPrompt = (agent: Definitions.AgentDefinition) =>
  [
    "# You are a subagent",
    `You are the ${agent.name} agent: another agent (your parent) delegated a task to you. You see only the task, not its conversation.`,
    "Do the task with your tools, then end with your answer: your last message is all the parent receives, so make it complete and self-contained (what you found or changed, where, and anything left undone).",
    ...(agent.readOnly ? ["You are read-only: you may read, search and run read-only commands; nothing you do may change the workspace."] : []),
    ...(agent.instructions !== undefined && agent.instructions.trim().length > 0 ? ["", agent.instructions.trim()] : [])
  ].join("\n")

export const make = (options: Options) => {
  const { config, log, registry } = options

  /** The agents and limits for sessions in `cwd` (read at the first use in each turn: a new agent file counts from the next turn). */
  const catalog = (cwd: string) =>
    Effect.flatMap(options.workspace.loadsProject(cwd), (project) => options.provideFs(Definitions.load({ cwd, home: config.home, project }))).pipe(
      Effect.map((loaded) => ({ agents: loaded.agents, limits: loaded.limits }))
    )

  /** What a session at `depth` needs to start children; `toolkit` is the tools its children may be given. */
  /** `hooks`: the hooks the session read, which its children run too. */
  const factory = (depth: number, toolkit: Toolkit.Toolkit, history: () => History.History, hooks: Workspace.Settings | undefined): Children.Factory => ({
    depth,
    home: config.home,
    catalog,
    started: () => history().subagents,
    open: (request, scope) => open(request, toolkit, scope, hooks)
  })

  /** Opens a child session (a subagent) in `scope`, which its parent's turn owns. */
  const open: (
    request: Children.OpenRequest,
    parentTools: Toolkit.Toolkit,
    scope: Scope.Closeable,
    hooks: Workspace.Settings | undefined
  ) => Effect.Effect<SessionDeps.Session, string> = Effect.fn("ChildSessions.open")(
    function*(request: Children.OpenRequest, parentTools: Toolkit.Toolkit, scope: Scope.Closeable, parentHooks: Workspace.Settings | undefined) {
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
      const sandbox = yield* options.sandboxFor(request.cwd, request.additionalDirectories, scope)
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
      // The parent's hooks (a settings file written during its session adds none to its children).
      const trust = options.workspace.forSession({ id, cwd: request.cwd, sandbox, child: true, inherit: parentHooks })
      const deps: SessionDeps.Deps = {
        ...options.depsFor(id, request.cwd, writer, sandbox),
        extensions: options.extensions(request.cwd),
        project: options.project(request.cwd),
        // A child asks nothing about trust (its parent's turn did), and runs only the tool hooks.
        trustQuestion: undefined,
        hooks: trust.hooks,
        toolkit,
        agent: agent.name,
        instructions: childPrompt(agent),
        readOnly: agent.readOnly,
        above: request.above,
        model: agent.model !== undefined && config.models?.info(agent.model) !== undefined ? agent.model : config.model,
        children: depth < limits.maxDepth && agent.acp === undefined ? factory(depth, toolkit, () => history, trust.hooks.settings) : undefined,
        checkpoint: request.checkpoint,
        ...(runTurn !== undefined ? { runTurn } : {})
      }
      const session = yield* Session.make(
        { id, cwd: request.cwd, additionalDirectories: request.additionalDirectories, created, parent: request.parent, agent: agent.name },
        history,
        deps,
        scope
      )
      return yield* registry.add(session, scope, true)
    },
    (effect, request) => effect.pipe(Effect.provideService(References.CurrentLogAnnotations, { session: request.id }))
  )

  /**
   * Closes the turns a crash left open in the logs of the children `events` started (and of
   * theirs), as loading would. A log another process holds, or that cannot be read, is left as it is.
   */
  const recover = (events: ReadonlyArray<Canonical>): Effect.Effect<void> =>
    Effect.forEach(events, (event) => {
      if (event.type !== "subagent" || event.data.event !== "spawned" || registry.has(event.data.id)) return Effect.void
      return Effect.scoped(Effect.gen(function*() {
        const { contents, writer } = yield* log.open(event.data.id)
        const history = History.make()
        for (const e of contents.events) History.apply(history, e)
        yield* Journal.recover({ sessionId: event.data.id, writer, history, events: contents.events })
        yield* recover(contents.events)
      })).pipe(Effect.ignore)
    }, { discard: true })

  return { factory, recover }
}
