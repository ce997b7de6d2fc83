/**
 * `skein doctor`'s MCP section: the servers a session here starts from the user's
 * `config.json` and the project's own files (`.mcp.json`, `.skein/config.json`, up to the
 * repository's root), whether the project's start (workspace trust), and each skipped entry
 * and why. Names of variables and headers, never their values; a secret in a command line or a
 * URL (a `${TOKEN}` expanded into it, a key written there) is redacted. The caller reads the files.
 */
import type * as McpConfig from "../mcp/Config.ts"
import type * as Project from "../mcp/Project.ts"
import * as Secrets from "../secrets/Secrets.ts"
import type * as Trust from "../trust/Trust.ts"
import type { McpServer } from "../Vocabulary.ts"

const line = (server: McpServer): string => {
  if ("url" in server) {
    const headers = server.headers.map((h) => h.name)
    return `${server.name}: ${server.type} ${Secrets.redactWithShapes(server.url)}${headers.length > 0 ? ` (headers: ${headers.join(", ")})` : ""}`
  }
  const env = server.env.map((e) => e.name)
  return `${server.name}: stdio ${Secrets.redactWithShapes([server.command, ...server.args].join(" "))}${env.length > 0 ? ` (env: ${env.join(", ")})` : ""}${server.sandbox === true ? " (sandboxed)" : ""}`
}

const indent = (lines: ReadonlyArray<string>, by: string) => lines.map((l) => `${by}${l}\n`).join("")

export const mcpReport = (options: {
  readonly file: string
  readonly user: McpConfig.Loaded
  readonly project: Project.Found
  readonly trust: Trust.Status
}): string => {
  const user = [...options.user.servers.map(line), ...options.user.problems.map((p) => `skipped: ${p}`)]
  if (user.length === 0) user.push("none (add \"mcpServers\" to config.json)")
  const out = [`${options.file}, for every session`, ...user.map((l) => `  ${l}`)]
  for (const found of options.project.files) {
    out.push(`${found.file}: ${options.trust.loads ? `started (${options.trust.why})` : `NOT started: ${options.trust.why}`}`)
    out.push(...found.servers.map((s) => `  ${line(s)}`), ...found.problems.map((p) => `  skipped: ${p}`))
  }
  return `\nMCP servers (on a name clash the client's wins, then the nearest project file's, then yours)\n${indent(out, "  ")}`
}
