/**
 * MCP servers of a session against real servers: the stdio fixture written with Effect's own
 * `McpServer` (test/fixtures/mcp/server.ts), plus two that misbehave on purpose (one never
 * answers, one sends garbage) and a command that does not exist.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Scope from "effect/Scope"
import { spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, realpathSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { McpServer } from "../../src/acp/Session.ts"
import * as McpSession from "../../src/mcp/McpSession.ts"
import * as StdioTransport from "../../src/mcp/StdioTransport.ts"
import * as Tool from "../../src/tools/Tool.ts"
import * as TempDir from "../support/TempDir.ts"
import { bundled } from "../support/FixtureBundle.ts"

export const NODE = join(import.meta.dirname, "..", "..", "node_modules", ".bin", "node")
const fixtures = join(import.meta.dirname, "..", "fixtures", "mcp")
/** The fixture server, bundled once per checkout (a start loads one file, not Effect module by module). */
const SERVER = bundled(join(fixtures, "server.ts"))

export const fixture = (name: string, env: Record<string, string> = {}, script = SERVER): McpServer => ({
  name,
  command: NODE,
  args: [script],
  env: Object.entries(env).map(([key, value]) => ({ name: key, value }))
})

const ctx = (cwd: string): Tool.ToolContext => ({
  sessionId: "s1",
  toolCallId: "c1",
  cwd,
  roots: [cwd],
})

/** Whether a process can still run (a zombie counts as dead). */
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  if (process.platform !== "linux" || !existsSync(`/proc/${pid}/stat`)) return true
  const stat = readFileSync(`/proc/${pid}/stat`, "latin1")
  return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z"
}

const waitUntil = (done: () => boolean, ms: number, what: string) =>
  Effect.gen(function*() {
    const start = performance.now()
    while (!done()) {
      if (performance.now() - start > ms) return assert.fail(`timed out waiting for ${what}`)
      yield* Effect.sleep(10)
    }
  })

const workspace = () => realpathSync(mkdtempSync(join(tmpdir(), "skein-mcp-")))

/** Starts servers in a fresh scope; returns the session, its scope and the workspace. */
const started = (servers: ReadonlyArray<McpServer>, options: Partial<McpSession.Options> = {}) =>
  Effect.gen(function*() {
    const cwd = workspace()
    const scope = yield* Scope.make()
    // Whatever happens to the test (a failed assertion too), its servers stop with it.
    yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
    const mcp = yield* McpSession.start({ servers, cwd, ...options }).pipe(Scope.provide(scope))
    return { mcp, scope, cwd }
  })

/** Runs a tool as the turn loop does; the result without its (absent) details. */
const callTool = (mcp: McpSession.McpSession, name: string, args: unknown, cwd: string) =>
  Effect.gen(function*() {
    const tool = mcp.get(name)
    if (tool === undefined) return assert.fail(`no tool ${name}`)
    const output = yield* Tool.run(tool, args, ctx(cwd)).pipe(Effect.provide(TempDir.platform))
    assert.isUndefined(output.details)
    return { ok: output.ok, content: output.content }
  })

const pidOf = (mcp: McpSession.McpSession, name: string): number => {
  const pid = mcp.status().find((s) => s.name === name)?.pid
  if (pid === undefined) return assert.fail(`no pid for ${name}`)
  return pid
}

describe.concurrent("McpSession with a real stdio server", () => {
  it.live("discovers the tools under namespaced names, with their schemas and kinds", () =>
    Effect.gen(function*() {
      const { mcp, scope } = yield* started([fixture("fix")])
      // Nothing waits at start: the server is still connecting.
      assert.strictEqual(mcp.status()[0]!.state, "connecting")
      assert.deepStrictEqual(mcp.tools(), [])
      yield* mcp.settled
      const status = mcp.status()[0]!
      assert.strictEqual(status.state, "ready")
      assert.deepStrictEqual(status.tools, ["fix__echo", "fix__write_note", "fix__picture", "fix__refuse", "fix__crash", "fix__stall", "fix__grow"])
      assert.strictEqual(status.protocolVersion, "2025-11-25")
      assert.deepStrictEqual(status.serverInfo, { name: "fixture", version: "1.0.0" })
      assert.isTrue(status.stderr.some((line) => line.startsWith("fixture ready pid=")))
      const echo = mcp.get("fix__echo")!
      assert.deepStrictEqual([echo.kind, echo.mutating], ["read", false])
      assert.deepStrictEqual(Tool.jsonSchema(echo), { type: "object", properties: { text: { type: "string" } }, required: ["text"] })
      assert.strictEqual(echo.description, "Echoes its text back.")
      assert.strictEqual(echo.title({ text: "x" }), "fix — echo")
      const write = mcp.get("fix__write_note")!
      assert.deepStrictEqual([write.kind, write.mutating, write.scope], ["other", true, undefined])
      assert.deepStrictEqual(mcp.takeNotices(), [])
      yield* Scope.close(scope, Exit.void)
    }))

  it.live("calls the tools: text, resource links, images, tool errors; the server stays", () =>
    Effect.gen(function*() {
      const { mcp, scope, cwd } = yield* started([fixture("fix", { MCP_FIXTURE_NOTES: "" })])
      yield* mcp.settled
      assert.deepStrictEqual(yield* callTool(mcp, "fix__echo", { text: "hi" }, cwd), { ok: true, content: "echo: hi" })
      const wrote = yield* callTool(mcp, "fix__write_note", { name: "n.txt", text: "note" }, cwd)
      // The server runs in the session's cwd (MCP_FIXTURE_NOTES is empty: the cwd is used).
      assert.deepStrictEqual(wrote, { ok: true, content: `wrote n.txt\nn.txt: file://${join(cwd, "n.txt")}` })
      assert.strictEqual(readFileSync(join(cwd, "n.txt"), "utf8"), "note")
      assert.deepStrictEqual(yield* callTool(mcp, "fix__picture", {}, cwd), { ok: true, content: "[image image/png, 4 bytes]\na picture" })
      assert.deepStrictEqual(yield* callTool(mcp, "fix__refuse", {}, cwd), { ok: false, content: "refused: not today" })
      // Arguments that are not an object are refused before anything is sent.
      const bad = yield* callTool(mcp, "fix__echo", "hi", cwd)
      assert.isFalse(bad.ok)
      assert.include(bad.content, "Invalid arguments for fix__echo")
      assert.strictEqual(mcp.status()[0]!.state, "ready")
      assert.deepStrictEqual(mcp.takeNotices(), [])
      yield* Scope.close(scope, Exit.void)
    }))

  it.live("passes the client's env over Skein's, keeps Skein's secrets from the server, and redacts its own", () =>
    Effect.gen(function*() {
      const { mcp, scope, cwd } = yield* started([fixture("fix", { MCP_FIXTURE_SECRET: "from-client" })], {
        env: { ...process.env, OPENAI_API_KEY: "sk-skein", MCP_FIXTURE_PLAIN: "plain" }
      })
      yield* mcp.settled
      // The server has it; what it says of it comes back redacted.
      assert.strictEqual((yield* callTool(mcp, "fix__echo", { text: "env:MCP_FIXTURE_SECRET" }, cwd)).content, "env MCP_FIXTURE_SECRET=[redacted]")
      assert.strictEqual((yield* callTool(mcp, "fix__echo", { text: "env:MCP_FIXTURE_PLAIN" }, cwd)).content, "env MCP_FIXTURE_PLAIN=plain")
      assert.strictEqual((yield* callTool(mcp, "fix__echo", { text: "env:OPENAI_API_KEY" }, cwd)).content, "env OPENAI_API_KEY=unset")
      yield* Scope.close(scope, Exit.void)
    }))

  it.live("speaks to servers of older MCP revisions, and tolerates a banner on stdout", () =>
    Effect.gen(function*() {
      const { mcp, scope, cwd } = yield* started([
        fixture("old", { MCP_FIXTURE_PROTOCOLS: "2025-06-18", MCP_FIXTURE_BANNER: "1" }),
        fixture("older", { MCP_FIXTURE_PROTOCOLS: "2024-11-05" })
      ])
      yield* mcp.settled
      const [old, older] = mcp.status()
      assert.deepStrictEqual([old!.state, old!.protocolVersion, older!.state, older!.protocolVersion], ["ready", "2025-06-18", "ready", "2024-11-05"])
      assert.include(old!.stderr, "[stdout] Fixture MCP server starting on stdio")
      assert.deepStrictEqual(yield* callTool(mcp, "old__echo", { text: "a" }, cwd), { ok: true, content: "echo: a" })
      assert.deepStrictEqual(yield* callTool(mcp, "older__echo", { text: "b" }, cwd), { ok: true, content: "echo: b" })
      yield* Scope.close(scope, Exit.void)
    }))

  it.live("U+2028, U+2029 and a non-BMP character inside strings split no message, either way, with either kind of server", () =>
    Effect.gen(function*() {
      // `fix` reads with Effect's NDJSON framing; `plain` with Node's readline, which splits at
      // U+2028/U+2029 unless they are escaped. Both answer with them raw inside a string.
      const { mcp, scope, cwd } = yield* started([fixture("fix"), fixture("plain", {}, join(fixtures, "readline.mjs"))])
      yield* mcp.settled
      const odd = "one\u2028two\u2029three 😀"
      assert.deepStrictEqual(yield* callTool(mcp, "fix__echo", { text: odd }, cwd), { ok: true, content: `echo: ${odd}` })
      assert.deepStrictEqual(yield* callTool(mcp, "plain__echo", { text: odd }, cwd), { ok: true, content: `echo: ${odd}` })
      assert.deepStrictEqual(mcp.status().map((s) => s.state), ["ready", "ready"])
      assert.deepStrictEqual(mcp.takeNotices(), [])
      yield* Scope.close(scope, Exit.void)
    }))

  it.live("lists the tools again when the server says they changed", () =>
    Effect.gen(function*() {
      const { mcp, scope, cwd } = yield* started([fixture("fix")])
      yield* mcp.settled
      const before = mcp.tools()
      assert.isUndefined(before.find((t) => t.name === "fix__late"))
      assert.deepStrictEqual(yield* callTool(mcp, "fix__grow", {}, cwd), { ok: true, content: "grew" })
      yield* waitUntil(() => mcp.tools().some((t) => t.name === "fix__late"), 5_000, "fix__late")
      assert.notStrictEqual(mcp.tools(), before)
      assert.deepStrictEqual(yield* callTool(mcp, "fix__late", {}, cwd), { ok: true, content: "late" })
      yield* Scope.close(scope, Exit.void)
    }))

  it.live("an interrupted call (a cancelled turn) leaves the server usable", () =>
    Effect.gen(function*() {
      const { mcp, scope, cwd } = yield* started([fixture("fix")])
      yield* mcp.settled
      const stalled = yield* Effect.forkChild(callTool(mcp, "fix__stall", {}, cwd))
      yield* Effect.sleep(100)
      yield* Fiber.interrupt(stalled)
      assert.deepStrictEqual(yield* callTool(mcp, "fix__echo", { text: "still here" }, cwd), { ok: true, content: "echo: still here" })
      assert.strictEqual(mcp.status()[0]!.state, "ready")
      yield* Scope.close(scope, Exit.void)
    }))
})

describe.concurrent("McpSession when servers fail", () => {
  it.live("a command that does not exist: failed once, reported, the other server goes on", () =>
    Effect.gen(function*() {
      const missing: McpServer = { name: "ghost", command: "skein-no-such-mcp-server", args: [], env: [] }
      const { mcp, scope, cwd } = yield* started([missing, fixture("fix")])
      yield* mcp.settled
      const [ghost, fix] = mcp.status()
      assert.deepStrictEqual([ghost!.state, ghost!.error], ["failed", "Cannot start `skein-no-such-mcp-server` (ENOENT)"])
      assert.strictEqual(fix!.state, "ready")
      const notices = mcp.takeNotices()
      assert.deepStrictEqual(notices, [{
        server: "ghost",
        text: "MCP server \"ghost\" is unavailable: Cannot start `skein-no-such-mcp-server` (ENOENT). Its tools are withdrawn for the rest of this session."
      }])
      assert.deepStrictEqual(mcp.takeNotices(), [])
      // A name of the failed server says why, runs nothing and asks nothing.
      const stand = mcp.get("ghost__anything")!
      assert.isFalse(stand.mutating)
      const out = yield* callTool(mcp, "ghost__anything", {}, cwd)
      assert.isFalse(out.ok)
      assert.include(out.content, "is unavailable (Cannot start")
      assert.isTrue(mcp.tools().every((t) => t.name.startsWith("fix__")))
      yield* Scope.close(scope, Exit.void)
    }))

  it.live("a server that crashes mid-call: the call fails, its tools are withdrawn, one notice, the process is reaped", () =>
    Effect.gen(function*() {
      const { mcp, scope, cwd } = yield* started([fixture("fix")])
      yield* mcp.settled
      const pid = pidOf(mcp, "fix")
      const out = yield* callTool(mcp, "fix__crash", {}, cwd)
      assert.deepStrictEqual(out, {
        ok: false,
        content: "The MCP server \"fix\" failed: The server exited with code 3. Its tools are no longer available."
      })
      const status = mcp.status()[0]!
      assert.deepStrictEqual([status.state, status.error, status.tools], ["failed", "The server exited with code 3", []])
      assert.deepStrictEqual(mcp.tools(), [])
      const notices = mcp.takeNotices()
      assert.strictEqual(notices.length, 1)
      assert.include(notices[0]!.text, "MCP server \"fix\" is unavailable: The server exited with code 3.")
      assert.include(notices[0]!.text, "crashing now")
      // The tool the model still knows answers without running or asking.
      const echo = yield* callTool(mcp, "fix__echo", { text: "x" }, cwd)
      assert.isFalse(echo.ok)
      assert.include(echo.content, "is unavailable (The server exited with code 3)")
      assert.isFalse(mcp.get("fix__write_note")!.mutating)
      yield* waitUntil(() => !alive(pid) && !StdioTransport.openGroups().has(pid), 3_000, "the crashed server to be reaped")
      assert.deepStrictEqual(mcp.takeNotices(), [])
      yield* Scope.close(scope, Exit.void)
    }))

  it.live("a server that never answers initialize times out, is killed (even ignoring SIGTERM) and reported", () =>
    Effect.gen(function*() {
      // The notice carries what the server wrote to stderr: a shell says its line within
      // milliseconds of its start even on a loaded machine, where Node could take longer than
      // the timeout to start and say it. It ignores SIGTERM (`sleep` inherits that).
      const silent: McpServer = {
        name: "mute",
        command: "/bin/sh",
        args: ["-c", "trap '' TERM; echo 'hang: listening, never answering' >&2; exec sleep 100000"],
        env: []
      }
      const { mcp, scope } = yield* started([silent], { initTimeoutMs: 2_000 })
      yield* waitUntil(() => mcp.status()[0]!.pid !== undefined, 5_000, "the server to start")
      const pid = pidOf(mcp, "mute")
      yield* mcp.settled
      const status = mcp.status()[0]!
      assert.deepStrictEqual([status.state, status.error], ["failed", "it did not answer `initialize` within 2 s"])
      const [notice] = mcp.takeNotices()
      assert.include(notice!.text, "it did not answer `initialize` within 2 s")
      assert.include(notice!.text, "hang: listening, never answering")
      yield* waitUntil(() => !alive(pid), 3_000, "the silent server to be killed")
      yield* Scope.close(scope, Exit.void)
    }))

  it.live("a call that never finishes times out and fails the server", () =>
    Effect.gen(function*() {
      const { mcp, scope, cwd } = yield* started([fixture("fix")], { callTimeoutMs: 300 })
      yield* mcp.settled
      const pid = pidOf(mcp, "fix")
      const out = yield* callTool(mcp, "fix__stall", {}, cwd)
      assert.deepStrictEqual(out, {
        ok: false,
        content: "The MCP server \"fix\" failed: a tool call did not finish within 0.3 s. Its tools are no longer available."
      })
      assert.strictEqual(mcp.takeNotices().length, 1)
      yield* waitUntil(() => !alive(pid), 3_000, "the stalled server to be killed")
      yield* Scope.close(scope, Exit.void)
    }))

  it.live("a server that answers with garbage is failed once", () =>
    Effect.gen(function*() {
      const { mcp, scope, cwd } = yield* started([fixture("junk", {}, join(fixtures, "garbage.mjs"))])
      yield* mcp.settled
      assert.deepStrictEqual(mcp.status()[0]!.tools, ["junk__mangle", "junk__deep", "junk__flood"])
      const out = yield* callTool(mcp, "junk__mangle", {}, cwd)
      assert.isFalse(out.ok)
      assert.include(out.content, "The MCP server \"junk\" failed: it sent an invalid MCP message")
      assert.strictEqual(mcp.status()[0]!.state, "failed")
      assert.strictEqual(mcp.takeNotices().length, 1)
      yield* Scope.close(scope, Exit.void)
    }))

  it.live("a result nested too deep to read fails the server, never Skein", () =>
    Effect.gen(function*() {
      const { mcp, scope, cwd } = yield* started([fixture("junk", {}, join(fixtures, "garbage.mjs"))])
      yield* mcp.settled
      const out = yield* callTool(mcp, "junk__deep", {}, cwd)
      assert.deepStrictEqual(out, {
        ok: false,
        content: "The MCP server \"junk\" failed: it broke the MCP protocol (The server sent a message Skein cannot read). Its tools are no longer available."
      })
      assert.strictEqual(mcp.takeNotices().length, 1)
      yield* Scope.close(scope, Exit.void)
    }))

  it.live("a message past the bound (8 MiB) fails the server as soon as it passes it, though its line never ends", () =>
    Effect.gen(function*() {
      const { mcp, scope, cwd } = yield* started([fixture("junk", {}, join(fixtures, "garbage.mjs"))], { callTimeoutMs: 20_000 })
      yield* mcp.settled
      const pid = pidOf(mcp, "junk")
      const out = yield* callTool(mcp, "junk__flood", {}, cwd)
      assert.deepStrictEqual(out, {
        ok: false,
        content: `The MCP server "junk" failed: The server sent a message larger than ${StdioTransport.DEFAULT_MAX_MESSAGE_BYTES} bytes. Its tools are no longer available.`
      })
      assert.strictEqual(mcp.status()[0]!.state, "failed")
      assert.strictEqual(mcp.takeNotices().length, 1)
      yield* waitUntil(() => !alive(pid), 5_000, "the server to be stopped")
      yield* Scope.close(scope, Exit.void)
    }))

  it.live("closing the scope kills every server and its children, and nothing is reported", () =>
    Effect.gen(function*() {
      const dir = workspace()
      const pidfile = join(dir, "child.pid")
      const { mcp, scope } = yield* started([
        fixture("a", { MCP_FIXTURE_CHILD_PIDFILE: pidfile }),
        fixture("b"),
        fixture("mute", {}, join(fixtures, "hang.mjs"))
      ])
      yield* waitUntil(() => mcp.status().filter((s) => s.state === "ready").length === 2 && mcp.status()[2]!.pid !== undefined, 10_000, "the servers")
      const pids = [pidOf(mcp, "a"), pidOf(mcp, "b"), pidOf(mcp, "mute")]
      yield* waitUntil(() => existsSync(pidfile) && readFileSync(pidfile, "utf8") !== "", 5_000, "the grandchild")
      const grandchild = Number(readFileSync(pidfile, "utf8"))
      assert.isTrue([...pids, grandchild].every(alive))
      yield* Scope.close(scope, Exit.void)
      // The stubborn server (SIGTERM ignored) too: it was killed after its grace.
      assert.deepStrictEqual([...pids, grandchild].map(alive), [false, false, false, false])
      for (const pid of pids) assert.isFalse(StdioTransport.openGroups().has(pid))
      assert.deepStrictEqual(mcp.status().map((s) => s.state), ["closed", "closed", "closed"])
      assert.deepStrictEqual(mcp.takeNotices(), [])
    }))
  it.live("servers added later start beside the others; one of an existing name replaces it, its group killed first", () =>
    Effect.gen(function*() {
      const dir = workspace()
      const pidfile = join(dir, "old.pid")
      const { mcp, scope, cwd } = yield* started([fixture("keep"), fixture("dup", { MCP_FIXTURE_CHILD_PIDFILE: pidfile, WHO: "old" })])
      yield* mcp.settled
      const old = pidOf(mcp, "dup")
      yield* waitUntil(() => existsSync(pidfile) && readFileSync(pidfile, "utf8") !== "", 5_000, "the grandchild")
      const grandchild = Number(readFileSync(pidfile, "utf8"))
      yield* Effect.flatten(mcp.add([fixture("dup", { WHO: "new" }), fixture("extra")]))
      assert.deepStrictEqual(mcp.status().map((s) => [s.name, s.state]), [["keep", "ready"], ["dup", "ready"], ["extra", "ready"]])
      assert.deepStrictEqual([old, grandchild].map(alive), [false, false])
      assert.deepStrictEqual(yield* callTool(mcp, "dup__echo", { text: "env:WHO" }, cwd), { ok: true, content: "env WHO=new" })
      assert.deepStrictEqual(yield* callTool(mcp, "extra__echo", { text: "hi" }, cwd), { ok: true, content: "echo: hi" })
      assert.deepStrictEqual(mcp.takeNotices(), [])
      yield* Scope.close(scope, Exit.void)
    }))

  it.live("closing the scope while an added server is still connecting ends the wait for it; nothing is added after", () =>
    Effect.gen(function*() {
      const { mcp, scope } = yield* started([])
      const ready = yield* mcp.add([fixture("mute", {}, join(fixtures, "hang.mjs"))])
      yield* waitUntil(() => mcp.status()[0]?.pid !== undefined, 10_000, "the server to be spawned")
      const pid = pidOf(mcp, "mute")
      yield* Scope.close(scope, Exit.void)
      yield* ready
      assert.isFalse(alive(pid))
      yield* Effect.flatten(mcp.add([fixture("late")]))
      assert.deepStrictEqual(mcp.status().map((s) => [s.name, s.state]), [["mute", "closed"]])
    }))
})

/** Runs the HTTP fixture for the scope; its port. */
const httpFixture = (env: Record<string, string> = {}) =>
  Effect.acquireRelease(
    Effect.callback<{ readonly port: number; readonly kill: () => void }, Error>((resume) => {
      const child = spawn(NODE, [bundled(join(fixtures, "http-server.ts"))], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] })
      let out = ""
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
        out += chunk
        const match = /listening (\d+)/.exec(out)
        if (match !== null) resume(Effect.succeed({ port: Number(match[1]), kill: () => child.kill("SIGKILL") }))
      })
      child.once("exit", () => resume(Effect.fail(new Error("the HTTP fixture exited"))))
    }),
    (server) => Effect.sync(server.kill)
  )

describe.concurrent("McpSession over Streamable HTTP", () => {
  it.live("connects, lists and calls; speaks an older revision with its header; a dead server fails on call", () =>
    Effect.gen(function*() {
      const current = yield* httpFixture()
      const old = yield* httpFixture({ MCP_FIXTURE_PROTOCOLS: "2025-06-18" })
      const http = (name: string, port: number): McpServer => ({
        type: "http",
        name,
        url: `http://127.0.0.1:${port}/mcp`,
        headers: [{ name: "x-skein-test", value: "1" }]
      })
      const { mcp, scope, cwd } = yield* started([http("web", current.port), http("old", old.port)])
      yield* mcp.settled
      const [web, older] = mcp.status()
      assert.deepStrictEqual([web!.state, web!.transport, web!.protocolVersion], ["ready", "http", "2025-11-25"])
      assert.deepStrictEqual([older!.state, older!.protocolVersion], ["ready", "2025-06-18"])
      assert.include(web!.tools, "web__echo")
      assert.deepStrictEqual(yield* callTool(mcp, "web__echo", { text: "over http" }, cwd), { ok: true, content: "echo: over http" })
      assert.deepStrictEqual(yield* callTool(mcp, "old__echo", { text: "older" }, cwd), { ok: true, content: "echo: older" })
      assert.deepStrictEqual(yield* callTool(mcp, "web__refuse", {}, cwd), { ok: false, content: "refused: not today" })
      old.kill()
      const out = yield* callTool(mcp, "old__echo", { text: "anyone?" }, cwd)
      assert.isFalse(out.ok)
      assert.include(out.content, "The MCP server \"old\" failed:")
      assert.deepStrictEqual(mcp.status().map((s) => s.state), ["ready", "failed"])
      assert.strictEqual(mcp.takeNotices().length, 1)
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.scoped))

  it.live("an SSE server is refused once (not advertised)", () =>
    Effect.gen(function*() {
      const { mcp, scope } = yield* started([{ type: "sse", name: "legacy", url: "http://127.0.0.1:9/sse", headers: [] }])
      yield* mcp.settled
      assert.deepStrictEqual([mcp.status()[0]!.state, mcp.status()[0]!.error], [
        "failed",
        "its transport is SSE, which Skein does not support (it advertises `mcpCapabilities.sse: false`)"
      ])
      assert.strictEqual(mcp.takeNotices().length, 1)
      yield* Scope.close(scope, Exit.void)
    }))
})
