/**
 * The server side of `SessionRpcs`: each procedure answered by a Runtime (the local one), and
 * the `Auth` middleware that checks a request's bearer token when the server has one.
 */
import * as Crypto from "node:crypto"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import type { Canonical } from "../log/Event.ts"
import { Runtime, type SessionRecord } from "../runtime/Api.ts"
import type { Session } from "../session/Protocol.ts"
import { VERSION } from "../version.ts"
import { Auth, CHUNK_EVENTS, SessionRpcs, type Snapshot, Unauthorized } from "./Rpcs.ts"

export const snapshot = (s: Session): Effect.Effect<Snapshot, never> =>
  Effect.map(Effect.orDie(s.settings), (settings) => ({
    info: { id: s.id, cwd: s.cwd, additionalDirectories: s.additionalDirectories, created: s.created },
    settings
  }))

/** A log's events as a stream of chunks. */
export const chunks = (events: ReadonlyArray<Canonical>) =>
  Stream.fromIterable(Array.from({ length: Math.ceil(events.length / CHUNK_EVENTS) }, (_, i) => ({
    _tag: "Events" as const,
    events: events.slice(i * CHUNK_EVENTS, (i + 1) * CHUNK_EVENTS)
  })))

/** A session's log as read or written: its header, then its events in chunks. */
export const recordStream = (record: SessionRecord) =>
  Stream.concat(Stream.make({ _tag: "Header" as const, header: record.header, file: record.file }), chunks(record.events))

/** Every procedure of the group, answered by `runtime`. */
export const handlers = (runtime: Runtime["Service"]) => {
  const session = (sessionId: string) => runtime.getSession(sessionId)
  return SessionRpcs.of({
    Info: () =>
      Effect.succeed({
        version: VERSION,
        models: runtime.models === undefined ? undefined : { entries: runtime.models.entries, defaultModel: runtime.models.defaultModel }
      }),
    NewSession: (options) => Effect.flatMap(runtime.newSession(options), snapshot),
    LoadSession: (options) =>
      Stream.unwrap(Effect.gen(function*() {
        const loaded = yield* runtime.loadSession(options)
        return Stream.concat(Stream.make({ _tag: "Loaded" as const, snapshot: yield* snapshot(loaded.session) }), chunks(loaded.events))
      })),
    ListSessions: (query) => runtime.listSessions(query),
    ReadSession: ({ sessionId }) => Stream.unwrap(Effect.map(runtime.readSession(sessionId), recordStream)),
    ForkSession: (options) => Stream.unwrap(Effect.map(runtime.forkSession(options), recordStream)),
    DeleteSession: ({ sessionId }) => runtime.deleteSession(sessionId),
    GetSession: ({ sessionId }) => Effect.flatMap(session(sessionId), snapshot),
    CloseSession: ({ sessionId }) => runtime.closeSession(sessionId),
    LiveSessions: () => runtime.liveSessions,
    Turn: ({ content, options, sessionId }) => Stream.unwrap(Effect.map(session(sessionId), (s) => s.turn(content, options))),
    Send: ({ command, sessionId }) => Effect.flatMap(session(sessionId), (s) => s.send(command)),
    Settings: ({ sessionId }) => Effect.flatMap(session(sessionId), (s) => s.settings),
    McpServers: ({ sessionId }) => Effect.flatMap(session(sessionId), (s) => s.mcpServers),
    Subscribe: ({ fromSeq, sessionId }) =>
      Stream.unwrap(Effect.map(session(sessionId), (s) => (fromSeq === undefined ? s.events : s.subscribe(fromSeq)))),
    Events: () => runtime.events,
    Commands: ({ cwd }) => (runtime.commands === undefined ? Effect.succeed([]) : runtime.commands(cwd))
  })
}

/** Every procedure of the group, answered by the `Runtime` in context. */
export const layer = SessionRpcs.toLayer(Effect.map(Effect.service(Runtime), handlers))

/** Compares in constant time (digests of equal length, whatever the lengths given). */
const sameSecret = (given: string, expected: string): boolean =>
  Crypto.timingSafeEqual(Crypto.createHash("sha256").update(given).digest(), Crypto.createHash("sha256").update(expected).digest())

/**
 * The server's check of each request: with a token, a request must carry
 * `authorization: Bearer <token>`; a refusal is logged without the value given. Without a
 * token (a unix socket, protected by its file mode; the in-process client) everything passes.
 */
export const layerAuth = (token: string | undefined) =>
  Layer.succeed(Auth)((effect, { client, headers, rpc }) => {
    if (token === undefined) return effect
    const given = headers["authorization"]
    const bearer = typeof given === "string" && given.startsWith("Bearer ") ? given.slice("Bearer ".length) : undefined
    if (bearer !== undefined && sameSecret(bearer, token)) return effect
    return Effect.andThen(
      Effect.logWarning(`skein serve: refused ${rpc._tag} from client ${client.id}: ${given === undefined ? "no token" : "a wrong token"}`),
      Effect.fail(new Unauthorized({ message: "A valid token is needed (Authorization: Bearer …)" }))
    )
  })
