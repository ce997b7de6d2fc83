/**
 * A JSON-RPC 2.0 peer over a byte transport: it answers incoming requests and
 * notifications, and sends requests and notifications of its own.
 *
 * Invariants:
 * - One writer fiber (Writer.ts) drains a queue of encoded lines; everything
 *   the peer writes goes through it, in enqueue order, so lines never interleave.
 * - Every incoming request id gets exactly one response, whatever happens to
 *   its handler (success, error, defect, cancellation, shutdown).
 * - Nothing read from the input can stop the peer: bad lines are answered
 *   with the matching error and reading goes on.
 * - Memory is bounded whatever the other side does: lines are capped
 *   (`maxLineBytes`), the write queue is bounded, and at most
 *   `maxConcurrentRequests` incoming requests run at once (more are answered
 *   -32800 at once, from the reading fiber, so a client that floods us and
 *   reads nothing stalls on its own pipe instead of growing ours).
 * - Shutdown is bounded: output that cannot be written within
 *   `SHUTDOWN_GRACE_MS + SHUTDOWN_FLUSH_MS` of the input's end or of an
 *   interruption (a client that stopped reading) is dropped, so the process
 *   can still exit.
 */
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberMap from "effect/FiberMap"
import * as MutableHashMap from "effect/MutableHashMap"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type * as Duration from "effect/Duration"
import type * as Scope from "effect/Scope"
import * as Lazy from "../Lazy.ts"
import * as Framing from "./Framing.ts"
import * as Protocol from "./Protocol.ts"
import * as Response from "./Response.ts"
import type { Id, RpcError } from "./Protocol.ts"
import * as Writer from "./Writer.ts"

export interface Transport {
  readonly input: Stream.Stream<Uint8Array, unknown>
  /** Receives one or more complete `\n`-terminated lines. */
  readonly write: (chunk: string) => Effect.Effect<void>
}

export interface Options {
  /** Longest accepted incoming line in bytes. Default 16 MiB. */
  readonly maxLineBytes?: number | undefined
  /** Timeout of outgoing requests that do not give their own. Default: none. */
  readonly defaultRequestTimeout?: Duration.Input | undefined
  /** Lines the write queue holds before writers wait. Default 4096. */
  readonly writeQueueCapacity?: number | undefined
  /** Incoming requests handled at once; more are refused with -32800. Default 1024. */
  readonly maxConcurrentRequests?: number | undefined
}

export interface RequestContext {
  readonly id: Id
  /**
   * Runs `effect` once this request's response (or error) has been written to the transport
   * (or dropped, at shutdown), however the handler ends. Lets a later request's output wait
   * for an earlier answer, and keeps what follows an answer from delaying it.
   */
  readonly onResponded: (effect: Effect.Effect<void>) => void
  /**
   * Queues this request's (successful) response now, before the handler returns; whatever the
   * handler then returns or fails with is not sent. Lets a handler answer, then finish up
   * (a prompt answers, then lets go of its turn, so nothing of the next turn can come first).
   */
  readonly respond: (result: unknown) => Effect.Effect<void>
}

export interface RequestHandler<R = never> {
  readonly _tag: "RequestHandler"
  readonly decode: (params: unknown) => Effect.Effect<unknown, RpcError, R>
  readonly handle: (params: unknown, ctx: RequestContext) => Effect.Effect<unknown, RpcError, R>
  readonly onCancel: ((params: unknown) => Effect.Effect<void, never, R>) | undefined
}

export interface NotificationHandler<R = never> {
  readonly _tag: "NotificationHandler"
  readonly decode: (params: unknown) => Effect.Effect<unknown, RpcError, R>
  readonly handle: (params: unknown) => Effect.Effect<void, never, R>
}

/**
 * The handler tables. The values are typed by their tag only, so that the
 * services a handler needs are inferred from the handler itself and never
 * from this contextual type (which would make them `any`).
 */
export interface Handlers {
  readonly requests?: Readonly<Record<string, { readonly _tag: "RequestHandler" }>> | undefined
  readonly notifications?: Readonly<Record<string, { readonly _tag: "NotificationHandler" }>> | undefined
}

type ServicesOf<X> = X extends RequestHandler<infer R> ? R : X extends NotificationHandler<infer R> ? R : never
type ValuesOf<T> = T extends Readonly<Record<string, infer V>> ? V : never

/** The services the handlers of a `Handlers` record need. */
export type HandlerServices<H extends Handlers> =
  | ServicesOf<ValuesOf<NonNullable<H["requests"]>>>
  | ServicesOf<ValuesOf<NonNullable<H["notifications"]>>>

interface RequestOptions {
  readonly timeout?: Duration.Input | undefined
  /**
   * Completed once the request is in the write queue (or could not be sent): a caller that
   * forks the request can wait for this before writing anything that must follow it.
   */
  readonly sent?: Deferred.Deferred<void> | undefined
  /** Called with the request's id once it has one, so that what is logged about it can name it. */
  readonly assigned?: ((id: Id) => void) | undefined
}

export interface Peer {
  /** Sends a request and awaits its response. Interruption or timeout sends `$/cancel_request`. */
  readonly request: (method: string, params?: unknown, options?: RequestOptions) => Effect.Effect<unknown, RpcError>
  readonly notify: (method: string, params?: unknown) => Effect.Effect<void>
  /** Sends lines already encoded (each `\n`-terminated, U+2028/9 escaped) as one write-queue item. */
  readonly sendEncoded: (lines: string) => Effect.Effect<void>
  /**
   * Reads the input until it ends (or fails), answering requests with
   * `handlers`. Then fails pending outgoing requests with `peerClosed` (no
   * response can come any more, and no handler must wait for one), cancels
   * in-flight handlers that have an `onCancel` and gives them
   * `SHUTDOWN_GRACE_MS` to answer, interrupts the others (each answers
   * -32800), flushes the writer (within `SHUTDOWN_FLUSH_MS` more) and returns.
   * Interrupting `serve` (SIGTERM) ends it the same way. Call it once;
   * afterwards `request` fails with `peerClosed` at once.
   *
   * Notification handlers and `onCancel` run on the reading fiber, in order
   * with the requests around them; keep them short, and never await a
   * response of this peer from one (fork instead).
   */
  readonly serve: <H extends Handlers>(handlers: H) => Effect.Effect<void, never, HandlerServices<H>>
}

// Made with its method's first message: only the Schemas of methods sent are built (`Lazy.schema`).
const decodeWith = <S extends Schema.Constraint>(schema: S) => {
  const decode = Lazy.fn(() => Schema.decodeUnknownEffect(schema, { errors: "all" }))
  return (params: unknown): Effect.Effect<S["Type"], RpcError, S["DecodingServices"]> =>
    Effect.mapError(decode(params), (error) => Protocol.invalidParams(Protocol.formatIssue(error.issue)))
}

/** A request handler: params decoded with `params` (failure → -32602), result JSON-ready. */
export const request = <S extends Schema.Constraint, R = never, R2 = never>(
  params: S,
  handler: (params: S["Type"], ctx: RequestContext) => Effect.Effect<unknown, RpcError, R>,
  options?: {
    /**
     * When given, `$/cancel_request` runs this instead of interrupting the
     * handler, and the handler answers by itself (e.g. `stopReason: "cancelled"`).
     */
    readonly onCancel?: ((params: S["Type"]) => Effect.Effect<void, never, R2>) | undefined
  }
): RequestHandler<R | R2 | S["DecodingServices"]> => ({
  _tag: "RequestHandler",
  decode: decodeWith(params),
  handle: handler,
  onCancel: options?.onCancel
})

export const notification = <S extends Schema.Constraint, R = never>(
  params: S,
  handler: (params: S["Type"]) => Effect.Effect<void, never, R>
): NotificationHandler<R | S["DecodingServices"]> => ({
  _tag: "NotificationHandler",
  decode: decodeWith(params),
  handle: handler
})

const CANCEL_METHOD = "$/cancel_request"

/** How long, after the input ends, requests with `onCancel` get to answer before they are interrupted. */
export const SHUTDOWN_GRACE_MS = 2_000

/** After that grace, how long what is left to write may take before it is dropped (a client that stopped reading). */
export const SHUTDOWN_FLUSH_MS = 2_000

const DEFAULT_MAX_CONCURRENT_REQUESTS = 1024

interface InFlight {
  /** Runs on the serve fiber, which provides the handlers' services. */
  onCancel: Effect.Effect<void, never, any> | undefined
  cancelRequested: boolean
  /** Run after the response is written (`RequestContext.onResponded`). */
  responded: Array<Effect.Effect<void>>
  /** The response is queued already (`RequestContext.respond`). */
  answered: boolean
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null

export const make = Effect.fnUntraced(function*(
  transport: Transport,
  options?: Options
): Effect.fn.Return<Peer, never, Scope.Scope> {
  const maxLineBytes = options?.maxLineBytes
  const defaultTimeout = options?.defaultRequestTimeout
  const maxConcurrent = options?.maxConcurrentRequests ?? DEFAULT_MAX_CONCURRENT_REQUESTS
  const writer = yield* Writer.make(transport.write, options?.writeQueueCapacity ?? 4096)
  const send = writer.send

  // ---- outgoing ------------------------------------------------------------

  let nextId = 0
  let inputClosed = false
  const pending = MutableHashMap.empty<Id, Deferred.Deferred<unknown, RpcError>>()

  const request = Effect.fn("Peer.request")(function*(method: string, params?: unknown, options?: RequestOptions) {
    if (inputClosed) {
      if (options?.sent !== undefined) yield* Deferred.succeed(options.sent, undefined)
      return yield* Protocol.peerClosed()
    }
    const id = nextId++
    options?.assigned?.(id)
    const line = Framing.encode(Protocol.makeRequest(id, method, params))
    const deferred = Deferred.makeUnsafe<unknown, RpcError>()
    MutableHashMap.set(pending, id, deferred)
    const timeout = options?.timeout ?? defaultTimeout
    const response = timeout === undefined
      ? Deferred.await(deferred)
      : Effect.timeoutOrElse(Deferred.await(deferred), {
        duration: timeout,
        orElse: () => Effect.fail(Protocol.requestTimeout(method))
      })
    let sent = false
    const enqueued = options?.sent === undefined ? Effect.void : Deferred.succeed(options.sent, undefined)
    return yield* send(line).pipe(
      Effect.andThen(Effect.sync(() => {
        sent = true
      })),
      Effect.ensuring(enqueued),
      Effect.andThen(response),
      Effect.onExit(() =>
        Effect.suspend(() => {
          // Still pending: no response came (interrupted or timed out).
          if (!MutableHashMap.has(pending, id)) return Effect.void
          MutableHashMap.remove(pending, id)
          return sent && !inputClosed
            ? send(Framing.encode(Protocol.makeNotification(CANCEL_METHOD, { requestId: id })))
            : Effect.void
        })
      )
    )
  })

  // Hot path (every session/update): no span. `encode` throwing is a defect.
  const notify = (method: string, params?: unknown): Effect.Effect<void> =>
    Effect.suspend(() => send(Framing.encode(Protocol.makeNotification(method, params))))

  const resolve = (id: Id, exit: Exit.Exit<unknown, RpcError>): Effect.Effect<void> => {
    const deferred = MutableHashMap.get(pending, id)
    if (deferred._tag === "None") return Effect.logDebug("response for an unknown request id ignored")
    MutableHashMap.remove(pending, id)
    return Effect.asVoid(Deferred.done(deferred.value, exit))
  }

  /** No response can arrive any more: fail what waits for one. */
  const closeInput = Effect.suspend(() => {
    inputClosed = true
    const waiting = Array.from(MutableHashMap.values(pending))
    MutableHashMap.clear(pending)
    return Effect.forEach(waiting, (deferred) => Deferred.fail(deferred, Protocol.peerClosed()), { discard: true })
  })

  /** Flushes every enqueued line (within the shutdown deadline), then stops the writer. Idempotent. */
  const shutdown = Effect.andThen(closeInput, writer.close(SHUTDOWN_FLUSH_MS))

  yield* Effect.addFinalizer(() => shutdown)

  // ---- incoming ------------------------------------------------------------

  const serveImpl = Effect.fn("Peer.serve")(
    function*(handlers: Handlers) {
      const requests = (handlers.requests ?? {}) as Readonly<Record<string, RequestHandler<any>>>
      const notifications = (handlers.notifications ?? {}) as Readonly<Record<string, NotificationHandler<any>>>
      const inflight = MutableHashMap.empty<Id, InFlight>()
      const scope = yield* Effect.scope
      const fibers = yield* FiberMap.make<Id>()
      /** Request fibers not finished yet (a finished handler may still wait to enqueue its response). */
      let running = 0
      // Interrupted (SIGTERM) or done: closing this scope waits for request fibers, which may wait on the writer.
      yield* Effect.addFinalizer(() => writer.deadline(SHUTDOWN_GRACE_MS + SHUTDOWN_FLUSH_MS))

      const reply = (id: Id | null, error: RpcError) => send(Framing.encode(Protocol.makeError(id, error)))

      const runRequest = (id: Id, method: string, handler: RequestHandler<any>, params: unknown, entry: InFlight) => {
        /** Queues the response once; what runs after it is written is `onResponded`'s. */
        const answer = (exit: Exit.Exit<unknown, RpcError>): Effect.Effect<void> =>
          Effect.suspend(() => {
            if (entry.answered) return Effect.void
            entry.answered = true
            MutableHashMap.remove(inflight, id)
            // What follows the answer waits until it is written: the writer is another fiber,
            // which would otherwise run only once this one yields.
            if (entry.responded.length === 0) return Effect.flatMap(Response.encode(id, exit), send)
            return Effect.flatMap(Response.encode(id, exit), writer.sendWritten).pipe(
              Effect.andThen(Effect.suspend(() => Effect.forEach(entry.responded, (effect) => effect, { discard: true })))
            )
          })
        const ctx: RequestContext = {
          id,
          onResponded: (effect) => void entry.responded.push(effect),
          respond: (result) => Effect.uninterruptible(answer(Exit.succeed(result)))
        }
        return Effect.uninterruptibleMask((restore) =>
          restore(
            Effect.flatMap(Effect.suspend(() => handler.decode(params)), (decoded) => {
              if (handler.onCancel !== undefined) entry.onCancel = handler.onCancel(decoded)
              return handler.handle(decoded, ctx)
            })
          ).pipe(Effect.exit, Effect.flatMap(answer))
        ).pipe(Effect.annotateLogs({ rpcMethod: method, rpcId: id }))
      }

      const onRequest = (id: Id, method: string, params: unknown): Effect.Effect<void, never, any> => {
        if (MutableHashMap.has(inflight, id)) return reply(id, Protocol.invalidRequest("Duplicate request id"))
        if (!Object.hasOwn(requests, method)) return reply(id, Protocol.methodNotFound(method))
        if (running >= maxConcurrent) return reply(id, Protocol.tooManyRequests())
        const entry: InFlight = { onCancel: undefined, cancelRequested: false, responded: [], answered: false }
        MutableHashMap.set(inflight, id, entry)
        running++
        const done = Effect.sync(() => {
          running--
        })
        return Effect.asVoid(
          FiberMap.run(fibers, id, Effect.ensuring(runRequest(id, method, requests[method], params, entry), done), {
            startImmediately: true
          })
        )
      }

      const onCancelRequest = (params: unknown): Effect.Effect<void, never, any> => {
        if (!isRecord(params) || !Protocol.isId(params.requestId)) return Effect.void
        const requestId = params.requestId
        const entry = MutableHashMap.get(inflight, requestId)
        if (entry._tag === "None") return Effect.void
        const { onCancel } = entry.value
        if (onCancel === undefined) {
          return Effect.asVoid(Effect.forkIn(FiberMap.remove(fibers, requestId), scope))
        }
        if (entry.value.cancelRequested) return Effect.void
        entry.value.cancelRequested = true
        return Effect.catchCause(onCancel, (cause) => Effect.logError("onCancel failed", cause))
      }

      const onNotification = (method: string, params: unknown): Effect.Effect<void, never, any> => {
        if (method === CANCEL_METHOD) return onCancelRequest(params)
        if (!Object.hasOwn(notifications, method)) return Effect.logDebug("unknown notification ignored", method)
        const handler = notifications[method]
        return Effect.suspend(() => handler.decode(params)).pipe(
          Effect.matchEffect({
            // Bad params are the client's mistake: a quiet line, not a warning with a stack per message.
            onFailure: (error) => Effect.logDebug("notification with invalid params ignored", method, error.message),
            onSuccess: handler.handle
          }),
          Effect.catchCause((cause) => Effect.logWarning("notification handler failed", method, cause))
        )
      }

      /**
       * A response-shaped message that is not a valid response: it answers (badly) one of
       * our requests, so its id is in our id space, not the client's. Echoing it in an error
       * could answer a client request of the same id a second time; instead the request it
       * names, if pending, fails at once (rather than waiting for its timeout), and the
       * client is told with id null.
       */
      const onBadResponse = (id: Id | null): Effect.Effect<void> =>
        Effect.andThen(
          id === null ? Effect.void : resolve(id, Exit.fail(Protocol.invalidResponse())),
          reply(null, Protocol.invalidRequest())
        )

      const onMessage = (message: Protocol.Incoming, json: unknown): Effect.Effect<void, never, any> => {
        switch (message._tag) {
          case "Request":
            return onRequest(message.id, message.method, message.params)
          case "Notification":
            return onNotification(message.method, message.params)
          case "Response":
            return resolve(message.id, Exit.succeed(message.result))
          case "ErrorResponse":
            return message.id === null
              ? Effect.logWarning("peer reported an error", message.error.code, message.error.message)
              : resolve(message.id, Exit.fail(Protocol.fromErrorObject(message.error)))
          case "Invalid":
            return Response.isResponseShaped(json)
              ? onBadResponse(message.id)
              : reply(message.id, Protocol.invalidRequest())
          default:
            return message satisfies never
        }
      }

      const onLine = (line: Framing.Line): Effect.Effect<void, never, any> => {
        if (line._tag === "TooLong") return reply(null, Protocol.invalidRequest("Message too long"))
        return Effect.try({ try: () => JSON.parse(line.text) as unknown, catch: Protocol.parseError }).pipe(
          Effect.matchEffect({
            onFailure: (error) => reply(null, error),
            onSuccess: (json) => onMessage(Protocol.classify(json), json)
          })
        )
      }

      /**
       * The input is over (EOF), or the serve fiber is interrupted (SIGTERM): no response can
       * come any more. Requests that answer cancellation themselves (a prompt answers
       * `cancelled`) are cancelled and given a moment to answer; every other one is
       * interrupted (-32800). Both ways end the same, so a signal answers a running prompt
       * exactly as stdin's end does.
       */
      const drain = Effect.gen(function*() {
        yield* closeInput
        yield* writer.deadline(SHUTDOWN_GRACE_MS + SHUTDOWN_FLUSH_MS)
        const entries = [...inflight]
        for (const [id, entry] of entries) {
          if (entry.onCancel === undefined) yield* FiberMap.remove(fibers, id)
        }
        for (const [, entry] of entries) {
          if (entry.onCancel !== undefined && !entry.cancelRequested) {
            entry.cancelRequested = true
            yield* Effect.catchCause(entry.onCancel, (cause) => Effect.logError("onCancel failed", cause))
          }
        }
        yield* FiberMap.awaitEmpty(fibers).pipe(Effect.timeoutOption(SHUTDOWN_GRACE_MS), Effect.ignore)
        yield* FiberMap.clear(fibers)
      })

      yield* transport.input.pipe(
        Framing.lines({ maxLineBytes }),
        Stream.runForEach(onLine),
        Effect.catchCause((cause) =>
          Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : Effect.logWarning("input failed", cause)
        ),
        Effect.onInterrupt(() => drain)
      )
      yield* drain
    },
    Effect.scoped,
    Effect.ensuring(shutdown)
  )

  const peer: Peer = {
    request,
    notify,
    sendEncoded: send,
    serve: serveImpl as Peer["serve"]
  }
  return peer
})
