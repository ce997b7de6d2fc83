/**
 * Which MCP servers a session used, kept so that `session/load` and
 * `session/resume` can start them again when the client passes none.
 *
 * Two records, because a server's settings hold secrets (tokens in `env`
 * values and HTTP headers, passwords in `args` and URLs) and the log must not:
 *
 * - the log gets an `mcp_servers` event with what identifies each server —
 *   name, transport, command or URL (without credentials, query or
 *   fragment), and the *names* of its env variables and headers;
 * - the settings as the client sent them go to the session's `mcp` side
 *   record, kept by its store beside the log (the file store: `<id>.mcp.json`,
 *   mode 0600, replaced atomically), written only once the log exists and
 *   removed with the session before the log (see `log/Files.ts`), so the
 *   secrets never outlive the log. A log copied elsewhere without it still
 *   says which servers were used; they are then not restarted.
 *
 * The client's list wins whenever it names at least one server.
 *
 * The side record also names the servers that came from the project's own files (`project`):
 * those are the folder's code, started again only while the folder is trusted (`session/load`
 * reads the project's files again instead).
 */
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Schema from "effect/Schema"
import * as Lazy from "../Lazy.ts"
import { sidePath } from "../log/Files.ts"
import type { Writer } from "../log/Store.ts"
import { McpServer } from "../Vocabulary.ts"

/** One server as the log records it. */
interface Summary {
  readonly name: string
  readonly transport: "stdio" | "http" | "sse"
  readonly command?: string
  readonly url?: string
  /** Names of the env variables the client set (not their values). */
  readonly env?: ReadonlyArray<string>
  /** Names of the HTTP headers the client set (not their values). */
  readonly headers?: ReadonlyArray<string>
}

/** A URL without what may be secret: credentials, query and fragment. */
const safeUrl = (url: string): string => {
  try {
    const parsed = new URL(url)
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`
  } catch {
    return "(not a valid URL)"
  }
}

export const summary = (servers: ReadonlyArray<McpServer>): ReadonlyArray<Summary> =>
  servers.map((server): Summary => {
    if ("type" in server && (server.type === "http" || server.type === "sse")) {
      return {
        name: server.name,
        transport: server.type,
        url: safeUrl(server.url),
        ...(server.headers.length > 0 ? { headers: server.headers.map((h) => h.name) } : {})
      }
    }
    const stdio = server as Extract<McpServer, { readonly command: string }>
    return {
      name: stdio.name,
      transport: "stdio",
      command: stdio.command,
      ...(stdio.env.length > 0 ? { env: stdio.env.map((v) => v.name) } : {})
    }
  })

/** Which servers a reopened session uses: the client's, or else the recorded ones. */
export const choose = (fromClient: ReadonlyArray<McpServer>, recorded: ReadonlyArray<McpServer>): ReadonlyArray<McpServer> =>
  fromClient.length > 0 ? fromClient : recorded

/** Whether two lists start the same servers (order matters: it decides name clashes). */
export const same = (a: ReadonlyArray<McpServer>, b: ReadonlyArray<McpServer>): boolean => JSON.stringify(a) === JSON.stringify(b)

/** The settings file of a log in the file store: `<id>.mcp.json` beside `<id>.ndjson`. */
export const settingsPath = (logPath: string): string => sidePath(logPath, "mcp")

const Settings = Lazy.schema("mcp.Settings", () => Schema.Struct({ v: Schema.Literal(1), servers: Schema.Array(McpServer), project: Schema.optionalKey(Schema.Array(Schema.String)) }))

/** A session's servers as recorded, and the names of those that came from the project's files. */
export interface Recorded {
  readonly servers: ReadonlyArray<McpServer>
  readonly project: ReadonlyArray<string>
}

const NONE: Recorded = { servers: [], project: [] }
const decodeSettings = Lazy.fn(() => Schema.decodeUnknownEffect(Schema.fromJsonString(Settings)))

/** Saves the settings in the session's side record (the writer holds its lock); an empty list removes it. */
export const save = (writer: Writer, servers: ReadonlyArray<McpServer>, project: ReadonlyArray<string> = []) =>
  writer.saveSide("mcp", servers.length === 0 ? undefined : JSON.stringify({ v: 1, servers, ...(project.length > 0 ? { project } : {}) }) + "\n").pipe(
    Effect.catchCause((cause) => Effect.logWarning(`Could not save the MCP settings of the session log ${writer.path}`, cause))
  )

const decode = (text: string | undefined, where: string): Effect.Effect<Recorded> =>
  text === undefined ? Effect.succeed(NONE) : decodeSettings(text).pipe(
    Effect.map((settings): Recorded => ({ servers: settings.servers, project: settings.project ?? [] })),
    Effect.catchCause(() =>
      Effect.as(Effect.logWarning(`The MCP settings of ${where} are unreadable; the session's MCP servers are not restarted`), NONE)
    )
  )

/** Reads the settings from the session's side record; none, or unreadable ones (with a warning), are no servers. */
export const load = (writer: Writer): Effect.Effect<Recorded> =>
  writer.loadSide("mcp").pipe(
    Effect.catchCause(() => Effect.succeed(undefined)),
    Effect.flatMap((text) => decode(text, `the session log ${writer.path}`))
  )

/**
 * What of a record starts again outside a session (`skein doctor --mcp`, `skein replay --rerun`):
 * everything while the session's folder is trusted (`trusted`), else all but the project's own;
 * those left out by name.
 */
export const startable = (recorded: Recorded, trusted: boolean): { readonly servers: ReadonlyArray<McpServer>; readonly left: ReadonlyArray<string> } =>
  trusted || recorded.project.length === 0
    ? { servers: recorded.servers, left: [] }
    : { servers: recorded.servers.filter((s) => !recorded.project.includes(s.name)), left: recorded.project }

/** Reads the settings file of a log anywhere (the CLI's `replay` and `doctor`); a missing file is no servers. */
export const loadFile = (fs: FileSystem.FileSystem, file: string): Effect.Effect<Recorded> =>
  Effect.gen(function*() {
    if (!(yield* fs.exists(file))) return undefined
    return yield* fs.readFileString(file)
  }).pipe(
    // Unreadable: decoded as nothing, with the warning.
    Effect.catchCause(() => Effect.succeed("")),
    Effect.flatMap((text) => decode(text, file))
  )
