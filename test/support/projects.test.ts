/**
 * The files that run in shared workers (`Projects.ts`, `isolate: false`) leave nothing behind
 * that the next file in the worker could see: each, and every test module it imports (its
 * fixtures and support files, followed to the end), is free of what `leaks` looks for.
 */
import { describe, expect, it } from "@effect/vitest"
import { existsSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { FORBIDDEN, leaks, SHARED } from "./Projects.ts"

const root = join(import.meta.dirname, "..", "..")
/** This check itself: its sources name what it looks for. */
const GUARD = new Set(["test/support/Projects.ts", "test/support/projects.test.ts"])

/** `file` and the modules outside src/ it imports by a relative path, transitively (paths from the root). */
const testModules = (file: string, seen = new Set<string>()): Set<string> => {
  if (seen.has(file) || GUARD.has(file)) return seen
  seen.add(file)
  const source = readFileSync(join(root, file), "utf8")
  for (const [, specifier] of source.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)) {
    const target = relative(root, resolve(dirname(join(root, file)), specifier!)).split("\\").join("/")
    if (!target.startsWith("src/") && !target.startsWith("..") && existsSync(join(root, target))) testModules(target, seen)
  }
  return seen
}

describe("the shared test project", () => {
  it("lists test files that exist, each once", () => {
    expect(new Set(SHARED).size).toBe(SHARED.length)
    for (const file of SHARED) {
      expect(file).toMatch(/^test\/.+\.test\.ts$/)
      expect(existsSync(join(root, file)), file).toBe(true)
    }
  })

  it("holds no file that starts a process, sets the environment, mocks or touches globals, nor any test module one imports", () => {
    const found = SHARED.flatMap((file) =>
      [...testModules(file)].flatMap((module) => leaks(readFileSync(join(root, module), "utf8")).map((what) => `${file} (${module}) ${what}`))
    )
    expect(found).toEqual([])
  })

  it("finds each of those in a file's source", () => {
    const examples: Record<string, string> = {
      "starts a process": `import { spawn } from "node:child_process"`,
      "drives the built agent, a server, PostgreSQL, a browser or a sandbox": `import { useAgents } from "../support/AgentProcess.ts"`,
      "runs hooks or commands": `calls: [[tool("bash", { command: "ls" }, "b1")]]`,
      "sets or deletes an environment variable": `process.env["SKEIN_HOME"] = dir`,
      "mocks, stubs or spies": `vi.spyOn(console, "log")`,
      "touches globals or the process": `process.on("exit", () => {})`
    }
    expect(Object.keys(examples)).toEqual(FORBIDDEN.map(([what]) => what))
    for (const [what, source] of Object.entries(examples)) expect(leaks(source)).toEqual([what])
    expect(leaks(`const home = process.env["HOME"] ?? "/"\nif (process.env.CI === "true") {}`)).toEqual([])
  })
})
