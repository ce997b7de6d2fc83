/**
 * AcpServer: the ACP v1 agent over a JSON-RPC peer, as its method table. A pure adapter over
 * the Runtime and the session protocol: methods become runtime calls and session commands.
 * A connection's state is `Connection.ts`; presenting a turn (its updates, its questions to
 * the client, the prompt's answer in order) is `PresentTurn.ts`; opening a session (new,
 * load with its replay, resume, fork) is `Open.ts`; errors and prompt content are converted
 * in `Convert.ts`.
 */
import * as Effect from "effect/Effect"
import * as FiberMap from "effect/FiberMap"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as Initialize from "../acp/Initialize.ts"
import * as Session from "../acp/Session.ts"
import * as Peer from "../jsonrpc/Peer.ts"
import * as Protocol from "../jsonrpc/Protocol.ts"
import { Runtime, type RuntimeError } from "../runtime/Api.ts"
import * as Rewind from "../checkpoints/RewindRequest.ts"
import * as Auth from "./Auth.ts"
import * as Connection from "./Connection.ts"
import { runtimeError, sessionError } from "./Convert.ts"
import * as Open from "./Open.ts"
import * as PresentTurn from "./PresentTurn.ts"
import * as Stdio from "./Stdio.ts"

export const PROTOCOL_VERSION = 1

/** What Skein can do, exactly: advertised only once it works. */
export const agentCapabilities = {
  loadSession: true,
  // Images go to models that accept them; others are told one was left out.
  promptCapabilities: { image: true, audio: false, embeddedContext: false },
  // stdio always; Streamable HTTP through Effect's client; the legacy HTTP+SSE transport is not implemented.
  mcpCapabilities: { http: true, sse: false },
  // `fork`: unstable (schema.unstable.json); a client that does not know it ignores it.
  sessionCapabilities: { additionalDirectories: {}, list: {}, resume: {}, close: {}, delete: {}, fork: {} }
} as const

/** Builds the method table over a peer and the runtime. */
export const handlers = (
  peer: Peer.Peer,
  runtime: Runtime["Service"],
  options: Connection.Options,
  /** Where the watches of others' turns run (`watchOthers`), by session. */
  watches?: FiberMap.FiberMap<string> | undefined
) => {
  const c = Connection.make(peer, runtime, options, watches)
  const signIn = options.signIn

  const list = (params: Session.ListSessionsRequest) =>
    Effect.gen(function*() {
      const page = yield* Effect.mapError(
        runtime.listSessions({ cwd: params.cwd ?? undefined, cursor: params.cursor ?? undefined }),
        runtimeError
      )
      return {
        sessions: page.sessions.map((entry) => ({
          sessionId: entry.id,
          cwd: entry.cwd,
          ...(entry.additionalDirectories.length > 0 ? { additionalDirectories: entry.additionalDirectories } : {}),
          ...(entry.title !== undefined ? { title: entry.title } : {}),
          updatedAt: new Date(entry.updatedAt).toISOString()
        })),
        ...(page.nextCursor !== undefined ? { nextCursor: page.nextCursor } : {})
      }
    })

  const cancel = (params: Session.CancelNotification) =>
    Effect.ignore(Effect.flatMap(runtime.getSession(params.sessionId), (s) => s.cancel))

  return {
    requests: {
      initialize: Peer.request(Initialize.InitializeRequest, (params) =>
        Effect.sync(() => {
          c.client = {
            offered: {
              readTextFile: params.clientCapabilities.fs.readTextFile === true,
              writeTextFile: params.clientCapabilities.fs.writeTextFile === true,
              terminal: params.clientCapabilities.terminal === true
            },
            nativeChildren: params.clientCapabilities.subagents != null,
            shown: { compaction: params.clientCapabilities.session?.compaction != null },
            authMethods: signIn === undefined ? c.client.authMethods : Auth.methods(Auth.clientOffers(params.clientCapabilities), signIn)
          }
        }).pipe(Effect.map(() => ({
          // Skein speaks v1 only: the requested version if it is 1, else the latest it supports (also 1).
          protocolVersion: params.protocolVersion === PROTOCOL_VERSION ? params.protocolVersion : PROTOCOL_VERSION,
          agentCapabilities: signIn === undefined ? agentCapabilities : { ...agentCapabilities, auth: { logout: {} } },
          authMethods: c.client.authMethods,
          agentInfo: { name: options.name ?? "skein", title: "Skein", version: options.version },
          // `_session/steering`: content for a running turn; `_session/rewind`: back to before a turn (extension methods).
          _meta: { steering: { supported: true }, rewind: { supported: true }, ...(options.sandbox !== undefined ? { skein: { sandbox: options.sandbox } } : {}) }
        })))),
      authenticate: Peer.request(Initialize.AuthenticateRequest, (params) =>
        signIn === undefined ? Effect.succeed({}) : Effect.gen(function*() {
          if (params.methodId !== Auth.SETUP_METHOD && params.methodId !== Auth.CONFIG_METHOD) {
            return yield* Protocol.invalidParams(`Unknown auth method (the methods are ${Auth.SETUP_METHOD} and ${Auth.CONFIG_METHOD})`)
          }
          const reason = yield* signIn.reload
          if (reason !== undefined) return yield* Auth.authRequired(reason, c.client.authMethods)
          return {}
        })),
      ...(signIn === undefined ? {} : {
        logout: Peer.request(Initialize.LogoutRequest, () =>
          Effect.as(Effect.mapError(signIn.logout, (message) => new Protocol.RpcError({ code: Protocol.ErrorCode.InternalError, message })), {}))
      }),
      "session/new": Peer.request(Session.NewSessionRequest, Open.newSession(c)),
      "session/load": Peer.request(Session.LoadSessionRequest, Open.reopen(c, true)),
      "session/resume": Peer.request(Session.ResumeSessionRequest, Open.reopen(c, false)),
      "session/fork": Peer.request(Session.ForkSessionRequest, Open.fork(c)),
      "session/list": Peer.request(Session.ListSessionsRequest, list),
      "session/close": Peer.request(Session.CloseSessionRequest, (params) =>
        Effect.as(Effect.andThen(Open.forget(c, params.sessionId), runtime.closeSession(params.sessionId)), {})),
      "session/delete": Peer.request(Session.DeleteSessionRequest, (params) =>
        Effect.as(Effect.andThen(Open.forget(c, params.sessionId), Effect.mapError(runtime.deleteSession(params.sessionId), runtimeError)), {})),
      "session/prompt": Peer.request(Session.PromptRequest, PresentTurn.prompt(c), {
        // `$/cancel_request` on a prompt cancels its turn; the prompt then answers `cancelled`.
        onCancel: cancel
      }),
      "session/set_mode": Peer.request(Session.SetSessionModeRequest, (params) =>
        Effect.gen(function*() {
          const s = yield* Connection.session(c, params.sessionId)
          yield* Connection.notChild(s)
          yield* Effect.mapError(s.setMode(params.modeId), sessionError)
          yield* Connection.announceMode(c, s)
          return {}
        })),
      "session/set_config_option": Peer.request(Session.SetSessionConfigOptionRequest, (params) =>
        Effect.gen(function*() {
          const s = yield* Connection.session(c, params.sessionId)
          yield* Connection.notChild(s)
          if (typeof params.value !== "string") {
            return yield* Protocol.invalidParams(`Config option "${params.configId}" is not a boolean option`)
          }
          yield* Effect.mapError(s.setConfig(params.configId, params.value), sessionError)
          if (params.configId === "mode") yield* Connection.announceMode(c, s)
          return { configOptions: (yield* Connection.sessionState(c, s)).configOptions }
        })),
      "_session/steering": Peer.request(Session.PromptRequest, PresentTurn.steering(c)),
      "_session/rewind": Peer.request(Rewind.RewindRequest, PresentTurn.rewind(c)),
      // A notification in ACP; some clients send it as a request. It works the same and answers null.
      "session/cancel": Peer.request(Session.CancelNotification, (params) => Effect.as(cancel(params), null))
    },
    notifications: {
      "session/cancel": Peer.notification(Session.CancelNotification, cancel)
    }
  }
}

/** Serves ACP over a transport until its input ends. */
export const serve = (transport: Peer.Transport, options: Connection.Options) =>
  Effect.flatMap(Runtime, (runtime: Runtime["Service"]) => serveWith(transport, options, runtime))

/** Serves ACP with a given runtime (or one still being built: see `awaiting`). */
export const serveWith = (transport: Peer.Transport, options: Connection.Options, runtime: Runtime["Service"]) =>
  Effect.scoped(Effect.gen(function*() {
    const peer = yield* Peer.make(transport, { maxLineBytes: options.maxLineBytes })
    const watches = options.watchOthers === true ? yield* FiberMap.make<string>() : undefined
    yield* peer.serve(handlers(peer, runtime, options, watches))
  }))

/**
 * A Runtime whose operations wait for the real one. The agent answers
 * `initialize` while its configuration is read and its layers are built; the
 * first `session/*` request waits for them. If they could not be built, every
 * such request fails with the reason.
 */
export const awaiting = (ready: Effect.Effect<Runtime["Service"], RuntimeError>): Runtime["Service"] => {
  let resolved: Runtime["Service"] | undefined
  const rt = Effect.tap(ready, (r) => Effect.sync(() => {
    resolved = r
  }))
  return {
    newSession: (o) => Effect.flatMap(rt, (r) => r.newSession(o)),
    loadSession: (o) => Effect.flatMap(rt, (r) => r.loadSession(o)),
    listSessions: (q) => Effect.flatMap(rt, (r) => r.listSessions(q)),
    readSession: (id) => Effect.flatMap(rt, (r) => r.readSession(id)),
    forkSession: (o) => Effect.flatMap(rt, (r) => r.forkSession(o)),
    commands: (cwd) =>
      Effect.flatMap(Effect.result(rt), (r) => (r._tag === "Success" && r.success.commands !== undefined ? r.success.commands(cwd) : Effect.succeed([]))),
    deleteSession: (id) => Effect.flatMap(rt, (r) => r.deleteSession(id)),
    getSession: (id) => Effect.flatMap(rt, (r) => r.getSession(id)),
    closeSession: (id) => Effect.flatMap(Effect.orDie(rt), (r) => r.closeSession(id)),
    liveSessions: Effect.flatMap(Effect.orDie(rt), (r) => r.liveSessions),
    events: Stream.unwrap(Effect.map(Effect.orDie(rt), (r) => r.events)),
    get models() {
      return resolved?.models
    },
    get contextWindow() {
      return resolved?.contextWindow
    }
  } satisfies Runtime["Service"]
}

export class AcpServer {
  /** Serves any byte stream; the layer's build runs the server until the input ends. */
  static readonly layer = (transport: Peer.Transport, options: Connection.Options): Layer.Layer<never, never, Runtime> =>
    Layer.effectDiscard(serve(transport, options))
  /** The ACP agent over this process's stdin and stdout. */
  static readonly layerStdio = (options: Connection.Options): Layer.Layer<never, never, Runtime> =>
    Layer.effectDiscard(serve(Stdio.transport(), options))
}
