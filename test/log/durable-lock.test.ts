/**
 * The write lease of a session (`<id>.lock`): one writer per session across processes, stale
 * owners (dead processes of this host) taken over, foreign hosts respected.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as References from "effect/References"
import * as Scope from "effect/Scope"
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { hostname } from "node:os"
import { join } from "node:path"
import * as Lock from "../../src/log/Lock.ts"
import * as TempDir from "../support/TempDir.ts"

const withFs = <A, E>(f: (fs: FileSystem.FileSystem, dir: string) => Effect.Effect<A, E, Scope.Scope>) =>
  Effect.gen(function*() {
    const dir = yield* TempDir.make()
    const fs = yield* FileSystem.FileSystem
    return yield* f(fs, dir)
  }).pipe(Effect.provide(TempDir.platform))

/** The pid of a process that has exited. */
const deadPid = () => spawnSync(process.execPath, ["-e", ""]).pid!

const owner = (pid: number, host = hostname()) => JSON.stringify({ pid, host, started: 1 })

/** Every log line at any level (debug included), with its level: `Debug: …`. */
const captureLogs = () => {
  const lines: Array<string> = []
  const logger = Logger.make<unknown, void>(({ logLevel, message }) => {
    lines.push(`${logLevel}: ${(Array.isArray(message) ? message : [message]).map(String).join(" ")}`)
  })
  return {
    lines,
    layer: Layer.mergeAll(Logger.layer([logger]), Layer.succeed(References.MinimumLogLevel, "Debug"))
  }
}

/**
 * A zombie: a process that has exited but that its parent has not waited for. The shell starts
 * a short `sleep` in the background, then becomes a long `sleep`, which never waits for it (the
 * short one ends after that, so the shell cannot have reaped it). Returns its pid and the
 * parent, to kill at the end (its zombie child is then reaped by init).
 */
const zombie = async (): Promise<{ readonly pid: number; readonly parent: ChildProcess }> => {
  const parent = spawn("sh", ["-c", "sleep 0.2 & echo $!; exec sleep 30"], { stdio: ["ignore", "pipe", "ignore"] })
  const pid = await new Promise<number>((resolve) => parent.stdout!.once("data", (chunk: Buffer) => resolve(Number(String(chunk).trim()))))
  for (let i = 0; i < 1000 && Lock.processState(pid) !== "Z"; i++) await new Promise((resolve) => setTimeout(resolve, 5))
  return { pid, parent }
}

describe("Lock", () => {
  it.effect("holds {pid, host, started} while the scope is open and removes it when it closes", () =>
    withFs((fs, dir) =>
      Effect.gen(function*() {
        const file = join(dir, "s.lock")
        const scope = yield* Scope.make()
        yield* Lock.acquire(file, "s").pipe(Scope.provide(scope))
        const held = JSON.parse(readFileSync(file, "utf8"))
        assert.strictEqual(held.pid, process.pid)
        assert.strictEqual(held.host, hostname())
        assert.isNumber(held.started)
        // No temporary file is left behind.
        assert.deepStrictEqual((yield* fs.readDirectory(dir)).sort(), ["s.lock"])
        yield* Scope.close(scope, Exit.void)
        assert.isFalse(existsSync(file))
      })))

  it.effect("a second holder in the same process is refused", () =>
    withFs((_fs, dir) =>
      Effect.gen(function*() {
        const file = join(dir, "s.lock")
        yield* Lock.acquire(file, "s")
        const error = yield* Effect.flip(Lock.acquire(file, "s"))
        assert.strictEqual(error.reason, "locked")
        assert.include(error.message, `already open in this Skein process (pid ${process.pid})`)
      })))

  it.effect("a lock held by another live process is refused with its pid and the lock file", () =>
    withFs((fs, dir) =>
      Effect.gen(function*() {
        const child = spawn(process.execPath, ["-e", "setTimeout(() => {}, 30000)"], { stdio: "ignore" })
        yield* Effect.addFinalizer(() => Effect.sync(() => child.kill("SIGKILL")))
        const file = join(dir, "s.lock")
        writeFileSync(file, owner(child.pid!))
        const error = yield* Effect.flip(Lock.acquire(file, "s"))
        assert.strictEqual(error.reason, "locked")
        assert.include(error.message, `another Skein process (pid ${child.pid}`)
        assert.include(error.message, file)
        const checked = yield* Effect.flip(Lock.checkFree(fs, file, "s"))
        assert.strictEqual(checked.reason, "locked")
        // Refusing never removes someone else's lock.
        assert.strictEqual(readFileSync(file, "utf8"), owner(child.pid!))
      })))

  it.effect("a lock whose owner process is gone is stale: taken over, said at debug level only", () =>
    withFs((fs, dir) =>
      Effect.gen(function*() {
        const file = join(dir, "s.lock")
        const dead = deadPid()
        writeFileSync(file, owner(dead))
        yield* Lock.checkFree(fs, file, "s")
        const logs = captureLogs()
        yield* Lock.acquire(file, "s").pipe(Effect.provide(logs.layer))
        assert.strictEqual(JSON.parse(readFileSync(file, "utf8")).pid, process.pid)
        assert.deepStrictEqual(logs.lines, [`Debug: Took over the stale lock ${file} (its owner, pid ${dead}, is gone)`])
      })))

  it.effect.skipIf(process.platform !== "linux")("a pid that now names another process, or a lock from an earlier boot, is stale", () =>
    withFs((_fs, dir) =>
      Effect.gen(function*() {
        const child = spawn(process.execPath, ["-e", "setTimeout(() => {}, 30000)"], { stdio: "ignore" })
        yield* Effect.addFinalizer(() => Effect.sync(() => child.kill("SIGKILL")))
        const pid = child.pid!
        const since = Lock.processStart(pid)!
        const boot = Lock.bootId()!
        assert.match(since, /^\d+$/)
        const file = join(dir, "s.lock")
        const lock = (fields: Record<string, unknown>) => writeFileSync(file, JSON.stringify({ pid, host: hostname(), started: 1, ...fields }))

        // The very process that wrote it: held.
        lock({ boot, since })
        assert.strictEqual((yield* Effect.flip(Lock.acquire(file, "s"))).reason, "locked")
        // The pid, but a process started at another time: the writer is gone, its pid reused.
        lock({ boot, since: String(Number(since) - 1) })
        const logs = captureLogs()
        const scope = yield* Scope.make()
        yield* Lock.acquire(file, "s").pipe(Effect.provide(logs.layer), Scope.provide(scope))
        assert.deepStrictEqual(logs.lines, [`Debug: Took over the stale lock ${file} (its owner, pid ${pid}, is gone)`])
        const mine = JSON.parse(readFileSync(file, "utf8"))
        assert.deepStrictEqual([mine.pid, mine.boot, mine.since], [process.pid, boot, Lock.processStart(process.pid)])
        yield* Scope.close(scope, Exit.void)
        // Written in another boot: stale whatever the pid is now.
        lock({ boot: "another-boot", since })
        yield* Lock.acquire(file, "s").pipe(Effect.provide(captureLogs().layer))
        assert.strictEqual(JSON.parse(readFileSync(file, "utf8")).pid, process.pid)
      })))

  it.effect.skipIf(process.platform !== "linux")("a lock whose owner is a zombie (dead, not yet reaped) is stale and taken over", () =>
    withFs((fs, dir) =>
      Effect.gen(function*() {
        const { pid, parent } = yield* Effect.promise(zombie)
        yield* Effect.addFinalizer(() => Effect.sync(() => parent.kill("SIGKILL")))
        assert.strictEqual(Lock.processState(pid), "Z")
        // Signal 0 still reaches it: that alone made it look alive.
        assert.doesNotThrow(() => process.kill(pid, 0))
        const file = join(dir, "s.lock")
        // The lock exactly as that process would have written it.
        const held = { pid, host: hostname(), started: 1, boot: Lock.bootId(), since: Lock.processStart(pid) }
        writeFileSync(file, JSON.stringify(held))
        assert.isFalse(Lock.isLive(held))
        yield* Lock.checkFree(fs, file, "s")
        yield* Lock.acquire(file, "s")
        assert.strictEqual(JSON.parse(readFileSync(file, "utf8")).pid, process.pid)
      })))

  it.effect("an unreadable lock counts as stale; a lock of another host is respected", () =>
    withFs((_fs, dir) =>
      Effect.gen(function*() {
        const garbage = join(dir, "g.lock")
        writeFileSync(garbage, "{torn")
        yield* Lock.acquire(garbage, "g").pipe(Effect.provide(Logger.layer([])))
        assert.strictEqual(JSON.parse(readFileSync(garbage, "utf8")).pid, process.pid)

        const foreign = join(dir, "f.lock")
        writeFileSync(foreign, owner(deadPid(), "another-host.example"))
        const error = yield* Effect.flip(Lock.acquire(foreign, "f"))
        assert.strictEqual(error.reason, "locked")
        assert.include(error.message, "on another-host.example")
      })))

  it.effect("closing the scope leaves a lock alone once it is no longer ours", () =>
    withFs((_fs, dir) =>
      Effect.gen(function*() {
        const file = join(dir, "s.lock")
        const scope = yield* Scope.make()
        yield* Lock.acquire(file, "s").pipe(Scope.provide(scope))
        writeFileSync(file, owner(12345, "elsewhere"))
        yield* Scope.close(scope, Exit.void)
        assert.strictEqual(readFileSync(file, "utf8"), owner(12345, "elsewhere"))
      })))
})
