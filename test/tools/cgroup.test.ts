/**
 * Cgroup.removeStale: the empty subtree of a Skein process that is gone is removed on the next
 * start; one whose owner lives, or that still holds a process, is left alone. Needs a writable
 * cgroup v2 subtree (root, or a delegated systemd user session); skipped elsewhere.
 */
import { afterEach, describe, expect, it } from "vitest"
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { existsSync, mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Cgroup from "../../src/tools/process/Cgroup.ts"
import { cgroupsWritable } from "../support/Escapes.ts"

const writable = cgroupsWritable()
const started: Array<ChildProcess> = []
const made: Array<string> = []
afterEach(() => {
  for (const child of started.splice(0)) child.kill("SIGKILL")
  for (const dir of made.splice(0)) {
    for (let i = 0; i < 50 && existsSync(dir) && !Cgroup.remove(dir); i++) spawnSync("sleep", ["0.01"])
  }
})

describe.skipIf(!writable)(writable ? "Cgroup.removeStale" : "Cgroup.removeStale (skipped: no writable cgroup v2 subtree here)", () => {
  it("removes the empty subtrees of gone Skein processes only", () => {
    const own = Cgroup.ownDirectory()!
    const gone = spawnSync("true").pid! // exited and reaped: its pid names no process now
    const live = spawn("sleep", ["30"], { stdio: "ignore" })
    started.push(live)
    const stale = join(own, `skein-${gone}-0123456789ab`)
    const owned = join(own, `skein-${live.pid}-0123456789ab`)
    const busy = join(own, `skein-${gone}-ba9876543210`)
    for (const dir of [stale, owned, busy]) {
      mkdirSync(dir)
      made.push(dir)
    }
    mkdirSync(join(stale, "c1"))
    const occupant = spawn("sleep", ["30"], { stdio: "ignore" })
    started.push(occupant)
    writeFileSync(join(busy, "cgroup.procs"), String(occupant.pid))

    Cgroup.removeStale(own)
    expect([existsSync(stale), existsSync(owned), existsSync(busy)]).toEqual([false, true, true])
  })
})
