/**
 * What a command holds: its stdio and nothing else. The chain that starts a sandboxed one
 * (`nsenter`, then bubblewrap, which hands every descriptor it gets on to the command) must not
 * carry the session's namespaces or the seccomp filter; no process Skein starts, sandboxed or
 * not, may carry anything Skein's own process was given when it started (an editor's pipes, a
 * parent's IPC channel). Here Skein is embedded (a test runner's process, which keeps its
 * descriptors): each of those is `/dev/null` in the child. test/e2e/descriptors.test.ts has the
 * `skein` command, which closes them.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { join } from "node:path"
import * as Descriptors from "../../src/tools/process/Descriptors.ts"
import * as ProcessGroup from "../../src/tools/process/ProcessGroup.ts"
import * as Sandbox from "../../src/sandbox/Sandbox.ts"
import * as Settings from "../../src/sandbox/Settings.ts"
import { bash } from "../../src/tools/bash.ts"
import * as Tool from "../../src/tools/Tool.ts"
import * as Bwrap from "../support/Bwrap.ts"
import * as TempDir from "../support/TempDir.ts"
import * as ToolServices from "../support/ToolServices.ts"
import * as Visible from "../support/Visible.ts"

/** The shell's own descriptors, `N -> target` (`ls` runs as its child: its own are not listed). */
const LIST = "ls -l /proc/$$/fd; true"

const setup = Effect.gen(function*() {
  const base = yield* Visible.dir("skein-sandbox-fds-")
  const manager = yield* Sandbox.make(Settings.DEFAULT, { skeinHome: join(base, "skein-home"), userHome: join(base, "home") })
  const sandbox = yield* manager.session({ cwd: base, roots: [base] })
  return { base, sandbox }
})

/** Descriptor → what it is, from the listing. */
const descriptors = (listing: string): Map<number, string> =>
  new Map(listing.split("\n").flatMap((line) => {
    const match = / (\d+) -> (.*)$/.exec(line)
    return match === null ? [] : [[Number(match[1]), match[2]!] as const]
  }))

/**
 * Only stdio, and `/dev/null` wherever this test's process holds something it was started
 * with (a test runner's pipe: the command must not get it).
 */
const onlyStdio = (listing: string) => {
  const found = descriptors(listing)
  assert.deepStrictEqual([0, 1, 2].map((fd) => found.has(fd)), [true, true, true], listing)
  const beyond = [...found].filter(([fd]) => fd > 2)
  assert.deepStrictEqual(beyond.filter(([, what]) => what !== "/dev/null"), [], listing)
}

describe("Descriptors", () => {
  it("reads close-on-exec from fdinfo's flags", () => {
    assert.isTrue(Descriptors.inheritable("pos:\t0\nflags:\t0100001\nmnt_id:\t29\n"))
    assert.isFalse(Descriptors.inheritable("pos:\t0\nflags:\t02100002\nmnt_id:\t29\n"))
    assert.isUndefined(Descriptors.inheritable("pos:\t0\n"))
  })

  it("puts the given descriptors first, then the blank over each inherited one beyond them", () => {
    assert.deepStrictEqual(Descriptors.slots([40], [], 41), [40])
    assert.deepStrictEqual(Descriptors.slots([40], [3, 6, 9], 41), [40, "ignore", "ignore", 41, "ignore", "ignore", 41])
    assert.deepStrictEqual(Descriptors.slots([], [5], 41), ["ignore", "ignore", 41])
    // A place the caller leaves empty is no way through either.
    assert.deepStrictEqual(Descriptors.slots([40, "ignore"], [4], 41), [40, 41])
  })

  it.live("an unsandboxed process Skein starts holds only its stdio, and /dev/null over what this process inherited", () =>
    Effect.gen(function*() {
      let output = ""
      const group = yield* ProcessGroup.spawnProgram({
        file: "/bin/sh",
        args: ["-c", LIST],
        cwd: "/",
        env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" },
        onOutput: (chunk) => void (output += Buffer.from(chunk).toString("utf8"))
      })
      yield* ProcessGroup.awaitFor(group.exited, 60_000)
      yield* ProcessGroup.awaitFor(group.drained, 60_000)
      yield* ProcessGroup.release(group)
      assert.strictEqual(group.exitStatus()?.code, 0, output)
      onlyStdio(output)
      // Whatever this process inherited is there, as /dev/null.
      const found = descriptors(output)
      assert.deepStrictEqual(Descriptors.inherited().filter((fd) => found.get(fd) !== "/dev/null"), [], output)
    }))
})

Bwrap.describeWithBwrap("sandbox: a command's descriptors", () => {
  it.live("a sandboxed command holds only its stdio: not the session's namespaces nor the filter", () =>
    Effect.gen(function*() {
      const { base, sandbox } = yield* setup
      const ran = yield* Bwrap.run(sandbox, LIST, { cwd: base })
      assert.strictEqual(ran.code, 0, ran.output)
      assert.notMatch(ran.output, /user:\[|net:\[/)
      onlyStdio(ran.output)
    }))

  it.live("through the bash tool, the same", () =>
    Effect.gen(function*() {
      const { base, sandbox } = yield* setup
      const context: Tool.ToolContext = { sessionId: "s1", toolCallId: "t1", cwd: base, roots: [base] }
      const out = yield* Tool.run(bash, { command: LIST }, context).pipe(ToolServices.provide({ sandbox }), Effect.provide(TempDir.platform))
      assert.isTrue(out.ok, out.content)
      onlyStdio(out.content)
    }))
})
