/**
 * `SessionRpcs`: the Runtime and the session protocol as one `effect/rpc` group. In process it
 * is what `Skein.layer` gives embedders (through an in-memory client); `skein serve` serves it
 * over a socket; `Skein.remote` and `skein acp --connect` are its clients.
 *
 * A server that needs a token checks it once per connection, before the first request
 * (`Gate`, `Serve.ts`); requests carry none. Long answers stream: a turn's events (`Turn`), a
 * session's log then its live events (`Subscribe`), every session's events (`Events`), and the
 * events of a loaded, read or forked log (`LoadSession`, `ReadSession`, `ForkSession`, in
 * chunks).
 */
import * as Schema from "effect/Schema"
import { Rpc, RpcGroup } from "effect/rpc"
import { LogHeader } from "../log/Event.ts"
import {
  ForkSessionOptions,
  ListQuery,
  LoadSessionOptions,
  NewSessionOptions,
  RuntimeError,
  SessionPage
} from "../runtime/Api.ts"
import { Command, Event, SendResult, SessionError, SessionInfo, Settings, TurnOptions } from "../session/Protocol.ts"
import { McpServerStatus, UserBlock } from "../Vocabulary.ts"

/** A session as a client first sees it. */
export const Snapshot = Schema.Struct({
  info: SessionInfo,
  settings: Settings,
  /** In a cluster: the runner that holds the session now (its host:port). */
  runner: Schema.optionalKey(Schema.String)
})
export type Snapshot = typeof Snapshot.Type

const SessionId = { sessionId: Schema.String }
export const Failure = Schema.Union([RuntimeError, SessionError])
export const TurnPayload = { ...SessionId, content: Schema.Array(UserBlock), options: TurnOptions }
export const SubscribePayload = { ...SessionId, fromSeq: Schema.optionalKey(Schema.Number) }

/** Events of a log, a chunk at a time, after what comes first. */
const Chunk = Schema.Struct({ _tag: Schema.Literal("Events"), events: Schema.Array(Event) })

const ModelEntry = Schema.Struct({
  key: Schema.String,
  provider: Schema.String,
  info: Schema.Unknown
})

/** A log written or read: its header, then its events in chunks. */
const Record = Schema.Union([Schema.Struct({ _tag: Schema.Literal("Header"), header: LogHeader, file: Schema.String }), Chunk])

const Info = Rpc.make("Info", {
  success: Schema.Struct({
    version: Schema.String,
    models: Schema.UndefinedOr(Schema.Struct({ entries: Schema.Array(ModelEntry), defaultModel: Schema.UndefinedOr(Schema.String) })),
    /** The provider's own window (`Runtime.contextWindow`); absent from an older server. */
    contextWindow: Schema.optionalKey(Schema.Number)
  })
})
export const NewSession = Rpc.make("NewSession", { payload: NewSessionOptions, success: Snapshot, error: RuntimeError })
export const LoadSession = Rpc.make("LoadSession", {
  payload: LoadSessionOptions,
  success: Schema.Union([Schema.Struct({ _tag: Schema.Literal("Loaded"), snapshot: Snapshot }), Chunk]),
  error: RuntimeError,
  stream: true
})
const ListSessions = Rpc.make("ListSessions", { payload: ListQuery, success: SessionPage, error: RuntimeError })
const ReadSession = Rpc.make("ReadSession", { payload: SessionId, success: Record, error: RuntimeError, stream: true })
/** The fork's log as written: its header, then its events in chunks. */
const ForkSession = Rpc.make("ForkSession", { payload: ForkSessionOptions, success: Record, error: RuntimeError, stream: true })
const DeleteSession = Rpc.make("DeleteSession", { payload: SessionId, error: RuntimeError })
export const GetSession = Rpc.make("GetSession", { payload: SessionId, success: Snapshot, error: RuntimeError })
export const CloseSession = Rpc.make("CloseSession", { payload: SessionId })
const LiveSessions = Rpc.make("LiveSessions", { success: Schema.Array(SessionInfo) })
const Turn = Rpc.make("Turn", {
  payload: TurnPayload,
  success: Event,
  error: Failure,
  stream: true
})
export const Send = Rpc.make("Send", { payload: { ...SessionId, command: Command }, success: SendResult, error: Failure })
export const Settings_ = Rpc.make("Settings", { payload: SessionId, success: Settings, error: Failure })
export const McpServers = Rpc.make("McpServers", { payload: SessionId, success: Schema.Array(McpServerStatus), error: Failure })
/** The log after `fromSeq`, then the live events; without `fromSeq`, the live events only. */
const Subscribe = Rpc.make("Subscribe", { payload: SubscribePayload, success: Event, error: Failure, stream: true })
const Events = Rpc.make("Events", { success: Event, stream: true })
/** The slash commands of sessions in `cwd` (built-ins, prompt files, user-invocable skills), as the server reads them. */
const Commands = Rpc.make("Commands", {
  payload: { cwd: Schema.String },
  success: Schema.Array(Schema.Struct({ name: Schema.String, description: Schema.String, hint: Schema.optionalKey(Schema.String) }))
})

export class SessionRpcs extends RpcGroup.make(
  Info,
  NewSession,
  LoadSession,
  ListSessions,
  ReadSession,
  ForkSession,
  DeleteSession,
  GetSession,
  CloseSession,
  LiveSessions,
  Turn,
  Send,
  Settings_,
  McpServers,
  Subscribe,
  Events,
  Commands
) {}

/** How many events a chunk of a log carries. */
export const CHUNK_EVENTS = 512
