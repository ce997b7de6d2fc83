/**
 * `skein serve [--listen URL] [--token-file FILE]`: the runtime for other processes, over
 * `effect/rpc` (`src/remote/`): Effect programs through `Skein.remote`, editors through
 * `skein acp --connect`. Loopback by default (a unix socket in the home, mode 0600); TCP and
 * WebSocket need a token.
 */
import * as NodeFs from "node:fs"
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Address from "../remote/Address.ts"
import * as Checks from "./Checks.ts"
import { skeinConfig } from "./Config.ts"
import { capYoungGeneration } from "./Heap.ts"
import * as Options from "./Options.ts"
import * as Usage from "./Usage.ts"
import * as Web from "./Web.ts"

export const signalExitCode = 0

/** A token shorter than this is refused: it could be guessed. */
export const MIN_TOKEN_LENGTH = 16

/** The server's token: from `--token-file`, else `SKEIN_SERVE_TOKEN`; undefined when neither. */
export const readToken = (file: string | undefined): string | undefined => {
  if (file !== undefined) {
    let text: string
    try {
      text = NodeFs.readFileSync(file, "utf8")
    } catch {
      throw new Options.UsageError(`Cannot read the token file ${file}`)
    }
    const token = text.trim()
    if (token.length === 0) throw new Options.UsageError(`The token file ${file} is empty`)
    return token
  }
  const fromEnv = process.env["SKEIN_SERVE_TOKEN"]
  return fromEnv === undefined || fromEnv.trim() === "" ? undefined : fromEnv.trim()
}

/** `HOST:PORT` (a host may be `[v6]`), or a usage error naming the option. */
const hostPort = (option: string, raw: string): { readonly host: string; readonly port: number } => {
  const match = /^(?:\[([^\]]+)\]|([^:\s]+)):(\d{1,5})$/.exec(raw)
  const port = match === null ? NaN : Number(match[3])
  if (match === null || !(port > 0 && port <= 65535)) throw new Options.UsageError(`${option} takes HOST:PORT (a port 1-65535), not "${raw}"`)
  return { host: match[1] ?? match[2]!, port }
}

/** A whole number above 0, or a usage error naming the option. */
const positiveInt = (option: string, raw: string | undefined): number | undefined => {
  if (raw === undefined) return undefined
  const value = Number(raw)
  if (!Number.isInteger(value) || value < 1) throw new Options.UsageError(`${option} takes a whole number above 0, not "${raw}"`)
  return value
}

/** A number of seconds > 0 as milliseconds, or a usage error naming the option. */
const seconds = (option: string, raw: string | undefined): number | undefined => {
  if (raw === undefined) return undefined
  const value = Number(raw)
  if (!Number.isFinite(value) || value <= 0) throw new Options.UsageError(`${option} takes a number of seconds above 0, not "${raw}"`)
  return Math.round(value * 1000)
}

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
    if (parsed.positionals.length > 0) return yield* Effect.fail(new Options.UsageError("skein serve takes no arguments"))
    Usage.refuse("serve", parsed, Options.env)
    const common = Options.common(parsed.values)
    Checks.home(common.home, { write: true })
    const listen = typeof parsed.values.listen === "string" ? parsed.values.listen : `unix:${nodePath.join(common.home, "skein.sock")}`
    const address = Address.parse(listen)
    if (address._tag === "invalid") return yield* Effect.fail(new Options.UsageError(address.message))
    const token = readToken(typeof parsed.values["token-file"] === "string" ? parsed.values["token-file"] : undefined)
    if (address._tag !== "unix") {
      if (token === undefined) {
        return yield* Effect.fail(new Options.UsageError(`${address._tag} needs a token: set SKEIN_SERVE_TOKEN or pass --token-file FILE`))
      }
      if (token.length < MIN_TOKEN_LENGTH) {
        return yield* Effect.fail(new Options.UsageError(`The token is too short: use at least ${MIN_TOKEN_LENGTH} characters`))
      }
    }
    const values: Record<string, string | boolean | undefined> = parsed.values
    const str = (key: string) => (typeof values[key] === "string" ? (values[key] as string) : undefined)
    const maxConnections = yield* Effect.try({ try: () => positiveInt("--max-connections", str("max-connections") ?? Options.env("SKEIN_SERVE_MAX_CONNECTIONS")), catch: (e) => e })
    const limits = maxConnections === undefined ? {} : { maxConnections }
    const clusterUrl = str("cluster") ?? Options.env("SKEIN_CLUSTER")
    const cluster = yield* Effect.try({ try: () => clusterOptions(clusterUrl, str), catch: (e) => e })
    if (cluster !== undefined && token === undefined) {
      return yield* Effect.fail(new Options.UsageError("A cluster runner needs a token, which its runners share: set SKEIN_SERVE_TOKEN or pass --token-file FILE"))
    }
    if (cluster !== undefined && token !== undefined && token.length < MIN_TOKEN_LENGTH) {
      return yield* Effect.fail(new Options.UsageError(`The token is too short: use at least ${MIN_TOKEN_LENGTH} characters`))
    }
    if (cluster !== undefined && common.store !== undefined) {
      return yield* Effect.fail(new Options.UsageError("--store and --cluster both name a database: a cluster keeps its sessions in its own (drop --store)"))
    }
    const web = yield* Effect.try({ try: () => Web.parse(values), catch: (e) => e })
    const config = yield* skeinConfig(common)
    // Many sessions stream through one process here: short scavenges keep each one's updates flowing.
    capYoungGeneration()
    const served = `${Address.format(address)}${address._tag !== "unix" && !Address.isLoopback(address.host) ? " (not loopback: reachable from other machines)" : ""}`
    // The web monitor (`--web`): loaded only when asked for; it announces its one-time URL.
    const Monitor = web === undefined ? undefined : yield* Effect.promise(() => import("../monitor/Monitor.ts"))
    const monitor = (runner?: string) => <R>(procedures: Layer.Layer<any, never, R>) =>
      Monitor === undefined || web === undefined
        ? Layer.empty
        : Monitor.layer({ ...web, mode: "live", runner }, procedures, (started) => Effect.sync(() => process.stderr.write(Web.announcement("skein serve", web, started.url))))
    if (cluster !== undefined) {
      const Runner = yield* Effect.promise(() => import("../cluster/Runner.ts"))
      return yield* Effect.scoped(Effect.gen(function*() {
        yield* Layer.build(Runner.layer(cluster, { address, token: token!, limits }, config, monitor(`${cluster.runner.host}:${cluster.runner.port}`)))
        const listen = cluster.listen ?? cluster.runner
        process.stderr.write(
          `skein serve: runner ${cluster.runner.host}:${cluster.runner.port} of the cluster in ${redactUrl(cluster.url)}` +
            `${Address.isLoopback(listen.host) ? "" : " (runner port not loopback: keep it on a network only runners reach)"}; listening on ${served}\n`
        )
        return yield* Effect.never
      }))
    }
    const { layerLocal } = yield* Effect.promise(() => import("../Local.ts"))
    const Serve = yield* Effect.promise(() => import("../remote/Serve.ts"))
    return yield* Effect.scoped(Effect.gen(function*() {
      const Handlers = yield* Effect.promise(() => import("../remote/Handlers.ts"))
      yield* Layer.build(Layer.mergeAll(Serve.layer(address, token, { limits }), monitor()(Handlers.layer)).pipe(Layer.provide(layerLocal(config))))
      process.stderr.write(`skein serve: listening on ${served}\n`)
      return yield* Effect.never
    }))
  })

/** A database URL without its password, to show. */
const redactUrl = (url: string): string => url.replace(/\/\/([^:@/]+):[^@/]*@/, "//$1:***@")

/** The runner's options, when `--cluster` (or `SKEIN_CLUSTER`) names a database. */
const clusterOptions = (url: string | undefined, str: (key: string) => string | undefined) => {
  if (url === undefined) {
    for (const key of ["runner", "runner-listen", "lock-expiry", "drain"]) {
      if (str(key) !== undefined) throw new Options.UsageError(`--${key} is for a cluster runner: add --cluster postgres://…`)
    }
    return undefined
  }
  if (!Options.isPostgresUrl(url)) throw new Options.UsageError("--cluster takes a PostgreSQL URL (postgres://user@host:port/database)")
  const runner = str("runner") ?? Options.env("SKEIN_RUNNER")
  if (runner === undefined) throw new Options.UsageError("A cluster runner needs --runner HOST:PORT (where the other runners reach it)")
  const listen = str("runner-listen")
  return {
    url,
    runner: hostPort("--runner", runner),
    listen: listen === undefined ? undefined : hostPort("--runner-listen", listen),
    lockExpiryMs: seconds("--lock-expiry", str("lock-expiry") ?? Options.env("SKEIN_LOCK_EXPIRY")),
    drainMs: seconds("--drain", str("drain") ?? Options.env("SKEIN_DRAIN"))
  }
}
