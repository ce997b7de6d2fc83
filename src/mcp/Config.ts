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
 * Every session uses them (`skein run` and `skein acp` alike), merged with the servers an ACP
 * client sends: on a name clash the client's wins. Only the user's file is read: a project's
 * own MCP settings (`.mcp.json`, `.skein/config.json`) are code from the repository and start
 * only once workspace trust exists. A bad entry is skipped and reported (`skein doctor`);
 * values never appear in a problem (they may hold secrets).
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import type { McpServer, McpServerStdio } from "../Vocabulary.ts"

interface Loaded {
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

/** The servers of a parsed config file's `mcpServers` (absent: none). */
export const fromJson = (json: unknown): Loaded => {
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

/** The user's configured servers; a missing or unreadable file has none (its problem said). */
export const load = (home: string): Loaded => {
  const file = nodePath.join(home, "config.json")
  let text: string
  try {
    text = fs.readFileSync(file, "utf8")
  } catch {
    return { servers: [], problems: [] }
  }
  try {
    return fromJson(JSON.parse(text))
  } catch {
    return { servers: [], problems: [`${file} is not valid JSON`] }
  }
}

/** The configured servers with the client's: a client's server replaces a configured one of its name. */
export const merge = (configured: ReadonlyArray<McpServer>, fromClient: ReadonlyArray<McpServer>): ReadonlyArray<McpServer> => {
  if (configured.length === 0) return fromClient
  const names = new Set(fromClient.map((s) => s.name))
  return [...configured.filter((s) => !names.has(s.name)), ...fromClient]
}
