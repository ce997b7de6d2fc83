/**
 * AcpServer: the ACP v1 agent over a JSON-RPC peer. A pure adapter over the Runtime and the
 * session protocol: methods become runtime calls and session commands; a prompt's turn
 * stream becomes `session/update` notifications (through the pure Translate module), and the
 * turn's questions become requests to the client (`session/request_permission`, `fs/*`,
 * `terminal/*`) whose responses are the session's answers.
 *
 * Ordering: a prompt presents its turn: it forwards the turn's events in order, sending each
 * question's request in its place (after every update published before it), and answers the
 * prompt on `turn_end` before it lets go of the turn. The session starts its next turn only
 * then, and the peer writes in enqueue order, so every update of a turn precedes the turn's
 * response, nothing of the turn follows it, and prompts are answered in order.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as FiberMap from "effect/FiberMap"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as Acp from "../acp/index.ts"
import * as Peer from "../jsonrpc/Peer.ts"
import * as Protocol from "../jsonrpc/Protocol.ts"
import type { Canonical, SessionEvent, UserBlock } from "../log/Event.ts"
import * as Present from "../translate/Present.ts"
import * as Replay from "../translate/Replay.ts"
import { Runtime, RuntimeError } from "../runtime/Api.ts"
import { outcomeOf, type Session, type SessionError } from "../session/Protocol.ts"
import type { Answer, StopReason } from "../Vocabulary.ts"
import * as Translate from "../translate/Translate.ts"
import * as Rewind from "../checkpoints/Rewind.ts"
import * as Auth from "./Auth.ts"
import * as ClientBridge from "./ClientBridge.ts"
import type * as Guarantees from "../sandbox/Guarantees.ts"
import * as Stdio from "./Stdio.ts"

export const PROTOCOL_VERSION = 1

export interface Options {
  readonly name?: string
  readonly version: string
  readonly maxLineBytes?: number | undefined
  /** Whether tools use the client's `fs` and `terminal` when it offers them (default: both true). */
  readonly clientAccess?: ClientBridge.Settings | undefined
  /** Runs each time a session was opened (new, load, resume), once its answer is in the write queue. */
  readonly onSessionOpened?: Effect.Effect<void> | undefined
  /**
   * Shows the client the turns others run in the sessions it opened (another editor window
   * on the same `skein serve`), as they happen: its own prompts show only their own turns.
   */
  readonly watchOthers?: boolean | undefined
  /**
   * Sign-in (`Auth.ts`): with it, `initialize` offers auth methods and `logout`, and a session
   * cannot be opened while no provider is configured (`auth_required`). Without it (sessions
   * in a `skein serve`, whose configuration is its own), no method is offered.
   */
  readonly signIn?: Auth.SignIn | undefined
  /** What the sandbox guarantees, stated in `initialize` as `_meta.skein.sandbox` (when known here). */
  readonly sandbox?: Guarantees.Statement | undefined
}

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

const runtimeError = (error: RuntimeError): Protocol.RpcError => {
  switch (error.reason) {
    case "not_found":
      return Protocol.resourceNotFound(error.message)
    case "invalid_cwd":
    case "invalid_mode":
    case "invalid_request":
      return Protocol.invalidParams(error.message)
    case "locked":
    case "log":
    case "unavailable":
    case "limit":
      return new Protocol.RpcError({ code: Protocol.ErrorCode.InternalError, message: error.message })
  }
}

const sessionError = (error: SessionError): Protocol.RpcError =>
  error.reason === "closed"
    ? Protocol.resourceNotFound(error.message)
    : error.reason === "log" || error.reason === "unavailable"
    ? new Protocol.RpcError({ code: Protocol.ErrorCode.InternalError, message: error.message })
    : Protocol.invalidParams(error.message)

/** ACP prompt content → runtime user blocks; refuses kinds not advertised. */
const userBlocks = (prompt: ReadonlyArray<Acp.Content.ContentBlock>): Effect.Effect<ReadonlyArray<UserBlock>, Protocol.RpcError> => {
  const blocks: Array<UserBlock> = []
  for (const block of prompt) {
    switch (block.type) {
      case "text":
        blocks.push({ type: "text", text: block.text })
        break
      case "resource_link":
        blocks.push({
          type: "resource_link",
          uri: block.uri,
          name: block.name,
          ...(block.mimeType != null ? { mimeType: block.mimeType } : {}),
          ...(block.title != null ? { title: block.title } : {}),
          ...(block.description != null ? { description: block.description } : {}),
          ...(block.size != null ? { size: Number(block.size) } : {})
        })
        break
      case "image":
        blocks.push({ type: "image", data: block.data, mimeType: block.mimeType, ...(block.uri != null ? { uri: block.uri } : {}) })
        break
      default:
        return Effect.fail(Protocol.invalidParams(`Prompt content of type "${block.type}" is not supported (see promptCapabilities)`))
    }
  }
  return Effect.succeed(blocks)
}

/** Builds the method table over a peer and the runtime. */
export const handlers = (
  peer: Peer.Peer,
  runtime: Runtime["Service"],
  options: Options,
  /** Where the watches of others' turns run (`watchOthers`), by session. */
  watches?: FiberMap.FiberMap<string> | undefined
) => {
  /** This connection, as the turns it presents are marked (`turn_start.by`). */
  const connection = `acp-${process.pid}-${Math.random().toString(36).slice(2, 10)}`
  const session = (sessionId: string): Effect.Effect<Session, Protocol.RpcError> =>
    runtime.getSession(sessionId).pipe(
      Effect.catchIf((error) => error.reason === "not_found", (error) =>
        // A child session that is no longer live is still a child: refused as such, not "not found".
        Effect.flatMap(Effect.option(runtime.readSession(sessionId)), (record) =>
          Effect.fail(
            record._tag === "Some" && record.value.header.parent !== undefined
              ? new RuntimeError({ reason: "invalid_request", message: `${sessionId} is a child session (a subagent of ${record.value.header.parent.sessionId}); it is driven by its parent` })
              : error
          ))),
      Effect.mapError(runtimeError)
    )

  const update = (sessionId: string, u: Translate.Update) => peer.notify("session/update", { sessionId, update: u })

  /** Whether the client shows child sessions as sessions (`clientCapabilities.subagents`, unstable). */
  let nativeChildren = false
  /** What the client shows beyond the stable protocol (`clientCapabilities.session.compaction`, unstable). */
  let shown: Translate.Options = {}
  const signIn = options.signIn
  /** The auth methods offered to this client (in `initialize`, and with `auth_required`). */
  let authMethods = signIn === undefined ? [] : Auth.methods({ terminal: false, legacy: false }, signIn)
  /** Opening a session needs a configured provider: `auth_required` until there is one. */
  const signedIn = signIn === undefined ? Effect.void : Effect.flatMap(signIn.required, (reason) =>
    reason === undefined ? Effect.void : Effect.fail(Auth.authRequired(reason, authMethods)))
  /** Prompts of this connection in progress, by session: steering goes to their turn. */
  const presenting = new Map<string, number>()
  /** Encoders of `session/update` lines by session id (a turn shows its children's sessions too). */
  const encoders = (first: string) => {
    const made = new Map<string, (u: Translate.Update) => string>([[first, Translate.encoder(first)]])
    return (sessionId: string) => {
      let encode = made.get(sessionId)
      if (encode === undefined) made.set(sessionId, encode = Translate.encoder(sessionId))
      return encode
    }
  }
  /** A child session is driven by its parent: the client may watch and cancel it, not prompt or change it. */
  const notChild = (s: Session) =>
    s.parent === undefined
      ? Effect.void
      : Effect.fail(Protocol.invalidParams(`${s.id} is a child session (a subagent of ${s.parent.sessionId}); it is driven by its parent`))

  // What the client offered in `initialize` (nothing until it says otherwise).
  let offered: ClientBridge.Capabilities = { readTextFile: false, writeTextFile: false, terminal: false }
  const clientSettings = options.clientAccess ?? { useClientFs: true, useClientTerminal: true }
  /** What this client offers a turn's tools, under the agent's settings. */
  const turnOptions = () => ({ client: ClientBridge.capabilities(offered, clientSettings), by: connection })

  /** The session's config options: mode, model and (where the model has one) reasoning effort. */
  const settingsOf = (s: Session) => Effect.mapError(s.settings, sessionError)

  const configOptionsOf = (s: Session) =>
    Effect.map(settingsOf(s), (settings) => Translate.configOptions({ ...settings, models: runtime.models }))

  /** Tells the client about a mode change it did not necessarily make itself. */
  const announceMode = (s: Session) =>
    Effect.gen(function*() {
      const { mode } = yield* settingsOf(s)
      yield* update(s.id, { sessionUpdate: "current_mode_update", currentModeId: mode })
      yield* update(s.id, { sessionUpdate: "config_option_update", configOptions: yield* configOptionsOf(s) })
    })

  const prompt = (params: Acp.Session.PromptRequest, ctx: Peer.RequestContext) =>
    Effect.gen(function*() {
      const s = yield* session(params.sessionId)
      yield* notChild(s)
      const content = yield* userBlocks(params.prompt)
      const ran = { tools: false }
      const outcome = yield* presentTurn(s, content, (outcome) => ctx.respond({ stopReason: outcome.stopReason }), ran)
      // A turn that ran tools (or a child's) may have added a prompt file or a skill; one that only talked did not.
      if (ran.tools) yield* announceCommands(s, true)
      return outcome
    })

  /**
   * Runs a turn of `s` presented to this client: its updates, its questions (its children's
   * too); `done` gets its outcome before the turn is let go of. Answers the outcome, or
   * `cancelled` when the session closed under it.
   */
  const presentTurn = (
    s: Session,
    content: ReadonlyArray<UserBlock>,
    done: (outcome: { readonly stopReason: StopReason }) => Effect.Effect<void>,
    ran?: { tools: boolean }
  ) =>
    Effect.gen(function*() {
      presenting.set(s.id, (presenting.get(s.id) ?? 0) + 1)
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          const n = (presenting.get(s.id) ?? 1) - 1
          if (n <= 0) presenting.delete(s.id)
          else presenting.set(s.id, n)
        })
      )
      const encodeFor = encoders(s.id)
      const presenter = Present.make(s.id, { native: nativeChildren, shown })
      // The turn's open questions (its children's too), by session and request id; withdrawing one interrupts its request.
      const questions = yield* FiberMap.make<string>()
      /** Asks one question in its place: everything before it is written first; nothing after it overtakes it. */
      const ask = (key: string, sessionId: string, answer: (a: Answer) => Effect.Effect<void, unknown>, question: ClientBridge.Question) =>
        Effect.gen(function*() {
          yield* flush
          const sent = Deferred.makeUnsafe<void>()
          yield* FiberMap.run(questions, key, ClientBridge.askOn(peer, sessionId, answer, question, sent), { startImmediately: true })
          yield* Deferred.await(sent)
        })
      const answerTo = (id: string, requestId: string) => (answer: Answer) =>
        id === s.id ? s.answer(requestId, answer) : Effect.flatMap(runtime.getSession(id), (child) => child.answer(requestId, answer))
      let lines: Array<string> = []
      const flush = Effect.suspend(() => {
        if (lines.length === 0) return Effect.void
        const chunk = lines.length === 1 ? lines[0]! : lines.join("")
        lines = []
        return peer.sendEncoded(chunk)
      })
      // Everything published since the last take, encoded into one write-queue item.
      const present = (events: ReadonlyArray<SessionEvent>) =>
        Effect.gen(function*() {
          for (const event of events) {
            if (ran !== undefined && (event.type === "tool_call" || event.type === "subagent")) ran.tools = true
            for (const action of presenter.live(event)) {
              switch (action._tag) {
                case "update":
                  lines.push(encodeFor(action.sessionId)(action.update as Translate.Update))
                  break
                case "ask": {
                  const requestId = action.question.data.requestId
                  yield* ask(`${action.answerTo}:${requestId}`, action.sessionId, answerTo(action.answerTo, requestId), action.question)
                  break
                }
                case "withdraw":
                  yield* FiberMap.remove(questions, `${action.answerTo}:${action.requestId}`)
                  break
              }
            }
            const outcome = outcomeOf(event)
            if (outcome !== undefined) {
              yield* flush
              // Answered before the turn is let go of: the next turn cannot start before this answer.
              return yield* done(outcome)
            }
          }
          yield* flush
          // Let the turn publish more before the next take: one wake-up per burst, not per delta.
          yield* Effect.yieldNow
        })
      yield* s.turn(content, turnOptions()).pipe(Stream.runForEachArray(present), Effect.mapError(sessionError))
      // The turn ended without its turn_end (the session closed under it).
      return { stopReason: "cancelled" as StopReason }
    }).pipe(Effect.scoped)

  /**
   * `_session/rewind {sessionId, turn}`: `/rewind turn` as a turn presented to this client (a
   * question about files someone else changed comes to it); answers what the rewind did.
   */
  const rewind = (params: typeof Rewind.RewindRequest.Type) =>
    Effect.gen(function*() {
      const s = yield* session(params.sessionId)
      yield* notChild(s)
      let stopReason: StopReason = "cancelled"
      yield* presentTurn(s, Rewind.prompt(params.turn), (outcome) => Effect.sync(() => void (stopReason = outcome.stopReason)))
      const record = yield* Effect.mapError(runtime.readSession(s.id), runtimeError)
      return { stopReason, ...Rewind.response(record.events) }
    })

  /**
   * `_session/steering {sessionId, prompt}`: content for the turn this client is running in the
   * session, given to the model at its next safe point (`injected`); with none running, a new
   * turn presented to this client as a prompt's would be (`startedNewTurn`).
   */
  const steering = (params: Acp.Session.PromptRequest) =>
    Effect.gen(function*() {
      const s = yield* session(params.sessionId)
      yield* notChild(s)
      const content = yield* userBlocks(params.prompt)
      if ((presenting.get(s.id) ?? 0) > 0) {
        const result = yield* Effect.mapError(s.send({ _tag: "Steer", content }), sessionError)
        return { outcome: result.steering ?? "injected" }
      }
      yield* Effect.forkDetach(Effect.ignore(presentTurn(s, content, () => Effect.void)))
      return { outcome: "startedNewTurn" as const }
    })

  /** The command list each open session's client was last sent (as JSON), to send it again only when it changed. */
  const announced = new Map<string, string>()

  /**
   * The slash commands of a session's cwd, for the client's command list: when the session is
   * opened, and after each of its turns when the set changed (a prompt file or skill added).
   */
  const announceCommands = (s: Session, onlyChanged: boolean) => {
    const listed = runtime.commands
    return listed === undefined ? Effect.void : Effect.gen(function*() {
      const commands = yield* listed(s.cwd)
      const availableCommands = commands.map((c) => ({
        name: c.name,
        description: c.description,
        ...(c.hint !== undefined ? { input: { hint: c.hint } } : {})
      }))
      const key = JSON.stringify(availableCommands)
      if (onlyChanged && announced.get(s.id) === key) return
      announced.set(s.id, key)
      yield* update(s.id, { sessionUpdate: "available_commands_update", availableCommands })
    }).pipe(Effect.catchCause((cause) => Effect.logWarning("could not list the slash commands", cause)))
  }

  const sessionState = (s: Session) =>
    Effect.gen(function*() {
      const { mode } = yield* settingsOf(s)
      return { modes: Translate.modeState(mode), configOptions: yield* configOptionsOf(s) }
    })

  /** `session/load` and `session/resume`: the session live again; `load` replays its history first. */
  const reopen = (params: Acp.Session.LoadSessionRequest, replay: boolean, ctx: Peer.RequestContext) =>
    Effect.gen(function*() {
      yield* signedIn
      const loaded = yield* Effect.mapError(
        runtime.loadSession({
          sessionId: params.sessionId,
          cwd: params.cwd,
          additionalDirectories: params.additionalDirectories,
          mcpServers: params.mcpServers
        }),
        runtimeError
      )
      // Every replayed update is enqueued before the response, and the peer writes in order.
      if (replay) {
        const encodeFor = encoders(params.sessionId)
        // Its children's logs, read first (a parent that never delegated reads none).
        const childLogs = yield* readChildren(loaded.events)
        let lines: Array<string> = []
        const chunks: Array<string> = []
        Replay.forEach(params.sessionId, loaded.events, (shown) => {
          lines.push(encodeFor(shown.sessionId)(shown.update as Translate.Update))
          if (lines.length >= 1024) {
            chunks.push(lines.join(""))
            lines = []
          }
        }, { native: nativeChildren, shown, childLog: (id) => childLogs.get(id) })
        if (lines.length > 0) chunks.push(lines.join(""))
        for (const chunk of chunks) yield* peer.sendEncoded(chunk)
      }
      sessionOpened(ctx, loaded.session)
      return yield* sessionState(loaded.session)
    })

  /**
   * `session/fork` (unstable): the session's log up to its last turn (the one before, while the
   * last one runs) becomes a new session, live as after `session/new`. Nothing is replayed: the
   * client has the conversation already. A fork that could not be opened is removed again.
   */
  const fork = (params: Acp.Session.ForkSessionRequest, ctx: Peer.RequestContext) =>
    Effect.gen(function*() {
      if (params.systemPrompt !== undefined) {
        return yield* Protocol.invalidParams("systemPrompt is not supported (see sessionCapabilities)")
      }
      yield* signedIn
      const record = yield* Effect.mapError(
        runtime.forkSession({ sessionId: params.sessionId, cwd: params.cwd, additionalDirectories: params.additionalDirectories }),
        runtimeError
      )
      const id = record.header.id
      const loaded = yield* runtime.loadSession({ sessionId: id, mcpServers: params.mcpServers }).pipe(
        Effect.tapError(() => Effect.ignore(runtime.deleteSession(id))),
        Effect.mapError(runtimeError)
      )
      sessionOpened(ctx, loaded.session)
      return { sessionId: id, ...(yield* sessionState(loaded.session)) }
    })

  /** The logs of the children a parent's events name, and of theirs (an unreadable one is left out). */
  const readChildren = (events: ReadonlyArray<Canonical>) =>
    Effect.gen(function*() {
      const logs = new Map<string, ReadonlyArray<Canonical>>()
      const visit = (list: ReadonlyArray<Canonical>): Effect.Effect<void> =>
        Effect.forEach(list, (event) => {
          if (event.type !== "subagent" || event.data.event !== "spawned" || logs.has(event.data.id)) return Effect.void
          return runtime.readSession(event.data.id).pipe(
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

  const sessionOpened = (ctx: Peer.RequestContext, s: Session) => {
    if (options.onSessionOpened !== undefined) ctx.onResponded(options.onSessionOpened)
    // After the answer: the client knows the session when it is told its commands.
    ctx.onResponded(announceCommands(s, false))
    // Once answered (the client knows the session), others' turns in it are shown too.
    if (watches !== undefined) ctx.onResponded(Effect.asVoid(FiberMap.run(watches, s.id, watchOthers(s))))
  }

  /**
   * Forwards the turns of `s` that another presenter runs (their `turn_start` names someone
   * else): the prompt as a user message, then everything the client would see of its own
   * turn, except the questions (those are asked of whoever runs the turn).
   */
  const watchOthers = (s: Session) =>
    Effect.gen(function*() {
      /** Each turn watched, presented as its own presenter shows it (but for the questions), until it ends. */
      const others = new Map<number, { readonly presenter: Present.Presenter; readonly encodeFor: (sessionId: string) => (u: Translate.Update) => string }>()
      yield* s.events.pipe(Stream.runForEachArray((events) => {
        const lines: Array<string> = []
        const show = (watched: { readonly encodeFor: (sessionId: string) => (u: Translate.Update) => string }, actions: ReadonlyArray<Present.Action>) => {
          for (const action of actions) if (action._tag === "update") lines.push(watched.encodeFor(action.sessionId)(action.update as Translate.Update))
        }
        for (const event of events) {
          if (event.type === "turn_start" && event.turn !== null && event.data.by !== connection) {
            const watched = { presenter: Present.make(s.id, { native: nativeChildren, shown }), encodeFor: encoders(s.id) }
            others.set(event.turn, watched)
            show(watched, watched.presenter.replay(event))
            continue
          }
          const watched = event.turn === null ? undefined : others.get(event.turn)
          if (watched === undefined) continue
          show(watched, watched.presenter.live(event))
          if (event.type === "turn_end" || event.type === "turn_aborted") others.delete(event.turn!)
        }
        return lines.length === 0 ? Effect.void : peer.sendEncoded(lines.join(""))
      }))
    })

  const list = (params: Acp.Session.ListSessionsRequest) =>
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

  const unwatch = (sessionId: string) =>
    Effect.andThen(Effect.sync(() => announced.delete(sessionId)), watches === undefined ? Effect.void : FiberMap.remove(watches, sessionId))

  const cancel = (params: Acp.Session.CancelNotification) =>
    Effect.ignore(Effect.flatMap(runtime.getSession(params.sessionId), (s) => s.cancel))

  return {
    requests: {
      initialize: Peer.request(Acp.Initialize.InitializeRequest, (params) =>
        Effect.sync(() => {
          offered = {
            readTextFile: params.clientCapabilities.fs.readTextFile === true,
            writeTextFile: params.clientCapabilities.fs.writeTextFile === true,
            terminal: params.clientCapabilities.terminal === true
          }
          nativeChildren = params.clientCapabilities.subagents != null
          shown = { compaction: params.clientCapabilities.session?.compaction != null }
          if (signIn !== undefined) authMethods = Auth.methods(Auth.clientOffers(params.clientCapabilities), signIn)
        }).pipe(Effect.map(() => ({
          // Skein speaks v1 only: the requested version if it is 1, else the latest it supports (also 1).
          protocolVersion: params.protocolVersion === PROTOCOL_VERSION ? params.protocolVersion : PROTOCOL_VERSION,
          agentCapabilities: signIn === undefined ? agentCapabilities : { ...agentCapabilities, auth: { logout: {} } },
          authMethods,
          agentInfo: { name: options.name ?? "skein", title: "Skein", version: options.version },
          // `_session/steering`: content for a running turn; `_session/rewind`: back to before a turn (extension methods).
          _meta: { steering: { supported: true }, rewind: { supported: true }, ...(options.sandbox !== undefined ? { skein: { sandbox: options.sandbox } } : {}) }
        })))),
      authenticate: Peer.request(Acp.Initialize.AuthenticateRequest, (params) =>
        signIn === undefined ? Effect.succeed({}) : Effect.gen(function*() {
          if (params.methodId !== Auth.SETUP_METHOD && params.methodId !== Auth.CONFIG_METHOD) {
            return yield* Protocol.invalidParams(`Unknown auth method (the methods are ${Auth.SETUP_METHOD} and ${Auth.CONFIG_METHOD})`)
          }
          const reason = yield* signIn.reload
          if (reason !== undefined) return yield* Auth.authRequired(reason, authMethods)
          return {}
        })),
      ...(signIn === undefined ? {} : {
        logout: Peer.request(Acp.Initialize.LogoutRequest, () =>
          Effect.as(Effect.mapError(signIn.logout, (message) => new Protocol.RpcError({ code: Protocol.ErrorCode.InternalError, message })), {}))
      }),
      "session/new": Peer.request(Acp.Session.NewSessionRequest, (params, ctx) =>
        Effect.gen(function*() {
          yield* signedIn
          const s = yield* Effect.mapError(
            runtime.newSession({
              cwd: params.cwd,
              additionalDirectories: params.additionalDirectories,
              mcpServers: params.mcpServers
            }),
            runtimeError
          )
          sessionOpened(ctx, s)
          return { sessionId: s.id, ...(yield* sessionState(s)) }
        })),
      "session/load": Peer.request(Acp.Session.LoadSessionRequest, (params, ctx) => reopen(params, true, ctx)),
      "session/resume": Peer.request(Acp.Session.ResumeSessionRequest, (params, ctx) => reopen(params, false, ctx)),
      "session/fork": Peer.request(Acp.Session.ForkSessionRequest, fork),
      "session/list": Peer.request(Acp.Session.ListSessionsRequest, list),
      "session/close": Peer.request(Acp.Session.CloseSessionRequest, (params) =>
        Effect.as(Effect.andThen(unwatch(params.sessionId), runtime.closeSession(params.sessionId)), {})),
      "session/delete": Peer.request(Acp.Session.DeleteSessionRequest, (params) =>
        Effect.as(Effect.andThen(unwatch(params.sessionId), Effect.mapError(runtime.deleteSession(params.sessionId), runtimeError)), {})),
      "session/prompt": Peer.request(Acp.Session.PromptRequest, prompt, {
        // `$/cancel_request` on a prompt cancels its turn; the prompt then answers `cancelled`.
        onCancel: (params) => Effect.ignore(Effect.flatMap(runtime.getSession(params.sessionId), (s) => s.cancel))
      }),
      "session/set_mode": Peer.request(Acp.Session.SetSessionModeRequest, (params) =>
        Effect.gen(function*() {
          const s = yield* session(params.sessionId)
          yield* notChild(s)
          yield* Effect.mapError(s.setMode(params.modeId), sessionError)
          yield* announceMode(s)
          return {}
        })),
      "session/set_config_option": Peer.request(Acp.Session.SetSessionConfigOptionRequest, (params) =>
        Effect.gen(function*() {
          const s = yield* session(params.sessionId)
          yield* notChild(s)
          if (typeof params.value !== "string") {
            return yield* Protocol.invalidParams(`Config option "${params.configId}" is not a boolean option`)
          }
          yield* Effect.mapError(s.setConfig(params.configId, params.value), sessionError)
          if (params.configId === "mode") yield* announceMode(s)
          return { configOptions: (yield* sessionState(s)).configOptions }
        })),
      "_session/steering": Peer.request(Acp.Session.PromptRequest, steering),
      "_session/rewind": Peer.request(Rewind.RewindRequest, rewind),
      // A notification in ACP; some clients send it as a request. It works the same and answers null.
      "session/cancel": Peer.request(Acp.Session.CancelNotification, (params) => Effect.as(cancel(params), null))
    },
    notifications: {
      "session/cancel": Peer.notification(Acp.Session.CancelNotification, cancel)
    }
  }
}

/** Serves ACP over a transport until its input ends. */
export const serve = (transport: Peer.Transport, options: Options) =>
  Effect.flatMap(Runtime, (runtime: Runtime["Service"]) => serveWith(transport, options, runtime))

/** Serves ACP with a given runtime (or one still being built: see `awaiting`). */
export const serveWith = (transport: Peer.Transport, options: Options, runtime: Runtime["Service"]) =>
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
    }
  } as Runtime["Service"]
}

export class AcpServer {
  /** Serves any byte stream; the layer's build runs the server until the input ends. */
  static readonly layer = (transport: Peer.Transport, options: Options): Layer.Layer<never, never, Runtime> =>
    Layer.effectDiscard(serve(transport, options))
  /** The ACP agent over this process's stdin and stdout. */
  static readonly layerStdio = (options: Options): Layer.Layer<never, never, Runtime> =>
    Layer.effectDiscard(serve(Stdio.transport(), options))
}
