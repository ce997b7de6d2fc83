// What the sandbox adds to a command, in-process: the `bash` tool (src/tools/bash.ts, bundled
// here with esbuild, Effect external) runs the same command with a session's sandbox (bubblewrap:
// nsenter into the session's namespaces, then bwrap) and without one, in R pairs after a warm-up
// of WARM pairs that is thrown away (the first sandboxed command also probes the sandbox and
// makes the session's namespaces; the first few of each kind fill caches). Times are from the
// tool's call to its result, as a turn sees them.
//
// What is added is measured pair by pair: each pair runs both, back to back, the order
// alternating, so that both see the same moment of a busy machine; the figure is the median of
// the R differences, with a 90% interval (the 5th and 95th percentile of that median over
// resamplings of the pairs, a fixed seed: the same samples give the same interval). The
// unsandboxed samples alone are bimodal on a busy machine, and the difference of two medians
// moved by several ms between runs of the same build.
//
// Skein's own part is measured too, as this process's CPU time in each call (user + system:
// the main thread's and libuv's, not the child processes'): hardly moved by a busy machine.
//
// Commands: `true` (the start alone) and `git status` in a repository of 200 files (a typical
// one). Prints one JSON object: { true: { plain, sandboxed, added, cpu }, gitStatus: { … } }
// with samples in ms (plain[i] and sandboxed[i] are pair i), added: { median, low, high } in
// ms, and cpu: { plain, sandboxed, added } the same for the CPU time; or { skipped: reason }
// where there is no sandbox. Options: --runs R (default 100), --warm W
// (default 10).
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { bundle } from "./bench-bundle.mjs"

const { values } = parseArgs({ options: { runs: { type: "string" }, warm: { type: "string" } } })
const RUNS = Math.max(1, Number(values.runs ?? 100))
const WARM = Math.max(1, Number(values.warm ?? 10))

const median = (xs) => {
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = (sorted.length - 1) / 2
  return (sorted[Math.floor(mid)] + sorted[Math.ceil(mid)]) / 2
}

/** The median of the paired differences, and its 90% interval over 1000 resamplings of the pairs (seeded). */
export const added = (plain, sandboxed) => {
  const diffs = sandboxed.map((s, i) => s - plain[i])
  let seed = 0x5eed
  const random = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0
    return seed / 2 ** 32
  }
  const medians = []
  for (let b = 0; b < 1000; b++) medians.push(median(Array.from(diffs, () => diffs[Math.floor(random() * diffs.length)])))
  medians.sort((a, b) => a - b)
  return { median: median(diffs), low: medians[49], high: medians[949] }
}

// Not under /tmp: a sandboxed command sees a /tmp of its own (roots there are bound in, but a
// workspace is rarely there).
const base = realpathSync(mkdtempSync(join("/var/tmp", "skein-bench-sandbox-")))
try {
  const m = await bundle("sandbox", [
    `export { bash } from "./src/tools/bash.ts"`,
    `export * as Tool from "./src/tools/Tool.ts"`,
    `export * as TurnServices from "./src/runtime/TurnServices.ts"`,
    `export * as Sandbox from "./src/sandbox/Sandbox.ts"`,
    `export * as Settings from "./src/sandbox/Settings.ts"`,
    `export * as Descriptors from "./src/tools/process/Descriptors.ts"`,
    `export * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"`,
    `export * as NodePath from "@effect/platform-node/NodePath"`,
    `export * as Effect from "effect/Effect"`,
    `export * as Layer from "effect/Layer"`,
    `export * as Scope from "effect/Scope"`,
    `export * as Exit from "effect/Exit"`
  ])
  const { bash, Tool, TurnServices, Sandbox, Settings, Descriptors, NodeFileSystem, NodePath, Effect, Layer, Scope, Exit } = m
  // As the `skein` command: what this process was started with is closed before its first child.
  Descriptors.own()

  const repo = join(base, "repo")
  mkdirSync(repo)
  const git = (...args) => execFileSync("git", ["-c", "user.email=b@b", "-c", "user.name=b", ...args], { cwd: repo })
  git("init", "-q")
  for (let i = 0; i < 200; i++) {
    mkdirSync(join(repo, `d${i % 10}`), { recursive: true })
    writeFileSync(join(repo, `d${i % 10}`, `f${i}.txt`), `file ${i}\n`)
  }
  git("add", ".")
  git("commit", "-q", "-m", "files")
  writeFileSync(join(repo, "d0", "f0.txt"), "changed\n")

  const platform = Layer.mergeAll(NodeFileSystem.layer, NodePath.layer)
  const scope = Effect.runSync(Scope.make())
  const run = (effect) => Effect.runPromise(effect.pipe(Effect.provide(platform)))
  const manager = await run(Sandbox.make(Settings.DEFAULT, { skeinHome: join(base, "skein-home") }).pipe(Scope.provide(scope)))
  const availability = await run(manager.availability)
  if (availability._tag !== "available") {
    process.stdout.write(JSON.stringify({ skipped: `no sandbox here: ${availability.reason}` }))
  } else {
    const sandbox = await run(manager.session({ cwd: repo, roots: [repo] }).pipe(Scope.provide(scope)))
    const ctx = { sessionId: "bench", toolCallId: "c", cwd: repo, roots: [repo] }
    // The turn's services as a session builds them: with the session's sandbox, or without one.
    const services = (withSandbox) =>
      TurnServices.make({ emit: { progress: () => Effect.void, plan: () => Effect.void }, ...(withSandbox ? { sandbox } : {}) })
    /** One call: its time, and this process's CPU time (user + system) in it: Skein's own work. */
    const time = async (command, withSandbox) => {
      const started = performance.now()
      const cpu = process.cpuUsage()
      const output = await run(Tool.run(bash, { command }, ctx).pipe(Effect.provideContext(services(withSandbox))))
      const ms = performance.now() - started
      const used = process.cpuUsage(cpu)
      if (!output.ok) throw new Error(`${command}${withSandbox ? " (sandboxed)" : ""} failed: ${output.content}`)
      return { ms, cpuMs: (used.user + used.system) / 1000 }
    }
    const result = {}
    for (const [key, command] of [["true", "true"], ["gitStatus", "git status"]]) {
      const plain = []
      const sandboxed = []
      // Warm-up, not kept: the first sandboxed command makes the session's namespaces.
      for (let i = 0; i < WARM; i++) {
        await time(command, false)
        await time(command, true)
      }
      for (let i = 0; i < RUNS; i++) {
        // Interleaved, the order alternating: neither side always runs right after the other.
        if (i % 2 === 0) {
          plain.push(await time(command, false))
          sandboxed.push(await time(command, true))
        } else {
          sandboxed.push(await time(command, true))
          plain.push(await time(command, false))
        }
      }
      const ms = (samples) => samples.map((s) => s.ms)
      const cpu = (samples) => samples.map((s) => s.cpuMs)
      result[key] = {
        command,
        plain: ms(plain),
        sandboxed: ms(sandboxed),
        added: added(ms(plain), ms(sandboxed)),
        cpu: { plain: cpu(plain), sandboxed: cpu(sandboxed), added: added(cpu(plain), cpu(sandboxed)) }
      }
    }
    process.stdout.write(JSON.stringify(result))
  }
  await run(Scope.close(scope, Exit.void))
} finally {
  rmSync(base, { recursive: true, force: true })
}
