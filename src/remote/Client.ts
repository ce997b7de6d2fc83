/**
 * The Runtime over a `SessionRpcs` client: the same service, and the same session protocol,
 * whether the server is this process (the in-memory client `Skein.layer` uses) or another one
 * (`Skein.remote`, `skein acp --connect`). A program moves between them by swapping one layer.
 *
 * A failure of the transport (the server went away, a refused token) becomes the runtime's or
 * the session's `unavailable` error, in words that say what to do (`Problems.explain`); a turn
 * whose stream breaks is not cancelled on the server (its questions go unanswered there):
 * `subscribe(lastSeq)` picks it up again.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import type { RpcClient, RpcGroup } from "effect/rpc"
import type { Canonical } from "../log/Event.ts"
import type { Catalog, CatalogEntry } from "../providers/Models.ts"
import { type LoadedSession, Runtime, RuntimeError, type SessionRecord } from "../runtime/Api.ts"
import { outcomeOf, type Session, SessionError, type TurnOutcome } from "../session/Protocol.ts"
import * as Problems from "./Problems.ts"
import type { SessionRpcs, Snapshot } from "./Rpcs.ts"

/** A client of the group, over any transport (its own failures typed `E`). */
type Client<E = unknown> = RpcClient.RpcClient<RpcGroup.Rpcs<typeof SessionRpcs>, E>

/** How the transport's failures read: plain words about the server at `where`, or (in process) the error's own message. */
type Describe = (error: unknown) => string

const inProcess: Describe = (error) =>
  typeof error === "object" && error !== null && "message" in error && typeof error.message === "string"
    ? `The Skein runtime is unavailable: ${error.message}`
    : `The Skein runtime is unavailable: ${String(error)}`

/** Errors of the runtime as they are; anything else (the transport, the token) as `unavailable`. */
const asRuntimeError = (describe: Describe) => (error: unknown): RuntimeError =>
  error instanceof RuntimeError ? error : new RuntimeError({ reason: "unavailable", message: describe(error) })

const asSessionError = (describe: Describe) => (error: unknown): SessionError =>
  error instanceof SessionError
    ? error
    : error instanceof RuntimeError
    ? new SessionError({ reason: error.reason === "not_found" ? "closed" : "unavailable", message: error.message })
    : new SessionError({ reason: "unavailable", message: describe(error) })

/** The catalog of models the server offers, rebuilt from its entries. */
const catalogOf = (models: { readonly entries: ReadonlyArray<{ readonly key: string; readonly provider: string; readonly info: unknown }>; readonly defaultModel: string | undefined }): Catalog => {
  const entries = models.entries as ReadonlyArray<CatalogEntry>
  return {
    entries,
    defaultModel: models.defaultModel,
    info: (model) => entries.find((e) => e.key === model || e.info.id === model)?.info
  }
}

/** A session's handle over the client. */
const handle = <E>(client: Client<E>, snapshot: Snapshot, describe: Describe): Session => {
  const sessionError = asSessionError(describe)
  const sessionId = snapshot.info.id
  const send: Session["send"] = (command) => Effect.mapError(client.Send({ sessionId, command }), sessionError)
  const turn: Session["turn"] = (content, options) => Stream.mapError(client.Turn({ sessionId, content, options: options ?? {} }), sessionError)
  return {
    ...snapshot.info,
    ...(snapshot.runner !== undefined ? { runner: snapshot.runner } : {}),
    turn,
    send,
    prompt: (content) =>
      Stream.runFold(turn(content, { unattended: true }), (): TurnOutcome => ({ stopReason: "cancelled" }), (last, event) => outcomeOf(event) ?? last),
    cancel: Effect.ignore(send({ _tag: "Cancel" })),
    setMode: (mode) => Effect.asVoid(send({ _tag: "SetMode", mode })),
    setConfig: (id, value) => Effect.asVoid(send({ _tag: "SetConfig", id, value })),
    answer: (requestId, answer) => Effect.asVoid(send({ _tag: "Answer", requestId, answer })),
    settings: Effect.mapError(client.Settings({ sessionId }), sessionError),
    events: Stream.orDie(Stream.mapError(client.Subscribe({ sessionId }), sessionError)),
    subscribe: (fromSeq) => Stream.mapError(client.Subscribe({ sessionId, fromSeq }), sessionError),
    mcpServers: Effect.mapError(client.McpServers({ sessionId }), sessionError)
  }
}

/**
 * The Runtime service over a client of `SessionRpcs`; `where`, the URL of a remote server,
 * names it in the errors of its transport.
 */
export const make = <E>(client: Client<E>, where?: string): Effect.Effect<Runtime["Service"], RuntimeError> =>
  Effect.gen(function*() {
    const describe: Describe = where === undefined ? inProcess : (error) => Problems.explain(error, where)
    const runtimeError = asRuntimeError(describe)
    const info = yield* Effect.mapError(client.Info(), runtimeError)
    const models = info.models === undefined ? undefined : catalogOf(info.models)
    const collect = <A>(stream: Stream.Stream<A, unknown>) => Effect.mapError(Stream.runCollect(stream), runtimeError)
    const eventsOf = (chunks: ReadonlyArray<{ readonly _tag: string }>) =>
      chunks.flatMap((chunk) => (chunk._tag === "Events" ? (chunk as unknown as { readonly events: ReadonlyArray<Canonical> }).events : []))
    /** A log answered as its header, then its events in chunks. */
    const recordOf = (rpc: string) => (chunks: ReadonlyArray<{ readonly _tag: string }>): Effect.Effect<SessionRecord, RuntimeError> => {
      const first = chunks[0] as { readonly _tag: string; readonly header?: SessionRecord["header"]; readonly file?: string } | undefined
      if (first === undefined || first._tag !== "Header" || first.header === undefined || first.file === undefined) {
        return Effect.fail(new RuntimeError({ reason: "unavailable", message: `The Skein server answered ${rpc} without a header` }))
      }
      return Effect.succeed({ header: first.header, file: first.file, events: eventsOf(chunks) })
    }
    return Runtime.of({
      newSession: (options) => Effect.map(Effect.mapError(client.NewSession(options), runtimeError), (snapshot) => handle(client, snapshot, describe)),
      loadSession: (options) =>
        Effect.flatMap(collect(client.LoadSession(options)), (chunks): Effect.Effect<LoadedSession, RuntimeError> => {
          const first = chunks[0]
          if (first === undefined || first._tag !== "Loaded") {
            return Effect.fail(new RuntimeError({ reason: "unavailable", message: "The Skein server answered LoadSession without the session" }))
          }
          return Effect.succeed({ session: handle(client, first.snapshot, describe), events: eventsOf(chunks) })
        }),
      listSessions: (query) => Effect.mapError(client.ListSessions(query ?? {}), runtimeError),
      readSession: (sessionId) => Effect.flatMap(collect(client.ReadSession({ sessionId })), recordOf("ReadSession")),
      forkSession: (options) => Effect.flatMap(collect(client.ForkSession(options)), recordOf("ForkSession")),
      deleteSession: (sessionId) => Effect.mapError(client.DeleteSession({ sessionId }), runtimeError),
      getSession: (sessionId) => Effect.map(Effect.mapError(client.GetSession({ sessionId }), runtimeError), (snapshot) => handle(client, snapshot, describe)),
      closeSession: (sessionId) => Effect.ignore(client.CloseSession({ sessionId })),
      liveSessions: Effect.orElseSucceed(client.LiveSessions(), () => []),
      events: Stream.orDie(client.Events()),
      commands: (cwd) => Effect.orElseSucceed(client.Commands({ cwd }), () => []),
      models,
      contextWindow: info.contextWindow
    })
  })

/** The Runtime over a client built in this layer's scope (of the server at `where`, when remote). */
export const layer = <X, E, R>(client: Effect.Effect<Client<X>, E, R>, where?: string): Layer.Layer<Runtime, E | RuntimeError, Exclude<R, import("effect/Scope").Scope>> =>
  Layer.effect(Runtime, Effect.flatMap(client, (c) => make(c, where)))
