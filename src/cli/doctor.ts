/**
 * `skein doctor`: what is configured and what is missing, without a network
 * call. Prints the home, the config file (and whether it parsed), the
 * environment variables Skein reads (keys as set or not set, never their
 * values), the providers, the models, the agents a session can delegate to (and
 * what is wrong with their definitions, as warnings), the skills, the slash
 * commands and the project instructions of a session started here (with their problems, as
 * warnings: a file that is a link out of its folder is one), and
 * what a prompt would be answered by. Exit code 0 when a prompt would reach a
 * model, 1 otherwise: a bad agent, skill or command file is skipped, not a
 * reason to fail.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Path from "effect/Path"
import { homedir } from "node:os"
import * as nodePath from "node:path"
import * as Definitions from "../agents/Definitions.ts"
import * as Commands from "../commands/Commands.ts"
import * as McpConfig from "../mcp/Config.ts"
import * as Project from "../mcp/Project.ts"
import * as McpSession from "../mcp/McpSession.ts"
import * as McpRecord from "../mcp/Record.ts"
import * as Errors from "../providers/Errors.ts"
import * as Prompt from "../providers/Prompt.ts"
import type { ModelInfo } from "../providers/Models.ts"
import * as Registry from "../providers/Registry.ts"
import * as Guarantees from "../sandbox/Guarantees.ts"
import * as Sandbox from "../sandbox/Sandbox.ts"
import * as Skills from "../skills/Skills.ts"
import * as HookSettings from "../hooks/Settings.ts"
import * as Trust from "../trust/Trust.ts"
import * as McpReport from "./McpReport.ts"
import * as TrustReport from "./TrustReport.ts"
import * as Checks from "./Checks.ts"
import * as CodeCache from "./CodeCache.ts"
import { loadScriptFile, sandboxSettings, scripted as isScripted } from "./Config.ts"
import * as Options from "./Options.ts"
import * as Usage from "./Usage.ts"
import { DEFAULT_MAX_LIVE_SESSIONS, DEFAULT_MAX_TURN_REQUESTS, DEFAULT_PERMISSION_TIMEOUT_MS } from "../runtime/Config.ts"

export const signalExitCode = 130

export const HELP = `skein doctor — show which providers and models are configured (no network)

Usage: skein doctor [--home DIR] [--provider NAME] [--model ID] [--script FILE] [--store URL] [--cluster URL] [--mcp SESSION_ID]
                    [--mode ID] [--max-turn-requests N] [--permission-timeout-ms N] [--max-live-sessions N]

Checks the home and the options as skein run and skein acp do before they start (the same
checks, with the same messages and exit code 2; nothing is created), then reports.

Reads $SKEIN_HOME/config.json and the environment (OPENAI_API_KEY, OPENAI_BASE_URL,
ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, SKEIN_PROVIDER, SKEIN_MODEL, …). Keys are shown
as set or not set, never their values. Lists the agents a session started in the current
directory can delegate to (.skein/agents, .claude/agents, $SKEIN_HOME/agents, config.json),
with a warning for each definition that is skipped, the skills (.agents/skills and
.claude/skills from the current directory up to the repository root, ~/.agents/skills,
~/.claude/skills, $SKEIN_HOME/skills) and the slash commands (built-ins, .skein/commands,
.claude/commands, $SKEIN_HOME/commands, user-invocable skills) and the project instructions
(AGENTS.md, CLAUDE.md from the repository root down), with their problems as warnings: a file
that is a link out of its folder (or the repository) is skipped, and said so. Then the sandbox:
its setting (--sandbox, SKEIN_SANDBOX, config.json "sandbox"), and whether it works here (it runs
a sandboxed \`true\` to find out) and what it enforces. Exits 0 when a prompt would reach a model.

--store URL (or SKEIN_STORE) also connects to that PostgreSQL session store and reports
whether it answers, its schema version, its sessions and how many a Skein holds now; an
unreachable store makes it exit 1.

--cluster URL (or SKEIN_CLUSTER) reports the same of a cluster's database (skein serve
--cluster), then its runners (healthy or not, their last heartbeat) and how many of the
shards each holds; an unreachable database makes it exit 1.

--mcp SESSION_ID starts the MCP servers that session used (as recorded beside its log),
waits until each is ready or failed, prints their status and stops them. This runs the
servers' commands, and reaches the network for HTTP servers.
`

const VALUE_SHOWN = new Set(["OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "SKEIN_PROVIDER", "SKEIN_MODEL", "SKEIN_IDLE_TIMEOUT_MS"])

const pad = (s: string, n: number) => (s.length >= n ? `${s} ` : s + " ".repeat(n - s.length))

export const describeModel = (info: ModelInfo): string =>
  [
    `context ${info.contextWindow ?? "unknown"}`,
    `max output ${info.maxOutput ?? "default"}`,
    `reasoning ${info.efforts.length > 0 ? `${info.efforts.join("/")} (default ${info.defaultEffort ?? "provider's"})` : info.reasoning ? "yes" : "no"}`,
    `images ${info.images ? "yes" : "no"}`,
    `price ${info.price !== undefined ? `$${info.price.input}/$${info.price.output} per Mtok in/out` : "not set"}`
  ].join(", ")

const minutes = (ms: number) => (ms % 60_000 === 0 ? `${ms / 60_000} min` : `${ms / 1000} s`)

/** The agents section: each agent and where it comes from, the limits, each problem as a warning. */
export const agentsReport = (loaded: Definitions.Loaded): ReadonlyArray<string> => {
  const l = loaded.limits
  const out = [`Agents (limits: ${l.maxRunning} running, depth ${l.maxDepth}, ${l.maxPerSession} per session, ${minutes(l.timeoutMs)} per task)`]
  for (const agent of loaded.agents) {
    const traits = [
      ...(agent.readOnly ? ["read-only"] : []),
      ...(agent.acp !== undefined ? [`external ACP agent: ${agent.acp.command}`] : []),
      ...(agent.model !== undefined ? [`model ${agent.model}`] : [])
    ]
    out.push(`  ${pad(agent.name, 20)}${agent.source}${traits.length > 0 ? ` (${traits.join("; ")})` : ""}`)
  }
  for (const problem of loaded.problems) out.push(`  warning: ${problem.file}: ${problem.message}`)
  if (loaded.problems.length > 0) out.push("  (a file or entry with a warning is skipped; a limit with one keeps its default)")
  return out
}

/** The skills section: each skill, its scope and file, each problem as a warning. */
export const skillsReport = (found: Skills.Discovered): ReadonlyArray<string> => {
  const out = ["Skills"]
  if (found.skills.length === 0) out.push("  (none)")
  for (const skill of found.skills) {
    const traits = [...(skill.modelInvocable ? [] : ["not offered to the model"]), ...(skill.userInvocable ? [] : ["not a command"])]
    out.push(`  ${pad(skill.name, 20)}${pad(skill.scope, 9)}${skill.path}${traits.length > 0 ? ` (${traits.join("; ")})` : ""}`)
  }
  for (const problem of found.problems) out.push(`  warning: ${problem.file}: ${problem.message}`)
  return out
}

/** The commands section: each slash command, its kind and source, each problem as a warning. */
export const commandsReport = (found: Commands.Discovered): ReadonlyArray<string> => {
  const out = ["Commands"]
  for (const command of found.commands) out.push(`  ${pad(`/${command.name}`, 20)}${pad(command.kind, 9)}${command.source}`)
  for (const problem of found.problems) out.push(`  warning: ${problem.file}: ${problem.message}`)
  return out
}

/** The project instructions section: each file the system prompt takes, each one not read as a warning. */
export const instructionsReport = (found: { readonly instructions: ReadonlyArray<Prompt.Instructions>; readonly problems: ReadonlyArray<Prompt.Problem> }): ReadonlyArray<string> => {
  const out = ["Project instructions"]
  if (found.instructions.length === 0 && found.problems.length === 0) out.push("  (none)")
  for (const file of found.instructions) out.push(`  ${file.path}`)
  for (const problem of found.problems) out.push(`  warning: ${problem.file}: ${problem.message}`)
  return out
}

/** The sessions' settings a session started with these options gets (`--mode`, the limits, `--store`). */
export const sessionsLine = (common: Options.Common): string =>
  [
    `mode ${common.mode ?? "default"}`,
    `${common.maxTurnRequests ?? DEFAULT_MAX_TURN_REQUESTS} model calls a turn`,
    `unanswered questions denied after ${minutes(common.permissionTimeoutMs ?? DEFAULT_PERMISSION_TIMEOUT_MS)}`,
    `${common.maxLiveSessions ?? DEFAULT_MAX_LIVE_SESSIONS} live at most`,
    common.store === undefined ? `kept in ${common.home}/sessions` : "kept in PostgreSQL (--store)"
  ].join("; ")

/** The report, as text. `env` is only read for which variables are set. */
export const report = (
  s: Registry.Setup,
  env: Registry.Env,
  options: {
    readonly home: string
    readonly script?: string | undefined
    readonly codeCache?: string | undefined
    readonly sessions?: string | undefined
    readonly agents?: Definitions.Loaded | undefined
    readonly skills?: Skills.Discovered | undefined
    readonly commands?: Commands.Discovered | undefined
    readonly instructions?: Parameters<typeof instructionsReport>[0] | undefined
  }
): string => {
  const out: Array<string> = []
  const line = (text = "") => out.push(text)
  line("Skein doctor: what is configured (no network calls made)")
  line()
  line(`${pad("Home", 13)}${options.home}`)
  const status = s.config.status
  line(`${pad("Config file", 13)}${s.config.path}: ${status._tag === "missing" ? "not found (optional)" : status._tag === "ok" ? "parsed" : `INVALID: ${status.message}`}`)
  if (options.codeCache !== undefined) line(`${pad("Code cache", 13)}${options.codeCache}`)
  if (options.sessions !== undefined) line(`${pad("Sessions", 13)}${options.sessions}`)
  line()

  line("Environment")
  const names = new Set<string>(Registry.ENV_VARS)
  for (const p of s.providers) if (p.target.keySource !== undefined && /^[A-Z0-9_]+$/.test(p.target.keySource)) names.add(p.target.keySource)
  for (const name of names) {
    const value = env[name]
    const set = value !== undefined && value.trim() !== ""
    const shown = !set ? "not set" : VALUE_SHOWN.has(name) ? (name.endsWith("_URL") ? Errors.safeUrl(value) : value) : "set"
    line(`  ${pad(name, 24)}${shown}`)
  }
  line()

  line("Providers")
  for (const p of s.providers) {
    const t = p.target
    const hasKey = t.apiKey !== undefined || t.headers.authorization !== undefined || t.headers["x-api-key"] !== undefined
    const key = t.keySource === undefined && !hasKey
      ? "no key"
      : `key from ${t.keySource ?? "headers"} (${hasKey ? "set" : p.keyRequired ? "NOT SET, required" : "not set, optional here"})`
    const origin = p.declared ? (p.builtin ? "built in, configured in config.json" : "config.json") : "built in"
    line(`  ${pad(t.name, 20)}${pad(t.dialect, 20)}${Errors.safeUrl(t.baseUrl)}`)
    line(`  ${pad("", 20)}${origin}; ${key}; idle timeout ${t.idleTimeoutMs} ms${t.defaultModel !== undefined ? `; default model ${t.defaultModel}` : ""}`)
    const headerNames = Object.keys(t.headers).filter((h) => h !== "authorization")
    if (headerNames.length > 0) line(`  ${pad("", 20)}extra headers: ${headerNames.join(", ")}`)
  }
  line()

  line("Models")
  if (s.catalog.length === 0) line("  (none yet: pass --model, or list models under a provider in config.json)")
  for (const entry of s.catalog) line(`  ${entry.key}\n      ${describeModel(entry.info)}`)
  line()

  if (options.agents !== undefined) {
    for (const l of agentsReport(options.agents)) line(l)
    line()
  }
  if (options.skills !== undefined) {
    for (const l of skillsReport(options.skills)) line(l)
    line()
  }
  if (options.commands !== undefined) {
    for (const l of commandsReport(options.commands)) line(l)
    line()
  }
  if (options.instructions !== undefined) {
    for (const l of instructionsReport(options.instructions)) line(l)
    line()
  }

  if (s.errors.length > 0) {
    line("Problems")
    for (const e of s.errors) line(`  - ${e}`)
    line()
  }

  if (options.script !== undefined) {
    line(`Scripted: prompts are answered by the scripted provider from ${options.script}.`)
  } else if (s.errors.length === 0 && s.unconfigured === undefined && s.choice !== undefined) {
    line(`Ready: prompts go to ${s.choice.model ?? s.choice.provider.target.name} (provider chosen because: ${s.choice.why}).`)
  } else {
    line("Not ready:")
    for (const l of (s.errors.length > 0 ? s.errors.join("\n") : s.unconfigured ?? "").split("\n")) line(`  ${l}`)
  }
  return `${out.join("\n")}\n`
}

export const run = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const parsed = yield* Effect.try({ try: () => Options.parse(args, Usage.OPTIONS), catch: (e) => e })
    if (parsed.values.help === true) {
      process.stdout.write(HELP)
      return 0
    }
    if (parsed.positionals.length > 0) return yield* Effect.fail(new Options.UsageError("skein doctor takes no arguments"))
    Usage.refuse("doctor", parsed, Options.env)
    const common = Options.common(parsed.values)
    // The checks skein run and skein acp make before they start, with the same code and the
    // same words, so doctor never calls ready what they refuse; nothing is created here.
    Checks.home(common.home, { write: true, create: false })
    const scripted = yield* isScripted(common)
    // What was named on the command line must exist: a script that reads, a provider that is known.
    if (scripted) yield* loadScriptFile(common.script!)
    const setup = yield* Registry.setup({
      home: common.home,
      env: process.env,
      provider: scripted ? undefined : common.provider,
      model: common.model
    }).pipe(Effect.provide(Layer.mergeAll(NodeFileSystem.layer, NodePath.layer)))
    const unknown = scripted || common.provider === undefined
      ? undefined
      : setup.errors.find((e) => e.startsWith(`Unknown provider ${JSON.stringify(common.provider)}`))
    if (unknown !== undefined) return yield* Effect.fail(new Options.UsageError(unknown))
    const script = scripted ? common.script : undefined
    const mcp = typeof parsed.values.mcp === "string" ? yield* mcpSession(common.home, parsed.values.mcp) : undefined
    const { agents, skills, commands, instructions, trust, hooks } = yield* project({
      cwd: process.cwd(),
      home: common.home,
      userHome: homedir(),
      trust: common.trust ? "all" : "ask"
    }).pipe(
      Effect.provide(Layer.mergeAll(NodeFileSystem.layer, NodePath.layer))
    )
    process.stdout.write(report(setup, process.env, {
      home: common.home,
      script,
      codeCache: CodeCache.describe(CodeCache.status()),
      sessions: sessionsLine(common),
      agents,
      skills,
      commands,
      instructions
    }))
    process.stdout.write(`\n${[...TrustReport.trustReport(trust), "", ...TrustReport.hooksReport(hooks)].join("\n")}\n`)
    process.stdout.write(yield* sandboxReport(common))
    process.stdout.write(McpReport.mcpReport({
      file: nodePath.join(common.home, "config.json"),
      user: McpConfig.load(common.home),
      project: yield* Project.read(process.cwd(), { userHome: homedir() }),
      trust
    }))
    if (mcp !== undefined) process.stdout.write(yield* mcpReport(mcp, { home: common.home, policy: common.trust ? "all" : "ask" }))
    const store = common.store === undefined
      ? undefined
      : yield* Effect.flatMap(Effect.promise(() => import("../log/PgStore.ts")), (PgStore) => PgStore.status(common.store!))
    if (store !== undefined) process.stdout.write(`\nSession store (PostgreSQL)\n${store.lines.map((l) => `  ${l}\n`).join("")}`)
    const clusterUrl = typeof parsed.values.cluster === "string" ? parsed.values.cluster : Options.env("SKEIN_CLUSTER")
    if (clusterUrl !== undefined && !Options.isPostgresUrl(clusterUrl)) {
      return yield* Effect.fail(new Options.UsageError("--cluster takes a PostgreSQL URL (postgres://user@host:port/database)"))
    }
    const cluster = clusterUrl === undefined
      ? undefined
      : yield* Effect.flatMap(Effect.promise(() => import("../log/PgStore.ts")), (PgStore) => PgStore.clusterStatus(clusterUrl))
    if (cluster !== undefined) process.stdout.write(`\nCluster (PostgreSQL)\n${cluster.lines.map((l) => `  ${l}\n`).join("")}`)
    const ready = scripted || (setup.errors.length === 0 && setup.unconfigured === undefined)
    return ready && store?.ok !== false && cluster?.ok !== false ? 0 : 1
  })

/** The sandbox section: the setting, and what a probe (a sandboxed `true`, run now) finds. */
const sandboxReport = (common: Options.Common) =>
  Effect.gen(function*() {
    const settings = yield* Effect.result(sandboxSettings(common))
    if (settings._tag === "Failure") return `\nSandbox\n  INVALID setting: ${settings.failure.message}\n`
    const availability = yield* Effect.scoped(Effect.flatMap(Sandbox.make(settings.success, { skeinHome: common.home }), (manager) => manager.availability))
    const probe = availability._tag === "available"
      ? { available: true as const, seccomp: availability.seccomp }
      : { available: false as const, reason: availability.reason }
    return `\n${Guarantees.report(settings.success, probe).join("\n")}\n`
  })

/**
 * What a session started in `cwd` would find: where the folder stands for workspace trust, and
 * the agents, skills, commands, hooks and project instructions that load (a folder's own only
 * once trusted). `userHome` is the OS user's home.
 */
export const project = (options: { readonly cwd: string; readonly home: string; readonly userHome: string; readonly trust?: Trust.Policy | undefined }) =>
  Effect.gen(function*() {
    const trust = yield* Trust.status({ cwd: options.cwd, home: options.home, userHome: options.userHome, policy: options.trust ?? "ask" })
    const loads = { cwd: options.cwd, home: options.home, project: trust.loads }
    const agents = yield* Definitions.load(loads)
    const skills = yield* Skills.discover({ ...loads, userHome: options.userHome })
    const commands = yield* Commands.discover({ ...loads, skills: skills.skills })
    const hooks = yield* HookSettings.read({ ...loads, root: trust.project })
    const instructions = yield* Prompt.instructions(options.cwd)
    return { agents, skills, commands, instructions, trust, hooks }
  })

/** A saved session's log and working directory, for `--mcp`; an unknown id is a usage error. */
const mcpSession = (home: string, sessionId: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const log = path.join(home, "sessions", `${sessionId}.ndjson`)
    const header = yield* fs.readFileString(log).pipe(
      Effect.map((text) => JSON.parse(text.slice(0, text.indexOf("\n"))) as { readonly cwd?: string }),
      Effect.orElseSucceed(() => undefined)
    )
    if (header === undefined) return yield* Effect.fail(new Options.UsageError(`No session ${sessionId} in ${path.join(home, "sessions")}`))
    return { sessionId, log, cwd: header.cwd ?? process.cwd() }
  }).pipe(Effect.provide(Layer.mergeAll(NodeFileSystem.layer, NodePath.layer)))

/** The status of the MCP servers a session used, started and stopped for the report. */
const mcpReport = (session: { readonly sessionId: string; readonly log: string; readonly cwd: string }, trust: { readonly home: string; readonly policy: Trust.Policy }) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const recorded = yield* McpRecord.loadFile(fs, McpRecord.settingsPath(session.log))
    // The project's own servers are its code: started again only while its folder is trusted.
    const status = yield* Trust.status({ cwd: session.cwd, home: trust.home, userHome: homedir(), policy: trust.policy })
    const { servers, left } = McpRecord.startable(recorded, status.loads)
    const statuses = yield* McpSession.probe({ servers, cwd: session.cwd })
    const notStarted = left.length === 0 ? [] : [`not started: ${left.join(", ")} (the project's own): ${status.why}`]
    return `\nMCP servers of ${session.sessionId}\n${[McpSession.statusText(statuses), ...notStarted].join("\n").split("\n").map((l) => `  ${l}`).join("\n")}\n`
  }).pipe(Effect.provide(Layer.mergeAll(NodeFileSystem.layer, NodePath.layer)))
