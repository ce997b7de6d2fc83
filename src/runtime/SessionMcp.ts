/**
 * Which MCP servers a top-level session starts, and when: the user's (`$SKEIN_HOME/config.json`),
 * the project's own (`mcp/Project.ts`, only while the folder is trusted) and the client's, each
 * winning over the ones before it on a name (client > nearest project file > farther ones >
 * user; a loaded session's recorded servers are below the user's).
 *
 * A folder that is not trusted when the session starts has its servers *pending*: before each
 * turn (`late`) the session looks again, and once the folder is trusted (the trust question at
 * the first prompt answered "Trust this folder", or another session's answer) they start in
 * that session, as its hooks and commands load from that prompt on. They start once; a
 * changed `.mcp.json` counts from the next session.
 */
import * as Effect from "effect/Effect"
import type { CanonicalBody } from "../log/Event.ts"
import type { Writer } from "../log/Store.ts"
import * as McpConfig from "../mcp/Config.ts"
import type * as McpSession from "../mcp/McpSession.ts"
import * as Project from "../mcp/Project.ts"
import * as McpRecord from "../mcp/Record.ts"
import type { McpServer } from "../Vocabulary.ts"

export interface Plan {
  /** What the project's servers win over: the user's (and a loaded session's recorded ones, below them). */
  readonly below: ReadonlyArray<McpServer>
  /** The trusted project's servers (none while the folder is not trusted). */
  readonly project: ReadonlyArray<McpServer>
  /** The client's: they win over everything. */
  readonly above: ReadonlyArray<McpServer>
  /** The folder has servers of its own that wait for it to be trusted. */
  readonly pending: boolean
}

/** The servers a plan starts, each name once. */
export const servers = (plan: Plan): ReadonlyArray<McpServer> => McpConfig.mergeAll(plan.below, plan.project, plan.above)

/** The names of the project's servers that start (a client's of the same name wins). */
export const projectNames = (plan: Plan): ReadonlyArray<string> => {
  const client = new Set(plan.above.map((s) => s.name))
  return plan.project.map((s) => s.name).filter((name) => !client.has(name))
}

/** The plan of a session in `cwd`: the project's servers when `trusted`, pending otherwise. */
export const plan = (options: {
  readonly cwd: string
  readonly userHome: string
  readonly trusted: boolean
  readonly below: ReadonlyArray<McpServer>
  readonly above: ReadonlyArray<McpServer>
}): Effect.Effect<Plan> =>
  Effect.gen(function*() {
    const { servers: found, files } = yield* Project.read(options.cwd, { userHome: options.userHome })
    // A trusted folder's skipped entries are said where the session's warnings go (doctor lists them too).
    if (options.trusted) for (const file of files) for (const problem of file.problems) {
      yield* Effect.logWarning(`MCP settings ${problem.startsWith(file.file) ? problem : `${file.file}: ${problem}`} (skipped)`)
    }
    return { below: options.below, above: options.above, project: options.trusted ? found : [], pending: !options.trusted && found.length > 0 }
  })

/** What a session logs and records about its servers: the `mcp_servers` event, the settings beside the log. */
export const record = (writer: Writer, plan: Plan): Effect.Effect<ReadonlyArray<CanonicalBody>> => {
  const started = servers(plan)
  return Effect.as(McpRecord.save(writer, started, projectNames(plan)), [{ type: "mcp_servers", data: { servers: McpRecord.summary(started) } }])
}

/** What `late` did: the events to log, and an effect that completes when the new servers are ready or failed. */
export interface Started {
  readonly events: ReadonlyArray<CanonicalBody>
  readonly ready: Effect.Effect<void>
}

/**
 * Before each turn of a session whose project servers are pending: once `trusted` says the
 * folder loads, reads its servers and starts them in `mcp` (replacing the user's of their
 * names), records them, and is done for the session.
 */
export const late = (options: {
  readonly plan: Plan
  readonly cwd: string
  readonly userHome: string
  readonly trusted: Effect.Effect<boolean>
  readonly mcp: McpSession.McpSession
  readonly writer: Writer
}): Effect.Effect<Started | undefined> => {
  let pending = options.plan.pending
  return Effect.gen(function*() {
    if (!pending || !(yield* options.trusted)) return undefined
    pending = false
    const now = yield* plan({ cwd: options.cwd, userHome: options.userHome, trusted: true, below: options.plan.below, above: options.plan.above })
    const client = new Set(now.above.map((s) => s.name))
    const adding = now.project.filter((s) => !client.has(s.name))
    if (adding.length === 0) return undefined
    const ready = yield* options.mcp.add(adding)
    return { events: yield* record(options.writer, now), ready }
  })
}
