/**
 * Waiting for a process tree to end: a tree that ends with its leader (a sandboxed command:
 * its PID namespace's init exits a moment after bubblewrap has reported the command's exit)
 * is let to end by itself when all that is left is that init, idle or exiting (on the real
 * sandbox: test/sandbox/ending.test.ts); anything else it left is signalled at once, and a
 * tree being waited on is looked at soon, not only every 10 ms.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Containment from "../../src/tools/process/Containment.ts"
import * as ProcessGroup from "../../src/tools/process/ProcessGroup.ts"
import * as TempDir from "../support/TempDir.ts"

/**
 * A leader that exits at once and leaves a member that ends by itself once `go` exists,
 * writing `ended` first (a signalled member would not get to write it).
 */
const lingering = (dir: string) =>
  `(while [ ! -e ${join(dir, "go")} ]; do sleep 0.01; done; echo ended > ${join(dir, "ended")}) & exit 0`

const start = (dir: string, endsWithLeader: boolean) =>
  Effect.acquireRelease(
    ProcessGroup.spawnProgram({ file: "/bin/sh", args: ["-c", lingering(dir)], cwd: dir, env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" }, endsWithLeader }).pipe(Effect.orDie),
    ProcessGroup.release
  )

describe("ProcessGroup: waiting for a tree to end", () => {
  it("looks again within a millisecond or two at first, then every 10 ms", () => {
    assert.deepStrictEqual([0, 1, 2, 3, 4, 5, 6].map(ProcessGroup.pollDelay), [1, 2, 4, 8, 10, 10, 10])
  })

  it.live("a wait that watches a file looks again when the file changes, not only when a poll comes", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const watched = join(dir, "events")
      writeFileSync(watched, "populated 1\n")
      let ready = false
      let looks = 0
      // Polls an hour apart: only the change of the watched file can make it look again.
      const waiting = yield* Effect.forkChild(ProcessGroup.pollUntil(() => (++looks, ready), 3_600_000, { watch: watched, delay: () => 3_600_000 }))
      yield* Effect.yieldNow
      ready = true
      assert.isUndefined(waiting.pollUnsafe(), "nothing looked again by itself")
      writeFileSync(watched, "populated 0\n")
      assert.isTrue(yield* Fiber.join(waiting))
      assert.isAtLeast(looks, 2)
    }))

  it.live("a tree that ends with its leader: what is left that is not a pid namespace's idle init was left behind, and is signalled at once", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const group = yield* start(dir, true)
      yield* ProcessGroup.awaitFor(group.exited, 30_000)
      assert.isTrue(group.tree.isAlive(), "the member outlives the leader")
      assert.isTrue(group.tree.leftBehind())
      const signal = yield* ProcessGroup.terminate(group)
      writeFileSync(join(dir, "go"), "")
      assert.strictEqual(signal, "SIGTERM")
      assert.isFalse(group.tree.isAlive())
      assert.isFalse(existsSync(join(dir, "ended")))
    }).pipe(Effect.scoped))

  it.live("the cheap look at a tree says whether its cgroup holds a process (never, without a cgroup)", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const group = yield* start(dir, true)
      yield* ProcessGroup.awaitFor(group.exited, 30_000)
      assert.strictEqual(group.tree.inCgroup(), Containment.mechanism() === "cgroup")
      writeFileSync(join(dir, "go"), "")
      yield* ProcessGroup.pollUntil(() => !group.tree.isAlive(), 30_000)
      assert.strictEqual(readFileSync(join(dir, "ended"), "utf8"), "ended\n")
      assert.isNull(yield* ProcessGroup.terminate(group))
      assert.isFalse(group.tree.inCgroup())
    }).pipe(Effect.scoped))

  it.live("any other tree's leftovers are signalled at once, as before", () =>
    Effect.gen(function*() {
      const dir = yield* TempDir.make()
      const group = yield* start(dir, false)
      yield* ProcessGroup.awaitFor(group.exited, 30_000)
      const signal = yield* ProcessGroup.terminate(group)
      writeFileSync(join(dir, "go"), "")
      assert.strictEqual(signal, "SIGTERM")
      assert.isFalse(group.tree.isAlive())
      assert.isFalse(existsSync(join(dir, "ended")))
    }).pipe(Effect.scoped))
})
