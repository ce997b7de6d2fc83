/**
 * The live web monitor: `skein serve --web HOST:PORT` and `skein monitor`. It serves a page
 * that lists the sessions of a runtime (live, recent, children under their parents, the runner
 * in a cluster), streams one session's turns, and keeps an inbox of every open permission
 * question — answerable there only when started with `approve` (`--web-approve`).
 *
 * It reads the runtime through `SessionRpcs` only (`ListSessions`, `LiveSessions`, `Events`,
 * `Subscribe {fromSeq}`, `ReadSession`, and `Send {Answer}`): in `skein serve`, an in-process
 * client of the procedures the server serves; in `skein monitor`, the client of the running
 * server. Everything it shows is derived from the log and the live events; it keeps no store.
 *
 * It listens on loopback unless told otherwise, and prints a one-time URL carrying a fresh
 * capability token (see `Guard`).
 */
import * as Http from "node:http"
import * as Os from "node:os"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { RpcTest } from "effect/rpc"
import * as Client from "../remote/Client.ts"
import { SessionRpcs } from "../remote/Rpcs.ts"
import type { Procedures } from "../remote/Serve.ts"
import { Runtime, type RuntimeError } from "../runtime/Api.ts"
import * as Assets from "./Assets.ts"
import * as Guard from "./Guard.ts"
import * as Hub from "./Hub.ts"
import * as MonitorHttp from "./Http.ts"

export class MonitorError extends Schema.TaggedError<MonitorError>()("MonitorError", { message: Schema.String }) {}

export interface Options {
  readonly host: string
  /** 0: any free port. */
  readonly port: number
  /** Questions may be answered on the page. */
  readonly approve: boolean
  /** `live`: the runtime runs sessions; `logs`: only their logs are read. */
  readonly mode: "live" | "logs"
  /** In a cluster: this runner (`host:port`). */
  readonly runner?: string | undefined
}

/** Where a started monitor is: its address, and the one-time URL to open it with. */
export interface Started {
  readonly host: string
  readonly port: number
  readonly url: string
}

/** Starts the monitor over the `Runtime` in context, for as long as the scope lives. */
export const start = (options: Options): Effect.Effect<Started, MonitorError | RuntimeError, Runtime | Scope.Scope> =>
  Effect.gen(function*() {
    const runtime = yield* Runtime
    const hub = yield* Hub.make({ runtime, mode: options.mode, approve: options.approve, runner: options.runner })
    const server = yield* NodeHttpServer.make(() => Http.createServer(), { host: options.host, port: options.port }).pipe(
      Effect.mapError((error) => new MonitorError({ message: `The monitor cannot listen at ${Guard.hostPart(options.host)}:${options.port}: ${describe(error)}` }))
    )
    const address = server.address
    const port = address._tag === "UnixPathAddress" ? options.port : address.port
    // On every interface: the names and addresses of this machine are its own.
    const local = Guard.isWildcard(options.host)
      ? [Os.hostname(), ...Object.values(Os.networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address))]
      : []
    const guard = Guard.make(Guard.newToken(), options.host, port, local)
    yield* server.serve(MonitorHttp.app({ guard, hub, approve: options.approve, assets: Assets.assets }))
    const shown = Guard.isWildcard(options.host) ? Os.hostname() : options.host
    return { host: options.host, port, url: `http://${Guard.hostPart(shown)}:${port}/?token=${guard.token}` }
  })

const describe = (error: unknown): string => {
  const cause = typeof error === "object" && error !== null && "cause" in error ? (error as { cause: unknown }).cause : error
  return typeof cause === "object" && cause !== null && "code" in cause ? String((cause as { code: unknown }).code) : String(cause)
}

/** `Runtime` as an in-process client of `procedures` (what `skein serve` serves), over the `Runtime` in context. */
export const viaRpc = <R>(procedures: Procedures<R>): Layer.Layer<Runtime, RuntimeError, R> =>
  Layer.effect(Runtime, Effect.flatMap(RpcTest.makeClient(SessionRpcs), Client.make)).pipe(
    Layer.provide(procedures)
  ) as Layer.Layer<Runtime, RuntimeError, R>

/**
 * The monitor of `skein serve --web`: over an in-process client of the server's procedures,
 * announcing its URL on stderr once it listens.
 */
export const layer = <R>(options: Options, procedures: Procedures<R>, announce: (started: Started) => Effect.Effect<void>) =>
  Layer.effectDiscard(Effect.flatMap(start(options), announce)).pipe(Layer.provide(viaRpc(procedures)))
