/**
 * A cap on V8's young generation, for the processes that serve many sessions (`skein acp`
 * with its sessions in process, and `skein serve`).
 *
 * V8 grows the young generation while much of it survives, up to semi-spaces of 32 MB or
 * more. A scavenge copies what survives, so its pause grows with it: with 64 sessions streaming
 * at once, scavenges of 5 to 12 ms held back every session's updates. Semi-spaces of 8 MB
 * keep them at 1 to 4 ms for a little more GC work (adr/0023).
 *
 * `--max-semi-space-size` is read only when the heap is set up, so a running process cannot
 * lower it. The growth factor is read at each growth: after every garbage collection the new
 * space is looked at, and growing is allowed only while it would stay within the cap. The
 * check runs between tasks of the event loop, so a single long task may still grow it once
 * more. V8 may shrink it when little is allocated, and it then grows again up to the cap.
 *
 * A process started with its own young-generation flags (on the command line or in
 * `NODE_OPTIONS`) is left as it is. Embedding programs are never touched: only the CLI calls
 * this.
 */
import type * as PerfHooks from "node:perf_hooks"
import type * as V8 from "node:v8"
import { setV8Flag } from "./CodeCache.ts"

/** Both semi-spaces, in bytes: 8 MB each. */
export const NEW_SPACE_CAP = 16 * 1024 * 1024

const OWN_FLAGS = /--(max|min)[-_]semi[-_]space[-_]size|--semi[-_]space[-_]growth[-_]factor/

let installed = false

const newSpaceSize = (v8: typeof V8): number => {
  for (const space of v8.getHeapSpaceStatistics()) {
    if (space.space_name === "new_space") return space.space_size
  }
  return 0
}

/** Installs the cap once per process; false when the process chose its own flags (or it is installed already). */
export const capYoungGeneration = (cap: number = NEW_SPACE_CAP): boolean => {
  if (installed) return false
  if (OWN_FLAGS.test(process.execArgv.join(" ")) || OWN_FLAGS.test(process.env.NODE_OPTIONS ?? "")) return false
  installed = true
  // Loaded here, not at start-up: nothing before the first session needs them.
  const v8 = process.getBuiltinModule("node:v8") as typeof V8
  const { PerformanceObserver } = process.getBuiltinModule("node:perf_hooks") as typeof PerfHooks
  let factor = 2
  const check = () => {
    // The largest factor that does not take the new space past the cap: 1 once it is there.
    const size = newSpaceSize(v8)
    const next = size <= 0 ? 2 : Math.max(1, Math.min(2, Math.floor(cap / size)))
    if (next === factor) return
    factor = next
    // V8's default is 2 (a process with its own young-generation flags never gets here).
    setV8Flag(v8, "semi-space-growth-factor", String(next), "2")
  }
  check()
  new PerformanceObserver(check).observe({ entryTypes: ["gc"] })
  return true
}
