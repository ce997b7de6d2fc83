/**
 * The file store syncs a log on the thread pool, and a turn's end waits for it: the prompt is
 * answered only once the disk has the turn (a slow sync delays the answer, and nothing of the
 * turn's end is published before it), a sync that fails is reported, not taken for done. The
 * store's `fsync` seam holds or fails the real `fs.fsync` of the real log file.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Stream from "effect/Stream"
import * as nodeFs from "node:fs"
import type { SessionEvent } from "../../src/log/Event.ts"
import type { Fsync } from "../../src/log/FileStore.ts"
import { SessionLog } from "../../src/log/SessionLog.ts"
import { Runtime } from "../../src/runtime/Api.ts"
import * as Toolkit from "../../src/tools/Toolkit.ts"
import { byPrompt, makeDirs, piecesLayer, readLog, text } from "../support/Sessions.ts"
import * as TempDir from "../support/TempDir.ts"

/** An fsync that waits, per call, for the test to let it go (with an error, or none), until `pass`. */
const heldFsync = () => {
  let holding = true
  const calls: Array<{ readonly fd: number; readonly release: (error: NodeJS.ErrnoException | null) => void }> = []
  let arrived = Deferred.makeUnsafe<void>()
  const fsync: Fsync = (fd, callback) => {
    if (!holding) return nodeFs.fsync(fd, callback)
    let done = false
    calls.push({
      fd,
      release: (error) => {
        if (done) return
        done = true
        if (error === null) nodeFs.fsync(fd, callback)
        else callback(error)
      }
    })
    Deferred.doneUnsafe(arrived, Effect.void)
  }
  return {
    fsync,
    calls,
    /** Lets every call go, now and later (the sessions' syncs as they close). */
    pass: Effect.sync(() => {
      holding = false
      for (const call of calls) call.release(null)
    }),
    /** Waits for the next call not yet seen. */
    next: (seen: number) =>
      Effect.suspend(() => {
        if (calls.length > seen) return Effect.succeed(calls[seen]!)
        arrived = Deferred.makeUnsafe<void>()
        return Effect.map(Deferred.await(arrived), () => calls[seen]!)
      })
  }
}

const withFiles = (fsync: Fsync) =>
  Effect.gen(function*() {
    const { home, cwd } = yield* makeDirs
    const store = SessionLog.layer({ home, fsync }).pipe(Layer.provide(TempDir.platform))
    const layer = piecesLayer({ home, provider: byPrompt({ hi: [[{ text: "Hello." }]], again: [[{ text: "Again." }]] }), toolkit: Toolkit.builtin(), store })
    return { home, cwd, layer }
  })

describe("SessionLog files: the sync off the main thread", () => {
  it.effect("a slow sync holds the turn's end and the prompt's answer until the disk has the turn", () =>
    Effect.gen(function*() {
      const held = heldFsync()
      const { home, cwd, layer } = yield* withFiles(held.fsync)
      yield* Effect.gen(function*() {
        const runtime = yield* Runtime
        const session = yield* runtime.newSession({ cwd })
        const seen: Array<SessionEvent> = []
        const turn = yield* Effect.forkChild(Stream.runForEach(session.turn(text("hi")), (event) => Effect.sync(() => void seen.push(event))))
        const call = yield* held.next(0)
        // The turn's end is written, not yet synced: not published, the prompt not answered.
        assert.deepStrictEqual(readLog(home, session.id).events.map((e) => e.type).slice(-1), ["turn_end"])
        assert.isFalse(seen.some((e) => e.type === "turn_end"))
        assert.isUndefined(turn.pollUnsafe())
        assert.isTrue(seen.some((e) => e.type === "text_delta"), "the turn streamed before its end")
        call.release(null)
        yield* Fiber.join(turn)
        assert.strictEqual(seen.at(-1)?.type, "turn_end")
        assert.deepStrictEqual(readLog(home, session.id).events.at(-1)?.type, "turn_end")
      }).pipe(Effect.ensuring(held.pass), Effect.provide(layer))
    }).pipe(Effect.scoped, Effect.provide(Logger.layer([]))))

  it.effect("a failed sync is reported to the prompt, and the next prompt syncs first", () =>
    Effect.gen(function*() {
      const held = heldFsync()
      const { cwd, layer } = yield* withFiles(held.fsync)
      yield* Effect.gen(function*() {
        const runtime = yield* Runtime
        const session = yield* runtime.newSession({ cwd })
        const first = yield* Effect.forkChild(Effect.flip(session.prompt(text("hi"))))
        const failed = yield* held.next(0)
        failed.release(Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" }))
        const error = yield* Fiber.join(first)
        assert.strictEqual(error.reason, "log")
        assert.match(error.message, /its end is not saved yet.*Cannot sync session log .*EIO/)
        // The next prompt syncs what the failed sync left before it runs.
        const second = yield* Effect.forkChild(session.prompt(text("again")))
        const retried = yield* held.next(1)
        assert.isUndefined(second.pollUnsafe())
        retried.release(null)
        // Its own turn end syncs too.
        const own = yield* held.next(2)
        own.release(null)
        const next = yield* Fiber.join(second)
        assert.deepStrictEqual(next, { stopReason: "end_turn" })
      }).pipe(Effect.ensuring(held.pass), Effect.provide(layer))
    }).pipe(Effect.scoped, Effect.provide(Logger.layer([]))))
})
