/**
 * A project's own MCP settings: `${VAR}` expansion from Skein's environment, the files read
 * (`.mcp.json` and `.skein/config.json` from the session's folder up to the repository's root,
 * never the user's home or above the root), and which server wins a name: the client's, then
 * the nearest project file's, then farther ones, then the user's.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { spawnSync } from "node:child_process"
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import * as McpConfig from "../../src/mcp/Config.ts"
import * as Project from "../../src/mcp/Project.ts"
import * as SessionMcp from "../../src/runtime/SessionMcp.ts"
import type { McpServer } from "../../src/Vocabulary.ts"
import * as TempDir from "../support/TempDir.ts"

const write = (file: string, json: unknown) => {
  mkdirSync(dirname(file), { recursive: true })
  writeFileSync(file, typeof json === "string" ? json : JSON.stringify(json))
}

const stdio = (name: string, who: string): McpServer => ({ name, command: "srv", args: [], env: [{ name: "WHO", value: who }] })
const mcp = (servers: Record<string, string>) => ({ mcpServers: Object.fromEntries(Object.entries(servers).map(([name, who]) => [name, { command: "srv", env: { WHO: who } }])) })
const who = (servers: ReadonlyArray<McpServer>) =>
  Object.fromEntries(servers.map((s) => [s.name, "env" in s ? s.env.find((e) => e.name === "WHO")?.value : undefined]))

describe("${VAR} expansion", () => {
  it("expands a variable, a default when it is unset or empty, once; an unset variable without a default is missing", () => {
    const env = { HOST: "example.com", EMPTY: "", LOOP: "${HOST}" }
    assert.deepStrictEqual(McpConfig.expand("https://${HOST}/mcp", env), { text: "https://example.com/mcp", missing: [] })
    assert.deepStrictEqual(McpConfig.expand("${NOPE:-fallback}|${EMPTY:-e}|${HOST:-x}", env), { text: "fallback|e|example.com", missing: [] })
    // The value of a variable is not expanded again; $VAR without braces is left alone.
    assert.deepStrictEqual(McpConfig.expand("${LOOP} $HOST", env), { text: "${HOST} $HOST", missing: [] })
    assert.deepStrictEqual(McpConfig.expand("a${NOPE}b${EMPTY}", env), { text: "ab", missing: ["NOPE"] })
  })

  it("applies to command, args, env, url and headers; an entry that needs an unset variable is skipped, naming it, never a value", () => {
    const env = { TOKEN: "t0k3n-value", BIN: "/opt/bin/srv" }
    const loaded = McpConfig.fromJson({
      mcpServers: {
        local: { command: "${BIN}", args: ["--token=${TOKEN}", "${MODE:-fast}"], env: { API_TOKEN: "${TOKEN}" } },
        remote: { type: "http", url: "https://${HOST:-example.com}/mcp", headers: { Authorization: "Bearer ${TOKEN}" } },
        lacking: { command: "srv", env: { KEY: "${SECRET_KEY}", OTHER: "${OTHER_KEY}" } }
      }
    }, env)
    assert.deepStrictEqual(loaded.servers, [
      { name: "local", command: "/opt/bin/srv", args: ["--token=t0k3n-value", "fast"], env: [{ name: "API_TOKEN", value: "t0k3n-value" }] },
      { type: "http", name: "remote", url: "https://example.com/mcp", headers: [{ name: "Authorization", value: "Bearer t0k3n-value" }] }
    ])
    assert.deepStrictEqual(loaded.problems, ["mcpServers.lacking: ${SECRET_KEY}, ${OTHER_KEY} are not set in Skein's environment (a default: ${NAME:-value})"])
    assert.notInclude(loaded.problems.join(), "t0k3n-value")
  })
})

describe("a project's MCP settings", () => {
  it.effect("are read from the session's folder up to the repository's root, the nearest winning; not from the user's home or above the root", () =>
    Effect.gen(function*() {
      const base = yield* TempDir.make()
      const user = join(base, "user")
      const repo = join(user, "code", "repo")
      const pkg = join(repo, "packages", "pkg")
      mkdirSync(join(repo, ".git"), { recursive: true })
      mkdirSync(pkg, { recursive: true })
      write(join(user, ".mcp.json"), mcp({ home: "user-home" }))
      write(join(user, "code", ".mcp.json"), mcp({ above: "above-root" }))
      write(join(repo, ".mcp.json"), { mcpServers: { ...mcp({ shared: "root", rootOnly: "root", same: "root-mcp" }).mcpServers, bad: { command: 42 } } })
      write(join(repo, ".skein/config.json"), mcp({ same: "root-skein" }))
      write(join(repo, "packages", ".mcp.json"), "{ not json")
      write(join(pkg, ".mcp.json"), { mcpServers: { shared: { command: "srv", env: { WHO: "pkg" }, sandbox: true } } })
      const found = yield* Project.read(pkg, { userHome: user, env: {} })
      assert.deepStrictEqual(who(found.servers), { rootOnly: "root", same: "root-skein", shared: "pkg" })
      // A project's server may ask for the sandbox, as the user's may.
      assert.deepInclude(found.servers, { name: "shared", command: "srv", args: [], env: [{ name: "WHO", value: "pkg" }], sandbox: true })
      assert.deepStrictEqual(found.files.map((f) => [f.file, f.servers.map((s) => s.name), f.problems]), [
        [join(pkg, ".mcp.json"), ["shared"], []],
        [join(repo, "packages", ".mcp.json"), [], [`${join(repo, "packages", ".mcp.json")} is not valid JSON`]],
        [join(repo, ".skein/config.json"), ["same"], []],
        [join(repo, ".mcp.json"), ["shared", "rootOnly", "same"], ["mcpServers.bad: \"command\" must be a command to run"]]
      ])
      // Outside a repository: the folder alone.
      assert.deepStrictEqual(who((yield* Project.read(join(user, "code"), { userHome: user, env: {} })).servers), { above: "above-root" })
    }))

  it.effect("a repository's file that is a FIFO, or a link out of the repository, is a problem: never waited on or followed", () =>
    Effect.gen(function*() {
      const base = yield* TempDir.make()
      const repo = join(base, "repo")
      mkdirSync(join(repo, ".git"), { recursive: true })
      mkdirSync(join(repo, ".skein"), { recursive: true })
      write(join(base, "elsewhere.json"), mcp({ stolen: "outside" }))
      symlinkSync(join(base, "elsewhere.json"), join(repo, ".skein/config.json"))
      assert.strictEqual(spawnSync("mkfifo", [join(repo, ".mcp.json")]).status, 0)
      const found = yield* Project.read(repo, { env: {} })
      assert.deepStrictEqual(found.servers, [])
      assert.deepStrictEqual(found.files.map((f) => f.problems), [
        [`${join(repo, ".skein/config.json")}: it leads outside ${repo} (through a symbolic link), so it is not read`],
        [`${join(repo, ".mcp.json")}: it is not a regular file (a FIFO, socket or device), so it is not read`]
      ])
    }))

  it("a session starts the client's over the project's over the user's; only the project's that start are named as the project's", () => {
    const plan: SessionMcp.Plan = {
      below: [stdio("a", "user"), stdio("b", "user"), stdio("u", "user")],
      project: [stdio("a", "project"), stdio("b", "project"), stdio("p", "project")],
      above: [stdio("b", "client"), stdio("c", "client")],
      pending: false
    }
    assert.deepStrictEqual(who(SessionMcp.servers(plan)), { u: "user", a: "project", p: "project", b: "client", c: "client" })
    assert.deepStrictEqual(SessionMcp.projectNames(plan), ["a", "p"])
  })
})
