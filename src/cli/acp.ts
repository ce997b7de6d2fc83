/**
 * `skein acp`: the ACP agent over stdio. stdout carries JSON-RPC only; every
 * diagnostic goes to stderr.
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import type { Transport } from "../jsonrpc/Peer.ts"
import { Runtime, RuntimeError } from "../runtime/Api.ts"
import * as Stderr from "../secrets/Stderr.ts"
import { awaiting, serveWith } from "../server/AcpServer.ts"
import * as Stdio from "../server/Stdio.ts"
import { VERSION } from "../version.ts"
import * as Checks from "./Checks.ts"
import { markWarm, snapshotSoon } from "./CodeCache.ts"
import { skeinConfig } from "./Config.ts"
import { capYoungGeneration } from "./Heap.ts"
import * as Options from "./Options.ts"
import { readToken } from "./serve.ts"
import * as Address from "../remote/Address.ts"

/** stdout belongs to the protocol: anything else that tries to print goes to stderr, redacted. */
const guardStdout = () => {
  const toStderr = Stderr.print
  console.error = toStderr
  console.log = toStderr
  console.info = toStderr
  console.debug = toStderr
  console.warn = toStderr
  // A client that closes its end must not crash the agent (EPIPE); stdin's end shuts us down.
  process.stdout.on("error", () => {})
}

/**
 * The first line Skein writes (normally the `initialize` answer) marks the run as warm, and
 * once it is written, `firstWritten` is done.
 */
const warmOnFirstWrite = (transport: Transport, firstWritten: Deferred.Deferred<void>): Transport => {
  let warm = false
  return {
    ...transport,
    write: (chunk) => {
      if (warm) return transport.write(chunk)
      warm = true
      markWarm()
      return Effect.andThen(transport.write(chunk), Deferred.succeed(firstWritten, undefined))
    }
  }
}

/** The pause between the first session's answer and the warm-up: a client that prompts at once has started its call by then. */
export const WARM_AFTER_MS = 50

/**
 * `work`, forked into `scope` `WARM_AFTER_MS` after the first time the result runs, and never
 * again: for what the first prompt's turn needs soon but not before its model call has gone out.
 */
export const onceSoonAfter = (work: Effect.Effect<void>, scope: Scope.Scope): Effect.Effect<void> => {
  let started = false
  return Effect.suspend(() => {
    if (started) return Effect.void
    started = true
    return Effect.asVoid(Effect.forkIn(Effect.andThen(Effect.sleep(WARM_AFTER_MS), work), scope))
  })
}

/**
 * The provider's warm-up (`Provider.warm`: Node's HTTP client and the whole path of a model
 * call, run once without calling the model) starts while the client is idle after the first
 * session opened: `WARM_AFTER_MS` after the answer that opened it is written. An editor's
 * next message is then that session's first prompt, seconds later, and it finds all of it
 * ready. Never earlier: loading Node's HTTP client holds the process for about 30 ms, which
 * neither `initialize` nor `session/new` may wait for. A client that prompts at once starts
 * the call before the warm-up, which then does nothing (the call loads what it needs).
 */
export const warmAfterFirstSession = (transport: Transport, warm: Effect.Effect<void> | undefined, scope: Scope.Scope) => {
  let state: "waiting" | "opened" | "started" = warm === undefined ? "started" : "waiting"
  const start = Effect.suspend(() => {
    if (state !== "opened" || warm === undefined) return Effect.void
    state = "started"
    return Effect.asVoid(Effect.forkIn(Effect.andThen(Effect.sleep(WARM_AFTER_MS), warm), scope))
  })
  return {
    transport: {
      ...transport,
      // The answer is queued before `opened` runs; the first write after it has gone out.
      write: (chunk: string) => (state === "opened" ? Effect.andThen(transport.write(chunk), start) : transport.write(chunk))
    } satisfies Transport,
    opened: Effect.sync(() => {
      if (state === "waiting") state = "opened"
    })
  }
}

export const signalExitCode = 0

export const run = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const parsed = yield* Effect.try({
      try: () => Options.parse(args, { ...Options.commonOptions, connect: { type: "string" }, "token-file": { type: "string" } }),
      catch: (e) => e
    })
    if (parsed.values.help === true) {
      process.stdout.write(Options.HELP)
      return 0
    }
    if (parsed.positionals.length > 0) return yield* Effect.fail(new Options.UsageError("skein acp takes no arguments"))
    const common = Options.common(parsed.values)
    // A bad flag, home, script or config file is a usage error (exit 2) before anything is
    // served; once serving, every error is the protocol's.
    Checks.home(common.home, { write: true })
    const connect = typeof parsed.values.connect === "string"
      ? { url: parsed.values.connect, token: readToken(typeof parsed.values["token-file"] === "string" ? parsed.values["token-file"] : undefined) }
      : undefined
    if (connect !== undefined) {
      const address = Address.parse(connect.url)
      if (address._tag === "invalid") return yield* Effect.fail(new Options.UsageError(address.message))
    }
    const config = yield* skeinConfig(common)
    guardStdout()
    yield* Effect.scoped(Effect.gen(function*() {
      // The runtime (the log, tools, providers and MCP all come with it) is loaded and built
      // once `initialize` is answered, in the background: `initialize` never waits for it, and
      // the client's `session/new` mostly finds it ready. Built once; its scope is the server's.
      const scope = yield* Effect.scope
      const ready = yield* Effect.cached(
        // With --connect, the sessions live in a `skein serve`; otherwise in this process (and
        // then the RPC client and its transports are never loaded).
        Effect.promise((): Promise<Layer.Layer<Runtime, unknown>> =>
          connect === undefined
            ? import("../Local.ts").then((local) => local.layerLocal(config))
            : import("../remote/Remote.ts").then((remote) => remote.layer(connect))
        ).pipe(
          Effect.flatMap(Layer.build),
          // Start-up ends here: the code cache is taken shortly after.
          Effect.tap(() => Effect.sync(snapshotSoon)),
          Scope.provide(scope),
          Effect.map((context) => Context.get(context, Runtime)),
          Effect.catchCause((cause) => {
            const error = Cause.squash(cause)
            const message = error instanceof Error ? error.message : String(error)
            return Effect.logError(`skein: ${message}`).pipe(
              Effect.andThen(Effect.fail(new RuntimeError({ reason: "unavailable", message })))
            )
          })
        )
      )
      const firstWritten = yield* Deferred.make<void>()
      yield* Effect.forkScoped(Effect.andThen(Deferred.await(firstWritten), Effect.ignore(ready)))
      const warming = warmAfterFirstSession(
        warmOnFirstWrite(Stdio.transport(), firstWritten),
        "provider" in config ? config.provider.warm : undefined,
        scope
      )
      // Sessions run in this process unless it connects to a server: their streams want short
      // scavenges. The cap (node:v8 and node:perf_hooks, about 3 MB) comes with the first prompt,
      // once its model call has gone out: a session that was only opened streams nothing.
      const capHeap = connect === undefined ? onceSoonAfter(Effect.sync(() => void capYoungGeneration()), scope) : undefined
      yield* serveWith(warming.transport, {
        version: VERSION,
        clientAccess: { useClientFs: !common.localFs, useClientTerminal: !common.localTerminal },
        maxLineBytes: common.maxLineBytes,
        onSessionOpened: warming.opened,
        onPrompt: capHeap,
        // Sessions on a server may be shown in other windows too: their turns are shown here.
        watchOthers: connect !== undefined
      }, awaiting(ready))
    }))
    return 0
  })
