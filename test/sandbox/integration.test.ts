/**
 * What starts commands, on the real sandbox: the `bash` tool (the model told when the
 * sandbox stopped it, a timeout that kills the sandboxed tree, read-only commands, a command
 * allowed to run outside), an MCP stdio server that asks for the sandbox, and a linked
 * worktree (an isolated child's) that can commit but not touch the main repository's
 * configuration or hooks.
 */
import { assert, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as McpSession from "../../src/mcp/McpSession.ts"
import * as Sandbox from "../../src/sandbox/Sandbox.ts"
import type { SessionSandbox } from "../../src/tools/Sandboxed.ts"
import * as Settings from "../../src/sandbox/Settings.ts"
import { bash } from "../../src/tools/bash.ts"
import type { ClientTerminal } from "../../src/tools/Terminals.ts"
import * as Tool from "../../src/tools/Tool.ts"
import * as ProcessGroup from "../../src/tools/process/ProcessGroup.ts"
import * as Bwrap from "../support/Bwrap.ts"
import { survivors, uniqueArg } from "../support/Escapes.ts"
import * as TempDir from "../support/TempDir.ts"
import * as ToolServices from "../support/ToolServices.ts"
import * as Visible from "../support/Visible.ts"

const SERVER = join(import.meta.dirname, "..", "fixtures", "mcp", "server.ts")

/** The fixture MCP server (`test/fixtures/mcp/server.ts`), asking for the sandbox. */
const sandboxedServer = (name: string, env: Record<string, string>) => ({
  name,
  command: Visible.node(),
  args: [Visible.bundle(SERVER)],
  env: Object.entries(env).map(([key, value]) => ({ name: key, value })),
  sandbox: true
})

/** A directory a sandboxed command sees (its /tmp is its own), removed with the scope. */
const dir = Visible.dir("skein-sandbox-it-")

const setup = (settings: Partial<Settings.Settings> = {}, roots?: (base: string) => ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const base = yield* dir
    const ws = join(base, "ws")
    const outside = join(base, "outside")
    const home = join(base, "home")
    for (const d of [ws, outside, home]) mkdirSync(d)
    const manager = yield* Sandbox.make({ ...Settings.DEFAULT, ...settings }, { skeinHome: join(home, ".skein"), userHome: home })
    const sandbox = yield* manager.session({ cwd: ws, roots: roots?.(base) ?? [ws] })
    return { base, ws, outside, home, sandbox, manager }
  })

/** A call in `cwd`, and the sandbox its turn's commands run in. */
const ctx = (cwd: string, sandbox: SessionSandbox, readOnly = false): { readonly context: Tool.ToolContext; readonly sandbox: SessionSandbox } => ({
  context: { sessionId: "s1", toolCallId: "c1", cwd, roots: [cwd], readOnly },
  sandbox
})

const runBash = (args: Record<string, unknown>, call: ReturnType<typeof ctx>) =>
  Tool.run(bash, args, call.context).pipe(ToolServices.provide({ sandbox: call.sandbox }), Effect.provide(TempDir.platform))

Bwrap.describeWithBwrap("sandbox: the bash tool", () => {
  it.live("tells the model when the sandbox refused a write, and how to ask to run outside", () =>
    Effect.gen(function*() {
      const { ws, outside, sandbox } = yield* setup()
      const output = yield* runBash({ command: `echo x > ${outside}/f` }, ctx(ws, sandbox))
      assert.isFalse(output.ok)
      assert.include(output.content, "Read-only file system")
      assert.include(output.content, "[sandbox] This command ran in Skein's sandbox")
      assert.include(output.content, "\"sandbox\": false")
      // Output that shows no refusal gets no such line.
      const plain = yield* runBash({ command: "echo fine" }, ctx(ws, sandbox))
      assert.notInclude(plain.content, "[sandbox]")
    }))

  it.live("required: the line says no command runs outside", () =>
    Effect.gen(function*() {
      const { ws, sandbox } = yield* setup({ mode: "required" })
      const output = yield* runBash({ command: "curl -sS --max-time 3 http://example.com/ || true" }, ctx(ws, sandbox))
      assert.include(output.content, "The sandbox is required here")
    }))

  it.live("a timeout kills the sandboxed command and everything it started", () =>
    Effect.gen(function*() {
      const { ws, sandbox } = yield* setup()
      const arg = uniqueArg()
      const output = yield* runBash({ command: `(setsid sleep ${arg} &) ; sleep ${arg}`, timeout_ms: 500 }, ctx(ws, sandbox))
      assert.isFalse(output.ok)
      assert.include(output.content, "after timeout of 500 ms")
      assert.deepStrictEqual(survivors(arg), [])
    }))

  // The sandbox's own processes (bubblewrap's init in the command's pid namespace) may still be
  // exiting when the process Skein started has exited: they are not something the command left.
  it.live("200 quick sandboxed commands: none is reported as leaving processes behind", () =>
    Effect.gen(function*() {
      const { ws, sandbox } = yield* setup()
      const notes: Array<string> = []
      for (let i = 0; i < 200; i++) {
        const out = yield* runBash({ command: i % 2 === 0 ? "true" : "echo x > f.txt && rm f.txt" }, ctx(ws, sandbox))
        if (out.content !== "(no output)\n[exit code 0]") notes.push(out.content)
      }
      assert.deepStrictEqual(notes, [])
      assert.deepStrictEqual([...ProcessGroup.liveGroups()], [])
    }), 120_000)

  it.live("what a sandboxed command leaves running does not survive it, and the model is told", () =>
    Effect.gen(function*() {
      const { ws, sandbox } = yield* setup()
      for (let i = 0; i < 5; i++) {
        const arg = uniqueArg()
        const left = yield* runBash({ command: `sleep ${arg} & (setsid sleep ${arg} &); echo started` }, ctx(ws, sandbox))
        assert.strictEqual(left.content, "started\n[exit code 0]\n[background processes still running at exit were killed (SIGTERM)]")
        assert.deepStrictEqual(survivors(arg), [])
      }
      assert.deepStrictEqual([...ProcessGroup.liveGroups()], [])
    }))

  it.live("a command allowed because it only reads gets the workspace read-only; one allowed outside runs outside", () =>
    Effect.gen(function*() {
      const { ws, outside, sandbox } = yield* setup()
      const ro = yield* runBash({ command: "echo x > made.txt" }, ctx(ws, sandbox, true))
      assert.isFalse(ro.ok)
      assert.isFalse(existsSync(join(ws, "made.txt")))
      const out = yield* runBash({ command: `echo x > ${outside}/f`, sandbox: false, reason: "test" }, ctx(ws, sandbox))
      assert.isTrue(out.ok)
      assert.strictEqual(readFileSync(join(outside, "f"), "utf8"), "x\n")
    }))

  it.live("with a client's terminal: a sandboxed command still runs in the sandbox; one allowed outside runs in the client's terminal", () =>
    Effect.gen(function*() {
      const { ws, sandbox } = yield* setup()
      const asked: Array<string> = []
      const terminal: ClientTerminal = {
        run: (options) =>
          Effect.sync(() => void asked.push(options.command)).pipe(
            Effect.as({ terminalId: "term-1", output: "from the editor\n", truncated: false, exitCode: 0, signal: null, timedOut: false })
          )
      }
      const call = ctx(ws, sandbox)
      const run = (args: Record<string, unknown>) =>
        Tool.run(bash, args, call.context).pipe(ToolServices.provide({ sandbox, client: { terminal } }), Effect.provide(TempDir.platform))
      const inside = yield* run({ command: "echo in" })
      assert.strictEqual(inside.content, "in\n[exit code 0]")
      assert.deepStrictEqual(asked, [])
      const outside = yield* run({ command: "echo out", sandbox: false, reason: "test" })
      assert.strictEqual(outside.content, "from the editor\n[exit code 0]")
      assert.deepStrictEqual(asked, ["echo out"])
    }))
})

Bwrap.describeWithBwrap("sandbox: MCP servers and worktrees", () => {
  it.live("an MCP stdio server that asks for the sandbox runs in it; without one it does not start", () =>
    Effect.gen(function*() {
      const { ws, outside, sandbox } = yield* setup()
      const scope = yield* Scope.make()
      yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
      const server = sandboxedServer("box", { MCP_FIXTURE_NOTES: outside })
      const mcp = yield* McpSession.start({ servers: [server], cwd: ws, sandbox }).pipe(Scope.provide(scope))
      yield* mcp.settled
      assert.strictEqual(mcp.status()[0]!.state, "ready")
      const note = yield* Tool.run(mcp.get("box__write_note")!, { name: "n.txt", text: "x" }, ctx(ws, sandbox).context).pipe(ToolServices.provide({ sandbox }), Effect.provide(TempDir.platform))
      assert.isFalse(note.ok)
      assert.isFalse(existsSync(join(outside, "n.txt")))
      const unsandboxed = yield* McpSession.start({ servers: [server], cwd: ws }).pipe(Scope.provide(scope))
      yield* unsandboxed.settled
      const status = unsandboxed.status()[0]!
      assert.strictEqual(status.state, "failed")
      assert.include(JSON.stringify(status), "asks for the sandbox")
    }))

  it.live("in a linked worktree, commits work; the main repository's config, hooks and other branches stay as they were", () =>
    Effect.gen(function*() {
      const base = yield* dir
      const main = join(base, "main")
      const tree = join(base, "tree")
      const git = (cwd: string, ...args: Array<string>) => execFileSync("git", ["-c", "user.email=a@b", "-c", "user.name=a", ...args], { cwd, encoding: "utf8" })
      mkdirSync(main)
      git(main, "init", "-q", "-b", "main")
      writeFileSync(join(main, "a.txt"), "a\n")
      git(main, "add", "a.txt")
      git(main, "commit", "-q", "-m", "first")
      git(main, "worktree", "add", "-q", "-b", "skein/child", tree)
      const config = readFileSync(join(main, ".git", "config"), "utf8")
      const mainHead = git(main, "rev-parse", "main").trim()
      const manager = yield* Sandbox.make(Settings.DEFAULT, { skeinHome: join(base, ".skein"), userHome: base })
      const sandbox = yield* manager.session({ cwd: tree, roots: [tree] })
      const ran = yield* Bwrap.run(sandbox, [
        "echo b > b.txt && git add b.txt && git -c user.email=a@b -c user.name=a commit -q -m second && echo committed",
        `echo evil > ${main}/.git/hooks/pre-commit || echo refused-hook`,
        `git config --file ${main}/.git/config core.hooksPath /x || echo refused-config`,
        `git update-ref refs/heads/main HEAD || echo refused-main`,
        "echo 'gitdir: /elsewhere' > .git || echo refused-pointer"
      ].join("; "), { cwd: tree })
      for (const word of ["committed", "refused-hook", "refused-config", "refused-main", "refused-pointer"]) assert.include(ran.output, word)
      assert.include(git(main, "log", "--oneline", "skein/child"), "second")
      assert.strictEqual(git(main, "rev-parse", "main").trim(), mainHead)
      assert.strictEqual(readFileSync(join(main, ".git", "config"), "utf8"), config)
      assert.isFalse(existsSync(join(main, ".git", "hooks", "pre-commit")))
    }))
})
