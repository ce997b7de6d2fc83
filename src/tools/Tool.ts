/**
 * The Tool contract.
 *
 * A tool is a small factory: a Schema for its arguments, a description written
 * for the model (stating its limits), a `kind` for presenters, whether it
 * mutates the workspace, and `execute`. A tool never fails: every problem is a
 * result with `ok: false` whose text the model reads.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { FileSystem } from "effect/FileSystem"
import type { Path } from "effect/Path"
import type { Location, ToolDetails, ToolKind } from "../log/Event.ts"

/** What a tool returns: text for the model, details for presenters. */
export interface ToolOutput {
  readonly ok: boolean
  readonly content: string
  readonly details?: ToolDetails | undefined
}

/** The session a tool runs for. */
export interface ToolContext {
  readonly sessionId: string
  readonly toolCallId: string
  /** The session's working directory (absolute). */
  readonly cwd: string
  /** Every directory the session may touch: the cwd first, then additional directories. */
  readonly roots: ReadonlyArray<string>
  /** Streams partial output (e.g. a running command) to presenters. */
  readonly progress: (output: string) => Effect.Effect<void>
}

/** What tools may use from the environment. */
export type ToolEnv = FileSystem | Path

export interface Tool<A = any> {
  readonly name: string
  readonly description: string
  readonly kind: ToolKind
  /** Mutating tools go through the permission gate; read-only tools never ask. */
  readonly mutating: boolean
  readonly parameters: Schema.Codec<A, unknown>
  /** A short human title for the call, e.g. "Read src/index.ts". */
  readonly title: (args: A) => string
  /** Paths the call touches, relative paths resolved against the cwd. */
  readonly locations: (args: A, cwd: string) => ReadonlyArray<Location>
  readonly execute: (args: A, ctx: ToolContext) => Effect.Effect<ToolOutput, never, ToolEnv>
}

export const define = <A>(tool: Tool<A>): Tool<A> => tool

export const ok = (content: string, details?: ToolDetails): ToolOutput => ({ ok: true, content, details })
export const error = (content: string, details?: ToolDetails): ToolOutput => ({ ok: false, content, details })

const jsonSchemaCache = new WeakMap<Tool, Record<string, unknown>>()

/** The JSON Schema of a tool's arguments, for providers. Computed once per tool. */
export const jsonSchema = (tool: Tool): Record<string, unknown> => {
  const cached = jsonSchemaCache.get(tool)
  if (cached) return cached
  const document = Schema.toJsonSchemaDocument(tool.parameters)
  const schema: Record<string, unknown> = { ...(document.schema as Record<string, unknown>) }
  if (Object.keys(document.definitions ?? {}).length > 0) schema["$defs"] = document.definitions
  jsonSchemaCache.set(tool, schema)
  return schema
}

/** Decodes raw arguments; a mismatch is a message for the model. */
export const decodeArgs = <A>(tool: Tool<A>, raw: unknown): Effect.Effect<A, string> =>
  Schema.decodeUnknownEffect(tool.parameters)(raw, { onExcessProperty: "ignore" }).pipe(
    Effect.mapError((error) => `Invalid arguments for ${tool.name}: ${error.message}`)
  )

/**
 * Runs a tool call from raw model arguments. Bad arguments and defects become
 * tool errors; interruption propagates (the caller finalizes the call).
 */
export const run = (tool: Tool, raw: unknown, ctx: ToolContext): Effect.Effect<ToolOutput, never, ToolEnv> =>
  decodeArgs(tool, raw).pipe(
    Effect.flatMap((args) => tool.execute(args, ctx)),
    Effect.catch((message: string) => Effect.succeed(error(message))),
    Effect.catchDefect((defect) =>
      Effect.succeed(error(`Tool ${tool.name} crashed: ${defect instanceof Error ? defect.message : String(defect)}`))
    )
  )
