/**
 * Shared vocabulary of the ACP v1 wire model: identifiers, integer widths, `_meta`, and the
 * field combinators every other module of `src/acp/` builds its structs with.
 *
 * One rule for every field, taken from the official `schema.json`:
 *
 * - decoding (what a client sends) is lenient where the spec is: an optional field may be
 *   absent or `null` (both mean "absent"), a defaulted field gets its default, a field marked
 *   `x-deserialize-default-on-error` falls back instead of failing, unknown keys are ignored;
 * - encoding (what Skein writes) is exact: known keys only, no `undefined`, an absent optional
 *   is omitted, never written as `null` (unless `null` itself means something, see
 *   `SessionInfoUpdate`).
 *
 * The decoded `Type` is the same in both directions, so a value decoded from a client (a prompt
 * block) can be echoed back (a `user_message_chunk`) without conversion.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as SchemaGetter from "effect/SchemaGetter"

// ---------------------------------------------------------------------------
// Field combinators
// ---------------------------------------------------------------------------

const notNull = <A>(value: A | null): value is A => value !== null
const notUndefined = <A>(value: A | undefined): value is A => value !== undefined

/**
 * Builds each field combinator once per inner schema: `lenient(Schema.String)` is used by dozens
 * of fields, and building a schema is not free at start-up. Schemas are immutable, so sharing
 * one field schema between structs is safe.
 */
const memo = <S extends Schema.Top, R>(build: (schema: S) => R): ((schema: S) => R) => {
  const cache = new WeakMap<S, R>()
  return (schema) => {
    let field = cache.get(schema)
    if (field === undefined) {
      field = build(schema)
      cache.set(schema, field)
    }
    return field
  }
}

const makeOptional = <S extends Schema.Top>(schema: S) =>
  Schema.optionalKey(Schema.NullOr(schema)).pipe(
    Schema.decodeTo(Schema.optionalKey(Schema.UndefinedOr(Schema.toType(schema))), {
      decode: SchemaGetter.transformOptional((o: Option.Option<S["Type"] | null>) => Option.filter(o, notNull)),
      encode: SchemaGetter.transformOptional((o: Option.Option<S["Type"] | undefined>) => Option.filter(o, notUndefined))
    })
  )
const makeLenient = <S extends Schema.Top>(schema: S) =>
  optional(schema).pipe(Schema.catchDecoding(() => Effect.succeedNone))

const optionalMemo = memo(makeOptional)
const lenientMemo = memo(makeLenient)

/**
 * An optional field. On the wire it may be absent or `null`; both decode to an absent key.
 * Encoding omits the key when it is absent or `undefined`.
 */
export const optional = <S extends Schema.Top>(schema: S): ReturnType<typeof makeOptional<S>> =>
  optionalMemo(schema) as ReturnType<typeof makeOptional<S>>

/**
 * An optional field the spec marks `x-deserialize-default-on-error`: like {@link optional}, and a
 * value that does not decode is dropped instead of failing the whole message.
 */
export const lenient = <S extends Schema.Top>(schema: S): ReturnType<typeof makeLenient<S>> =>
  lenientMemo(schema) as ReturnType<typeof makeLenient<S>>

/**
 * An optional field where `null` means something of its own ("clear it"), as in
 * `SessionInfoUpdate.title`: absent, `null` or a value, each kept as is. Encoding omits the key
 * when it is absent or `undefined`; a value that does not decode is dropped.
 */
export const clearable = <S extends Schema.Top>(schema: S) =>
  Schema.optionalKey(Schema.NullOr(schema)).pipe(
    Schema.decodeTo(Schema.optionalKey(Schema.UndefinedOr(Schema.NullOr(Schema.toType(schema)))), {
      decode: SchemaGetter.passthroughSupertype(),
      encode: SchemaGetter.transformOptional((o: Option.Option<S["Type"] | null | undefined>) =>
        Option.filter(o, notUndefined)
      )
    }),
    Schema.catchDecoding(() => Effect.succeedNone)
  )

/**
 * A field with a spec default (`default`, `x-deserialize-default-on-null`): absent or `null`
 * decodes to `value`. The decoded field is required; encoding always writes it.
 */
export const withDefault = <S extends Schema.Top>(schema: S, value: S["Type"]) =>
  Schema.optionalKey(Schema.NullOr(schema)).pipe(
    Schema.decodeTo(Schema.toType(schema), {
      decode: SchemaGetter.transformOptional((o: Option.Option<S["Type"] | null>) =>
        Option.some(Option.getOrElse(Option.filter(o, notNull), () => value))
      ),
      encode: SchemaGetter.passthroughSubtype()
    })
  )

/** {@link withDefault}, and a value that does not decode also becomes the default. */
export const lenientDefault = <S extends Schema.Top>(schema: S, value: S["Type"]) => {
  const field = withDefault(schema, value)
  return field.pipe(Schema.catchDecoding<typeof field>(() => Effect.succeedSome(value)))
}

// ---------------------------------------------------------------------------
// Scalars
// ---------------------------------------------------------------------------

/** `format: uint16` */
export const Uint16 = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 65535 }))
/** `format: uint32` */
export const Uint32 = Schema.Number.check(Schema.isUint32())
/** `format: uint64`, limited to safe integers. */
export const Uint64 = Schema.Natural
/** `format: int64`, limited to safe integers. */
export const Int64 = Schema.Int
/** `format: double`: a finite number (JSON has no NaN or Infinity). */
export const Double = Schema.Finite

/**
 * `_meta`: an open object reserved for extensions. Implementations must not assume anything
 * about its keys, so its values stay `unknown`.
 */
const Meta = Schema.Record(Schema.String, Schema.Unknown)
export type Meta = typeof Meta.Type

/** The `_meta` field every ACP object carries; a malformed one is dropped on decode. */
export const meta = lenient(Meta)

/** A JSON-RPC request id: `null`, an integer or a string. */
export const RequestId = Schema.Union([Schema.Null, Int64, Schema.String])
export type RequestId = typeof RequestId.Type

export const SessionId = Schema.String
export type SessionId = typeof SessionId.Type

export const ToolCallId = Schema.String
export type ToolCallId = typeof ToolCallId.Type

export const TerminalId = Schema.String
export type TerminalId = typeof TerminalId.Type

export const MessageId = Schema.String
export type MessageId = typeof MessageId.Type

export const AuthMethodId = Schema.String
export type AuthMethodId = typeof AuthMethodId.Type

export const PermissionOptionId = Schema.String
export type PermissionOptionId = typeof PermissionOptionId.Type

export const SessionModeId = Schema.String
export type SessionModeId = typeof SessionModeId.Type

export const SessionConfigId = Schema.String
export type SessionConfigId = typeof SessionConfigId.Type

export const SessionConfigValueId = Schema.String
export type SessionConfigValueId = typeof SessionConfigValueId.Type

export const SessionConfigGroupId = Schema.String
export type SessionConfigGroupId = typeof SessionConfigGroupId.Type

/** `Role` in annotations: who the content is meant for. */
export const Role = Schema.Literals(["assistant", "user"])
export type Role = typeof Role.Type

/** A name/value pair of an environment (MCP stdio servers, `terminal/create`). */
export const EnvVariable = Schema.Struct({
  name: Schema.String,
  value: Schema.String,
  _meta: meta
})
export type EnvVariable = typeof EnvVariable.Type
