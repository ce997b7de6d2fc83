/**
 * The official ACP JSON Schema (`@agentclientprotocol/sdk/schema/v1/<file>`) compiled by Ajv into
 * one validator per `$defs` entry, compiled once per checkout rather than once per test file.
 *
 * Compiling the few defs an end-to-end file needs costs a worker about half a second of CPU, and
 * some sixty files need them. So the first process that needs a schema compiles all of its defs
 * and writes them as Ajv's standalone code (plain JavaScript, no compiler at run time) to
 * `node_modules/.cache/skein-acp-validators/`, under a name keyed by a hash of all that decides
 * the code: the schema's text, Ajv's version, the formats (`acp-formats.cjs`) and this file.
 * Every later process `require`s that file (which V8's compile cache then covers too); a change
 * to any of those writes a new one. The file is written under a temporary name and renamed, so
 * a reader never sees half of one; two processes that compile at once write the same code.
 *
 * The options are those of `AcpSchema.ts` (which documents them): the 2020-12 draft in strict
 * mode, `strictTypes` off, all errors, `discriminator` on, the schema's `x-*` annotations as
 * keywords that validate nothing, its formats with real range checks, no defaults applied.
 */
import type { ValidateFunction } from "ajv/dist/2020.js"
import { createHash } from "node:crypto"
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

type Json = Record<string, unknown>

/** The schema files of `@agentclientprotocol/sdk/schema/v1/`. */
export type SchemaFile = "schema.json" | "schema.unstable.json"

export interface Validators {
  /** The validator of `$defs/<name>`, or undefined when the schema has no such def. */
  readonly get: (defName: string) => ValidateFunction | undefined
  /** Where they came from: the cache on disk, or Ajv in this process. */
  readonly from: "cache" | "compiled"
}

const require = createRequire(import.meta.url)
const FORMATS = require.resolve("./acp-formats.cjs")
const SCHEMA_KEY = "acp-v1"
/** Beside Ajv's own folder, so that the generated code's `require("ajv/dist/runtime/…")` resolves. */
const CACHE_DIR = join(dirname(dirname(require.resolve("ajv/package.json"))), ".cache", "skein-acp-validators")

const isObject = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

const collectXKeywords = (node: unknown, into: Set<string>): Set<string> => {
  if (Array.isArray(node)) for (const item of node) collectXKeywords(item, into)
  else if (isObject(node)) {
    for (const [key, value] of Object.entries(node)) {
      if (key.startsWith("x-")) into.add(key)
      collectXKeywords(value, into)
    }
  }
  return into
}

/** The path of the schema file inside the installed SDK. */
export const schemaPath = (file: SchemaFile): string => require.resolve(`@agentclientprotocol/sdk/schema/v1/${file}`)

/** The cache file for a schema's text: its name changes with anything that changes the code. */
export const cacheFile = (file: SchemaFile, schemaText: string): string => {
  const hash = createHash("sha256")
  hash.update(schemaText)
  hash.update(`\0ajv ${(require("ajv/package.json") as { version: string }).version}\0`)
  hash.update(readFileSync(FORMATS))
  hash.update(readFileSync(fileURLToPath(import.meta.url)))
  return join(CACHE_DIR, `${file.replace(/\.json$/, "")}-${hash.digest("hex").slice(0, 16)}.cjs`)
}

/**
 * Compiles every def of the schema in this process (Ajv loaded only now), and returns them with
 * their standalone code.
 */
export const compileValidators = (schema: { readonly $defs: Record<string, Json> }): { readonly validators: Validators; readonly code: string } => {
  const { default: Ajv2020 } = require("ajv/dist/2020.js") as typeof import("ajv/dist/2020.js")
  const { default: standaloneCode } = require("ajv/dist/standalone/index.js") as typeof import("ajv/dist/standalone/index.js")
  const { _ } = require("ajv") as typeof import("ajv")
  const ajv = new Ajv2020({
    strict: true,
    strictTypes: false,
    allErrors: true,
    discriminator: true,
    // The generated code takes the formats from the very file this process registers.
    code: { source: true, formats: _`require(${FORMATS})` }
  })
  for (const keyword of collectXKeywords(schema, new Set())) ajv.addKeyword({ keyword })
  const formats = require(FORMATS) as Record<string, Parameters<typeof ajv.addFormat>[1]>
  for (const [name, format] of Object.entries(formats)) ajv.addFormat(name, format)
  ajv.addSchema(schema as object, SCHEMA_KEY)
  const names = Object.keys(schema.$defs)
  const code = standaloneCode(ajv, Object.fromEntries(names.map((name) => [name, `${SCHEMA_KEY}#/$defs/${name}`])))
  const get = (defName: string) =>
    Object.hasOwn(schema.$defs, defName) ? (ajv.getSchema(`${SCHEMA_KEY}#/$defs/${defName}`) as ValidateFunction | undefined) : undefined
  return { validators: { get, from: "compiled" }, code }
}

const fromModule = (exported: Record<string, ValidateFunction>): Validators => ({
  get: (defName) => (Object.hasOwn(exported, defName) ? exported[defName] : undefined),
  from: "cache"
})

/**
 * The validators of a schema: from the cache when it holds them, else compiled here and written
 * there (a cache that cannot be written only costs the next process the same compile).
 */
export const loadValidators = (file: SchemaFile, schemaText: string, schema: { readonly $defs: Record<string, Json> }): Validators => {
  const target = cacheFile(file, schemaText)
  if (existsSync(target)) {
    try {
      return fromModule(require(target) as Record<string, ValidateFunction>)
    } catch {
      // Unreadable (a disk that filled up under an older writer): compiled and written again below.
    }
  }
  const compiled = compileValidators(schema)
  const temporary = `${target}.${process.pid}.tmp`
  try {
    mkdirSync(CACHE_DIR, { recursive: true })
    writeFileSync(temporary, compiled.code)
    renameSync(temporary, target)
    // Older generations of the same schema are of no more use.
    const prefix = `${file.replace(/\.json$/, "")}-`
    for (const name of readdirSync(CACHE_DIR)) {
      if (name.startsWith(prefix) && name.endsWith(".cjs") && join(CACHE_DIR, name) !== target) rmSync(join(CACHE_DIR, name), { force: true })
    }
  } catch {
    // A read-only checkout or a full disk: every process compiles, as it would without the cache.
    rmSync(temporary, { force: true })
  }
  return compiled.validators
}
