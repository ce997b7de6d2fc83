/**
 * The tools that delegate: `spawn_agent`, `wait_agent`, `send_input`, `close_agent`,
 * `list_agents` and `run_workflow`. Each child is a session of its own (its own log, tools and
 * permissions) whose turns run inside the turn that started it; the session behind these tools
 * (`runtime/Children.ts`) supervises them. The tools only shape arguments and results: every
 * problem (a limit, an unknown agent or id) is a result the model reads.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Reports from "./AgentReports.ts"
import type { Agents } from "./Delegation.ts"
import * as Edges from "./Edges.ts"
import * as Tool from "./Tool.ts"

/** The names of the agent tools (left out of a child that may not delegate further). */
export const AGENT_TOOLS: ReadonlySet<string> = new Set(["spawn_agent", "wait_agent", "send_input", "close_agent", "list_agents", "run_workflow"])

const PositiveInt = Schema.Int.check(Schema.isGreaterThan(0))
const Workspace = Schema.Literals(["shared", "isolated"]).annotate({
  description: "shared (default): the child works in your working directory. isolated: in its own git worktree on a branch skein/<child id>, starting from your current state (HEAD plus uncommitted changes); its result names the branch and summarises its diff."
})

const json = (value: unknown) => JSON.stringify(value, null, 1)

/**
 * Runs `f` with the session's children (`Edges.Delegation`: a session that may not start any
 * says why). The model reads the report as JSON; a person is shown `shown` of it (`details.output`).
 */
const withAgents = <A>(f: (agents: Agents) => Effect.Effect<A, string>, shown: (value: A) => string): Effect.Effect<Tool.ToolOutput, never, Edges.Delegation> =>
  Effect.flatMap(Effect.service(Edges.Delegation), f).pipe(
    Effect.map((value) => Tool.ok(json(value), { output: shown(value) })),
    Effect.catch((message: string) => Effect.succeed(Tool.error(message)))
  )

const short = (text: string, n = 60) => {
  const line = text.split("\n", 1)[0]!.trim()
  return line.length > n ? `${line.slice(0, n - 1)}…` : line
}

const SpawnParams = Schema.Struct({
  task: Schema.String.annotate({ description: "The whole task, self-contained: the child sees only this, not your conversation. Say what to do, where, and what to report back." }),
  agent: Schema.optionalKey(Schema.String.annotate({ description: "general (default: your tools), explorer (read-only: reads, searches, read-only commands), or a custom agent listed by list_agents" })),
  workspace: Schema.optionalKey(Workspace),
  timeout_ms: Schema.optionalKey(PositiveInt.annotate({ description: "Stop the child after this long (default and maximum: the configured limit, 15 minutes)" }))
})

const spawn_agent = Tool.define<typeof SpawnParams.Type, Edges.Delegation>({
  name: "spawn_agent",
  kind: "think",
  mutating: false,
  description: [
    "Start a subagent (a child session) on a task and return its id at once; it works in parallel with you and with other children.",
    "Delegate independent pieces of work that would take many steps (searching a large codebase, investigating several modules, making a self-contained change); do small things yourself.",
    "The child sees only `task`, not this conversation, so make the task self-contained. It has its own tools and asks the user for permission like you do; an explorer only reads.",
    "Spawn several children in one response to run them in parallel, then call wait_agent to collect their answers. If you finish while children still run, their results are given to you before the turn ends."
  ].join(" "),
  parameters: SpawnParams,
  title: (args) => `Spawn ${args.agent ?? "general"} — ${short(args.task)}`,
  locations: () => [],
  execute: (args, ctx) =>
    withAgents((agents) =>
      agents.spawn({ task: args.task, agent: args.agent, workspace: args.workspace, timeoutMs: args.timeout_ms, toolCallId: ctx.toolCallId }), Reports.spawned)
})

const WaitParams = Schema.Struct({
  ids: Schema.optionalKey(Schema.Array(Schema.String).annotate({ description: "The children to wait for (default: every running child)" })),
  timeout_ms: Schema.optionalKey(PositiveInt.annotate({ description: "Return after this long even if some still run (their state says so)" })),
  offset: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)).annotate({ description: "Read a long answer from this character on (a truncated answer says where to go on)" }))
})

const wait_agent = Tool.define<typeof WaitParams.Type, Edges.Delegation>({
  name: "wait_agent",
  kind: "think",
  mutating: false,
  description: [
    "Wait for children started with spawn_agent and return each one's state (running, idle, failed, timed_out, cancelled, closed) and, for those that finished, their final answer or error.",
    "A failed or timed-out child is reported as such: do not treat it as done. A long answer is truncated; call again with `ids` and `offset` to read on."
  ].join(" "),
  parameters: WaitParams,
  title: (args) => (args.ids !== undefined && args.ids.length > 0 ? `Wait for ${args.ids.join(", ")}` : "Wait for subagents"),
  locations: () => [],
  execute: (args) => withAgents((agents) => Effect.map(agents.wait(args.ids, args.timeout_ms, args.offset), (children) => ({ children })), Reports.waited)
})

const SendParams = Schema.Struct({
  id: Schema.String.annotate({ description: "The child's id" }),
  message: Schema.String.annotate({ description: "Its next prompt (it remembers its earlier work)" })
})

const send_input = Tool.define<typeof SendParams.Type, Edges.Delegation>({
  name: "send_input",
  kind: "other",
  mutating: false,
  description: "Give an idle child (one whose last task ended) another prompt: a follow-up, a correction, more work. It starts at once and runs in parallel; collect it with wait_agent.",
  parameters: SendParams,
  title: (args) => `Message ${args.id} — ${short(args.message)}`,
  locations: () => [],
  execute: (args) => withAgents((agents) => agents.send(args.id, args.message), Reports.sent)
})

const CloseParams = Schema.Struct({ id: Schema.String.annotate({ description: "The child's id" }) })

const close_agent = Tool.define<typeof CloseParams.Type, Edges.Delegation>({
  name: "close_agent",
  kind: "other",
  mutating: false,
  description: "Close a child: stops it if it is still working (its work so far is kept in its log) and frees it. An isolated child's worktree is removed unless it holds changes. Children are closed anyway when your turn ends.",
  parameters: CloseParams,
  title: (args) => `Close ${args.id}`,
  locations: () => [],
  execute: (args) => withAgents((agents) => agents.close(args.id), Reports.closed)
})

const ListParams = Schema.Struct({})

const list_agents = Tool.define<typeof ListParams.Type, Edges.Delegation>({
  name: "list_agents",
  kind: "other",
  mutating: false,
  description: "List this turn's children with their states, and the agents you can start (built-in, the project's custom agents, external agents).",
  parameters: ListParams,
  title: () => "List subagents",
  locations: () => [],
  execute: () => withAgents((agents) => agents.list, Reports.listed)
})

const Step = Schema.Struct({
  id: Schema.String.annotate({ description: "A name for the step, unique in the workflow" }),
  task: Schema.String.annotate({ description: "The step's self-contained task; the answers of the steps it depends on are appended to it" }),
  agent: Schema.optionalKey(Schema.String),
  depends_on: Schema.optionalKey(Schema.Array(Schema.String).annotate({ description: "Steps that must succeed before this one starts" })),
  workspace: Schema.optionalKey(Workspace)
})

const WorkflowParams = Schema.Struct({
  steps: Schema.Array(Step).check(Schema.isMinLength(1)),
  max_concurrency: Schema.optionalKey(PositiveInt.annotate({ description: "Steps running at once (default: the running-children limit)" })),
  timeout_ms: Schema.optionalKey(PositiveInt.annotate({ description: "Stop the whole workflow after this long; steps still running count as timed out" }))
})

const run_workflow = Tool.define<typeof WorkflowParams.Type, Edges.Delegation>({
  name: "run_workflow",
  kind: "think",
  mutating: false,
  description: [
    "Run several subagent tasks as a dependency graph and wait for all of them: each step starts once the steps in its depends_on have succeeded, independent steps run in parallel, and a step whose dependency failed is skipped.",
    "Returns each step's outcome and answer, and overall `complete` (every step succeeded), `partial` or `failed` (none did)."
  ].join(" "),
  parameters: WorkflowParams,
  title: (args) => `Workflow ${args.steps.map((s) => s.id).join(", ")}`,
  locations: () => [],
  execute: (args, ctx) =>
    withAgents((agents) =>
      agents.workflow({
        steps: args.steps,
        maxConcurrency: args.max_concurrency,
        timeoutMs: args.timeout_ms,
        toolCallId: ctx.toolCallId
      }), Reports.workflow)
})

export const tools: ReadonlyArray<Tool.Tool<any, Edges.Delegation>> = [spawn_agent, wait_agent, send_input, close_agent, list_agents, run_workflow]
