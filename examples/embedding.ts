// Skein in an Effect program: one session and one turn, presented here (the answer streamed
// to stdout, permission questions answered). Run as it is, it keeps its sessions in a
// temporary home and answers from a script, so it needs no model; with SKEIN_URL set to a
// `skein serve` (see "Serving Skein"), the same program runs there: only the layer changes.
import { Effect, Layer, Stream } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Runtime, Scripted, Skein } from "skein"

const program = Effect.gen(function*() {
  const runtime = yield* Runtime
  const session = yield* runtime.newSession({ cwd: process.cwd() })
  // A turn as a stream of events; this program presents it, so it answers its questions.
  yield* session.turn([{ type: "text", text: "What is in notes.txt?" }]).pipe(
    Stream.runForEach((event) =>
      event.type === "text_delta"
        ? Effect.sync(() => process.stdout.write(event.data.text))
        : event.type === "permission_asked"
        ? session.answer(event.data.requestId, { outcome: "selected", optionId: "allow_once" })
        : event.type === "turn_end"
        ? Effect.sync(() => console.log(`\n[${event.data.stopReason}]`))
        : Effect.void
    )
  )
})

const url = process.env["SKEIN_URL"]
const skein: Layer.Layer<Runtime, unknown> = url === undefined
  // In this process: model calls answered from a script (see "The scripted provider"), sessions
  // in a temporary home (a program of your own would use its own home, or ~/.skein).
  ? Skein.layer({
    home: mkdtempSync(join(tmpdir(), "skein-example-")),
    script: Effect.runSync(Scripted.parse(JSON.stringify({ turns: [{ calls: [[{ text: "It says hello." }]] }] })))
  })
  // In a `skein serve`: its sessions, model and tools (tcp:// and ws:// need its token).
  : Skein.remote({ url, token: process.env["SKEIN_SERVE_TOKEN"] })

await Effect.runPromise(Effect.scoped(program).pipe(Effect.provide(skein)))
