/**
 * Containment with a cgroup per command (Linux with a writable cgroup v2 subtree: root, or a
 * delegated systemd user session). Elsewhere the whole file is skipped, and says why.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { spawn } from "node:child_process"
import * as Containment from "../../src/tools/process/Containment.ts"
import * as ProcessGroup from "../../src/tools/process/ProcessGroup.ts"
import { cgroupsWritable } from "../support/Escapes.ts"
import { containmentSuite } from "./containment.suite.ts"

delete process.env["SKEIN_NO_CGROUP"]
const writable = cgroupsWritable()

describe.skipIf(!writable)(
  writable ? "containment: cgroup" : "containment: cgroup (skipped: no writable cgroup v2 subtree for this user here)",
  () => {
    containmentSuite("cgroup")

    it.live("a confined tree (a sandboxed command's) counts its leader before the leader has joined its cgroup", () =>
      Effect.gen(function*() {
        const tree = Containment.make({ confined: true })
        // Started without the wrapper: the leader stays outside the cgroup, as in the moment
        // between the spawn and its wrapper's join.
        const child = spawn("sleep", ["30"], { detached: true, stdio: "ignore" })
        tree.attach(child.pid!)
        try {
          assert.isTrue(tree.isAlive())
          assert.isTrue(tree.leftBehind())
          assert.isFalse(tree.inCgroup())
        } finally {
          tree.signal("SIGKILL")
          yield* ProcessGroup.pollUntil(() => !tree.isAlive(), 5_000)
          tree.release()
        }
        assert.isFalse(tree.isAlive())
      }))
  }
)
