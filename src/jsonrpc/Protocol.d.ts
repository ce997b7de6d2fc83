/**
 * The JSON-RPC 2.0 vocabulary: message shapes, a pure classifier for incoming
 * JSON, the `RpcError` data type with its named constructors, and a formatter
 * for Schema decode issues that never echoes an input value.
 *
 * Invariant: no error message built here contains a params value (params may
 * hold secrets); method names and schema paths are fine.
 */
import { Schema, SchemaIssue } from "effect";
/** A request id. `null` only ever appears in error responses to unreadable messages. */
export type Id = string | number;
export interface RequestMessage {
    readonly jsonrpc: "2.0";
    readonly id: Id;
    readonly method: string;
    readonly params?: unknown;
}
export interface NotificationMessage {
    readonly jsonrpc: "2.0";
    readonly method: string;
    readonly params?: unknown;
}
export interface ErrorObject {
    readonly code: number;
    readonly message: string;
    readonly data?: unknown;
}
export interface SuccessResponseMessage {
    readonly jsonrpc: "2.0";
    readonly id: Id;
    readonly result: unknown;
}
export interface ErrorResponseMessage {
    readonly jsonrpc: "2.0";
    readonly id: Id | null;
    readonly error: ErrorObject;
}
export type Message = RequestMessage | NotificationMessage | SuccessResponseMessage | ErrorResponseMessage;
/** What one parsed JSON value is, as far as JSON-RPC is concerned. */
export type Incoming = {
    readonly _tag: "Request";
    readonly id: Id;
    readonly method: string;
    readonly params: unknown;
} | {
    readonly _tag: "Notification";
    readonly method: string;
    readonly params: unknown;
} | {
    readonly _tag: "Response";
    readonly id: Id;
    readonly result: unknown;
} | {
    readonly _tag: "ErrorResponse";
    readonly id: Id | null;
    readonly error: ErrorObject;
} | {
    readonly _tag: "Invalid";
    readonly id: Id | null;
};
export declare const isId: (u: unknown) => u is Id;
/**
 * Classifies a parsed JSON value. Pure and total: anything that is not a
 * well-formed request, notification or response is `Invalid`, keeping the id
 * when the value had a valid one (so the -32600 reply can carry it).
 */
export declare const classify: (json: unknown) => Incoming;
export declare const makeRequest: (id: Id, method: string, params: unknown) => RequestMessage;
export declare const makeNotification: (method: string, params: unknown) => NotificationMessage;
/** A success response; an `undefined` result becomes `null` so the key is never dropped. */
export declare const makeSuccess: (id: Id, result: unknown) => SuccessResponseMessage;
export declare const makeError: (id: Id | null, error: RpcError) => ErrorResponseMessage;
declare const RpcError_base: Schema.Class<RpcError, Schema.TaggedStruct<"RpcError", {
    readonly code: Schema.Number;
    readonly message: Schema.String;
    readonly data: Schema.optional<Schema.Unknown>;
}>, import("effect/Cause").YieldableError>;
export declare class RpcError extends RpcError_base {
}
export declare const ErrorCode: {
    readonly ParseError: -32700;
    readonly InvalidRequest: -32600;
    readonly MethodNotFound: -32601;
    readonly InvalidParams: -32602;
    readonly InternalError: -32603;
    readonly RequestCancelled: -32800;
    readonly AuthRequired: -32000;
    readonly ResourceNotFound: -32002;
    /** Local only: an outgoing request got no response in time. */
    readonly RequestTimeout: -32001;
    /** Local only: the other side went away before responding. */
    readonly PeerClosed: -32099;
};
/** The wire form of an error: `{ code, message, data? }`. */
export declare const toErrorObject: (error: RpcError) => ErrorObject;
export declare const fromErrorObject: (error: ErrorObject) => RpcError;
export declare const parseError: () => RpcError;
export declare const invalidRequest: (message?: string) => RpcError;
export declare const methodNotFound: (method: string) => RpcError;
/** `message` is used verbatim; build it with `formatIssue` or from names, never from values. */
export declare const invalidParams: (message: string) => RpcError;
export declare const internalError: () => RpcError;
export declare const requestCancelled: () => RpcError;
export declare const resourceNotFound: (what: string) => RpcError;
export declare const requestTimeout: (method: string) => RpcError;
export declare const peerClosed: () => RpcError;
/**
 * Formats a Schema decode issue as `Invalid params: expected string at "cwd";
 * missing "sessionId"`: paths and expected types only, never the values.
 */
export declare const formatIssue: (issue: SchemaIssue.Issue) => string;
export {};
