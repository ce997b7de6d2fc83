/**
 * What the data of a logged event must be: one check per event type, derived from the event
 * Schemas (`CanonicalBody` in `Event.ts`, a union of `event(type, fields)` structs) and built
 * once per union. A new member of the union is checked the moment it exists: nothing here or
 * in the reader names an event type.
 *
 * The checks are `Schema.is` of each member's data, compiled to plain JavaScript by Effect's
 * schema compiler (where a program may generate code; otherwise Effect interprets the same
 * Schema): a 100,000-event log costs a few milliseconds of checks, where interpreting the
 * Schemas costs tens. Only a failing line pays for a detailed decode, to say where its data is
 * wrong; that says which field and what was expected, never the value (it may be a secret).
 *
 * What the Schemas allow is what a log may hold: unknown extra fields are accepted (a Struct
 * ignores them), so older Skeins' lines with a field this one dropped still read.
 */
import * as Schema from "effect/Schema"
import * as SchemaJITCompiler from "effect/schema/SchemaJITCompiler"
import * as SchemaAST from "effect/SchemaAST"
import * as SchemaIssue from "effect/SchemaIssue"
import * as SchemaParser from "effect/SchemaParser"
import { CanonicalBody } from "./Event.ts"

/** One member of an event union: `{ type: Literal, data: Struct }`, as `event(type, fields)` makes it. */
interface EventSchema {
  readonly fields: {
    readonly type: { readonly literal: string }
    readonly data: Schema.ConstraintDecoder<unknown>
  }
}

/** A union of event structs (`CanonicalBody`, or a test's larger one). */
export interface EventUnion {
  readonly members: ReadonlyArray<EventSchema>
}

/**
 * What is wrong with an event of this `type` and `data`, or undefined. A type that is not a
 * member of the union is `unknown`: in a log whose version this Skein reads, that is damage,
 * not news (see `Reader.ts`).
 */
export type Check = (type: string, data: unknown) => string | undefined

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

/** A path into the data, naming fields and indices only (a key that is not a plain name may be data). */
const formatPath = (path: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }>): string =>
  path.map((segment) => (typeof segment === "object" ? segment.key : segment)).map((key, i) =>
    typeof key === "number"
      ? `[${key}]`
      : typeof key === "string" && /^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(key)
      ? (i === 0 ? key : `.${key}`)
      : "[…]"
  ).join("")

/** Where and how the data differs from its Schema; the issue holds no input (it is not reported). */
const explain = (schema: Schema.ConstraintDecoder<unknown>, data: unknown): string => {
  const result = SchemaParser.decodeUnknownExit(schema, { errors: "first" })(data)
  if (result._tag === "Success") return ""
  const issue = result.cause.reasons.map((reason) => (reason._tag === "Fail" ? reason.error : undefined)).find(SchemaIssue.isIssue)
  const first = issue === undefined ? undefined : formatter(issue).issues[0]
  if (first === undefined) return ""
  const path = first.path ?? []
  return path.length === 0 ? ` (${first.message})` : ` (${formatPath(path)}: ${first.message})`
}

const build = (union: EventUnion): Check => {
  // The union's members, by type, at the first check: a process that opens sessions and logs
  // nothing yet does not build the event Schemas (`Lazy.schema` in `Event.ts`).
  let byType: Map<string, EventSchema> | undefined
  const member = (type: string): EventSchema | undefined =>
    (byType ??= new Map(union.members.map((m) => [m.fields.type.literal, m]))).get(type)
  const guards = new Map<string, (data: unknown) => boolean>()
  /**
   * The guard of `type`, compiled at its first check: a process checks the few types it logs or
   * reads, and compiling every member's guard at once cost start-up
   * more than all of them are used for.
   */
  const guardOf = (type: string): ((data: unknown) => boolean) | undefined => {
    const known = guards.get(type)
    if (known !== undefined) return known
    const data = member(type)?.fields.data
    if (data === undefined) return undefined
    // Compiled for this Schema (and what it contains) only; anything else keeps interpreting.
    SchemaJITCompiler.enable(SchemaAST.toType(data.ast))
    const is = Schema.is(data)
    const guard = (value: unknown) => is(value)
    guards.set(type, guard)
    return guard
  }
  return (type, data) => {
    const is = guardOf(type)
    if (is === undefined) return "unknown event type"
    if (is(data)) return undefined
    return `a ${type} whose data does not match its schema${explain(member(type)!.fields.data, data)}`
  }
}

const built = new WeakMap<EventUnion, Check>()

/** The checks of a union's events, built on first use and kept. */
export const of = (union: EventUnion): Check => {
  let check = built.get(union)
  if (check === undefined) {
    check = build(union)
    built.set(union, check)
  }
  return check
}

/** The checks of the canonical events, the ones Skein logs. */
export const canonical = (): Check => of(CanonicalBody)
