/**
 * What a runner's `skein serve` endpoint answers in a cluster: `SessionRpcs`, with every
 * session-level procedure sent to the session's entity, wherever the cluster placed it, and the
 * rest (listing, reading, forking logs) answered here from the shared store. A client connected
 * to any runner reaches every session.
 *
 * When the runner holding a session dies mid-turn, the turn's stream does not just break: the
 * prompt carries a key (`TurnOptions.key`), so sending it again — the cluster does, to the
 * runner the session lands on next — streams the same turn instead of a new one. There the
 * session is opened from its log, its open turn closed as after a crash (`turn_end` cancelled,
 * tools never re-run), and the client's turn ends with `cancelled`. A subscription is picked up
 * again from the last event it passed.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { isSessionId } from "../log/Listing.ts"
import { isEphemeral, type SessionEvent } from "../log/Event.ts"
import { Runtime, RuntimeError } from "../runtime/Api.ts"
import * as SessionId from "../runtime/SessionId.ts"
import { SessionError } from "../session/Protocol.ts"
import * as Handlers from "../remote/Handlers.ts"
import { SessionRpcs } from "../remote/Rpcs.ts"
import { SessionEntity } from "./SessionEntity.ts"

/** How many times a broken stream is picked up again before the front gives up. */
const RESUMES = 5
const RESUME_PAUSE = "250 millis"

const describe = (error: unknown): string =>
  typeof error === "object" && error !== null && "message" in error && typeof error.message === "string" ? error.message : String(error)

/** A failure of the session itself (passed on as it is), not of the way to it. */
const isOwn = (error: unknown): error is RuntimeError | SessionError => error instanceof RuntimeError || error instanceof SessionError

/** The cluster's own failures (no runner for the shard yet, a full mailbox, storage) as the runtime's `unavailable`. */
const unavailable = <E>(error: E): Extract<E, RuntimeError | SessionError> | RuntimeError =>
  isOwn(error) ? (error as Extract<E, RuntimeError | SessionError>) : new RuntimeError({ reason: "unavailable", message: `The session's runner is unavailable: ${describe(error)}` })

/** Whether a stream broke because the way to the session did (its runner died or moved it), not because the session failed. */
const isLost = (cause: Cause.Cause<unknown>): boolean => {
  const failure = Cause.findErrorOption(cause)
  if (failure._tag === "Some") return !isOwn(failure.value)
  return Cause.hasDies(cause) || Cause.hasInterrupts(cause)
}

/** Says why a stream is picked up again, and waits a moment first (the cluster is moving the session). */
const pause = (why: string) => Stream.drain(Stream.fromEffect(Effect.andThen(Effect.logWarning(why), Effect.sleep(RESUME_PAUSE))))

const notFound = (sessionId: string) => new RuntimeError({ reason: "not_found", message: `Session not found: ${sessionId}` })

/** `SessionRpcs` answered through the cluster (the `Sharding` and the local `Runtime` in context). */
export const handlers = Effect.gen(function*() {
  const runtime = yield* Runtime
  const clientFor = yield* SessionEntity.client
  const local = Handlers.handlers(runtime)

  /** The session's entity, for an id that can name one. */
  const entity = (sessionId: string) => (isSessionId(sessionId) ? Effect.succeed(clientFor(sessionId)) : Effect.fail(notFound(sessionId)))
  const routed = <A, E, R>(sessionId: string, f: (client: ReturnType<typeof clientFor>) => Effect.Effect<A, E, R>) =>
    Effect.mapError(Effect.flatMap(entity(sessionId), f), unavailable)
  const routedStream = <A, E, R>(sessionId: string, f: (client: ReturnType<typeof clientFor>) => Stream.Stream<A, E, R>) =>
    Stream.mapError(Stream.unwrap(Effect.map(entity(sessionId), f)), unavailable)

  /**
   * The session's events after `fromSeq`, again from where they stopped each time the stream
   * breaks because the session moved, until `until` holds (forever without it).
   */
  const follow = (
    sessionId: string,
    seen: { seq: number | undefined },
    until: ((event: SessionEvent) => boolean) | undefined,
    resumes: number
  ): Stream.Stream<SessionEvent, RuntimeError | SessionError> => {
    const events = routedStream(sessionId, (client) => client.Subscribe(seen.seq === undefined ? { sessionId } : { sessionId, fromSeq: seen.seq })).pipe(
      Stream.flattenIterable,
      Stream.tap((event) => Effect.sync(() => void (seen.seq = event.seq)))
    )
    const bounded = until === undefined ? events : Stream.takeUntil(events, until)
    return Stream.catchCause(bounded, (cause) =>
      resumes > 0 && isLost(cause)
        ? Stream.concat(
          pause(`session ${sessionId}: its runner went away; following it where it comes back`),
          follow(sessionId, seen, until, resumes - 1)
        )
        : Stream.failCause(cause))
  }

  return SessionRpcs.of({
    ...local,
    NewSession: (options) => routed(SessionId.make(), (client) => client.NewSession(options)),
    LoadSession: (options) => routedStream(options.sessionId, (client) => client.LoadSession(options)),
    GetSession: (payload) => routed(payload.sessionId, (client) => client.GetSession(payload)),
    CloseSession: (payload) => Effect.ignore(routed(payload.sessionId, (client) => client.CloseSession(payload))),
    Send: (payload) => routed(payload.sessionId, (client) => client.Send(payload)),
    Settings: (payload) => routed(payload.sessionId, (client) => client.Settings(payload)),
    McpServers: (payload) => routed(payload.sessionId, (client) => client.McpServers(payload)),
    DeleteSession: (payload) =>
      Effect.andThen(
        Effect.ignore(routed(payload.sessionId, (client) => client.CloseSession(payload))),
        runtime.deleteSession(payload.sessionId)
      ),
    Turn: (payload) =>
      Stream.suspend(() => {
        // Keyed, the prompt can be sent again (the cluster does when the session's runner dies
        // while it streams, and so does this front when the stream breaks): the session runs
        // it once and streams the same turn, its logged part again, which is dropped here.
        const keyed = { ...payload, options: { ...payload.options, key: payload.options.key ?? crypto.randomUUID() } }
        let passed = 0
        let ended = false
        const fresh = (event: SessionEvent) => isEphemeral(event) || event.seq > passed
        const watch = (event: SessionEvent) =>
          Effect.sync(() => {
            if (!isEphemeral(event)) passed = event.seq
            if (event.type === "turn_end") ended = true
          })
        const attempt = (resumes: number): Stream.Stream<SessionEvent, RuntimeError | SessionError> =>
          routedStream(payload.sessionId, (client) => client.Turn(keyed)).pipe(
            Stream.flattenIterable,
            Stream.filter(fresh),
            Stream.tap(watch),
            Stream.catchCause((cause) =>
              ended || resumes === 0 || !isLost(cause)
                ? Stream.failCause(cause)
                : Stream.concat(
                  pause(`session ${payload.sessionId}: its runner went away during a turn; following it where it comes back`),
                  attempt(resumes - 1)
                ))
          )
        return attempt(RESUMES)
      }),
    Subscribe: (payload) => follow(payload.sessionId, { seq: payload.fromSeq }, undefined, Number.MAX_SAFE_INTEGER)
  })
})

/** The `SessionRpcs` handlers of a runner. */
export const layer = SessionRpcs.toLayer(handlers)
