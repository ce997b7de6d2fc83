/**
 * What a sandboxed command holds, on the real sandbox: its stdio and nothing else. The chain
 * that starts it (`nsenter`, then bubblewrap, which hands every descriptor it gets on to the
 * command) must not carry the session's namespaces, the seccomp filter, or anything Skein's
 * own process was given when it started (an editor's pipes, a parent's IPC channel).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { join } from "node:path"
import * as Descriptors from "../../src/sandbox/Descriptors.ts"
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
  })
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
