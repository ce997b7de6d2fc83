/**
 * MCP servers from config.json: the shape Claude Code and Codex users write, read into the
 * servers a session starts, merged with a client's (the client's wins on a name), used by
 * `skein run` and shown by `skein doctor`.
 */
import { spawnSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import * as McpConfig from "../../src/mcp/Config.ts"
import { NODE, REPO_ROOT, SKEIN } from "../support/AgentProcess.ts"

const roots: Array<string> = []
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true })
})

describe("McpConfig", () => {
  it("reads stdio and http servers with env and headers, and skips bad entries saying why (never a value)", () => {
    const loaded = McpConfig.fromJson({
      mcpServers: {
        files: { command: "npx", args: ["-y", "server"], env: { TOKEN: "s3cret" } },
        docs: { type: "http", url: "https://example.com/mcp", headers: { Authorization: "Bearer s3cret" } },
        old: { type: "sse", url: "http://127.0.0.1:9/sse" },
        bare: { url: "https://example.com/other" },
        off: { command: "x", disabled: true },
        broken: { command: "x", args: "not a list" },
        nourl: { type: "http", url: "file:///etc/passwd" },
        weird: { type: "ws", url: "ws://x" }
      }
    })
    expect(loaded.servers).toEqual([
      { name: "files", command: "npx", args: ["-y", "server"], env: [{ name: "TOKEN", value: "s3cret" }] },
      { type: "http", name: "docs", url: "https://example.com/mcp", headers: [{ name: "Authorization", value: "Bearer s3cret" }] },
      { type: "http", name: "bare", url: "https://example.com/other", headers: [] }
    ])
    expect(loaded.problems).toEqual([
      "mcpServers.old: the legacy HTTP+SSE transport is not supported (use \"type\": \"http\", Streamable HTTP)",
      "mcpServers.broken: \"args\" must be a list of strings",
      "mcpServers.nourl: \"url\" must be an http(s) URL",
      "mcpServers.weird: unknown \"type\" (expected stdio or http)"
    ])
    expect(McpConfig.fromJson({ providers: {} })).toEqual({ servers: [], problems: [] })
  })

  it("a stdio server may ask for the sandbox; anything but true or false is a problem", () => {
    const loaded = McpConfig.fromJson({ mcpServers: { boxed: { command: "x", sandbox: true }, open: { command: "y", sandbox: false }, bad: { command: "z", sandbox: "yes" } } })
    expect(loaded.servers).toEqual([{ name: "boxed", command: "x", args: [], env: [], sandbox: true }, { name: "open", command: "y", args: [], env: [] }])
    expect(loaded.problems).toEqual(["mcpServers.bad: \"sandbox\" must be true or false"])
  })

  it("merges with a client's servers: the client's wins on a name clash", () => {
    const mine = { name: "a", command: "mine", args: [], env: [] }
    const other = { name: "b", command: "other", args: [], env: [] }
    const client = { name: "a", command: "client", args: [], env: [] }
    expect(McpConfig.merge([mine, other], [client])).toEqual([other, client])
    expect(McpConfig.merge([mine], [])).toEqual([mine])
    expect(McpConfig.merge([], [client])).toEqual([client])
  })
})

describe("e2e: MCP servers from config.json", () => {
  const setup = () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), "skein-mcp-config-")))
    roots.push(root)
    const home = join(root, "home")
    const cwd = join(root, "ws")
    mkdirSync(home)
    mkdirSync(cwd)
    writeFileSync(join(home, "config.json"), JSON.stringify({
      mcpServers: { cfg: { command: NODE, args: [join(REPO_ROOT, "test/fixtures/mcp/readline.mjs")], env: { CFG_SECRET_TOKEN: "do-not-print-me" } } }
    }))
    const env: Record<string, string> = {}
    for (const [key, value] of Object.entries(process.env)) if (value !== undefined && !/^(OPENAI_|ANTHROPIC_|SKEIN_)/.test(key)) env[key] = value
    return { root, home, cwd, env: { ...env, NO_COLOR: "1", SKEIN_NO_CODE_CACHE: "1" } }
  }

  it("skein run starts the configured server and the model can call its tool", () => {
    const { root, home, cwd, env } = setup()
    const script = join(root, "script.json")
    writeFileSync(script, JSON.stringify({ turns: [{ calls: [[{ tool: "cfg__echo", args: { text: "from config" } }], [{ text: "Echoed." }]] }] }))
    const r = spawnSync(NODE, [SKEIN, "run", "--home", home, "--script", script, "--mode", "bypassPermissions", "echo it"], { cwd, env, encoding: "utf8", timeout: 60_000 })
    expect(r.status, r.stderr).toBe(0)
    expect(r.stdout).toBe("Echoed.\n")
    const dir = join(home, "sessions")
    const log = readFileSync(join(dir, readdirSync(dir).find((n) => n.endsWith(".ndjson"))!), "utf8")
    const result = log.split("\n").filter((l) => l.includes("\"tool_result\"")).map((l) => JSON.parse(l))[0]
    expect(result.data).toMatchObject({ ok: true, content: "echo: from config" })
  })

  it("skein doctor lists the configured servers with the names of their variables, not the values", () => {
    const { home, cwd, env } = setup()
    writeFileSync(join(cwd, ".mcp.json"), JSON.stringify({ mcpServers: { proj: { command: "proj-server" } } }))
    const r = spawnSync(NODE, [SKEIN, "doctor", "--home", home], { cwd, env, encoding: "utf8", timeout: 60_000 })
    expect(r.stdout).toContain("MCP servers (")
    expect(r.stdout).toMatch(/cfg: stdio \S+ \S+readline\.mjs \(env: CFG_SECRET_TOKEN\)/)
    expect(r.stdout).toContain(`${join(cwd, ".mcp.json")}: NOT started: it is not trusted yet`)
    expect(r.stdout + r.stderr).not.toContain("do-not-print-me")
  })
})
