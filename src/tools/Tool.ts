/**
 * The Tool contract.
 *
 * A tool is a small factory: a Schema for its arguments, a description written
 * for the model (stating its limits), a `kind` for presenters, whether it
 * mutates the workspace, and `execute`. A tool never fails: every problem is a
 * result with `ok: false` whose text the model reads. What it uses of its turn
 * (files, terminals, children, skills, where progress goes) are services it
 * names in its type (`Tool<A, R>`, `Edges.ts`); its context only identifies the call.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { FileSystem } from "effect/FileSystem"
import type { Path } from "effect/Path"
import type { Location, ProposedDiff, ToolDetails, ToolKind } from "../Vocabulary.ts"

/** What a tool returns: text for the model, details for presenters. */
export interface ToolOutput {
  readonly ok: boolean
  readonly content: string
  readonly details?: ToolDetails | undefined
}

/**
 * What identifies a call: the session, the call, where it runs. What a tool may use besides (the
 * turn's files, terminals, children, skills, where its progress goes) are services the turn
 * provides (`Edges.ts`), named in the tool's type.
 */
export interface ToolContext {
  readonly sessionId: string
  readonly toolCallId: string
  /** The session's working directory (absolute). */
  readonly cwd: string
  /** Every directory the call may touch: the cwd first, then additional directories. */
  readonly roots: ReadonlyArray<string>
  /**
   * The gate let this call run without asking because it only reads: run it
   * in its confined form (bash: git with the configuration that runs code off).
   */
  readonly readOnly?: boolean | undefined
}

export interface PlanEntry {
  readonly content: string
  readonly status: "pending" | "in_progress" | "completed"
  readonly priority: "high" | "medium" | "low"
}

/** What tools may use from the environment. */
export type ToolEnv = FileSystem | Path

/**
 * A tool with arguments `A` that uses the services `R` of its turn (`Edges.Services`; none for
 * most) besides the environment.
 */
export interface Tool<A = any, R = never> {
  readonly name: string
  readonly description: string
  readonly kind: ToolKind
  /** Mutating tools go through the permission gate; read-only tools never ask. */
  readonly mutating: boolean
  readonly parameters: Schema.Codec<A, unknown>
  /**
   * The JSON Schema the model sees, when the tool brings its own (an MCP
   * server's `inputSchema`); otherwise it is derived from `parameters`.
   */
  readonly inputSchema?: Record<string, unknown> | undefined
  /** A short human title for the call, e.g. "Read src/index.ts". */
  readonly title: (args: A) => string
  /** Paths the call touches, relative paths resolved against the cwd. */
  readonly locations: (args: A, cwd: string) => ReadonlyArray<Location>
  readonly execute: (args: A, ctx: ToolContext) => Effect.Effect<ToolOutput, never, ToolEnv | R>
  /**
   * What an "always" permission answer for this call covers (mutating tools):
   * edits under one directory, or commands starting with one prefix.
   */
  readonly scope?: ((args: A, cwd: string) => PermissionScope) | undefined
  /**
   * The change the call would make (edit tools), shown in its permission request so the user
   * sees it before answering. Empty when it cannot be worked out (the call then fails on its
   * own when it runs). Reads only inside the roots.
   */
  readonly preview?: ((args: A, where: { readonly cwd: string; readonly roots: ReadonlyArray<string> }) => Effect.Effect<ReadonlyArray<ProposedDiff>, never, ToolEnv>) | undefined
}

/** The reach of a remembered permission, shown to the user in the option's name. */
export interface PermissionScope {
  readonly kind: "path" | "command" | "tool" | "host"
  /**
   * An absolute directory (`path`), a command prefix (`command`), the tool's name (`tool`: every
   * call of it), or a web host with its port when not the default (`host`: `web_fetch`).
   */
  readonly value: string
  /** How the user reads it, e.g. "edits in src/" or "`npm test`". */
  readonly label: string
}

export const define = <A, R = never>(tool: Tool<A, R>): Tool<A, R> => tool

export const ok = (content: string, details?: ToolDetails): ToolOutput => ({ ok: true, content, details })
export const error = (content: string, details?: ToolDetails): ToolOutput => ({ ok: false, content, details })

const jsonSchemaCache = new WeakMap<Tool<any, any>, Record<string, unknown>>()

/** The JSON Schema of a tool's arguments, for providers: its own, or derived once from `parameters`. */
export const jsonSchema = (tool: Tool<any, any>): Record<string, unknown> => {
  if (tool.inputSchema !== undefined) return tool.inputSchema
  const cached = jsonSchemaCache.get(tool)
  if (cached) return cached
  const document = Schema.toJsonSchemaDocument(tool.parameters)
  const schema: Record<string, unknown> = { ...(document.schema as Record<string, unknown>) }
  if (Object.keys(document.definitions ?? {}).length > 0) schema["$defs"] = document.definitions
  jsonSchemaCache.set(tool, schema)
  return schema
}

/** Decodes raw arguments; a mismatch is a message for the model. */
export const decodeArgs = <A>(tool: Tool<A, any>, raw: unknown): Effect.Effect<A, string> =>
  Schema.decodeUnknownEffect(tool.parameters)(raw, { onExcessProperty: "ignore" }).pipe(
    Effect.mapError((error) => `Invalid arguments for ${tool.name}: ${error.message}`)
  )

/**
 * Runs a tool call from raw model arguments. Bad arguments and defects become
 * tool errors; interruption propagates (the caller finalizes the call).
 */
export const run = <R>(tool: Tool<any, R>, raw: unknown, ctx: ToolContext): Effect.Effect<ToolOutput, never, ToolEnv | R> =>
  decodeArgs(tool, raw).pipe(
    Effect.flatMap((args) => tool.execute(args, ctx)),
    Effect.catch((message: string) => Effect.succeed(error(message))),
    Effect.catchDefect((defect) =>
      Effect.succeed(error(`Tool ${tool.name} crashed: ${defect instanceof Error ? defect.message : String(defect)}`))
    )
  )
