// Saved sessions from an Effect program: list them, load one (with its logged events), print
// its transcript, go on with it, re-run it against its log, delete it. It works in a temporary
// home with a scripted model, and makes the session it works on; point `home` at Skein's own
// (~/.skein) to work on yours.
import { Effect } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Replay, Rerun, Runtime, Scripted, Skein } from "skein"

const home = mkdtempSync(join(tmpdir(), "skein-example-"))
const script = Effect.runSync(Scripted.parse(JSON.stringify({
  turns: [{ calls: [[{ text: "Started." }]] }, { calls: [[{ text: "Went on." }]] }]
})))

const program = Effect.gen(function*() {
  const runtime = yield* Runtime
  // A session to work on: one turn, then closed (its log stays).
  const made = yield* runtime.newSession({ cwd: process.cwd() })
  yield* made.prompt([{ type: "text", text: "Start" }])
  yield* runtime.closeSession(made.id)

  const page = yield* runtime.listSessions({ cwd: process.cwd() })
  const { session, events } = yield* runtime.loadSession({ sessionId: page.sessions[0]!.id })
  console.log(Replay.transcript((yield* runtime.readSession(session.id)).header, events))
  yield* session.prompt([{ type: "text", text: "Go on" }])
  const record = yield* runtime.readSession(session.id)
  const report = yield* Rerun.run({ header: record.header, events: record.events, home: join(home, "rerun") })
  console.log(report.diverged ? report.turns.filter((t) => t.differences.length > 0) : `The re-run of ${report.turns.length} turns behaves as logged.`)
  yield* runtime.deleteSession(session.id)
})

await Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(Skein.layer({ home, script }))))
