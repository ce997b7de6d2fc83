/**
 * A session as an `effect/cluster` entity: its id is the session id, and its procedures are the
 * session-level ones of `SessionRpcs` (`Entity.fromRpcGroup`), answered by the runtime of the
 * runner the cluster placed it on. Wherever a client connects, its requests reach the one runner
 * that holds the session; the log (the Postgres store) is what moves between runners.
 *
 * - All procedures run at once (`concurrency: "unbounded"`): a `Cancel` or an `Answer` never
 *   waits behind a turn. The session actor orders what must be ordered.
 * - The session is opened when the entity starts (from its log: after a crash, its open turn is
 *   closed as cancelled, never re-run) and closed when the entity stops — idle, moved to another
 *   runner, or the runner stopping.
 * - A stopping runner lets running turns end (`drain`); a subscription is interrupted at once
 *   (`InterruptOnTermination`), and its front picks it up again where the session lands next.
 * - Nothing here is persisted by the cluster: requests and their replies (token deltas
 *   included) travel between runners only. The session's log is its truth.
 */
import * as ClusterSchema from "effect/cluster/ClusterSchema"
import * as Entity from "effect/cluster/Entity"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as Schema from "effect/Schema"
import { Rpc, RpcGroup } from "effect/rpc"
import { Runtime, RuntimeError } from "../runtime/Api.ts"
import { Event, type Session } from "../session/Protocol.ts"
import { chunks, snapshot } from "../remote/Handlers.ts"
import * as Rpcs from "../remote/Rpcs.ts"

/**
 * The cluster sends a stream's replies a chunk at a time, each acknowledged before the next:
 * events travel in batches (whatever the session emitted meanwhile), or a fast turn would move
 * one delta per round trip between runners.
 */
const Batch = Schema.NonEmptyArray(Event)

/**
 * The session-level procedures of `SessionRpcs` (the streams in batches), without its token
 * check: runners check each other's connections (`RunnerAuth`).
 */
class SessionEntityRpcs extends RpcGroup.make(
  Rpcs.NewSession,
  Rpcs.LoadSession,
  Rpcs.GetSession,
  Rpcs.CloseSession,
  Rpc.make("Turn", { payload: Rpcs.TurnPayload, success: Batch, error: Rpcs.Failure, stream: true }),
  Rpcs.Send,
  Rpcs.Settings_,
  Rpcs.McpServers,
  Rpc.make("Subscribe", { payload: Rpcs.SubscribePayload, success: Batch, error: Rpcs.Failure, stream: true })
    .annotate(ClusterSchema.InterruptOnTermination, true)
) {}

export const SessionEntity = Entity.fromRpcGroup("Session", SessionEntityRpcs)

interface Options {
  /** How long an untouched session stays open on its runner (default 15 minutes). */
  readonly maxIdleMs?: number | undefined
}

/** Runs the `Session` entities of this runner on the `Runtime` in context. */
export const layer = (options?: Options) =>
  SessionEntity.toLayer(
    Effect.gen(function*() {
      const runtime = yield* Runtime
      const address = yield* Entity.CurrentAddress
      const runner = yield* Entity.CurrentRunnerAddress
      const id = address.entityId
      const here = `${runner.host}:${runner.port}`

      // Open (or come back to) the session. A runner that died holding it lets go of it at once,
      // one that stopped answering once its lease ran out (the store waits for it); a live
      // holder is refused at once. Loading, deleting and every request that opens it alike.
      const open: Effect.Effect<Session, RuntimeError> = Effect.catchIf(
        runtime.getSession(id),
        (error) => error.reason === "not_found",
        () => Effect.map(runtime.loadSession({ sessionId: id }), (loaded) => loaded.session)
      )
      yield* Effect.addFinalizer(() => runtime.closeSession(id))

      // The cluster closes an entity that has had no request for a while, and a turn nobody
      // streams (a Prompt or a Steer given to `send`) is no request: while the session has such
      // work, the entity is kept alive (effect/cluster's keep-alive), then let go.
      const context = yield* Effect.context<never>()
      const scope = yield* Effect.scope
      let holding = false
      const busy = (s: Session) => "idleSince" in s && typeof s.idleSince === "function" && s.idleSince() === undefined
      const holdWhileBusy = (s: Session) =>
        Effect.suspend(() => {
          if (holding || !busy(s)) return Effect.void
          holding = true
          const keepAlive = (on: boolean) => Effect.provideContext(Entity.keepAlive(on), context as never)
          const watch = Effect.gen(function*() {
            while (busy(s)) yield* Effect.sleep("1 second")
          }).pipe(Effect.ensuring(Effect.andThen(Effect.sync(() => void (holding = false)), keepAlive(false))))
          return Effect.andThen(keepAlive(true), Effect.forkIn(watch, scope))
        })
      const withSnapshot = (s: Session) => Effect.map(snapshot(s), (snap) => ({ ...snap, runner: here }))

      return SessionEntity.of({
        // Sent again (the runner that made it died before answering), it is the session made then.
        NewSession: ({ payload }) =>
          runtime.newSession(payload, { id }).pipe(
            Effect.catch((error) => Effect.flatMap(Effect.exit(runtime.readSession(id)), (made) => (made._tag === "Success" ? open : Effect.fail(error)))),
            Effect.flatMap(withSnapshot)
          ),
        LoadSession: ({ payload }) =>
          Stream.unwrap(Effect.gen(function*() {
            const loaded = yield* runtime.loadSession({ ...payload, sessionId: id })
            return Stream.concat(Stream.make({ _tag: "Loaded" as const, snapshot: yield* withSnapshot(loaded.session) }), chunks(loaded.events))
          })),
        GetSession: () => Effect.flatMap(open, withSnapshot),
        CloseSession: () => runtime.closeSession(id),
        Turn: ({ payload }) => Stream.chunks(Stream.unwrap(Effect.map(open, (s) => s.turn(payload.content, payload.options)))),
        Send: ({ payload }) =>
          Effect.flatMap(open, (s) =>
            Effect.tap(s.send(payload.command), () => (payload.command._tag === "Prompt" || payload.command._tag === "Steer" ? holdWhileBusy(s) : Effect.void))),
        Settings: () => Effect.flatMap(open, (s) => s.settings),
        McpServers: () => Effect.flatMap(open, (s) => s.mcpServers),
        Subscribe: ({ payload }) =>
          Stream.chunks(Stream.unwrap(Effect.map(open, (s) => (payload.fromSeq === undefined ? s.events : s.subscribe(payload.fromSeq)))))
      })
    }),
    { concurrency: "unbounded", maxIdleTime: options?.maxIdleMs ?? 15 * 60_000 }
  )
