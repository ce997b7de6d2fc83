/**
 * `skein monitor [--web HOST:PORT] [--web-approve] [--connect URL]`: the web monitor of the
 * sessions in a home, in its own process.
 *
 * - When a `skein serve` answers on the home's socket (or at `--connect URL`), the monitor is
 *   its client: live sessions stream, the inbox holds their open questions, and with
 *   `--web-approve` they can be answered. When that server stops, so does the monitor (exit 1).
 * - Otherwise it reads the home's logs (or `--store`'s database), read-only: every session,
 *   its turns as logged, refreshed as other processes (an editor's `skein acp`) append to them.
 *   Nothing is live there, so nothing can be answered.
 *
 * Loopback and any free port by default; prints its one-time URL on stderr.
 */
import * as nodePath from "node:path"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { Runtime, RuntimeError } from "../runtime/Api.ts"
import * as Checks from "./Checks.ts"
import * as Options from "./Options.ts"
import { readToken } from "./serve.ts"
import * as Usage from "./Usage.ts"
import * as Web from "./Web.ts"

export const signalExitCode = 0

export const run = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const parsed = yield* Effect.try({
      try: () => Options.parse(args, Usage.OPTIONS),
      catch: (e) => e
    })
    if (parsed.values.help === true) {
      process.stdout.write(Options.HELP)
      return 0
    }
    if (parsed.positionals.length > 0) return yield* Effect.fail(new Options.UsageError("skein monitor takes no arguments"))
    yield* Effect.try({ try: () => Usage.refuse("monitor", parsed, Options.env), catch: (e) => e })
    const values: Record<string, string | boolean | undefined> = parsed.values
    const common = yield* Effect.try({ try: () => Options.common(values), catch: (e) => e })
    yield* Effect.try({ try: () => Checks.home(common.home, { write: false }), catch: (e) => e })
    const web = (yield* Effect.try({ try: () => Web.parse(values, "127.0.0.1:0"), catch: (e) => e }))!
    const connect = typeof values["connect"] === "string" ? values["connect"] : undefined
    const token = yield* Effect.try({ try: () => readToken(typeof values["token-file"] === "string" ? values["token-file"] : undefined), catch: (e) => e })
    const url = connect ?? `unix:${nodePath.join(common.home, "skein.sock")}`

    const Monitor = yield* Effect.promise(() => import("../monitor/Monitor.ts"))
    const Remote = yield* Effect.promise(() => import("../remote/Remote.ts"))
    return yield* Effect.scoped(Effect.gen(function*() {
      const remote = yield* Effect.result(Layer.build(Remote.layer({ url, token })))
      if (remote._tag === "Failure" && connect !== undefined) return yield* Effect.fail(remote.failure)
      if (remote._tag === "Success") {
        const started = yield* Monitor.start({ ...web, mode: "live" }).pipe(Effect.provideContext(remote.success))
        process.stderr.write(Web.announcement("skein monitor", web, started.url))
        process.stderr.write(`skein monitor: watching the skein serve at ${url}\n`)
        // Until the server goes away (its events end with it).
        const runtime = Context.get(remote.success, Runtime)
        yield* Effect.exit(Stream.runDrain(runtime.events))
        return yield* Effect.fail(new RuntimeError({ reason: "unavailable", message: `The skein serve at ${url} stopped; the monitor stops with it` }))
      }
      // No server: the logs, read-only.
      const { layerLocal } = yield* Effect.promise(() => import("../Local.ts"))
      const logs = yield* Layer.build(layerLocal({ home: common.home, store: common.store !== undefined ? { postgres: common.store } : "files" }))
      const readOnly = { ...web, approve: false }
      const started = yield* Monitor.start({ ...readOnly, mode: "logs" }).pipe(Effect.provideContext(logs))
      process.stderr.write(Web.announcement("skein monitor", readOnly, started.url))
      process.stderr.write(
        `skein monitor: no skein serve answers at ${url}: showing the logs in ${common.store !== undefined ? "the --store database" : common.home}, read-only` +
          `${web.approve ? " (--web-approve needs a running skein serve)" : ""}\n`
      )
      return yield* Effect.never
    }))
  })
