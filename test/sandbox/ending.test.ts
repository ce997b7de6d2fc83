/**
 * How a sandboxed command's end is seen, on the real sandbox: bubblewrap (the leader) reports
 * the command's exit while the sandbox's init is still winding down; that is not something the
 * command left running, so it is neither signalled nor reported as such, and the call does
 * not wait in 10 ms steps for it. What the command did leave running is: the init waits for
 * it, and Skein kills it and says so, as for a command outside the sandbox. Where commands get
 * a cgroup, what runs of a sandboxed one is read from it alone (nothing in the sandbox can leave
 * it), never from a scan of /proc.
 */
import { assert, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdtempSync, realpathSync, rmSync } from "node:fs"
import { join } from "node:path"
import * as Sandbox from "../../src/sandbox/Sandbox.ts"
import * as Settings from "../../src/sandbox/Settings.ts"
import { bash } from "../../src/tools/bash.ts"
import * as Containment from "../../src/tools/process/Containment.ts"
import * as ProcTable from "../../src/tools/process/ProcTable.ts"
import * as Tool from "../../src/tools/Tool.ts"
import * as Bwrap from "../support/Bwrap.ts"
import { survivors, uniqueArg } from "../support/Escapes.ts"
import * as TempDir from "../support/TempDir.ts"
import * as ToolServices from "../support/ToolServices.ts"

/** A workspace under /var/tmp (a sandbox's /tmp is its own) and a session sandbox for it. */
const setup = Effect.gen(function*() {
  const base = yield* Effect.acquireRelease(
    Effect.sync(() => realpathSync(mkdtempSync(join("/var/tmp", "skein-sandbox-end-")))),
    (path) => Effect.sync(() => rmSync(path, { recursive: true, force: true }))
  )
  const manager = yield* Sandbox.make(Settings.DEFAULT, { skeinHome: join(base, "skein-home"), userHome: join(base, "home") })
  const sandbox = yield* manager.session({ cwd: base, roots: [base] })
  const context: Tool.ToolContext = { sessionId: "s1", toolCallId: "t1", cwd: base, roots: [base] }
  return { base, context, sandbox }
})

const RUNS = 20

Bwrap.describeWithBwrap("sandbox: a command's end", () => {
  it.live("a sandboxed command that leaves nothing running is never reported as leaving processes behind", () =>
    Effect.gen(function*() {
      const { context, sandbox } = yield* setup
      for (let i = 0; i < RUNS; i++) {
        // A child that ends before the command does: the sandbox's init reaps it, then winds down.
        const out = yield* Tool.run(bash, { command: "sleep 0.001 & wait; echo started" }, context).pipe(ToolServices.provide({ sandbox }), Effect.provide(TempDir.platform))
        assert.strictEqual(out.content, "started\n[exit code 0]", `run ${i + 1}`)
      }
    }).pipe(Effect.scoped), 120_000)

  it.live("the end of a sandboxed command is read from its cgroup, not from a scan of /proc", () =>
    Effect.gen(function*() {
      const { context, sandbox } = yield* setup
      if (Containment.mechanism() !== "cgroup") return
      // The first command probes the sandbox and makes the session's namespaces (their holders
      // are not sandboxed commands): not counted.
      yield* Tool.run(bash, { command: "true" }, context).pipe(ToolServices.provide({ sandbox }), Effect.provide(TempDir.platform))
      const before = ProcTable.scanCount()
      for (let i = 0; i < RUNS; i++) {
        const out = yield* Tool.run(bash, { command: "sleep 0.001 & wait; echo started" }, context).pipe(ToolServices.provide({ sandbox }), Effect.provide(TempDir.platform))
        assert.strictEqual(out.content, "started\n[exit code 0]", `run ${i + 1}`)
      }
      // Each scan reads every process above the command's pid: several ms on a busy machine.
      assert.strictEqual(ProcTable.scanCount() - before, 0)
    }).pipe(Effect.scoped), 120_000)

  it.live("what a sandboxed command leaves running is killed, and the model is told, as outside the sandbox", () =>
    Effect.gen(function*() {
      const { context, sandbox } = yield* setup
      const marks: Array<string> = []
      for (let i = 0; i < 5; i++) {
        const arg = uniqueArg()
        marks.push(arg)
        const out = yield* Tool.run(bash, { command: `sleep ${arg} & echo started` }, context).pipe(ToolServices.provide({ sandbox }), Effect.provide(TempDir.platform))
        assert.strictEqual(out.content, "started\n[exit code 0]\n[background processes still running at exit were killed (SIGTERM)]", `run ${i + 1}`)
      }
      assert.deepStrictEqual(marks.flatMap(survivors), [])
    }).pipe(Effect.scoped), 120_000)
})
