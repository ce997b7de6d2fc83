/**
 * The ACP schema's validators are compiled once per checkout (test/support/AcpValidators.ts): a
 * process that finds them cached loads no compiler, and the cached code judges every value as
 * Ajv compiling the schema in this process does, error for error.
 */
import { spawnSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { pathToFileURL } from "node:url"
import { describe, expect, it } from "vitest"
import { NODE } from "./AgentProcess.ts"
import { compileValidators, loadValidators, schemaPath, type SchemaFile } from "./AcpValidators.ts"

type Json = Record<string, unknown>

/** A fresh Node process validates a good and a bad message, and says whether it loaded Ajv's compiler. */
const validateInFreshProcess = () => {
  const program = `
    import { createRequire } from "node:module"
    import { validateDef, validatorsFrom } from ${JSON.stringify(pathToFileURL(`${import.meta.dirname}/AcpSchema.ts`).href)}
    const update = (sessionUpdate) => ({ sessionId: "s", update: { sessionUpdate, content: { type: "text", text: "hi" } } })
    const results = [validateDef("SessionNotification", update("agent_message_chunk")), validateDef("SessionNotification", update("shouting"), true)]
    const loaded = Object.keys(createRequire(import.meta.url).cache).filter((path) => path.includes("/ajv/dist/compile/"))
    console.log(JSON.stringify({ results, from: [validatorsFrom(false), validatorsFrom(true)], compilerLoaded: loaded.length > 0 }))
  `
  const ran = spawnSync(NODE, ["--input-type=module", "-e", program], { encoding: "utf8" })
  expect(ran.status, ran.stderr).toBe(0)
  return JSON.parse(ran.stdout) as { results: Array<{ ok: boolean; errors?: string }>; from: Array<string>; compilerLoaded: boolean }
}

/** Values of every JSON type, at the edges of the schema's formats (int32, uint16, uint64, uri…). */
const SAMPLES: ReadonlyArray<unknown> = [
  null, true, 0, -1, 1.5, 2 ** 16, 2 ** 31, 2 ** 40, 2 ** 65, Number.MAX_VALUE, "", "x", "file:///a/b", "not a uri", [], [1, "a"], {}
]

/** Values for one def: the samples, and objects made of its properties and tags. */
const valuesFor = (def: Json): Array<unknown> => {
  const values: Array<unknown> = [...SAMPLES]
  const properties = Object.keys((def.properties as Json | undefined) ?? {})
  for (const sample of SAMPLES) values.push(Object.fromEntries(properties.map((name) => [name, sample])))
  const branches = [...((def.oneOf as Array<Json> | undefined) ?? []), ...((def.anyOf as Array<Json> | undefined) ?? [])]
  for (const branch of branches) {
    for (const [name, property] of Object.entries((branch.properties as Record<string, Json> | undefined) ?? {})) {
      if (property.const !== undefined) {
        values.push({ [name]: property.const }, { ...Object.fromEntries(properties.map((p) => [p, "x"])), [name]: property.const, extra: 1 })
      }
    }
  }
  return values
}

describe("the ACP schema's validators, compiled once per checkout", () => {
  it("are loaded from the cache by a later process, which loads no compiler and judges alike", () => {
    validateInFreshProcess() // the first may have to compile them (a fresh checkout)
    const later = validateInFreshProcess()
    expect(later.from).toEqual(["cache", "cache"])
    expect(later.compilerLoaded).toBe(false)
    expect(later.results[0]).toEqual({ ok: true })
    expect(later.results[1]!.ok).toBe(false)
    expect(later.results[1]!.errors).toContain(`"tagValue":"shouting"`)
  })

  it.each<SchemaFile>(["schema.json", "schema.unstable.json"])("judge every def of %s as Ajv compiling it here does, errors included", (file) => {
    const text = readFileSync(schemaPath(file), "utf8")
    const schema = JSON.parse(text) as { $defs: Record<string, Json> }
    loadValidators(file, text, schema)
    const cached = loadValidators(file, text, schema)
    expect(cached.from).toBe("cache")
    const compiled = compileValidators(schema).validators
    const differences: Array<unknown> = []
    let valid = 0
    let invalid = 0
    for (const [name, def] of Object.entries(schema.$defs)) {
      const fromCache = cached.get(name)!
      const fromAjv = compiled.get(name)!
      for (const value of valuesFor(def)) {
        const verdict = fromCache(value)
        const judged = JSON.stringify([verdict, fromCache.errors ?? null])
        const expected = JSON.stringify([fromAjv(value), fromAjv.errors ?? null])
        if (judged !== expected) differences.push({ name, value, judged, expected })
        if (verdict) valid++
        else invalid++
      }
    }
    expect(differences).toEqual([])
    expect(cached.get("NoSuchDef")).toBeUndefined()
    // The values reach both verdicts, not only failures.
    expect(valid).toBeGreaterThan(0)
    expect(invalid).toBeGreaterThan(0)
  })
})
