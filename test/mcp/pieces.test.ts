/**
 * The pure and small pieces of MCP support: names, kinds, result rendering, the dynamic toolkit,
 * the bounded diagnostics tail, and what is recorded about a session's servers.
 */
import { assert, describe, it } from "@effect/vitest"
import type * as McpSchema from "effect/ai/McpSchema"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Schema from "effect/Schema"
import { readFileSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import type { McpServer } from "../../src/acp/Session.ts"
import { LOG_VERSION } from "../../src/log/Event.ts"
import { SessionLog } from "../../src/log/SessionLog.ts"
import * as Diagnostics from "../../src/mcp/Diagnostics.ts"
import * as DynamicToolkit from "../../src/mcp/DynamicToolkit.ts"
import * as McpTool from "../../src/mcp/McpTool.ts"
import * as Record from "../../src/mcp/Record.ts"
import * as Tool from "../../src/tools/Tool.ts"
import * as Toolkit from "../../src/tools/Toolkit.ts"
import * as TempDir from "../support/TempDir.ts"

const mcpTool = (name: string, annotations?: Partial<McpSchema.ToolAnnotations>): McpSchema.Tool =>
  ({ name, inputSchema: { type: "object", properties: { q: { type: "string" } } }, ...(annotations !== undefined ? { annotations } : {}) }) as unknown as McpSchema.Tool

const fake = (name: string): Tool.Tool =>
  McpTool.make({ server: "s", name, tool: mcpTool(name), call: () => Effect.succeed(Tool.ok(name)) })

describe("McpTool", () => {
  it("names are <server>__<tool>, sanitized, at most 64 characters, and unique", () => {
    assert.strictEqual(McpTool.exposedName("github", "create_issue", new Set()), "github__create_issue")
    assert.strictEqual(McpTool.exposedName("my_srv", "do.it now!", new Set()), "my_srv__do_it_now_")
    const long = McpTool.exposedName("srv", "x".repeat(100), new Set())
    assert.strictEqual(long.length, 64)
    assert.match(long, /^srv__x+_[0-9a-f]{8}$/)
    // Two tools that sanitize to the same name stay apart.
    const first = McpTool.exposedName("srv", "a.b", new Set())
    const second = McpTool.exposedName("srv", "a b", new Set([first]))
    assert.strictEqual(first, "srv__a_b")
    assert.match(second, /^srv__a_b_[0-9a-f]{8}$/)
    for (const name of [long, second]) assert.match(name, /^[A-Za-z0-9_-]{1,64}$/)
  })

  it("server prefixes are sanitized, short and unique in a session", () => {
    assert.strictEqual(McpTool.serverPrefix("My Server", new Set()), "My_Server")
    assert.strictEqual(McpTool.serverPrefix("My Server", new Set(["My_Server"])), "My_Server_2")
    assert.strictEqual(McpTool.serverPrefix("", new Set()), "mcp")
    assert.strictEqual(McpTool.serverPrefix("a".repeat(50), new Set()).length, 24)
  })

  it("mutating unless read-only; never the kinds that carry permission shortcuts", () => {
    const kinds = (name: string, readOnlyHint?: boolean) => {
      const tool = McpTool.make({ server: "s", name: `s__${name}`, tool: mcpTool(name, readOnlyHint === undefined ? undefined : { readOnlyHint }), call: () => Effect.succeed(Tool.ok("")) })
      return [tool.kind, tool.mutating]
    }
    assert.deepStrictEqual(kinds("get_file", true), ["read", false])
    assert.deepStrictEqual(kinds("search_code", true), ["search", false])
    assert.deepStrictEqual(kinds("fetch_url", true), ["fetch", false])
    assert.deepStrictEqual(kinds("get_file"), ["other", true])
    assert.deepStrictEqual(kinds("edit_file", false), ["other", true])
    assert.deepStrictEqual(kinds("run_command", false), ["other", true])
    assert.deepStrictEqual(kinds("delete_branch", false), ["delete", true])
    assert.deepStrictEqual(kinds("move_file", false), ["move", true])
  })

  it("brings the server's own JSON Schema (without $schema) to the model", () => {
    const tool = McpTool.make({
      server: "s",
      name: "s__t",
      tool: { name: "t", inputSchema: { $schema: "http://json-schema.org/draft-07/schema#", type: "object", properties: { a: { type: "number" } }, additionalProperties: false } } as unknown as McpSchema.Tool,
      call: () => Effect.succeed(Tool.ok(""))
    })
    const expected = { type: "object", properties: { a: { type: "number" } }, additionalProperties: false }
    assert.deepStrictEqual(Tool.jsonSchema(tool), expected)
    assert.deepStrictEqual(Toolkit.make([tool]).specs(), [{ name: "s__t", description: "t", parameters: expected }])
  })

  it("renders results: text, media markers, links, embedded resources, structured content, bounded", () => {
    const result = (content: ReadonlyArray<unknown>, extra: object = {}) => ({ content, ...extra }) as unknown as McpSchema.CallToolResult
    assert.strictEqual(
      McpTool.render(result([
        { type: "text", text: "hello" },
        { type: "image", data: new Uint8Array(10), mimeType: "image/png" },
        { type: "audio", data: new Uint8Array(3), mimeType: "audio/wav" },
        { type: "resource_link", uri: "file:///a.txt", name: "a.txt" },
        { type: "resource", resource: { uri: "mem://x", text: "inside" } },
        { type: "resource", resource: { uri: "mem://y", mimeType: "application/zip", blob: new Uint8Array(7) } }
      ])),
      "hello\n[image image/png, 10 bytes]\n[audio audio/wav, 3 bytes]\na.txt: file:///a.txt\n<resource uri=\"mem://x\">\ninside\n</resource>\n[resource mem://y application/zip, 7 bytes]"
    )
    assert.strictEqual(McpTool.render(result([], { structuredContent: { n: 1 } })), "{\"n\":1}")
    const big = McpTool.render(result([{ type: "text", text: "a".repeat(McpTool.MAX_CONTENT_CHARS + 500) }]))
    assert.isBelow(big.length, McpTool.MAX_CONTENT_CHARS + 100)
    assert.include(big, "[… 500 characters omitted …]")
  })
})

describe("DynamicToolkit", () => {
  it("reads the live set at every specs() and get(): tools appear and leave", () => {
    const base = Toolkit.builtin()
    let live: ReadonlyArray<Tool.Tool> = []
    const toolkit = DynamicToolkit.make(base, { tools: () => live })
    assert.strictEqual(toolkit.specs(), base.specs())
    assert.isUndefined(toolkit.get("s__a"))
    const a = fake("s__a")
    live = [a]
    assert.deepStrictEqual(toolkit.specs().map((s) => s.name), [...base.specs().map((s) => s.name), "s__a"])
    assert.strictEqual(toolkit.get("s__a"), a)
    assert.deepStrictEqual(toolkit.tools.map((t) => t.name), [...base.tools.map((t) => t.name), "s__a"])
    // Unchanged set: the same specs array (no work per model call).
    assert.strictEqual(toolkit.specs(), toolkit.specs())
    live = []
    assert.strictEqual(toolkit.specs(), base.specs())
    assert.isUndefined(toolkit.get("s__a"))
    assert.strictEqual(toolkit.get("read"), base.get("read"))
  })

  it("a live tool never shadows a built-in; the live lookup answers names not listed", () => {
    const base = Toolkit.builtin()
    const impostor = fake("read")
    const stand = McpTool.unavailable("gone__x", "gone", "gone is unavailable")
    const toolkit = DynamicToolkit.make(base, { tools: () => [impostor], get: (name) => (name === "gone__x" ? stand : undefined) })
    assert.strictEqual(toolkit.get("read"), base.get("read"))
    assert.strictEqual(toolkit.specs().filter((s) => s.name === "read").length, 1)
    assert.strictEqual(toolkit.get("gone__x"), stand)
    assert.isFalse(stand.mutating)
  })
})

describe("Diagnostics", () => {
  it("keeps a bounded tail of lines, cut to a maximum length, UTF-8 safe across chunks", () => {
    const tail = Diagnostics.make({ maxLines: 4, maxLineChars: 10 })
    const bytes = new TextEncoder().encode("zero\né1\n")
    tail.push(bytes.subarray(0, 6))
    tail.push(bytes.subarray(6))
    tail.push("a very long line indeed\nfour\nfive\npartial")
    assert.deepStrictEqual(tail.lines(), ["é1", "a very lon…", "four", "five", "partial"])
    assert.strictEqual(tail.dropped(), 1)
  })
})

describe("Record", () => {
  const servers: ReadonlyArray<McpServer> = [
    { name: "gh", command: "npx", args: ["-y", "server-github", "--token=abc"], env: [{ name: "GITHUB_TOKEN", value: "ghp_secret" }] },
    { type: "http", name: "docs", url: "https://user:pw@example.com/mcp?key=secret#x", headers: [{ name: "Authorization", value: "Bearer s3cret" }] }
  ]

  it("the log records names and shapes, never env values, header values, args or URL secrets", () => {
    const summary = Record.summary(servers)
    assert.deepStrictEqual(summary, [
      { name: "gh", transport: "stdio", command: "npx", env: ["GITHUB_TOKEN"] },
      { name: "docs", transport: "http", url: "https://example.com/mcp", headers: ["Authorization"] }
    ])
    const text = JSON.stringify(summary)
    for (const secret of ["ghp_secret", "s3cret", "abc", "pw", "key=secret"]) assert.notInclude(text, secret)
  })

  it("the client's list wins when it names a server; otherwise the recorded one", () => {
    assert.strictEqual(Record.choose([], servers), servers)
    const other = [servers[0]!]
    assert.strictEqual(Record.choose(other, servers), other)
    assert.isTrue(Record.same(servers, JSON.parse(JSON.stringify(servers))))
    assert.isFalse(Record.same(servers, other))
  })

  const header = { type: "session" as const, v: LOG_VERSION, id: "abc", cwd: "/w", created: 1 }
  const storeIn = <E, R>(layer: Layer.Layer<SessionLog, E, R>) =>
    Effect.provide(
      Effect.gen(function*() {
        return yield* SessionLog
      }),
      layer
    )

  it.effect("settings are saved owner-only beside the log, loaded back, and removed", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const home = yield* TempDir.make("skein-mcp-record-")
      const log = yield* storeIn(SessionLog.layer({ home }))
      const writer = yield* log.create(header)
      const file = Record.settingsPath(writer.path)
      assert.strictEqual(file, join(home, "sessions", "abc.mcp.json"))
      assert.deepStrictEqual(yield* Record.load(writer), { servers: [], project: [] })
      yield* Record.save(writer, servers)
      assert.strictEqual(statSync(file).mode & 0o777, 0o600)
      const expected = Schema.decodeUnknownSync(Schema.Array(Schema.Unknown))(servers)
      assert.deepStrictEqual(yield* Record.load(writer), { servers: expected as typeof servers, project: [] })
      assert.deepStrictEqual(yield* Record.loadFile(fs, file), { servers: expected as typeof servers, project: [] })
      assert.include(readFileSync(file, "utf8"), "ghp_secret")
      // Which of them came from the project's files is kept with them.
      yield* Record.save(writer, servers, [servers[0]!.name])
      assert.strictEqual(statSync(file).mode & 0o777, 0o600)
      assert.deepStrictEqual(yield* Record.load(writer), { servers: expected as typeof servers, project: [servers[0]!.name] })
      // Outside a session (doctor --mcp, replay --rerun) the project's start again only while its folder is trusted.
      const recorded = yield* Record.loadFile(fs, file)
      assert.deepStrictEqual(Record.startable(recorded, true), { servers: expected as typeof servers, left: [] })
      assert.deepStrictEqual(Record.startable(recorded, false), { servers: (expected as typeof servers).slice(1), left: [servers[0]!.name] })
      writeFileSync(file, "{ not json")
      assert.deepStrictEqual(yield* Record.load(writer), { servers: [], project: [] })
      assert.deepStrictEqual(yield* Record.loadFile(fs, file), { servers: [], project: [] })
      yield* Record.save(writer, [])
      assert.isFalse(yield* fs.exists(file))
      assert.deepStrictEqual(yield* Record.loadFile(fs, file), { servers: [], project: [] })
    }).pipe(Effect.scoped, Effect.provide(TempDir.platform), Effect.provide(Logger.layer([]))))

  it.effect("a store without files keeps them with the session, and drops them with it", () =>
    Effect.gen(function*() {
      const log = yield* storeIn(SessionLog.layerMemory())
      yield* Effect.scoped(Effect.gen(function*() {
        const writer = yield* log.create(header)
        yield* Record.save(writer, servers)
        assert.deepStrictEqual((yield* Record.load(writer)).servers, Schema.decodeUnknownSync(Schema.Array(Schema.Unknown))(servers))
      }))
      const reopened = yield* Effect.scoped(Effect.flatMap(log.open("abc"), ({ writer }) => Record.load(writer)))
      assert.strictEqual(reopened.servers.length, servers.length)
      yield* log.remove("abc")
      yield* Effect.scoped(Effect.gen(function*() {
        const writer = yield* log.create(header)
        assert.deepStrictEqual(yield* Record.load(writer), { servers: [], project: [] })
      }))
    }))
})
