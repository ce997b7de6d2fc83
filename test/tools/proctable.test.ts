/**
 * ProcTable's scan for the fallback mechanism, on real processes: a process is a member when it
 * is in the group or carries the marker; only pids above the leader's are read while pid
 * allocation cannot have wrapped around since the leader was created, all of them otherwise.
 */
import { afterEach, describe, expect, it } from "vitest"
import { type ChildProcess, spawn } from "node:child_process"
import * as ProcTable from "../../src/tools/process/ProcTable.ts"

const started: Array<ChildProcess> = []
afterEach(() => {
  for (const child of started.splice(0)) child.kill("SIGKILL")
})

const sleeper = (env: Record<string, string>, detached: boolean) => {
  const child = spawn("sleep", ["30"], { env: { ...process.env, ...env }, detached, stdio: "ignore" })
  started.push(child)
  return child.pid!
}

describe.skipIf(process.platform !== "linux")("ProcTable.members", () => {
  it("finds the group and the marked; skips older pids only while no wrap-around is possible", () => {
    const marker = `SKEIN_TREE_test${process.pid}=1`
    const older = sleeper({ [marker.split("=")[0]!]: "1" }, true)
    const leader = sleeper({}, true)
    const newer = sleeper({ [marker.split("=")[0]!]: "1" }, true)
    const unmarked = sleeper({ [marker.split("=")[0]!]: "2" }, true)
    expect(older).toBeLessThan(leader)
    const epoch = ProcTable.epoch(leader)!
    expect(epoch).toBeDefined()
    // Normal case: the older marked process is below the floor (it cannot descend from the leader).
    expect(ProcTable.members(epoch, leader, marker, 0).sort()).toEqual([leader, newer].sort())
    // As many forks as pids since the epoch: allocation may have wrapped, so everything is read.
    const stale = { ...epoch, forks: epoch.forks - 10_000_000 }
    expect(ProcTable.members(stale, leader, marker, 0).sort()).toEqual([older, leader, newer].sort())
    // No epoch: everything is read too; `since` (start time) still filters.
    expect(ProcTable.members(undefined, leader, marker, 0).sort()).toEqual([older, leader, newer].sort())
    expect(ProcTable.members(undefined, -1, marker, ProcTable.stat(process.pid)!.start + 1_000_000_000)).toEqual([])
    expect(ProcTable.members(epoch, leader, marker, 0)).not.toContain(unmarked)
  })

  it("reads a whole environment entry, never a prefix of one", () => {
    const name = `SKEIN_TREE_test${process.pid}`
    const pid = sleeper({ [name]: "12" }, true)
    expect(ProcTable.environHas(pid, `${name}=12`)).toBe(true)
    expect(ProcTable.environHas(pid, `${name}=1`)).toBe(false)
    expect(ProcTable.environHas(pid, `X${name}=12`)).toBe(false)
  })
})
