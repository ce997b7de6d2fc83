/**
 * Sessions sharing a workspace write one file in turns: concurrent `edit` calls on one file all
 * land (on disk and through the client's editor), concurrent `write`s leave one whole content,
 * and the lock table forgets a path once nobody holds or waits for it.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { edit } from "../../src/tools/edit.ts"
import * as PathLocks from "../../src/tools/PathLocks.ts"
import type * as Edges from "../../src/tools/Edges.ts"
import type { ClientAccess } from "../../src/session/ClientCalls.ts"
import * as Tool from "../../src/tools/Tool.ts"
import { write } from "../../src/tools/write.ts"
import * as TempDir from "../support/TempDir.ts"
import * as ToolServices from "../support/ToolServices.ts"

const N = 40

const workspace = (client?: ClientAccess) =>
  Effect.gen(function*() {
    const cwd = join(yield* TempDir.make(), "ws")
    mkdirSync(cwd)
    const run = (tool: Tool.Tool<any, Edges.Services>, args: unknown, callId: string) =>
      Tool.run(tool, args, { sessionId: `s-${callId}`, toolCallId: callId, cwd, roots: [cwd] }).pipe(ToolServices.provide({ client }),
        Effect.provide(TempDir.platform)
      )
    return { cwd, run }
  })

const markers = Array.from({ length: N }, (_, i) => `line ${i}: todo`).join("\n") + "\n"

describe("PathLocks", () => {
  it.effect("concurrent edits of one file, each replacing its own line, all land", () =>
    Effect.gen(function*() {
      const { cwd, run } = yield* workspace()
      const file = join(cwd, "shared.txt")
      writeFileSync(file, markers)
      const results = yield* Effect.forEach(
        Array.from({ length: N }, (_, i) => i),
        (i) => run(edit, { path: "shared.txt", edits: [{ oldText: `line ${i}: todo`, newText: `line ${i}: done by ${i}` }] }, `call-${i}`),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(results.filter((r) => !r.ok).map((r) => r.content), [])
      assert.strictEqual(readFileSync(file, "utf8"), Array.from({ length: N }, (_, i) => `line ${i}: done by ${i}`).join("\n") + "\n")
      assert.deepStrictEqual(readdirSync(cwd), ["shared.txt"])
      assert.strictEqual(PathLocks.size(), 0)
    }))

  it.effect("the same through the client's editor: its read and write are inside the lock", () =>
    Effect.gen(function*() {
      const buffers = new Map<string, string>()
      // The editor answers after a turn of the scheduler, as a remote one would.
      const client: ClientAccess = {
        readTextFile: (path) => Effect.yieldNow.pipe(Effect.andThen(Effect.sync(() => buffers.get(path) ?? ""))),
        writeTextFile: (path, content) => Effect.yieldNow.pipe(Effect.andThen(Effect.sync(() => void buffers.set(path, content))))
      }
      const { cwd, run } = yield* workspace(client)
      const file = join(cwd, "shared.txt")
      writeFileSync(file, markers)
      buffers.set(file, markers)
      const results = yield* Effect.forEach(
        Array.from({ length: N }, (_, i) => i),
        (i) => run(edit, { path: "shared.txt", edits: [{ oldText: `line ${i}: todo`, newText: `line ${i}: done` }] }, `call-${i}`),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(results.filter((r) => !r.ok).map((r) => r.content), [])
      assert.strictEqual(buffers.get(file), markers.replaceAll("todo", "done"))
    }))

  it.effect("concurrent writes leave exactly one writer's whole content, and each saw a whole file before it", () =>
    Effect.gen(function*() {
      const { cwd, run } = yield* workspace()
      const file = join(cwd, "out.txt")
      const contents = Array.from({ length: 12 }, (_, i) => `${String.fromCharCode(97 + i)}`.repeat(64 * 1024 + i) + "\n")
      const results = yield* Effect.forEach(contents, (content, i) => run(write, { path: "out.txt", content }, `w-${i}`), { concurrency: "unbounded" })
      assert.isTrue(results.every((r) => r.ok))
      const final = readFileSync(file, "utf8")
      assert.include(contents, final)
      // Serialized: one created the file, every other replaced a complete earlier content.
      const created = results.filter((r) => r.content.startsWith("Created"))
      assert.strictEqual(created.length, 1)
      for (const r of results) {
        const old = r.details?.diff?.[0]?.oldText
        if (old !== null && old !== undefined) assert.include(contents, old)
      }
      assert.deepStrictEqual(readdirSync(cwd), ["out.txt"])
    }))

  it.effect("one path runs one holder at a time; other paths do not wait; an interrupted waiter leaves no entry", () =>
    Effect.gen(function*() {
      const first = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const holder = yield* Deferred.succeed(first, undefined).pipe(
        Effect.andThen(Deferred.await(release)),
        PathLocks.withLock("/tmp/skein-lock-a"),
        Effect.forkChild
      )
      yield* Deferred.await(first)
      // Another path is free; the held one is not.
      assert.strictEqual(yield* PathLocks.withLock("/tmp/skein-lock-b")(Effect.succeed("b")), "b")
      const order: Array<string> = []
      const waiter = yield* Effect.sync(() => order.push("waiter")).pipe(PathLocks.withLock("/tmp/skein-lock-a/../skein-lock-a"), Effect.forkChild)
      const interrupted = yield* Effect.never.pipe(PathLocks.withLock("/tmp/skein-lock-a"), Effect.forkChild)
      yield* Effect.yieldNow
      assert.deepStrictEqual(order, [])
      assert.strictEqual(PathLocks.size(), 1)
      yield* Fiber.interrupt(interrupted)
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(holder)
      yield* Fiber.join(waiter)
      assert.deepStrictEqual(order, ["waiter"])
      assert.strictEqual(PathLocks.size(), 0)
    }))
})
