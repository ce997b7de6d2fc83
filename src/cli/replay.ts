/**
 * `skein replay ID|FILE [--acp | --rerun [--cwd DIR]]`: a saved session again.
 *
 * - no flag: the transcript, for people;
 * - `--acp`: the `session/update` notifications `session/load` sends, one
 *   JSON-RPC line each, its usage updates with the models' windows and prices
 *   as the home's configuration and the environment give them (as `skein acp`
 *   with that home would load it);
 * - `--rerun`: every turn again with model calls answered from the log and the
 *   tools run for real (in `--cwd DIR`, default the logged cwd), then a report
 *   per turn of where tool results differ. Exit 0: all the same; 1: they
 *   differ (or the re-run failed). `--json` prints the report as JSON;
 *   `--rerun-home DIR` keeps the re-run's own log there (default: a temporary
 *   folder, removed afterwards).
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import { homedir } from "node:os"
import * as nodePath from "node:path"
import * as Replay from "../log/Replay.ts"
import * as AcpReplay from "../translate/Replay.ts"
import * as McpRecord from "../mcp/Record.ts"
import { SessionLog } from "../log/SessionLog.ts"
import * as Registry from "../providers/Registry.ts"
import * as Rerun from "../runtime/Rerun.ts"
import * as UsageShown from "../runtime/Usage.ts"
import * as Trust from "../trust/Trust.ts"
import type * as RerunCompare from "../runtime/RerunCompare.ts"
import * as Config from "./Config.ts"
import { sandboxSettings } from "./Config.ts"
import * as Checks from "./Checks.ts"
import * as Options from "./Options.ts"
import * as Usage from "./Usage.ts"
import { asLoaded, logLayer, readRef, reportErrors, writeOut } from "./sessions.ts"

export const signalExitCode = 130

const HELP = `Usage:
  skein replay ID|FILE                  Print the session's transcript
  skein replay ID|FILE --acp [--script FILE | --provider NAME] [--model ID]
                                        Print the session/update stream session/load sends
                                        (usage with the windows and prices these give)
  skein replay ID|FILE --rerun [--cwd DIR] [--json] [--rerun-home DIR]
                                        Re-run every turn (model answers from the log, tools for
                                        real, in DIR or the logged cwd) and report per turn where
                                        tool results differ. Exit 0: same; 1: different.
`

const describe = (d: RerunCompare.Difference): Array<string> => {
  const what = d.tool !== undefined ? `${d.tool} (${d.toolCallId})` : d.toolCallId ?? ""
  switch (d.kind) {
    case "missing":
      return [`${what}: has a result in the log, none in the re-run`]
    case "extra":
      return [`${what}: ran in the re-run only`]
    case "outcome":
      return [`the turn ended differently (${d.field}): logged ${d.recorded}, now ${d.rerun}`]
    case "changed":
      return [`${what}: ${d.field} differs`, `  logged  ${d.recorded}`, `  now     ${d.rerun}`]
  }
}

/** The report as people read it. */
export const formatReport = (report: RerunCompare.Report, cwd: string): string => {
  const out = [`Re-ran session ${report.sessionId} in ${cwd}`]
  for (const turn of report.turns) {
    const head = `turn ${turn.turn}  "${turn.prompt}"`
    if (turn.differences.length === 0) {
      out.push(`${head}  ✓ same (${turn.compared} tool result${turn.compared === 1 ? "" : "s"})`)
    } else {
      out.push(`${head}  ✗ differs`)
      for (const d of turn.differences) for (const line of describe(d)) out.push(`    ${line}`)
    }
  }
  for (const child of report.children ?? []) {
    const differs = child.turns.filter((t) => t.differences.length > 0)
    const head = `  turn ${child.parentTurn} › subagent ${child.sessionId} (${child.agent})`
    if (child.rerunSessionId === undefined) out.push(`${head}  ✗ was not started again`)
    else if (differs.length === 0) out.push(`${head}  ✓ same`)
    else {
      out.push(`${head}  ✗ differs`)
      for (const turn of differs) for (const d of turn.differences) for (const line of describe(d)) out.push(`      ${line}`)
    }
  }
  const differing = report.turns.filter((t) => t.differences.length > 0).length
  const children = (report.children ?? []).filter((c) => c.diverged).length
  out.push(
    differing === 0 && children === 0
      ? `All ${report.turns.length} turns behave as logged${report.children !== undefined ? `, and so do their ${report.children.length} subagents` : ""}.`
      : `${differing} of ${report.turns.length} turns differ from the log${children > 0 ? `; ${children} subagent${children === 1 ? "" : "s"} differ` : ""}.`
  )
  return out.join("\n") + "\n"
}

/** The logs of a session's children and of theirs (a log that is gone is left out: the report says so). */
const childLogs = (events: Rerun.Options["events"]) =>
  Effect.gen(function*() {
    const log = yield* SessionLog
    const out = new Map<string, { header: Rerun.Options["header"]; events: Rerun.Options["events"] }>()
    const visit = (list: Rerun.Options["events"]): Effect.Effect<void> =>
      Effect.forEach(list, (event) => {
        if (event.type !== "subagent" || event.data.event !== "spawned" || out.has(event.data.id)) return Effect.void
        return log.read(event.data.id).pipe(
          Effect.flatMap((contents) => {
            out.set(event.data.id, { header: contents.header, events: contents.events })
            return visit(contents.events)
          }),
          Effect.ignore
        )
      }, { discard: true })
    yield* visit(events)
    return out
  })

const rerun = (contents: { readonly header: Rerun.Options["header"]; readonly events: Rerun.Options["events"]; readonly file: string }, options: {
  readonly cwd: string | undefined
  readonly home: string | undefined
  /** Skein's own home (its `trust.json`) and whether every folder is trusted (`--trust`). */
  readonly skeinHome: string
  readonly trust: Trust.Policy
  readonly json: boolean
  /** Its commands run in the sandbox as a session's would (--sandbox, SKEIN_SANDBOX, config.json). */
  readonly sandbox: Rerun.Options["sandbox"]
}) =>
  Effect.scoped(Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const home = options.home ?? (yield* fs.makeTempDirectoryScoped({ prefix: "skein-rerun-" }))
    const cwd = options.cwd ?? contents.header.cwd
    const isDirectory = yield* fs.stat(cwd).pipe(Effect.map((info) => info.type === "Directory"), Effect.orElseSucceed(() => false))
    if (!isDirectory) {
      return yield* Effect.fail(
        new Options.UsageError(
          options.cwd === undefined
            ? `The session's cwd ${cwd} does not exist here; pass --cwd DIR to re-run it elsewhere`
            : `--cwd ${cwd} is not a directory`
        )
      )
    }
    // The MCP servers the session used, as recorded beside its log (none for a log elsewhere without
    // them); the project's own only while its folder is trusted (they are its code).
    const recorded = yield* McpRecord.loadFile(fs, McpRecord.settingsPath(contents.file))
    const trust = yield* Trust.status({ cwd, home: options.skeinHome, userHome: homedir(), policy: options.trust })
    const { servers: mcpServers, left } = McpRecord.startable(recorded, trust.loads)
    if (left.length > 0) yield* Effect.sync(() => process.stderr.write(`MCP servers not started: ${left.join(", ")} (the project's own): ${trust.why}\n`))
    const children = yield* childLogs(contents.events)
    const report = yield* Rerun.run({ header: contents.header, events: contents.events, cwd, home, mcpServers, children, sandbox: options.sandbox })
    yield* writeOut(options.json ? JSON.stringify(report, null, 2) + "\n" : formatReport(report, cwd))
    return report.diverged ? 1 : 0
  }))

/**
 * The models' windows and prices a `skein acp` with these options would load the session with:
 * the scripted provider's window (`--script`), or the home's `config.json` and the environment
 * (no network). A configuration that cannot be read leaves the usage updates out, and says so.
 */
const pricingOf = (common: Options.Common) =>
  Effect.gen(function*() {
    if (yield* Config.scripted(common)) {
      const script = yield* Config.loadScriptFile(common.script!)
      return UsageShown.pricing({ models: undefined, contextWindow: script.contextWindow })
    }
    return yield* Registry.resolve({ home: common.home, env: process.env, provider: common.provider, model: common.model }).pipe(
      Effect.map((resolved) => UsageShown.pricing({ models: resolved.models, contextWindow: resolved.provider.contextWindow })),
      Effect.catch((error) =>
        Effect.as(Effect.sync(() => process.stderr.write(`Usage updates left out: ${error.message}\n`)), undefined)
      )
    )
  })

export const run = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const parsed = yield* Effect.try({
      try: () =>
        Options.parse(args, Usage.OPTIONS),
      catch: (e) => e
    })
    if (parsed.values.help === true) {
      process.stdout.write(HELP)
      return 0
    }
    const [ref, ...extra] = parsed.positionals
    if (ref === undefined || extra.length > 0) return yield* Effect.fail(new Options.UsageError("skein replay takes one session ID or log FILE"))
    Usage.refuse("replay", parsed, Options.env)
    const common = Options.common(parsed.values)
    Checks.home(common.home, { write: false })
    if (parsed.values["rerun-home"] !== undefined) Checks.home(nodePath.resolve(parsed.values["rerun-home"]), { write: true, what: "the re-run's home (--rerun-home)" })
    const program = Effect.gen(function*() {
      const contents = yield* readRef(ref)
      if (parsed.values.rerun === true) {
        const cwd = parsed.values.cwd !== undefined ? nodePath.resolve(parsed.values.cwd) : undefined
        const home = parsed.values["rerun-home"] !== undefined ? nodePath.resolve(parsed.values["rerun-home"]) : undefined
        return yield* rerun(contents, {
          cwd,
          home,
          skeinHome: common.home,
          trust: common.trust ? "all" : "ask",
          json: parsed.values.json === true,
          sandbox: yield* sandboxSettings(common)
        })
      }
      const events = yield* asLoaded(contents)
      if (parsed.values.acp === true) {
        // Its children as a load shows them (the fallback form: a card each), from their logs.
        const children = yield* childLogs(events)
        const childLog = (id: string) => {
          const child = children.get(id)
          return child === undefined ? undefined : Replay.withRecovery(child.events)
        }
        const pricing = yield* pricingOf(common)
        const meter = pricing === undefined ? undefined : () => UsageShown.meter(pricing)
        yield* writeOut(AcpReplay.notificationLines(contents.header.id, events, { childLog, meter }).join(""))
      } else {
        yield* writeOut(Replay.transcript(contents.header, events))
      }
      return 0
    })
    return yield* reportErrors(program).pipe(
      Effect.provide(logLayer(common.home, common.store)),
      Effect.provide(Layer.mergeAll(NodeFileSystem.layer, NodePath.layer))
    )
  })
