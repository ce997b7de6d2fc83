/**
 * `bash_output {id, filter?}` and `kill_shell {id}`: reading and stopping the session's
 * background commands (`bash {command, run_in_background: true}`, see `process/Background.ts`).
 *
 * Neither changes the workspace: both only touch what the session itself started, so neither
 * asks. A filter is the model's regular expression: it runs in the tool worker under its time
 * limit (as `grep`'s does), and when it cannot finish the output is kept for the next read.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Background from "./process/Background.ts"
import * as OutputBuffer from "./process/OutputBuffer.ts"
import * as Terminals from "./Terminals.ts"
import * as Tool from "./Tool.ts"
import { MAX_LINE_CHARS } from "./worker/match.ts"
import * as ToolWorker from "./worker/ToolWorker.ts"

/** Lines a filtered read keeps (before the bound on bytes). */
const MAX_FILTERED_LINES = 2_000

const Id = Schema.String.annotate({ description: "The id bash returned when it started the command, e.g. bg1" })

const OutputParams = Schema.Struct({
  id: Id,
  filter: Schema.optionalKey(Schema.String.annotate({
    description: "JavaScript regular expression: only the new lines that match it are returned (the others are dropped); start with (?i) to ignore case"
  }))
})
type OutputParams = typeof OutputParams.Type

const KillParams = Schema.Struct({ id: Id })
type KillParams = typeof KillParams.Type

const notAvailable = "Background commands are not available here (there is no session that owns them)."

/** The pattern as `grep` reads it (a leading `(?i)` ignores case). Parsing only: matching runs in the worker. */
const compile = (pattern: string): Effect.Effect<RegExp, string> => {
  const insensitive = pattern.startsWith("(?i)")
  return Effect.try({
    try: () => new RegExp(insensitive ? pattern.slice(4) : pattern, insensitive ? "i" : ""),
    catch: (error) => `Invalid regular expression for filter: ${error instanceof Error ? error.message : String(error)}`
  })
}

/** The lines of `text` that `regex` matches, in the worker; fails (the text is then kept) when it cannot finish. */
const filtered = (text: string, regex: RegExp, pattern: string): Effect.Effect<string, string> =>
  Effect.gen(function*() {
    const limit = yield* ToolWorker.TimeLimit
    const found = yield* ToolWorker.use((worker) => ToolWorker.grep(worker, regex, new TextEncoder().encode(text), MAX_FILTERED_LINES))
    if (Option.isNone(found)) {
      return yield* Effect.fail(
        `The filter /${pattern}/ did not finish within its time limit of ${ToolWorker.formatLimit(limit)}; the output was kept for the next read. ` +
          "A pattern with nested repetition such as (a+)+ can take exponential time: rewrite it, or read without a filter."
      )
    }
    const result = found.value
    if (result.binary) return "(the new output looks binary: read it without a filter)"
    const lines = result.matches.map((match) => match.text).join("\n")
    const more = result.count - result.matches.length
    return `${lines}${more > 0 ? `\n[${more} more matching lines not shown]` : ""}\n[${result.count} matching line${result.count === 1 ? "" : "s"} of the new output]`
  })

/** Whether a status reads as a failure (as `bash` reports a non-zero exit). */
const failed = (status: Background.Status): boolean =>
  (status._tag === "exited" && status.code !== 0) || (status._tag === "stopped" && status.by === "timeout")

const exitCodeOf = (status: Background.Status): number | null | undefined =>
  status._tag === "exited" ? status.code : status._tag === "stopped" ? null : undefined

export const bash_output = Tool.define<OutputParams, Terminals.Terminals>({
  name: "bash_output",
  kind: "read",
  mutating: false,
  description: [
    "Read what a background command (started with bash and run_in_background: true) printed since you last read it, and whether it still runs or how it ended.",
    `Output is bounded as bash's is (the first and last ${OutputBuffer.DEFAULT_HEAD_BYTES / 1024} KB of what arrived since the last read; the middle is dropped and counted).`,
    `filter keeps only the new lines matching a regular expression (at most ${MAX_FILTERED_LINES}, each cut to ${MAX_LINE_CHARS} characters); the other lines are dropped. A filter still running after ${ToolWorker.formatLimit(ToolWorker.TimeLimit.defaultValue())} is stopped and the output kept.`
  ].join(" "),
  parameters: OutputParams,
  title: (args) => `Output of ${args.id}${args.filter !== undefined ? ` matching /${args.filter}/` : ""}`,
  locations: () => [],
  execute: (args) =>
    Effect.gen(function*() {
      const shells = yield* Background.Current
      if (shells === undefined) return Tool.error(notAvailable)
      const terminals = yield* Terminals.Terminals
      const regex = args.filter === undefined ? undefined : yield* compile(args.filter)
      return yield* shells.read(args.id, (taken) =>
        Effect.gen(function*() {
          const shown = regex === undefined || taken.text === "" ? taken.text : yield* filtered(taken.text, regex, args.filter!)
          const blocked = taken.sandboxed ? terminals.explain(taken.text) : undefined
          const status = Background.statusLine(taken.status)
          const body = shown === "" ? "(no new output)" : shown.endsWith("\n") ? shown.slice(0, -1) : shown
          const content = `${body}\n${status}${blocked === undefined ? "" : `\n${blocked}`}`
          const exitCode = exitCodeOf(taken.status)
          const details = { output: shown, truncated: taken.omitted > 0, ...(exitCode !== undefined ? { exitCode } : {}) }
          return failed(taken.status) ? Tool.error(content, details) : Tool.ok(content, details)
        }))
    }).pipe(Effect.catch((message: string) => Effect.succeed(Tool.error(message))))
})

export const kill_shell = Tool.define<KillParams>({
  name: "kill_shell",
  kind: "execute",
  mutating: false,
  description:
    "Stop a background command (started with bash and run_in_background: true) and every process it started (SIGTERM, then SIGKILL). What it printed and was not read yet stays readable with bash_output.",
  parameters: KillParams,
  title: (args) => `Stop ${args.id}`,
  locations: () => [],
  execute: (args) =>
    Effect.gen(function*() {
      const shells = yield* Background.Current
      if (shells === undefined) return Tool.error(notAvailable)
      const killed = yield* shells.kill(args.id)
      const status = Background.statusLine(killed.status)
      return Tool.ok(killed.wasRunning ? `Stopped ${killed.id}.\n${status}` : `${killed.id} had already ended.\n${status}`)
    }).pipe(Effect.catch((message: string) => Effect.succeed(Tool.error(message))))
})

export const tools: ReadonlyArray<Tool.Tool<any, Terminals.Terminals>> = [bash_output, kill_shell]

const names: ReadonlySet<string> = new Set(tools.map((tool) => tool.name))

/**
 * Whether an agent's tool list admits `name`: a list that names `bash` admits these two as
 * well (a command started in the background is of no use without them).
 */
export const listed = (list: ReadonlyArray<string>, name: string): boolean =>
  list.includes(name) || (names.has(name) && list.includes("bash"))
