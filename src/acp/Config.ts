/**
 * What a client can choose for a session: its modes and its config options (model, mode,
 * reasoning effort, …). Sent by the agent in session responses and in `current_mode_update` /
 * `config_option_update`; the client answers with `session/set_mode` and
 * `session/set_config_option` (see `Session.ts`).
 *
 * Spec: `$defs` SessionMode, SessionModeState, SessionConfigOption, SessionConfigSelect,
 * SessionConfigBoolean, SessionConfigSelectOptions, SessionConfigSelectOption,
 * SessionConfigSelectGroup, SessionConfigOptionCategory.
 */
import * as Schema from "effect/Schema"
import {
  lenient,
  meta,
  SessionConfigGroupId,
  SessionConfigId,
  SessionConfigValueId,
  SessionModeId
} from "./Common.ts"

export const SessionMode = Schema.Struct({
  id: SessionModeId,
  name: Schema.String,
  description: lenient(Schema.String),
  _meta: meta
})
export type SessionMode = typeof SessionMode.Type

export const SessionModeState = Schema.Struct({
  currentModeId: SessionModeId,
  availableModes: Schema.Array(SessionMode),
  _meta: meta
})
export type SessionModeState = typeof SessionModeState.Type

/**
 * A UX hint for the client; Skein uses `model`, `mode` and `thought_level`. Any other string is
 * allowed by the spec (and must be tolerated by clients).
 */
export const SessionConfigOptionCategory = Schema.Union([
  Schema.Literals(["mode", "model", "model_config", "thought_level"]),
  Schema.StringForLiteralAutocomplete
])
export type SessionConfigOptionCategory = typeof SessionConfigOptionCategory.Type

export const SessionConfigSelectOption = Schema.Struct({
  value: SessionConfigValueId,
  name: Schema.String,
  description: lenient(Schema.String),
  _meta: meta
})
export type SessionConfigSelectOption = typeof SessionConfigSelectOption.Type

export const SessionConfigSelectGroup = Schema.Struct({
  group: SessionConfigGroupId,
  name: Schema.String,
  options: Schema.Array(SessionConfigSelectOption),
  _meta: meta
})
export type SessionConfigSelectGroup = typeof SessionConfigSelectGroup.Type

/** Either a flat list of values or a list of named groups of values. */
export const SessionConfigSelectOptions = Schema.Union([
  Schema.Array(SessionConfigSelectOption),
  Schema.Array(SessionConfigSelectGroup)
])
export type SessionConfigSelectOptions = typeof SessionConfigSelectOptions.Type

const optionFields = {
  id: SessionConfigId,
  name: Schema.String,
  description: lenient(Schema.String),
  category: lenient(SessionConfigOptionCategory),
  _meta: meta
}

/** A single-choice option: `currentValue` is one of the `value`s in `options`. */
export const SessionConfigSelect = Schema.Struct({
  type: Schema.Literal("select"),
  ...optionFields,
  currentValue: SessionConfigValueId,
  options: SessionConfigSelectOptions
})
export type SessionConfigSelect = typeof SessionConfigSelect.Type

/**
 * An on/off option. Only to be offered to a client that advertises
 * `clientCapabilities.session.configOptions.boolean`.
 */
export const SessionConfigBoolean = Schema.Struct({
  type: Schema.Literal("boolean"),
  ...optionFields,
  currentValue: Schema.Boolean
})
export type SessionConfigBoolean = typeof SessionConfigBoolean.Type

/** A session configuration option and its current value, discriminated by `type`. */
export const SessionConfigOption = Schema.Union([SessionConfigSelect, SessionConfigBoolean])
export type SessionConfigOption = typeof SessionConfigOption.Type
