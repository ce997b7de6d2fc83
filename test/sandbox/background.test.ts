/**
 * Background commands on the real sandbox: a server started in the background runs in the
 * session's network namespace, reachable from the session's later sandboxed commands and from
 * nothing else (not from a command run outside the sandbox, not from another session), and
 * `kill_shell` ends the whole sandboxed tree; what one leaves running when it exits is killed and reported.
 */
import { assert, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import { mkdirSync, readFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import * as Sandbox from "../../src/sandbox/Sandbox.ts"
import * as Settings from "../../src/sandbox/Settings.ts"
import { bash_output, kill_shell } from "../../src/tools/background.ts"
import { bash } from "../../src/tools/bash.ts"
import * as Background from "../../src/tools/process/Background.ts"
import type * as Edges from "../../src/tools/Edges.ts"
import * as Tool from "../../src/tools/Tool.ts"
import { getCommand, killTagged, processesWith, serverCommand, uniqueTag } from "../support/Background.ts"
import * as Bwrap from "../support/Bwrap.ts"
import { survivors, uniqueArg } from "../support/Escapes.ts"
import * as TempDir from "../support/TempDir.ts"
import * as ToolServices from "../support/ToolServices.ts"
import * as Visible from "../support/Visible.ts"

/** A directory a sandboxed command sees (its /tmp is its own), removed with the scope. */
const dir = Visible.dir("skein-sandbox-bg-")

/** A session: its workspace, sandbox and background commands; `call` runs a tool in it. */
const session = (manager: Effect.Success<ReturnType<typeof Sandbox.make>>, ws: string) =>
  Effect.gen(function*() {
    mkdirSync(ws, { recursive: true })
    const scope = yield* Scope.make()
    yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
    const sandbox = yield* manager.session({ cwd: ws, roots: [ws] }).pipe(Scope.provide(scope))
    const shells = yield* Background.make().pipe(Scope.provide(scope))
    const ctx: Tool.ToolContext = { sessionId: "s", toolCallId: "c", cwd: ws, roots: [ws] }
    const call = (tool: Tool.Tool<any, Edges.Services>, args: unknown) =>
      Tool.run(tool, args, ctx).pipe(ToolServices.provide({ sandbox }), Effect.provide(TempDir.platform), Effect.provideService(Background.Current, shells))
    return { call, scope }
  })

Bwrap.describeWithBwrap("sandbox: background commands", () => {
  it.live("a background server is reachable from the session's sandboxed commands only; kill_shell ends its sandboxed tree", () => {
    const tag = uniqueTag()
    return Effect.gen(function*() {
      const base = yield* dir
      const home = join(base, "home")
      mkdirSync(home)
      const manager = yield* Sandbox.make(Settings.DEFAULT, { skeinHome: join(home, ".skein"), userHome: home })
      const a = yield* session(manager, join(base, "a"))
      const started = yield* a.call(bash, { command: serverCommand("port.txt", tag), run_in_background: true })
      assert.isTrue(started.ok, started.content)
      assert.include(started.content, "(in the sandbox)")

      const inside = yield* a.call(bash, { command: getCommand("port.txt", "/inside") })
      assert.isTrue(inside.ok, inside.content)
      assert.include(inside.content, `hello from ${tag}`)

      // The same port from outside the session's network: a command run outside the sandbox,
      // and another session's sandboxed command.
      const port = readFileSync(join(base, "a", "port.txt"), "utf8")
      const outside = yield* a.call(bash, { command: `echo ${port} > /var/tmp/${tag}.port; ${getCommand(`/var/tmp/${tag}.port`, "/outside")}`, sandbox: false, reason: "test" })
      rmSync(`/var/tmp/${tag}.port`, { force: true })
      assert.notInclude(outside.content, `hello from ${tag}`)
      const b = yield* session(manager, join(base, "b"))
      const other = yield* b.call(bash, { command: `echo ${port} > port.txt; ${getCommand("port.txt", "/other")}` })
      assert.notInclude(other.content, `hello from ${tag}`)
      assert.include(other.content, "cannot reach")

      const output = yield* a.call(bash_output, { id: "bg1" })
      assert.include(output.content, "served GET /inside")
      assert.notInclude(output.content, "/outside")
      assert.notInclude(output.content, "/other")

      assert.lengthOf(processesWith(tag), 1)
      const killed = yield* a.call(kill_shell, { id: "bg1" })
      assert.include(killed.content, "Stopped bg1.")
      assert.deepStrictEqual(processesWith(tag), [])
    }).pipe(Effect.scoped, Effect.ensuring(Effect.sync(() => killTagged(tag))))
  })

  it.live("a background command that exits leaving something running: that is killed, and bash_output says so", () =>
    Effect.gen(function*() {
      const base = yield* dir
      const home = join(base, "home")
      mkdirSync(home)
      const manager = yield* Sandbox.make(Settings.DEFAULT, { skeinHome: join(home, ".skein"), userHome: home })
      const a = yield* session(manager, join(base, "a"))
      const arg = uniqueArg()
      const started = yield* a.call(bash, { command: `sleep ${arg} & echo started`, run_in_background: true })
      assert.isTrue(started.ok, started.content)
      let output = ""
      for (let i = 0; i < 1_000 && !output.includes("[exited"); i++) {
        yield* Effect.sleep(20)
        output += (yield* a.call(bash_output, { id: "bg1" })).content
      }
      assert.include(output, "[exited with code 0]\n[background processes still running at exit were killed (SIGTERM)]")
      assert.deepStrictEqual(survivors(arg), [])
    }).pipe(Effect.scoped))
})
