/**
 * One ACP client's connection: what it offered in `initialize`, and what every method of the
 * server needs to reach its sessions and tell the client about them. The method table
 * (`AcpServer.ts`), presenting a turn (`PresentTurn.ts`) and opening a session (`Open.ts`)
 * take it as their argument; nothing else holds the connection's state.
 */
import * as Effect from "effect/Effect"
import type * as FiberMap from "effect/FiberMap"
import type * as Acp from "../acp/index.ts"
import type * as Peer from "../jsonrpc/Peer.ts"
import * as Protocol from "../jsonrpc/Protocol.ts"
import { type Runtime, RuntimeError } from "../runtime/Api.ts"
import type * as Guarantees from "../sandbox/Guarantees.ts"
import type { Capabilities } from "../session/ClientCalls.ts"
import type { Session } from "../session/Protocol.ts"
import * as Translate from "../translate/Translate.ts"
import * as Auth from "./Auth.ts"
import * as ClientBridge from "./ClientBridge.ts"
import { runtimeError, sessionError } from "./Convert.ts"

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

/** What the client said of itself in `initialize` (nothing until it does). */
export interface Client {
  /** What it offers a turn's tools: its file system, its terminals. */
  readonly offered: Capabilities
  /** It shows child sessions as sessions (`clientCapabilities.subagents`, unstable). */
  readonly nativeChildren: boolean
  /** What it shows beyond the stable protocol (`clientCapabilities.session.compaction`, unstable). */
  readonly shown: Translate.Options
  /** The auth methods offered to it (in `initialize`, and with `auth_required`). */
  readonly authMethods: ReadonlyArray<Acp.Initialize.AuthMethod>
}

export interface Connection {
  readonly peer: Peer.Peer
  readonly runtime: Runtime["Service"]
  readonly options: Options
  /** This connection, as the turns it presents are marked (`turn_start.by`). */
  readonly id: string
  /** Where the watches of others' turns run (`watchOthers`), by session. */
  readonly watches: FiberMap.FiberMap<string> | undefined
  /** The client as `initialize` described it. */
  client: Client
  /** Prompts of this connection in progress, by session: steering goes to their turn. */
  readonly presenting: Map<string, number>
  /** The command list each open session's client was last sent (as JSON), to send it again only when it changed. */
  readonly announced: Map<string, string>
}

export const make = (
  peer: Peer.Peer,
  runtime: Runtime["Service"],
  options: Options,
  watches?: FiberMap.FiberMap<string> | undefined
): Connection => ({
  peer,
  runtime,
  options,
  id: `acp-${process.pid}-${Math.random().toString(36).slice(2, 10)}`,
  watches,
  client: {
    offered: { readTextFile: false, writeTextFile: false, terminal: false },
    nativeChildren: false,
    shown: {},
    authMethods: options.signIn === undefined ? [] : Auth.methods({ terminal: false, legacy: false }, options.signIn)
  },
  presenting: new Map(),
  announced: new Map()
})

/** A live session of the client's, or why not (a child that is no longer live is still a child). */
export const session = (c: Connection, sessionId: string): Effect.Effect<Session, Protocol.RpcError> =>
  c.runtime.getSession(sessionId).pipe(
    Effect.catchIf((error) => error.reason === "not_found", (error) =>
      Effect.flatMap(Effect.option(c.runtime.readSession(sessionId)), (record) =>
        Effect.fail(
          record._tag === "Some" && record.value.header.parent !== undefined
            ? new RuntimeError({ reason: "invalid_request", message: `${sessionId} is a child session (a subagent of ${record.value.header.parent.sessionId}); it is driven by its parent` })
            : error
        ))),
    Effect.mapError(runtimeError)
  )

/** A child session is driven by its parent: the client may watch and cancel it, not prompt or change it. */
export const notChild = (s: Session) =>
  s.parent === undefined
    ? Effect.void
    : Effect.fail(Protocol.invalidParams(`${s.id} is a child session (a subagent of ${s.parent.sessionId}); it is driven by its parent`))

/** Opening a session needs a configured provider: `auth_required` until there is one. */
export const signedIn = (c: Connection): Effect.Effect<void, Protocol.RpcError> => {
  const signIn = c.options.signIn
  return signIn === undefined ? Effect.void : Effect.flatMap(signIn.required, (reason) =>
    reason === undefined ? Effect.void : Effect.fail(Auth.authRequired(reason, c.client.authMethods)))
}

export const update = (c: Connection, sessionId: string, u: Translate.Update) => c.peer.notify("session/update", { sessionId, update: u })

/** Encoders of `session/update` lines by session id (a turn shows its children's sessions too). */
export const encoders = (first: string) => {
  const made = new Map<string, (u: Translate.Update) => string>([[first, Translate.encoder(first)]])
  return (sessionId: string) => {
    let encode = made.get(sessionId)
    if (encode === undefined) made.set(sessionId, encode = Translate.encoder(sessionId))
    return encode
  }
}

/** What this client offers a turn's tools, under the agent's settings. */
export const turnOptions = (c: Connection) => ({
  client: ClientBridge.capabilities(c.client.offered, c.options.clientAccess ?? { useClientFs: true, useClientTerminal: true }),
  by: c.id
})

/** The session's config options: mode, model and (where the model has one) reasoning effort. */
const configOptionsOf = (c: Connection, s: Session) =>
  Effect.map(Effect.mapError(s.settings, sessionError), (settings) => Translate.configOptions({ ...settings, models: c.runtime.models }))

export const sessionState = (c: Connection, s: Session) =>
  Effect.gen(function*() {
    const { mode } = yield* Effect.mapError(s.settings, sessionError)
    return { modes: Translate.modeState(mode), configOptions: yield* configOptionsOf(c, s) }
  })

/** Tells the client about a mode change it did not necessarily make itself. */
export const announceMode = (c: Connection, s: Session) =>
  Effect.gen(function*() {
    const { mode } = yield* Effect.mapError(s.settings, sessionError)
    yield* update(c, s.id, { sessionUpdate: "current_mode_update", currentModeId: mode })
    yield* update(c, s.id, { sessionUpdate: "config_option_update", configOptions: yield* configOptionsOf(c, s) })
  })

/**
 * The slash commands of a session's cwd, for the client's command list: when the session is
 * opened, and after each of its turns when the set changed (a prompt file or skill added).
 */
export const announceCommands = (c: Connection, s: Session, onlyChanged: boolean) => {
  const listed = c.runtime.commands
  return listed === undefined ? Effect.void : Effect.gen(function*() {
    const commands = yield* listed(s.cwd)
    const availableCommands = commands.map((command) => ({
      name: command.name,
      description: command.description,
      ...(command.hint !== undefined ? { input: { hint: command.hint } } : {})
    }))
    const key = JSON.stringify(availableCommands)
    if (onlyChanged && c.announced.get(s.id) === key) return
    c.announced.set(s.id, key)
    yield* update(c, s.id, { sessionUpdate: "available_commands_update", availableCommands })
  }).pipe(Effect.catchCause((cause) => Effect.logWarning("could not list the slash commands", cause)))
}
