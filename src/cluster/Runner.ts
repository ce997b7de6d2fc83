/**
 * `skein serve --cluster postgres://…`: a runner of an `effect/cluster` cluster whose entities
 * are sessions (`SessionEntity`). Every runner of the cluster shares one PostgreSQL database:
 * the cluster's runner and message storage (`SqlRunnerStorage`, `SqlMessageStorage`), and the
 * sessions' logs (the Postgres store). Its `serve` endpoint answers `SessionRpcs` for every
 * session of the cluster (`Front`).
 *
 * - Runners talk over TCP (`runner`: the host and port other runners reach this one at), with
 *   Nagle's algorithm off on both ends (with it, each streamed reply between runners waits for
 *   the previous one's ack), and each connection must first give the cluster's token
 *   (`RunnerAuth`): the runner protocol has no check of its own.
 * - A runner that stops answering loses its shards once its lock has run out (`lockExpiryMs`,
 *   10 s by default, refreshed every third of it); the sessions' write leases last as long, and
 *   one whose runner died is free at once (`PgLease.ts`), so a session can be opened elsewhere
 *   as soon as its shard is.
 * - A runner that is stopped (SIGTERM) lets its running turns end, up to `drainMs` (30 s by
 *   default), then gives its shards back.
 */
import * as NodeCrypto from "@effect/platform-node/NodeCrypto"
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import * as NodeSocketServer from "@effect/platform-node/NodeSocketServer"
import { PgClient } from "@effect/sql-pg"
import * as RunnerHealth from "effect/cluster/RunnerHealth"
import * as Runners from "effect/cluster/Runners"
import { RunnerAddress } from "effect/cluster/RunnerAddress"
import * as ShardingConfig from "effect/cluster/ShardingConfig"
import * as SocketRunner from "effect/cluster/SocketRunner"
import * as SqlMessageStorage from "effect/cluster/SqlMessageStorage"
import * as SqlRunnerStorage from "effect/cluster/SqlRunnerStorage"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { RpcClient, RpcSerialization } from "effect/rpc"
import { Socket } from "effect/socket/Socket"
import * as SocketServer from "effect/socket/SocketServer"
import { layerLocal, type SkeinConfig } from "../Local.ts"
import type { Address } from "../remote/Address.ts"
import type * as Gate from "../remote/Gate.ts"
import * as Serve from "../remote/Serve.ts"
import * as Front from "./Front.ts"
import * as RunnerAuth from "./RunnerAuth.ts"
import * as SessionEntity from "./SessionEntity.ts"

export const DEFAULT_LOCK_EXPIRY_MS = 10_000
export const DEFAULT_DRAIN_MS = 30_000
/** Sessions a runner keeps open at most (effect/cluster's `maxResidentEntities` default). */
const MAX_RESIDENT = 10_000

export interface HostPort {
  readonly host: string
  readonly port: number
}

export interface Options {
  /** The cluster's PostgreSQL database (`postgres://…`). */
  readonly url: string
  /** Where other runners reach this one. */
  readonly runner: HostPort
  /** Where this runner listens for them (default: `runner`). */
  readonly listen?: HostPort | undefined
  /** How long a runner that stopped answering keeps its shards (default 10 s). */
  readonly lockExpiryMs?: number | undefined
  /** How long a stopping runner lets its turns run before it cancels them (default 30 s). */
  readonly drainMs?: number | undefined
}

/** Connections to other runners, without Nagle's delay, each starting with the token. */
const clientProtocol = (token: string) => Layer.effect(Runners.RpcClientProtocol)(
  Effect.gen(function*() {
    const serialization = yield* RpcSerialization.RpcSerialization
    return {
      codecFor: serialization.codecFor,
      make: Effect.fnUntraced(function*(address: RunnerAddress) {
        const socket = yield* NodeSocket.makeNet({ openTimeout: 1000, timeout: 5500, host: address.host, port: address.port, noDelay: true })
        return yield* RpcClient.makeProtocolSocket().pipe(
          Effect.provideService(Socket, RunnerAuth.client(socket, token)),
          Effect.provideService(RpcSerialization.RpcSerialization, serialization)
        )
      }, Effect.orDie)
    }
  })
)

/** The cluster's configuration for this runner. */
export const shardingConfig = (options: Options) => {
  const lockExpiryMs = options.lockExpiryMs ?? DEFAULT_LOCK_EXPIRY_MS
  return ShardingConfig.layer({
    runnerAddress: Option.some(RunnerAddress.make(options.runner)),
    runnerListenAddress: Option.some(RunnerAddress.make(options.listen ?? options.runner)),
    shardLockExpiration: lockExpiryMs,
    shardLockRefreshInterval: Math.max(500, Math.floor(lockExpiryMs / 3)),
    entityTerminationTimeout: options.drainMs ?? DEFAULT_DRAIN_MS,
    // Checked when a send to a runner fails, and every few seconds: a dead runner is noticed early.
    runnerHealthCheckInterval: "5 seconds",
    // Local messages are not round-tripped through the wire format (runners in tests do that).
    simulateRemoteSerialization: false
  })
}

/** Sharding over TCP sockets that need `token`, its storage in the `SqlClient`'s database. */
export const sharding = (options: Options, token: string) => {
  const listen = options.listen ?? options.runner
  const server = Layer.effect(
    SocketServer.SocketServer,
    Effect.map(NodeSocketServer.make({ host: listen.host, port: listen.port, noDelay: true }), (inner) => RunnerAuth.server(inner, token))
  )
  const client = clientProtocol(token)
  return SocketRunner.layer.pipe(
    Layer.provide([server, client]),
    Layer.provide(RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc), Layer.provide(client))),
    Layer.provideMerge(SqlMessageStorage.layer.pipe(Layer.provide(NodeCrypto.layerDigest))),
    Layer.provide(Layer.orDie(SqlRunnerStorage.layer)),
    Layer.provide(shardingConfig(options)),
    Layer.provide(RpcSerialization.layerSchemaBinary())
  )
}

/**
 * A runner: its sessions (as entities) and its `serve` endpoint at `address`, on a runtime
 * configured by `config` whose sessions live in the cluster's database.
 */
export const layer = (
  options: Options,
  serve: { readonly address: Address; readonly token: string; readonly limits?: Partial<Gate.Limits> | undefined },
  config: SkeinConfig,
  /** Runs beside the serve endpoint over the same procedures (the web monitor). */
  alongside?: (procedures: typeof Front.layer) => Layer.Layer<never, unknown, Layer.Services<typeof Front.layer>>
) => {
  const lockExpiryMs = options.lockExpiryMs ?? DEFAULT_LOCK_EXPIRY_MS
  // The cluster decides which sessions stay open (an idle one closes after a while, and runners
  // share the load): the runtime's own cap is only a backstop, at the cluster's default.
  const runtime = layerLocal({ ...config, maxLiveSessions: config.maxLiveSessions ?? MAX_RESIDENT, store: { postgres: options.url, leaseMs: lockExpiryMs } })
  // Named after the runner: `skein doctor --cluster` tells whose shard locks are whose.
  const sql = PgClient.layer({ url: Redacted.make(options.url), applicationName: `skein-runner ${options.runner.host}:${options.runner.port}` })
  return Layer.mergeAll(
    SessionEntity.layer(),
    Serve.layer(serve.address, serve.token, { procedures: Front.layer, limits: serve.limits }),
    alongside === undefined ? Layer.empty : alongside(Front.layer)
  ).pipe(
    Layer.provide(sharding(options, serve.token)),
    Layer.provide(sql),
    Layer.provide(runtime)
  )
}
