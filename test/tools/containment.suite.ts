/**
 * The escape patterns of test/support/Escapes.ts against each way a command ends inside Skein
 * (it completes, it times out, the call is interrupted) and an MCP server whose daemon must die
 * with it. Run once per mechanism by containment-cgroup.test.ts and containment-marker.test.ts
 * (the mechanism is chosen once per process, so each file is its own process).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/testing/TestClock"
import { existsSync, mkdtempSync, realpathSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as McpSession from "../../src/mcp/McpSession.ts"
import { bash } from "../../src/tools/bash.ts"
import * as Containment from "../../src/tools/process/Containment.ts"
import * as ProcessGroup from "../../src/tools/process/ProcessGroup.ts"
import * as Tool from "../../src/tools/Tool.ts"
import { ESCAPES, escapeCommand, escapePid, killSurvivors, survivors, uniqueArg } from "../support/Escapes.ts"
import * as TempDir from "../support/TempDir.ts"
import * as ToolServices from "../support/ToolServices.ts"

const NODE = join(import.meta.dirname, "..", "..", "node_modules", ".bin", "node")
const MCP_DAEMON = join(import.meta.dirname, "..", "fixtures", "mcp", "daemonizing.mjs")

const context = (cwd: string): Tool.ToolContext => ({
  sessionId: "s1",
  toolCallId: "t1",
  cwd,
  roots: [cwd],
})

const run = (raw: unknown, cwd: string) => Tool.run(bash, raw, context(cwd)).pipe(ToolServices.provide(), Effect.provide(TempDir.platform))

const waitUntil = (done: () => boolean, ms: number, what: string) =>
  Effect.gen(function*() {
    const start = performance.now()
    while (!done()) {
      if (performance.now() - start > ms) return assert.fail(`timed out waiting for ${what}`)
      yield* Effect.sleep(10)
    }
  })

/** Runs `body` with a fresh directory and a fresh sleep argument; whatever survives is killed after. */
const withEscape = <A>(body: (dir: string, arg: string) => Effect.Effect<A, never, Scope.Scope>) =>
  Effect.gen(function*() {
    const dir = yield* TempDir.make()
    const arg = uniqueArg()
    yield* Effect.addFinalizer(() => Effect.sync(() => killSurvivors([arg])))
    return yield* body(dir, arg)
  }).pipe(Effect.scoped)

export const containmentSuite = (expected: Containment.Mechanism) => {
  it("runs with the mechanism under test", () => {
    assert.strictEqual(Containment.mechanism(), expected)
  })

  for (const escape of ESCAPES) {
    if (escape.cgroupOnly === true && expected !== "cgroup") continue
    describe(escape.name, () => {
      it.live("is killed when the command completes, and the note says so", () =>
        withEscape((dir, arg) =>
          Effect.gen(function*() {
            const out = yield* run({ command: escapeCommand(dir, [{ escape, arg }]) }, dir)
            assert.isAbove(escapePid(dir, 0), 0)
            assert.strictEqual(out.content, "started\n[exit code 0]\n[background processes still running at exit were killed (SIGTERM)]")
            assert.deepStrictEqual(survivors(arg), [])
          })))

      // The timeout is the turn's clock: the test moves it once the escape runs (real processes
      // are waited for in real time), instead of waiting the timeout out.
      it.effect("is killed on timeout", () =>
        withEscape((dir, arg) =>
          Effect.gen(function*() {
            const ready = join(dir, "ready")
            const command = `${escapeCommand(dir, [{ escape, arg }])}\n: > ${ready}\nsleep 30`
            const fiber = yield* Effect.forkChild(run({ command, timeout_ms: 1_500 }, dir), { startImmediately: true })
            yield* TestClock.withLive(waitUntil(() => existsSync(ready), 30_000, "the escape to run"))
            // Not yet: the command is still running short of its timeout.
            yield* TestClock.adjust(1_499)
            assert.isUndefined(fiber.pollUnsafe())
            yield* TestClock.adjust(1)
            const out = yield* Fiber.join(fiber)
            assert.isAbove(escapePid(dir, 0), 0)
            assert.strictEqual(out.content, "started\n[killed by SIGTERM after timeout of 1500 ms]")
            assert.deepStrictEqual(survivors(arg), [])
          })))

      it.live("is killed when the call is interrupted (cancel)", () =>
        withEscape((dir, arg) =>
          Effect.gen(function*() {
            const fiber = yield* Effect.forkChild(run({ command: `${escapeCommand(dir, [{ escape, arg }])}\nsleep 30` }, dir))
            yield* waitUntil(() => escapePid(dir, 0) > 0 && survivors(arg).length > 0, 5_000, "the escape to run")
            assert.deepStrictEqual(survivors(arg), [escapePid(dir, 0)])
            yield* Fiber.interrupt(fiber)
            // The interruption returned only once the whole tree was dead.
            assert.deepStrictEqual(survivors(arg), [])
          })))
    })
  }

  it.live("an MCP server's daemon is killed when the connection closes", () =>
    withEscape((dir, arg) =>
      Effect.gen(function*() {
        const cwd = realpathSync(mkdtempSync(join(tmpdir(), "skein-mcp-")))
        const pidfile = join(dir, "daemon.pid")
        const scope = yield* Scope.make()
        const mcp = yield* McpSession.start({
          servers: [{ name: "d", command: NODE, args: [MCP_DAEMON], env: [{ name: "MCP_DAEMON_PIDFILE", value: pidfile }, { name: "MCP_DAEMON_ARG", value: arg }] }],
          cwd
        }).pipe(Scope.provide(scope))
        yield* mcp.settled
        assert.strictEqual(mcp.status()[0]!.state, "ready")
        yield* waitUntil(() => existsSync(pidfile) && survivors(arg).length === 1, 5_000, "the server's daemon")
        yield* Scope.close(scope, Exit.void)
        assert.deepStrictEqual(survivors(arg), [])
      })))

  it.live("200 quick commands: none is reported as leaving processes behind, none is left tracked", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const notes: Array<string> = []
      for (let i = 0; i < 200; i++) {
        const out = yield* run({ command: "true" }, dir)
        if (out.content !== "(no output)\n[exit code 0]") notes.push(out.content)
      }
      assert.deepStrictEqual(notes, [])
      assert.deepStrictEqual([...ProcessGroup.liveGroups()], [])
    }).pipe(Effect.scoped), 60_000)
}
