/**
 * Background commands on real processes, without a session around them: `bash` with
 * `run_in_background` returns an id at once, `bash_output` returns what arrived since the last
 * read (bounded, filtered on request) and the status, `kill_shell` stops the command and all
 * it started, the registry's scope closing kills everything, and its limits hold.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/testing/TestClock"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Definitions from "../../src/agents/Definitions.ts"
import * as Secrets from "../../src/secrets/Secrets.ts"
import { bash_output, kill_shell, listed } from "../../src/tools/background.ts"
import { bash } from "../../src/tools/bash.ts"
import * as Background from "../../src/tools/process/Background.ts"
import * as ProcessGroup from "../../src/tools/process/ProcessGroup.ts"
import type * as Edges from "../../src/tools/Edges.ts"
import type { ClientTerminal } from "../../src/tools/Terminals.ts"
import * as Tool from "../../src/tools/Tool.ts"
import * as ToolWorker from "../../src/tools/worker/ToolWorker.ts"
import { eventually, getCommand, processesWith, serverCommand, uniqueTag } from "../support/Background.ts"
import { survivors, uniqueArg } from "../support/Escapes.ts"
import * as TempDir from "../support/TempDir.ts"
import * as ToolServices from "../support/ToolServices.ts"

const setup = (options: Background.Options = {}, services: ToolServices.Parts = {}) =>
  Effect.gen(function*() {
    const cwd = yield* TempDir.make()
    const scope = yield* Scope.make()
    yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
    const shells = yield* Background.make(options).pipe(Scope.provide(scope))
    const ctx: Tool.ToolContext = { sessionId: "s1", toolCallId: "c1", cwd, roots: [cwd] }
    const call = (tool: Tool.Tool<any, Edges.Services>, args: unknown) =>
      Tool.run(tool, args, ctx).pipe(ToolServices.provide(services), Effect.provide(TempDir.platform), Effect.provideService(Background.Current, shells))
    const start = (command: string, extra: Record<string, unknown> = {}) =>
      Effect.map(call(bash, { command, run_in_background: true, ...extra }), (out) => {
        assert.isTrue(out.ok, out.content)
        return /as (bg\d+)/.exec(out.content)![1]!
      })
    const read = (id: string, filter?: string) => call(bash_output, filter === undefined ? { id } : { id, filter })
    /** Reads until `done` holds for everything read so far; what was read, and the last result. */
    const readUntil = (id: string, done: (text: string, last: Tool.ToolOutput) => boolean) =>
      Effect.gen(function*() {
        let all = ""
        return yield* eventually(`${id}'s output`, Effect.map(read(id), (last) => {
          all += last.content.replace(/\n\[[^\n]*\]$/, "").replace("(no new output)", "")
          return done(all, last) ? { all, last } : undefined
        }))
      })
    return { cwd, scope, shells, call, start, read, readUntil }
  })

describe("background commands", () => {
  it.live("bash returns an id at once; bash_output returns what arrived since the last read, and whether it still runs", () =>
    Effect.gen(function*() {
      const { cwd, start, read, readUntil } = yield* setup()
      const id = yield* start("echo one; until [ -e go ]; do sleep 0.01; done; echo two; until [ -e end ]; do sleep 0.01; done; echo three")
      assert.strictEqual(id, "bg1")
      const first = yield* readUntil(id, (all) => all.includes("one"))
      assert.include(first.last.content, "[still running]")
      writeFileSync(join(cwd, "go"), "")
      const second = yield* readUntil(id, (all) => all.includes("two"))
      assert.notInclude(second.all, "one", "a read returns only what is new")
      assert.include(second.last.content, "[still running]")
      writeFileSync(join(cwd, "end"), "")
      const third = yield* readUntil(id, (_, last) => last.content.includes("[exited with code 0]"))
      assert.include(third.all, "three")
      assert.isTrue(third.last.ok)
      const after = yield* read(id)
      assert.strictEqual(after.content, "(no new output)\n[exited with code 0]")
    }))

  it.live("a dev server keeps running after the call that started it, reachable from later commands", () =>
    Effect.gen(function*() {
      const { call, start, read, shells } = yield* setup()
      const tag = uniqueTag()
      const id = yield* start(serverCommand("port.txt", tag))
      const got = yield* call(bash, { command: getCommand("port.txt", "/one") })
      assert.isTrue(got.ok, got.content)
      assert.include(got.content, `hello from ${tag}`)
      const output = yield* read(id)
      assert.include(output.content, "listening on")
      assert.include(output.content, "served GET /one")
      assert.include(output.content, "[still running]")
      assert.deepStrictEqual(shells.list().map((s) => [s.id, s.status._tag]), [[id, "running"]])
      assert.lengthOf(processesWith(tag), 1)
    }))

  it.live("kill_shell stops the command and everything it started; its output stays readable", () =>
    Effect.gen(function*() {
      const { call, start, read } = yield* setup()
      const arg = uniqueArg()
      const id = yield* start(`echo started; (setsid sleep ${arg} &); sleep ${arg}`)
      yield* eventually("both sleeps", Effect.sync(() => (survivors(arg).length === 2 ? true : undefined)))
      const killed = yield* call(kill_shell, { id })
      assert.isTrue(killed.ok)
      assert.include(killed.content, `Stopped ${id}.`)
      assert.include(killed.content, "[stopped by kill_shell")
      assert.deepStrictEqual(survivors(arg), [], "the setsid'd sleep is gone too, before kill_shell answered")
      const output = yield* read(id)
      assert.include(output.content, "started")
      assert.include(output.content, "[stopped by kill_shell")
      const again = yield* call(kill_shell, { id })
      assert.include(again.content, `${id} had already ended.`)
    }))

  it.live("closing the registry's scope (the session's) kills every background command and all they started", () =>
    Effect.gen(function*() {
      const { start, scope } = yield* setup()
      const arg = uniqueArg()
      const tag = uniqueTag()
      yield* start(`(setsid sleep ${arg} &); sleep ${arg}`)
      yield* start(serverCommand("port.txt", tag))
      yield* eventually("the commands", Effect.sync(() => (survivors(arg).length === 2 && processesWith(tag).length === 1 ? true : undefined)))
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(survivors(arg), [])
      assert.deepStrictEqual(processesWith(tag), [])
    }))

  it.live("a start that races the session's close kills what it spawned, and says why", () =>
    Effect.gen(function*() {
      const { cwd, scope, shells } = yield* setup()
      const arg = uniqueArg()
      const go = yield* Deferred.make<void>()
      const starting = yield* Effect.forkChild(shells.start({
        command: `sleep ${arg}`,
        sandboxed: false,
        spawn: (onOutput) =>
          Effect.andThen(
            Deferred.await(go),
            ProcessGroup.spawn({ shell: "/bin/sh", command: `sleep ${arg}`, cwd, env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" }, onOutput })
          )
      }))
      yield* Scope.close(scope, Exit.void)
      yield* Deferred.succeed(go, undefined)
      const result = yield* Fiber.await(starting)
      assert.isTrue(Exit.isFailure(result))
      assert.include(String(Exit.isFailure(result) ? Cause.squash(result.cause) : ""), "The session is closing")
      assert.deepStrictEqual(survivors(arg), [])
      const late = yield* Effect.flip(shells.start({ command: "true", sandboxed: false, spawn: () => Effect.die("must not spawn") }))
      assert.include(late, "The session is closing")
    }))

  it.live("what a command leaves running when it exits is killed, and said", () =>
    Effect.gen(function*() {
      const { start, readUntil } = yield* setup()
      const arg = uniqueArg()
      const id = yield* start(`(setsid sh -c 'echo $$ > left.pid; exec sleep ${arg}' &); until [ -s left.pid ]; do sleep 0.01; done; echo bye`)
      const { last } = yield* readUntil(id, (_, last) => !last.content.includes("[still running]"))
      assert.include(last.content, "[exited with code 0]")
      assert.include(last.content, "[background processes still running at exit were killed")
      assert.deepStrictEqual(survivors(arg), [])
    }))

  it.live("output is bounded like bash's: head and tail of what arrived since the last read, the middle counted", () =>
    Effect.gen(function*() {
      const { start, read, shells } = yield* setup()
      const id = yield* start("echo BEGIN; head -c 300000 /dev/zero | tr '\\0' x; echo; echo END; exit 3")
      yield* eventually("the exit", Effect.sync(() => (shells.list()[0]?.status._tag === "exited" ? true : undefined)))
      // One read takes all of it: the first and last 32 KB.
      const last = yield* read(id)
      assert.isBelow(Buffer.byteLength(last.content), 70_000)
      assert.match(last.content, /^BEGIN\nxxx/)
      assert.match(last.content, /\n… \d+ bytes omitted …\n/)
      assert.isTrue(last.details?.truncated)
      assert.include(last.content, "xxx\nEND\n[exited with code 3]")
      assert.include(last.content, "[exited with code 3]")
      assert.isFalse(last.ok)
      assert.strictEqual(last.details?.exitCode, 3)
    }))

  it.live("a filter keeps the matching lines; a bad or runaway filter loses nothing", () =>
    Effect.gen(function*() {
      const { start, read, readUntil, shells } = yield* setup()
      const id = yield* start(`printf 'alpha 1\\nbeta 2\\nalpha 3\\n${"a".repeat(40)}b\\n'`)
      yield* eventually("the exit", Effect.sync(() => (shells.list()[0]?.status._tag === "exited" ? true : undefined)))
      const bad = yield* read(id, "(")
      assert.isFalse(bad.ok)
      assert.include(bad.content, "Invalid regular expression")
      const runaway = yield* read(id, "^(a+)+$").pipe(Effect.provideService(ToolWorker.TimeLimit, Duration.millis(200)))
      assert.isFalse(runaway.ok)
      assert.include(runaway.content, "the output was kept for the next read")
      const filtered = yield* read(id, "^alpha")
      assert.isTrue(filtered.ok)
      assert.include(filtered.content, "alpha 1\nalpha 3\n[2 matching lines of the new output]")
      assert.notInclude(filtered.content, "beta")
      // The other lines were dropped with the read.
      const rest = yield* readUntil(id, () => true)
      assert.include(rest.last.content, "(no new output)")
    }))

  it.live("at most maxRunning run at once, with a clear error; a stopped one frees its slot", () =>
    Effect.gen(function*() {
      const { start, call } = yield* setup({ maxRunning: 2 })
      const arg = uniqueArg()
      yield* start(`sleep ${arg}`)
      yield* start(`sleep ${arg}`)
      const refused = yield* call(bash, { command: `sleep ${arg}`, run_in_background: true })
      assert.isFalse(refused.ok)
      assert.include(refused.content, "Too many background commands running in this session (2: bg1, bg2)")
      assert.include(refused.content, "kill_shell")
      yield* call(kill_shell, { id: "bg1" })
      assert.strictEqual(yield* start(`sleep ${arg}`), "bg3")
    }))

  it.live("an unknown id says which exist; without a session nothing starts", () =>
    Effect.gen(function*() {
      const { start, read, call } = yield* setup()
      const arg = uniqueArg()
      yield* start(`sleep ${arg}`)
      const unknown = yield* read("bg7")
      assert.isFalse(unknown.ok)
      assert.include(unknown.content, "There is no background command \"bg7\" in this session (there are: bg1)")
      const killUnknown = yield* call(kill_shell, { id: "nope" })
      assert.isFalse(killUnknown.ok)
      const cwd = yield* TempDir.make()
      const ctx: Tool.ToolContext = { sessionId: "s1", toolCallId: "c1", cwd, roots: [cwd] }
      const alone = yield* Tool.run(bash, { command: `sleep ${arg}`, run_in_background: true }, ctx).pipe(ToolServices.provide(), Effect.provide(TempDir.platform))
      assert.isFalse(alone.ok)
      assert.include(alone.content, "Background commands are not available here")
      const read2 = yield* Tool.run(bash_output, { id: "bg1" }, ctx).pipe(ToolServices.provide(), Effect.provide(TempDir.platform))
      assert.isFalse(read2.ok)
    }))

  it.effect("timeout_ms stops a background command after that long (the session's clock)", () =>
    Effect.gen(function*() {
      const { start, read, shells } = yield* setup()
      const arg = uniqueArg()
      const id = yield* start(`sleep ${arg}`, { timeout_ms: 5_000 })
      yield* eventually("the sleep", Effect.sync(() => (survivors(arg).length === 1 ? true : undefined)))
      yield* TestClock.adjust(4_999)
      assert.strictEqual(shells.list()[0]!.status._tag, "running")
      yield* TestClock.adjust(1)
      yield* eventually("the stop", Effect.sync(() => (shells.list()[0]!.status._tag !== "running" ? true : undefined)))
      assert.deepStrictEqual(survivors(arg), [])
      const output = yield* read(id)
      assert.include(output.content, "[killed by SIGTERM after timeout of 5000 ms]")
      assert.isFalse(output.ok)
    }))

  it.live("a background command runs in Skein even when the client offers a terminal, and its secrets are redacted", () =>
    Effect.gen(function*() {
      const asked: Array<string> = []
      const terminal: ClientTerminal = { run: (options) => Effect.sync(() => void asked.push(options.command)).pipe(Effect.andThen(Effect.fail("not expected"))) }
      const { start, readUntil } = yield* setup({}, { client: { terminal } })
      const secret = `bg-secret-${uniqueTag()}-value`
      Secrets.registry().addValue(secret)
      const id = yield* start(`echo "local $$"; printf '%s\n' '${secret.slice(0, 10)}''${secret.slice(10)}'`)
      const { all } = yield* readUntil(id, (_, last) => last.content.includes("[exited with code 0]"))
      assert.match(all, /local \d+/)
      assert.notInclude(all, secret)
      assert.deepStrictEqual(asked, [])
    }))

  it("an agent whose tools name bash may read and stop its background commands; Claude Code's names are taken", () => {
    const explorer = Definitions.builtins.find((agent) => agent.name === "explorer")!
    assert.isTrue(listed(explorer.tools!, "bash_output"))
    assert.isTrue(listed(explorer.tools!, "kill_shell"))
    assert.isFalse(listed(["read", "grep"], "bash_output"), "without bash there is nothing to read")
    const claude = Definitions.parseMarkdown("---\nname: runner\ndescription: Runs\ntools: Bash, BashOutput, KillShell\n---\n", "/x/runner.md")
    assert.deepStrictEqual("tools" in claude ? claude.tools : claude, ["bash", "bash_output", "kill_shell"])
  })
})
