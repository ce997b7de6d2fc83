/**
 * The layers' imports: no folder of `src/` reaches back into one that depends on it (no cycle
 * between folders), and the runtime's core (log, tools, providers, runtime, mcp, session,
 * secrets) never imports the ACP wire model: only presenters (server, cli, translate) do.
 */
import { readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { describe, expect, it } from "vitest"

const SRC = resolve(import.meta.dirname, "../src")

const files = (dir: string): Array<string> =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? files(path) : path.endsWith(".ts") ? [path] : []
  })

/** The folder of `src/` a file belongs to; a top-level module (`Vocabulary.ts`, `index.ts`) is its own. */
const layerOf = (file: string): string => {
  const rel = relative(SRC, file)
  return rel.includes("/") ? rel.split("/")[0]! : rel
}

const IMPORT = /^(?:import|export)\s[^"']*?from\s+["'](\.[^"']+)["']/gm

/** Folder → the folders its files import (value and type imports alike). */
const edges = (): Map<string, Set<string>> => {
  const out = new Map<string, Set<string>>()
  for (const file of files(SRC)) {
    const from = layerOf(file)
    const text = readFileSync(file, "utf8")
    for (const match of text.matchAll(IMPORT)) {
      const to = layerOf(resolve(dirname(file), match[1]!))
      if (to === from) continue
      if (!out.has(from)) out.set(from, new Set())
      out.get(from)!.add(to)
    }
  }
  return out
}

/** Every cycle through folders, as a path that returns to its start. */
const cycles = (graph: Map<string, Set<string>>): Array<string> => {
  const found: Array<string> = []
  const visit = (node: string, path: Array<string>) => {
    for (const next of graph.get(node) ?? []) {
      if (next === path[0]) found.push([...path, next].join(" → "))
      else if (!path.includes(next) && next > path[0]!) visit(next, [...path, next])
    }
  }
  for (const start of graph.keys()) visit(start, [start])
  return found
}

describe("architecture", () => {
  it("no folder of src/ imports one that imports it back (directly or around a loop)", () => {
    expect(cycles(edges())).toEqual([])
  })

  it("the runtime's core does not import the ACP wire model", () => {
    const core = new Set(["log", "tools", "providers", "runtime", "mcp", "session", "secrets", "Vocabulary.ts"])
    const offenders = [...edges()].filter(([from, to]) => core.has(from) && to.has("acp")).map(([from]) => from)
    expect(offenders).toEqual([])
  })
})
