/**
 * Opening a session for a client: `session/new`, `session/load` (its history replayed first),
 * `session/resume`, `session/fork`; and, once the client knows the session, its command list
 * and the turns others run in it (`watchOthers`).
 */
import * as Effect from "effect/Effect"
import * as FiberMap from "effect/FiberMap"
import * as Stream from "effect/Stream"
import type * as Acp from "../acp/index.ts"
import type * as Peer from "../jsonrpc/Peer.ts"
import * as Protocol from "../jsonrpc/Protocol.ts"
import type { Canonical } from "../log/Event.ts"
import * as Usage from "../runtime/Usage.ts"
import type { Session } from "../session/Protocol.ts"
import * as Present from "../translate/Present.ts"
import type * as Shown from "../translate/Shown.ts"
import * as Replay from "../translate/Replay.ts"
import * as Translate from "../translate/Translate.ts"
import * as Connection from "./Connection.ts"
import { runtimeError } from "./Convert.ts"

type Encoders = (sessionId: string) => (u: Translate.Update) => string

/**
 * Forwards the turns of `s` that another presenter runs (their `turn_start` names someone
 * else): the prompt as a user message, then everything the client would see of its own
 * turn, except the questions (those are asked of whoever runs the turn).
 */
const watchOthers = (c: Connection.Connection, s: Session) =>
  Effect.gen(function*() {
    /** Each turn watched, presented as its own presenter shows it (but for the questions), until it ends. */
    const others = new Map<number, { readonly presenter: Present.Presenter; readonly encodeFor: Encoders }>()
    yield* s.events.pipe(Stream.runForEachArray((events) => {
      const lines: Array<string> = []
      const show = (watched: { readonly encodeFor: Encoders }, actions: ReadonlyArray<Shown.Action>) => {
        for (const action of actions) if (action._tag === "update") lines.push(watched.encodeFor(action.sessionId)(action.update as Translate.Update))
      }
      for (const event of events) {
        if (event.type === "turn_start" && event.turn !== null && event.data.by !== c.id) {
          const watched = { presenter: Present.make(s.id, { native: c.client.nativeChildren, shown: c.client.shown }), encodeFor: Connection.encoders(s.id) }
          others.set(event.turn, watched)
          show(watched, watched.presenter.replay(event))
          continue
        }
        const watched = event.turn === null ? undefined : others.get(event.turn)
        if (watched === undefined) continue
        show(watched, watched.presenter.live(event))
        if (event.type === "turn_end" || event.type === "turn_aborted") others.delete(event.turn!)
      }
      return lines.length === 0 ? Effect.void : c.peer.sendEncoded(lines.join(""))
    }))
  })

/** What follows a session's opening, once its answer is written. */
const opened = (c: Connection.Connection, ctx: Peer.RequestContext, s: Session) => {
  if (c.options.onSessionOpened !== undefined) ctx.onResponded(c.options.onSessionOpened)
  // After the answer: the client knows the session when it is told its commands.
  ctx.onResponded(Connection.announceCommands(c, s, false))
  // Once answered (the client knows the session), others' turns in it are shown too.
  if (c.watches !== undefined) ctx.onResponded(Effect.asVoid(FiberMap.run(c.watches, s.id, watchOthers(c, s))))
}

/** The client closed or deleted the session: it is told nothing more of it. */
export const forget = (c: Connection.Connection, sessionId: string) =>
  Effect.andThen(Effect.sync(() => c.announced.delete(sessionId)), c.watches === undefined ? Effect.void : FiberMap.remove(c.watches, sessionId))

export const newSession = (c: Connection.Connection) => (params: Acp.Session.NewSessionRequest, ctx: Peer.RequestContext) =>
  Effect.gen(function*() {
    yield* Connection.signedIn(c)
    const s = yield* Effect.mapError(
      c.runtime.newSession({
        cwd: params.cwd,
        additionalDirectories: params.additionalDirectories,
        mcpServers: params.mcpServers
      }),
      runtimeError
    )
    opened(c, ctx, s)
    return { sessionId: s.id, ...(yield* Connection.sessionState(c, s)) }
  })

/** The logs of the children a parent's events name, and of theirs (an unreadable one is left out). */
const readChildren = (c: Connection.Connection, events: ReadonlyArray<Canonical>) =>
  Effect.gen(function*() {
    const logs = new Map<string, ReadonlyArray<Canonical>>()
    const visit = (list: ReadonlyArray<Canonical>): Effect.Effect<void> =>
      Effect.forEach(list, (event) => {
        if (event.type !== "subagent" || event.data.event !== "spawned" || logs.has(event.data.id)) return Effect.void
        return c.runtime.readSession(event.data.id).pipe(
          Effect.flatMap((record) => {
            logs.set(event.data.id, record.events)
            return visit(record.events)
          }),
          Effect.ignore
        )
      }, { discard: true })
    yield* visit(events)
    return logs
  })

/** `session/load` and `session/resume`: the session live again; `load` replays its history first. */
export const reopen = (c: Connection.Connection, replay: boolean) => (params: Acp.Session.LoadSessionRequest, ctx: Peer.RequestContext) =>
  Effect.gen(function*() {
    yield* Connection.signedIn(c)
    const loaded = yield* Effect.mapError(
      c.runtime.loadSession({
        sessionId: params.sessionId,
        cwd: params.cwd,
        additionalDirectories: params.additionalDirectories,
        mcpServers: params.mcpServers
      }),
      runtimeError
    )
    // Every replayed update is enqueued before the response, and the peer writes in order.
    if (replay) {
      const encodeFor = Connection.encoders(params.sessionId)
      // Its children's logs, read first (a parent that never delegated reads none).
      const childLogs = yield* readChildren(c, loaded.events)
      let lines: Array<string> = []
      const chunks: Array<string> = []
      Replay.forEach(params.sessionId, loaded.events, (shown) => {
        lines.push(encodeFor(shown.sessionId)(shown.update as Translate.Update))
        if (lines.length >= 1024) {
          chunks.push(lines.join(""))
          lines = []
        }
      }, { native: c.client.nativeChildren, shown: c.client.shown, childLog: (id) => childLogs.get(id), meter: () => Usage.meter(Usage.pricing(c.runtime)) })
      if (lines.length > 0) chunks.push(lines.join(""))
      for (const chunk of chunks) yield* c.peer.sendEncoded(chunk)
    }
    opened(c, ctx, loaded.session)
    return yield* Connection.sessionState(c, loaded.session)
  })

/**
 * `session/fork` (unstable): the session's log up to its last turn (the one before, while the
 * last one runs) becomes a new session, live as after `session/new`. Nothing is replayed: the
 * client has the conversation already. A fork that could not be opened is removed again.
 */
export const fork = (c: Connection.Connection) => (params: Acp.Session.ForkSessionRequest, ctx: Peer.RequestContext) =>
  Effect.gen(function*() {
    if (params.systemPrompt !== undefined) {
      return yield* Protocol.invalidParams("systemPrompt is not supported (see sessionCapabilities)")
    }
    yield* Connection.signedIn(c)
    const record = yield* Effect.mapError(
      c.runtime.forkSession({ sessionId: params.sessionId, cwd: params.cwd, additionalDirectories: params.additionalDirectories }),
      runtimeError
    )
    const id = record.header.id
    const loaded = yield* c.runtime.loadSession({ sessionId: id, mcpServers: params.mcpServers }).pipe(
      Effect.tapError(() => Effect.ignore(c.runtime.deleteSession(id))),
      Effect.mapError(runtimeError)
    )
    opened(c, ctx, loaded.session)
    return { sessionId: id, ...(yield* Connection.sessionState(c, loaded.session)) }
  })
