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
import { parseArgs } from "node:util"
import type { Transport } from "../jsonrpc/Peer.ts"
import { Runtime, RuntimeError } from "../runtime/Api.ts"
import * as Stderr from "../secrets/Stderr.ts"
import { awaiting, serveWith } from "../server/AcpServer.ts"
import * as Stdio from "../server/Stdio.ts"
import { VERSION } from "../version.ts"
import * as Checks from "./Checks.ts"
import { markWarm, snapshotSoon } from "./CodeCache.ts"
import { reloadableConfig } from "./Config.ts"
import { capYoungGeneration } from "./Heap.ts"
import * as Options from "./Options.ts"
import { MIN_TOKEN_LENGTH, readToken } from "./serve.ts"
import * as SignIn from "./SignIn.ts"
import * as Usage from "./Usage.ts"
import * as Address from "../remote/Address.ts"
import * as Detect from "../sandbox/Detect.ts"
import * as Guarantees from "../sandbox/Guarantees.ts"
import * as SandboxSettings from "../sandbox/Settings.ts"

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
 * session opened: `WARM_AFTER_MS` after the answer that opened it is written (the server's
 * `onSessionOpened` runs once it is). An editor's next message is then that session's first
 * prompt, seconds later, and it finds all of it ready. Never earlier: loading Node's HTTP client
 * holds the process for about 30 ms, which neither `initialize` nor `session/new` may wait for.
 * A client that prompts at once starts the call before the warm-up, which then does nothing
 * (the call loads what it needs).
 */
export const warmAfterFirstSession = (warm: Effect.Effect<void> | undefined, scope: Scope.Scope): Effect.Effect<void> | undefined =>
  warm === undefined ? undefined : onceSoonAfter(warm, scope)

export const signalExitCode = 0

/** `args` without its one positional argument (the options keep their values). */
const withoutPositional = (args: ReadonlyArray<string>, options: typeof Usage.OPTIONS): ReadonlyArray<string> => {
  const { tokens } = parseArgs({ args: [...args], options, allowPositionals: true, strict: true, tokens: true })
  const at = tokens.find((token) => token.kind === "positional")?.index
  return at === undefined ? args : args.filter((_, i) => i !== at)
}

/** What can be told of `--connect` without connecting: the URL, and a token where one is needed. */
const checkConnect = (connect: { readonly url: string; readonly token: string | undefined }) => {
  const address = Address.parse(connect.url)
  if (address._tag === "invalid") throw new Options.UsageError(address.message)
  if (address._tag === "unix") return
  if (connect.token === undefined) {
    throw new Options.UsageError(`${connect.url} needs the server's token: set SKEIN_SERVE_TOKEN or pass --token-file FILE`)
  }
  if (connect.token.length < MIN_TOKEN_LENGTH) {
    throw new Options.UsageError(`The token is too short to be the server's (a server takes ${MIN_TOKEN_LENGTH} characters or more): check SKEIN_SERVE_TOKEN or --token-file`)
  }
}

/** The runtime of the server at `connect`, connected now (a failure is a usage error: the server, or its token, is wrong). */
const connectTo = (connect: { readonly url: string; readonly token: string | undefined }, scope: Scope.Scope) =>
  Effect.promise(() => import("../remote/Remote.ts")).pipe(
    Effect.flatMap((remote) => Layer.build(remote.layer(connect))),
    Scope.provide(scope),
    Effect.map((context) => Context.get(context, Runtime)),
    Effect.mapError((error) => new Options.UsageError(error.message))
  )

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
    // A client that appends a terminal auth method's arguments to the agent's runs `skein acp setup`.
    if (parsed.positionals.length === 1 && parsed.positionals[0] === "setup" && typeof parsed.values.connect !== "string") {
      const Setup = yield* Effect.promise(() => import("./setup.ts"))
      return yield* Setup.run(withoutPositional(args, Usage.OPTIONS))
    }
    if (parsed.positionals.length > 0) return yield* Effect.fail(new Options.UsageError("skein acp takes no arguments"))
    Usage.refuse("acp", parsed, Options.env)
    const common = Options.common(parsed.values)
    // A bad flag, home, script or config file is a usage error (exit 2) before anything is
    // served; once serving, every error is the protocol's.
    Checks.home(common.home, { write: true })
    const connect = typeof parsed.values.connect === "string"
      ? { url: parsed.values.connect, token: readToken(typeof parsed.values["token-file"] === "string" ? parsed.values["token-file"] : undefined) }
      : undefined
    if (connect !== undefined) checkConnect(connect)
    const { config, reloadable } = yield* reloadableConfig(common)
    guardStdout()
    yield* Effect.scoped(Effect.gen(function*() {
      const scope = yield* Effect.scope
      // With --connect, the server is reached and takes the token before anything is served: a
      // mistake there is a usage error now, not a failure of every session/new later.
      const remote = connect === undefined ? undefined : yield* connectTo(connect, scope)
      // Otherwise the runtime (the log, tools, providers and MCP all come with it) is loaded and
      // built once `initialize` is answered, in the background: `initialize` never waits for it,
      // and the client's `session/new` mostly finds it ready. Built once; its scope is the server's.
      const ready = yield* Effect.cached(
        (remote !== undefined
          ? Effect.succeed(remote)
          : Effect.promise(() => import("../Local.ts")).pipe(
            Effect.flatMap((local) => Layer.build(local.layerLocal(config))),
            Scope.provide(scope),
            Effect.map((context) => Context.get(context, Runtime))
          )).pipe(
            // Start-up ends here: the code cache is taken shortly after.
            Effect.tap(() => Effect.sync(snapshotSoon)),
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
      // Sessions run in this process unless it connects to a server: their streams want short
      // scavenges. The cap (node:v8 and node:perf_hooks, about 3 MB) comes with the first prompt,
      // once its model call has gone out: a session that was only opened streams nothing.
      const capHeap = connect === undefined ? onceSoonAfter(Effect.sync(() => void capYoungGeneration()), scope) : undefined
      yield* serveWith(warmOnFirstWrite(Stdio.transport(), firstWritten), {
        version: VERSION,
        clientAccess: { useClientFs: !common.localFs, useClientTerminal: !common.localTerminal },
        maxLineBytes: common.maxLineBytes,
        onSessionOpened: warmAfterFirstSession(config.provider?.warm, scope),
        onPrompt: capHeap,
        // Sessions on a server may be shown in other windows too: their turns are shown here.
        watchOthers: connect !== undefined,
        // A server's sessions use its configuration, not the one here: nothing to sign in to.
        signIn: connect === undefined ? SignIn.make(common.home, reloadable) : undefined,
        // A server's sandbox is its own: stated only for sessions that live here.
        sandbox: connect === undefined ? Guarantees.statement(SandboxSettings.normalize(config.sandbox), Detect.unlikely()) : undefined
      }, awaiting(ready))
    }))
    return 0
  })
