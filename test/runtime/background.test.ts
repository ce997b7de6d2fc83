/**
 * Background commands belong to the session: a dev server started by one turn is reachable
 * by the session's later commands, in later turns too, and is not stopped by a turn's end or
 * cancel; closing, deleting or evicting the session kills it. With the sandbox off and, where
 * bubblewrap is installed, on (the server then lives in the session's network namespace).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/testing/TestClock"
import { rmSync } from "node:fs"
import { join } from "node:path"
import { EVICT_AFTER_IDLE_MS } from "../../src/runtime/Config.ts"
import * as Rerun from "../../src/runtime/Rerun.ts"
import { eventually, getCommand, killTagged, processesWith, serverCommand, uniqueTag } from "../support/Background.ts"
import * as Bwrap from "../support/Bwrap.ts"
import { record, submit, text, withSkein } from "../support/Sessions.ts"
import * as TempDir from "../support/TempDir.ts"

const call = (tool: string, args: Record<string, unknown>, id: string) => [{ tool, args, id }]

/** Turn 1 starts the server and fetches from it; turn 2 fetches again and reads its output; turn 3 idles until cancelled. */
const script = (tag: string) => ({
  turns: [
    {
      calls: [
        call("bash", { command: serverCommand("port.txt", tag), run_in_background: true }, "start"),
        call("bash", { command: getCommand("port.txt", "/first") }, "get1"),
        [{ text: "started" }]
      ]
    },
    {
      calls: [
        call("bash", { command: getCommand("port.txt", "/second") }, "get2"),
        call("bash_output", { id: "bg1" }, "out"),
        [{ text: "read" }]
      ]
    },
    { calls: [[{ text: "busy" }, { sleep_ms: 600_000 }]] },
    { calls: [call("bash", { command: getCommand("port.txt", "/third") }, "get3"), [{ text: "still there" }]] }
  ]
})

const resultOf = (events: ReadonlyArray<{ readonly type: string; readonly data: any }>, id: string) =>
  events.find((e) => e.type === "tool_result" && e.data.id === id)?.data as { ok: boolean; content: string }

const suite = (sandbox: "off" | "auto") => {
  // Without the sandbox a command is asked for (as in the foreground), and nobody answers here.
  const mode = sandbox === "off" ? "bypassPermissions" : "default"
  it.live("a server started in one turn is reachable from later commands and turns; cancel leaves it; close kills it", () => {
    const tag = uniqueTag()
    return withSkein({ script: script(tag), sandbox }, ({ runtime, cwd, readLog }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd, mode })
        assert.deepStrictEqual(yield* session.prompt(text("start it")), { stopReason: "end_turn" })
        assert.deepStrictEqual(yield* session.prompt(text("again")), { stopReason: "end_turn" })
        let events = (yield* readLog(session.id)).events
        const start = resultOf(events, "start")
        assert.isTrue(start.ok, start.content)
        assert.include(start.content, "Started in the background as bg1")
        if (sandbox === "auto") assert.include(start.content, "(in the sandbox)")
        for (const id of ["get1", "get2"]) assert.include(resultOf(events, id).content, `hello from ${tag}`, id)
        const output = resultOf(events, "out")
        assert.include(output.content, "served GET /first")
        assert.include(output.content, "served GET /second")
        assert.include(output.content, "[still running]")
        assert.lengthOf(processesWith(tag), 1)

        // A cancelled turn leaves it running: the next turn reaches it.
        const watch = yield* record(session)
        const busy = yield* submit(session, text("busy"))
        yield* watch.until((e) => e.type === "text_delta" && e.turn === busy.turn, 60_000)
        yield* session.cancel
        assert.deepStrictEqual(yield* Deferred.await(busy.outcome), { stopReason: "cancelled" })
        assert.deepStrictEqual(yield* session.prompt(text("after the cancel")), { stopReason: "end_turn" })
        events = (yield* readLog(session.id)).events
        assert.include(resultOf(events, "get3").content, `hello from ${tag}`)

        yield* runtime.closeSession(session.id)
        assert.deepStrictEqual(processesWith(tag), [], "closed with its session, before the close returned")
      }).pipe(Effect.ensuring(Effect.sync(() => killTagged(tag)))))
  })

  it.live("deleting the session kills its background commands", () => {
    const tag = uniqueTag()
    return withSkein({ script: script(tag), sandbox }, ({ runtime, cwd }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd, mode })
        yield* session.prompt(text("start it"))
        assert.lengthOf(processesWith(tag), 1)
        yield* runtime.deleteSession(session.id)
        assert.deepStrictEqual(processesWith(tag), [])
      }).pipe(Effect.ensuring(Effect.sync(() => killTagged(tag)))))
  })
}

describe("background commands in a session (sandbox off)", () => {
  suite("off")
  const mode = "bypassPermissions"

  it.effect("evicting the session (the live cap) kills its background commands", () => {
    const tag = uniqueTag()
    return withSkein({ script: script(tag), maxLiveSessions: 1 }, ({ runtime, cwd }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd, mode })
        yield* session.prompt(text("start it"))
        assert.lengthOf(processesWith(tag), 1)
        yield* TestClock.adjust(EVICT_AFTER_IDLE_MS + 1)
        const other = yield* runtime.newSession({ cwd })
        assert.deepStrictEqual((yield* runtime.liveSessions).map((s) => s.id), [other.id])
        yield* eventually("the server's end", Effect.sync(() => (processesWith(tag).length === 0 ? true : undefined)))
      }).pipe(Effect.ensuring(Effect.sync(() => killTagged(tag)))))
  })
})

describe("background commands in a re-run", () => {
  it.live("a re-run starts them again, as the log did, and stops them when it ends", () => {
    const tag = uniqueTag()
    return withSkein({ script: script(tag) }, ({ runtime, cwd, home }) =>
      Effect.gen(function*() {
        const session = yield* runtime.newSession({ cwd, mode: "bypassPermissions" })
        yield* session.prompt(text("start it"))
        yield* runtime.closeSession(session.id)
        assert.deepStrictEqual(processesWith(tag), [])
        rmSync(join(cwd, "port.txt"))
        const log = yield* runtime.readSession(session.id)
        const report = yield* Rerun.run({ header: log.header, events: log.events, home: join(home, "rerun") }).pipe(Effect.provide(TempDir.platform))
        assert.isFalse(report.diverged, JSON.stringify(report.turns))
        assert.strictEqual(report.turns[0]!.compared, 2)
        assert.deepStrictEqual(processesWith(tag), [], "the re-run's session closed, and its background commands with it")
      }).pipe(Effect.ensuring(Effect.sync(() => killTagged(tag)))))
  })
})

Bwrap.describeWithBwrap("background commands in a session (sandbox on)", () => {
  suite("auto")
})
