/**
 * A JSON-RPC 2.0 peer over a byte transport: it answers incoming requests and
 * notifications, and sends requests and notifications of its own.
 *
 * Invariants:
 * - One writer fiber drains a queue of encoded lines; everything the peer
 *   writes goes through it, in enqueue order, so lines never interleave.
 * - Every incoming request id gets exactly one response, whatever happens to
 *   its handler (success, error, defect, cancellation, shutdown).
 * - Nothing read from the input can stop the peer: bad lines are answered
 *   with the matching error and reading goes on.
 */
import { Effect, Schema, Stream } from "effect";
import type { Duration, Scope } from "effect";
import type { Id, RpcError } from "./Protocol.ts";
export interface Transport {
    readonly input: Stream.Stream<Uint8Array, unknown>;
    /** Receives one or more complete `\n`-terminated lines. */
    readonly write: (chunk: string) => Effect.Effect<void>;
}
export interface Options {
    /** Longest accepted incoming line in bytes. Default 16 MiB. */
    readonly maxLineBytes?: number | undefined;
    /** Timeout of outgoing requests that do not give their own. Default: none. */
    readonly defaultRequestTimeout?: Duration.Input | undefined;
    /** Lines the write queue holds before writers wait. Default 4096. */
    readonly writeQueueCapacity?: number | undefined;
}
export interface RequestContext {
    readonly id: Id;
}
export interface RequestHandler<R = never> {
    readonly _tag: "RequestHandler";
    readonly decode: (params: unknown) => Effect.Effect<unknown, RpcError, R>;
    readonly handle: (params: unknown, ctx: RequestContext) => Effect.Effect<unknown, RpcError, R>;
    readonly onCancel: ((params: unknown) => Effect.Effect<void, never, R>) | undefined;
}
export interface NotificationHandler<R = never> {
    readonly _tag: "NotificationHandler";
    readonly decode: (params: unknown) => Effect.Effect<unknown, RpcError, R>;
    readonly handle: (params: unknown) => Effect.Effect<void, never, R>;
}
export interface Handlers {
    readonly requests?: Readonly<Record<string, RequestHandler<any>>> | undefined;
    readonly notifications?: Readonly<Record<string, NotificationHandler<any>>> | undefined;
}
type ServicesOf<X> = X extends RequestHandler<infer R> ? R : X extends NotificationHandler<infer R> ? R : never;
type ValuesOf<T> = T extends Readonly<Record<string, infer V>> ? V : never;
/** The services the handlers of a `Handlers` record need. */
export type HandlerServices<H extends Handlers> = ServicesOf<ValuesOf<NonNullable<H["requests"]>>> | ServicesOf<ValuesOf<NonNullable<H["notifications"]>>>;
export interface RequestOptions {
    readonly timeout?: Duration.Input | undefined;
}
export interface Peer {
    /** Sends a request and awaits its response. Interruption or timeout sends `$/cancel_request`. */
    readonly request: (method: string, params?: unknown, options?: RequestOptions) => Effect.Effect<unknown, RpcError>;
    readonly notify: (method: string, params?: unknown) => Effect.Effect<void>;
    /**
     * Reads the input until it ends (or fails), answering requests with
     * `handlers`. Then interrupts in-flight handlers (each answers -32800),
     * fails pending outgoing requests with `peerClosed`, flushes the writer and
     * returns. Call it once.
     *
     * Notification handlers and `onCancel` run on the reading fiber, in order
     * with the requests around them; keep them short, and never await a
     * response of this peer from one (fork instead).
     */
    readonly serve: <H extends Handlers>(handlers: H) => Effect.Effect<void, never, HandlerServices<H>>;
}
/** A request handler: params decoded with `params` (failure → -32602), result JSON-ready. */
export declare const request: <S extends Schema.Constraint, R, R2 = never>(params: S, handler: (params: S["Type"], ctx: RequestContext) => Effect.Effect<unknown, RpcError, R>, options?: {
    /**
     * When given, `$/cancel_request` runs this instead of interrupting the
     * handler, and the handler answers by itself (e.g. `stopReason: "cancelled"`).
     */
    readonly onCancel?: ((params: S["Type"]) => Effect.Effect<void, never, R2>) | undefined;
}) => RequestHandler<R | R2 | S["DecodingServices"]>;
export declare const notification: <S extends Schema.Constraint, R>(params: S, handler: (params: S["Type"]) => Effect.Effect<void, never, R>) => NotificationHandler<R | S["DecodingServices"]>;
export declare const CANCEL_METHOD = "$/cancel_request";
export declare const make: (transport: Transport, options?: Options | undefined) => Effect.Effect<Peer, never, Scope.Scope>;
export {};
