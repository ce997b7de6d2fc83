/**
 * What the agent answers the session methods (`Session.ts`): `session/new`, `load`, `resume`,
 * `fork`, `list`, `close`, `delete`, `prompt`, `set_mode`, `set_config_option`. Skein writes its
 * own answers without these schemas; a client of an external agent decodes them, so they are
 * built with its first connection (`agents/External.ts`), never at start-up
 * (scripts/startup-modules.mjs).
 *
 * Spec: `$defs` NewSessionResponse, LoadSessionResponse, ResumeSessionResponse,
 * ListSessionsResponse, SessionInfo, CloseSessionResponse, DeleteSessionResponse,
 * PromptResponse, SetSessionModeResponse, SetSessionConfigOptionResponse; and, from the
 * unstable schema, ForkSessionResponse.
 */
import * as Schema from "effect/Schema"
import { lenient, meta, SessionId } from "./Common.ts"
import { SessionConfigOption, SessionModeState } from "./Config.ts"
import { StopReason } from "./Session.ts"

/** What the agent answers when a session starts, loads or resumes. */
const sessionState = {
  modes: lenient(SessionModeState),
  configOptions: lenient(Schema.Array(SessionConfigOption)),
  _meta: meta
}

export const NewSessionResponse = Schema.Struct({
  sessionId: SessionId,
  ...sessionState
})
export type NewSessionResponse = typeof NewSessionResponse.Type

export const LoadSessionResponse = Schema.Struct(sessionState)
export type LoadSessionResponse = typeof LoadSessionResponse.Type

export const ResumeSessionResponse = Schema.Struct(sessionState)
export type ResumeSessionResponse = typeof ResumeSessionResponse.Type

/** UNSTABLE: the fork's id and its state, as `session/new` answers. */
export const ForkSessionResponse = Schema.Struct({
  sessionId: SessionId,
  ...sessionState
})
export type ForkSessionResponse = typeof ForkSessionResponse.Type

export const SessionInfo = Schema.Struct({
  sessionId: SessionId,
  cwd: Schema.String,
  additionalDirectories: lenient(Schema.Array(Schema.String)),
  title: lenient(Schema.String),
  /** ISO 8601 timestamp of the last activity. */
  updatedAt: lenient(Schema.String),
  _meta: meta
})
export type SessionInfo = typeof SessionInfo.Type

export const ListSessionsResponse = Schema.Struct({
  sessions: Schema.Array(SessionInfo),
  nextCursor: lenient(Schema.String),
  _meta: meta
})
export type ListSessionsResponse = typeof ListSessionsResponse.Type

export const CloseSessionResponse = Schema.Struct({ _meta: meta })
export type CloseSessionResponse = typeof CloseSessionResponse.Type

export const DeleteSessionResponse = Schema.Struct({ _meta: meta })
export type DeleteSessionResponse = typeof DeleteSessionResponse.Type

export const PromptResponse = Schema.Struct({
  stopReason: StopReason,
  _meta: meta
})
export type PromptResponse = typeof PromptResponse.Type

export const SetSessionModeResponse = Schema.Struct({ _meta: meta })
export type SetSessionModeResponse = typeof SetSessionModeResponse.Type

/** Answers with every option, since one choice may change others (a model's efforts). */
export const SetSessionConfigOptionResponse = Schema.Struct({
  configOptions: Schema.Array(SessionConfigOption),
  _meta: meta
})
export type SetSessionConfigOptionResponse = typeof SetSessionConfigOptionResponse.Type
