/**
 * The server side of `SessionRpcs`: each procedure answered by a Runtime (the local one).
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { Canonical } from "../log/Event.ts"
import { Runtime, type SessionRecord } from "../runtime/Api.ts"
import type { Session } from "../session/Protocol.ts"
import { VERSION } from "../version.ts"
import { CHUNK_EVENTS, SessionRpcs, type Snapshot } from "./Rpcs.ts"

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
const recordStream = (record: SessionRecord) =>
  Stream.concat(Stream.make({ _tag: "Header" as const, header: record.header, file: record.file }), chunks(record.events))

/** Every procedure of the group, answered by `runtime`. */
export const handlers = (runtime: Runtime["Service"]) => {
  const session = (sessionId: string) => runtime.getSession(sessionId)
  return SessionRpcs.of({
    Info: () =>
      Effect.succeed({
        version: VERSION,
        models: runtime.models === undefined ? undefined : { entries: runtime.models.entries, defaultModel: runtime.models.defaultModel },
        ...(runtime.contextWindow !== undefined ? { contextWindow: runtime.contextWindow } : {})
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
