/**
 * Which options each `skein` command uses, so that one it would ignore is refused (exit 2, one
 * line) instead of being silently dropped: `skein replay ID --rerun --script s.json` answers
 * every model call from the log, and saying nothing would let the user believe the script ran.
 *
 * Every command parses the same table (`OPTIONS`: every option any command knows), then
 * `refuse` checks what was given against what that command, in that form, uses (`uses`). The
 * table is data and `uses` is pure: `test/cli/usage.test.ts` walks every command and form
 * against every option. Environment variables are not checked: they are set for every command
 * alike, and a command reads only those it uses.
 */
import { UsageError } from "./Options.ts"

/** Every option of every command, for `parseArgs`. */
export const OPTIONS = {
  // The runtime: where sessions live, the model, the sessions' settings.
  home: { type: "string" },
  provider: { type: "string" },
  model: { type: "string" },
  script: { type: "string" },
  mode: { type: "string" },
  "max-turn-requests": { type: "string" },
  "permission-timeout-ms": { type: "string" },
  "max-live-sessions": { type: "string" },
  store: { type: "string" },
  sandbox: { type: "string" },
  trust: { type: "boolean" },
  // acp
  "local-fs": { type: "boolean" },
  "local-terminal": { type: "boolean" },
  "max-line-bytes": { type: "string" },
  connect: { type: "string" },
  "token-file": { type: "string" },
  // run
  cwd: { type: "string" },
  json: { type: "boolean" },
  continue: { type: "boolean", short: "c" },
  resume: { type: "string", short: "r" },
  // sessions
  limit: { type: "string" },
  children: { type: "boolean" },
  turn: { type: "string" },
  yes: { type: "boolean", short: "y" },
  // replay
  acp: { type: "boolean" },
  rerun: { type: "boolean" },
  "rerun-home": { type: "string" },
  // doctor
  mcp: { type: "string" },
  // serve
  listen: { type: "string" },
  cluster: { type: "string" },
  runner: { type: "string" },
  "runner-listen": { type: "string" },
  "lock-expiry": { type: "string" },
  drain: { type: "string" },
  "max-connections": { type: "string" },
  // serve and monitor
  web: { type: "string" },
  "web-approve": { type: "boolean" },
  help: { type: "boolean", short: "h" }
} as const

export type Option = keyof typeof OPTIONS
export type Command = "acp" | "run" | "sessions" | "replay" | "doctor" | "serve" | "monitor"
export type Values = Readonly<Record<string, string | boolean | undefined>>

/** What a command, in the form it was given, uses; why it has no use for some of the others. */
interface Use {
  /** The command as people read it: `skein replay --rerun`. */
  readonly as: string
  readonly options: ReadonlyArray<Option>
  readonly why: Readonly<Partial<Record<Option, string>>>
}

/** The options that configure the sessions a runtime runs. */
const RUNTIME: ReadonlyArray<Option> = [
  "home",
  "provider",
  "model",
  "script",
  "mode",
  "max-turn-requests",
  "permission-timeout-ms",
  "max-live-sessions",
  "store",
  "sandbox",
  "trust"
]
const SESSION_SETTINGS: ReadonlyArray<Option> = [
  "provider",
  "model",
  "script",
  "mode",
  "max-turn-requests",
  "permission-timeout-ms",
  "max-live-sessions",
  "sandbox",
  "trust"
]
/** The web monitor's options (`src/cli/Web.ts`). */
const WEB: ReadonlyArray<Option> = ["web", "web-approve"]

const each = (options: ReadonlyArray<Option>, why: string): Partial<Record<Option, string>> => Object.fromEntries(options.map((o) => [o, why]))

/** Why an option is of no use anywhere but where it belongs. */
const ELSEWHERE: Readonly<Partial<Record<Option, string>>> = {
  ...each(["local-fs", "local-terminal", "max-line-bytes"], "it is an option of skein acp"),
  connect: "it is an option of skein acp and skein monitor",
  ...each(["continue", "resume"], "it is an option of skein run"),
  ...each(["limit", "children"], "it is an option of skein sessions list"),
  turn: "it is an option of skein sessions fork",
  yes: "it is an option of skein sessions rm",
  ...each(["acp", "rerun", "rerun-home"], "it is an option of skein replay"),
  mcp: "it is an option of skein doctor",
  cluster: "it is an option of skein serve and skein doctor",
  ...each(["listen", "runner", "runner-listen", "lock-expiry", "drain", "max-connections"], "it is an option of skein serve"),
  "token-file": "it is an option of skein serve, skein monitor --connect and skein acp --connect",
  ...each(["web", "web-approve"], "it is an option of skein serve and skein monitor"),
  ...each(SESSION_SETTINGS, "it reads saved sessions and runs no model")
}

/** What `command`, given `values` and `positionals`, uses. `env` is read where a variable picks the form (`SKEIN_CLUSTER`). */
export const uses = (
  command: Command,
  values: Values,
  positionals: ReadonlyArray<string>,
  env: (name: string) => string | undefined
): Use => {
  const given = (option: Option) => values[option] !== undefined
  switch (command) {
    case "acp":
      return given("connect")
        ? {
          as: "skein acp --connect",
          options: ["connect", "token-file", "local-fs", "local-terminal", "max-line-bytes"],
          why: each([...RUNTIME], "the sessions live in the server, with its home, store, model and settings")
        }
        : {
          as: "skein acp",
          options: [...RUNTIME, "local-fs", "local-terminal", "max-line-bytes", "connect"],
          why: { "token-file": "it goes with --connect (a token for the server's tcp:// or ws:// address)" }
        }
    case "run":
      return {
        as: "skein run",
        options: [...RUNTIME, "cwd", "json", "continue", "resume"],
        why: each(["local-fs", "local-terminal"], "skein run has no client: files and commands are always local")
      }
    case "sessions": {
      const sub = positionals[0] ?? "list"
      const list = sub === "list" || sub === "ls"
      return {
        as: `skein sessions ${sub}`,
        options: ["home", "store", ...(list ? ["cwd", "limit", "json", "children"] as const : sub === "fork" ? ["turn"] as const : sub === "rm" ? ["yes"] as const : [])],
        why: list ? {} : { ...each(["cwd", "json"], "it is an option of skein sessions list") }
      }
    }
    case "replay":
      if (given("rerun")) {
        return {
          as: "skein replay --rerun",
          options: ["home", "store", "rerun", "cwd", "json", "rerun-home", "sandbox"],
          why: {
            ...each(SESSION_SETTINGS, "a re-run answers every model call from the log and replays its modes and permission answers"),
            acp: "--acp prints the log's updates and --rerun runs it again: choose one"
          }
        }
      }
      // --acp: the models' windows and prices of its usage updates are those a `skein acp` with these would load it with.
      return {
        as: given("acp") ? "skein replay --acp" : "skein replay",
        options: ["home", "store", "acp", ...(given("acp") ? ["provider", "model", "script"] as const : [])],
        why: each(["cwd", "json", "rerun-home"], "it goes with --rerun")
      }
    case "doctor":
      return given("store") && given("mcp")
        ? {
          as: "skein doctor --store",
          options: [...RUNTIME, "cluster"],
          why: { mcp: "--mcp starts the servers recorded beside a session's log in the home's files, not in --store" }
        }
        : { as: "skein doctor", options: [...RUNTIME, "cluster", "mcp"], why: {} }
    case "serve": {
      const cluster = given("cluster") || env("SKEIN_CLUSTER") !== undefined
      const listen = typeof values["listen"] === "string" ? values["listen"] : undefined
      const unix = listen === undefined || listen.startsWith("unix:")
      return cluster
        ? {
          as: "skein serve --cluster",
          options: [...RUNTIME.filter((o) => o !== "store"), "listen", "token-file", "cluster", "runner", "runner-listen", "lock-expiry", "drain", "max-connections", ...WEB],
          why: { store: "--store and --cluster both name a database: a cluster keeps its sessions in its own (drop --store)" }
        }
        : {
          as: unix ? "skein serve on a unix socket" : "skein serve",
          options: [...RUNTIME, "listen", ...WEB, ...(unix ? [] : ["token-file", "max-connections"] as const)],
          why: {
            ...(unix ? { "max-connections": "a unix socket is open only to you; the cap is for tcp:// and ws://" } : {}),
            ...each(["runner", "runner-listen", "lock-expiry", "drain"], "it is for a cluster runner: add --cluster postgres://…"),
            ...(unix ? { "token-file": "a unix socket is protected by its file mode (0600); a token is for tcp:// and ws://" } : {})
          }
        }
    }
    case "monitor":
      return given("connect")
        ? {
          as: "skein monitor --connect",
          options: ["connect", "token-file", ...WEB],
          why: each(["home", "store"], "the sessions are those of the skein serve at --connect")
        }
        : {
          as: "skein monitor",
          options: ["home", "store", "connect", ...WEB],
          why: {
            ...each(SESSION_SETTINGS, "the monitor watches sessions and runs none"),
            "token-file": "it goes with --connect (a token for the server's tcp:// or ws:// address)"
          }
        }
    default:
      return command satisfies never
  }
}

/** The refusal of the first option given that `use` has no use for, if any. */
export const unused = (use: Use, values: Values): string | undefined => {
  const allowed = new Set<string>([...use.options, "help"])
  const option = (Object.keys(OPTIONS) as Array<Option>).find((o) => values[o] !== undefined && !allowed.has(o))
  if (option === undefined) return undefined
  const why = use.why[option] ?? ELSEWHERE[option]
  return `${use.as} does not use --${option}${why === undefined ? "" : `: ${why}`}`
}

/** Throws a `UsageError` for an option the command would ignore. */
export const refuse = (
  command: Command,
  parsed: { readonly values: Values; readonly positionals: ReadonlyArray<string> },
  env: (name: string) => string | undefined
): void => {
  const message = unused(uses(command, parsed.values, parsed.positionals, env), parsed.values)
  if (message !== undefined) throw new UsageError(message)
}
