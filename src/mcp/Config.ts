/**
 * MCP servers from Skein's own configuration, `$SKEIN_HOME/config.json`, in the shape Claude
 * Code and Codex users know:
 *
 * ```json
 * { "mcpServers": {
 *     "files": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."], "env": { "DEBUG": "1" }, "sandbox": true },
 *     "docs":  { "type": "http", "url": "https://example.com/mcp", "headers": { "Authorization": "Bearer …" } } } }
 * ```
 *
 * Every session uses them (`skein run` and `skein acp` alike), merged with a trusted project's
 * (`Project.ts`: `.mcp.json`, `.skein/config.json`, read with this same parser) and the servers
 * an ACP client sends: on a name clash the client's wins, then the nearest project file's, then
 * the user's. A bad entry is skipped and reported (`skein doctor`); values never appear in a
 * problem (they may hold secrets).
 *
 * `${VAR}` and `${VAR:-default}` in `command`, `args`, `env` values, `url` and `headers` values
 * are expanded from Skein's own environment (the one it was started with; nothing the model
 * runs can change it), once, as Claude Code does in `.mcp.json`; an expanded value is not
 * expanded again. `${VAR}` unset and without a default skips the entry (its problem names the
 * variable, never a value).
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import type { McpServer, McpServerStdio } from "../Vocabulary.ts"

export type Env = Readonly<Record<string, string | undefined>>

export interface Loaded {
  readonly servers: ReadonlyArray<McpServer>
  /** What was wrong with entries that were skipped, for `skein doctor`. */
  readonly problems: ReadonlyArray<string>
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const pairs = (u: unknown): Array<{ readonly name: string; readonly value: string }> | undefined => {
  if (u === undefined) return []
  if (!isRecord(u)) return undefined
  const out: Array<{ name: string; value: string }> = []
  for (const [name, value] of Object.entries(u)) {
    if (typeof value !== "string") return undefined
    out.push({ name, value })
  }
  return out
}

const VARIABLE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g

/**
 * `${VAR}` (the variable; unset: missing) and `${VAR:-default}` (the default when it is unset or
 * empty) in `text`, from `env`, in one pass; the names of the variables that were missing.
 */
export const expand = (text: string, env: Env): { readonly text: string; readonly missing: ReadonlyArray<string> } => {
  const missing: Array<string> = []
  const out = text.replace(VARIABLE, (_whole, name: string, fallback: string | undefined) => {
    const value = env[name]
    if (fallback !== undefined) return value === undefined || value === "" ? fallback : value
    if (value === undefined) missing.push(name)
    return value ?? ""
  })
  return { text: out, missing }
}

/** A server with every `${…}` of its command, args, env, URL and headers expanded; or the variables it lacks. */
const expandServer = (server: McpServer, env: Env): McpServer | { readonly missing: ReadonlyArray<string> } => {
  const missing = new Set<string>()
  const one = (text: string) => {
    const done = expand(text, env)
    for (const name of done.missing) missing.add(name)
    return done.text
  }
  const pairsOf = (list: ReadonlyArray<{ readonly name: string; readonly value: string }>) => list.map((p) => ({ name: p.name, value: one(p.value) }))
  const out: McpServer = "url" in server
    ? { ...server, url: one(server.url), headers: pairsOf(server.headers) }
    : { ...server, command: one(server.command), args: server.args.map(one), env: pairsOf(server.env) }
  return missing.size === 0 ? out : { missing: [...missing] }
}

/** The servers of a parsed config file's `mcpServers` (absent: none), `${…}` expanded from `env`. */
export const fromJson = (json: unknown, env: Env = {}): Loaded => {
  const parsed = parse(json)
  const servers: Array<McpServer> = []
  const problems = [...parsed.problems]
  for (const server of parsed.servers) {
    const expanded = expandServer(server, env)
    if ("missing" in expanded) {
      const names = expanded.missing.map((name) => `\${${name}}`).join(", ")
      problems.push(`mcpServers.${server.name}: ${names} ${expanded.missing.length === 1 ? "is" : "are"} not set in Skein's environment (a default: \${NAME:-value})`)
    } else servers.push(expanded)
  }
  return { servers, problems }
}

const parse = (json: unknown): Loaded => {
  const section = isRecord(json) ? json.mcpServers : undefined
  if (section === undefined) return { servers: [], problems: [] }
  if (!isRecord(section)) return { servers: [], problems: ["\"mcpServers\" must be an object of servers by name"] }
  const servers: Array<McpServer> = []
  const problems: Array<string> = []
  for (const [name, entry] of Object.entries(section)) {
    const bad = (why: string) => problems.push(`mcpServers.${name}: ${why}`)
    if (!isRecord(entry)) {
      bad("must be an object")
      continue
    }
    if (entry.disabled === true) continue
    const type = entry.type ?? (entry.url !== undefined ? "http" : "stdio")
    if (type === "sse") {
      bad("the legacy HTTP+SSE transport is not supported (use \"type\": \"http\", Streamable HTTP)")
      continue
    }
    if (type === "http" || type === "streamable-http") {
      const headers = pairs(entry.headers)
      if (typeof entry.url !== "string" || !/^https?:\/\//.test(entry.url)) bad("\"url\" must be an http(s) URL")
      else if (headers === undefined) bad("\"headers\" must be an object of strings")
      else servers.push({ type: "http", name, url: entry.url, headers })
      continue
    }
    if (type !== "stdio") {
      bad(`unknown "type" (expected stdio or http)`)
      continue
    }
    const env = pairs(entry.env)
    const args = entry.args ?? []
    if (typeof entry.command !== "string" || entry.command.trim() === "") bad("\"command\" must be a command to run")
    else if (!Array.isArray(args) || !args.every((a) => typeof a === "string")) bad("\"args\" must be a list of strings")
    else if (env === undefined) bad("\"env\" must be an object of strings")
    else if (entry.sandbox !== undefined && typeof entry.sandbox !== "boolean") bad("\"sandbox\" must be true or false")
    else servers.push({ name, command: entry.command, args: args as Array<string>, env, ...(entry.sandbox === true ? { sandbox: true } : {}) } satisfies McpServerStdio)
  }
  return { servers, problems }
}

/** The servers of a config file; a missing one has none, an unreadable one none and its problem. */
export const loadFile = (file: string, env: Env = process.env): Loaded => {
  let text: string
  try {
    text = fs.readFileSync(file, "utf8")
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    return { servers: [], problems: code === "ENOENT" || code === "ENOTDIR" ? [] : [`${file} cannot be read (${code ?? "error"})`] }
  }
  return fromText(text, file, env)
}

/** The servers of a config file's text (`file` names it in a problem). */
export const fromText = (text: string, file: string, env: Env): Loaded => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return { servers: [], problems: [`${file} is not valid JSON`] }
  }
  return fromJson(json, env)
}

/** The user's configured servers (`$SKEIN_HOME/config.json`). */
export const load = (home: string, env: Env = process.env): Loaded => loadFile(nodePath.join(home, "config.json"), env)

/** The configured servers with the client's: a client's server replaces a configured one of its name. */
export const merge = (configured: ReadonlyArray<McpServer>, fromClient: ReadonlyArray<McpServer>): ReadonlyArray<McpServer> => {
  if (configured.length === 0) return fromClient
  const names = new Set(fromClient.map((s) => s.name))
  return [...configured.filter((s) => !names.has(s.name)), ...fromClient]
}

/** Servers of several sources, each winning over the ones before it on a name: `mergeAll(user, project, client)`. */
export const mergeAll = (...sources: ReadonlyArray<ReadonlyArray<McpServer>>): ReadonlyArray<McpServer> => sources.reduce((below, above) => merge(below, above), [])
