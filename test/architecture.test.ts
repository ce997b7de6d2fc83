/**
 * The layers' imports: no folder of `src/` reaches back into one that depends on it (no cycle
 * between folders), no file imports one that imports it back (no cycle between files, type
 * imports and lazy `import()`s included), and the runtime's core (log, tools, providers,
 * runtime, mcp, session, secrets) never imports the ACP wire model: only presenters (server,
 * cli, translate) do. No source file is over 450 lines. Only the package's entry points
 * re-export: any other module's user imports a name from where it is defined.
 */
import { readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { describe, expect, it } from "vitest"

const SRC = resolve(import.meta.dirname, "../src")
/** The most lines a source file may have. */
const MAX_LINES = 450

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
/** Every import of a file, relative ones only: `import`/`export … from` (types too), `import "./x"`, and `import("./x")`. */
const IMPORTS = [IMPORT, /^import\s+["'](\.[^"']+)["']/gm, /\bimport\(\s*["'](\.[^"']+)["']\s*\)/g]

/** File → the files of `src/` it imports (relative to `src/`). */
const fileEdges = (texts: ReadonlyMap<string, string>): Map<string, Set<string>> => {
  const out = new Map<string, Set<string>>()
  for (const [file, text] of texts) {
    const to = new Set<string>()
    for (const pattern of IMPORTS) {
      for (const match of text.matchAll(pattern)) {
        const target = relative(SRC, resolve(dirname(join(SRC, file)), match[1]!))
        if (texts.has(target)) to.add(target)
      }
    }
    out.set(file, to)
  }
  return out
}

/** The strongly connected groups of more than one file (Tarjan): each is an import circle. */
const circles = (graph: Map<string, Set<string>>): Array<Array<string>> => {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const found: Array<Array<string>> = []
  const connect = (node: string) => {
    index.set(node, index.size)
    low.set(node, index.get(node)!)
    stack.push(node)
    onStack.add(node)
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        connect(next)
        low.set(node, Math.min(low.get(node)!, low.get(next)!))
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!))
      }
    }
    if (low.get(node) !== index.get(node)) return
    const group: Array<string> = []
    let member: string
    do {
      member = stack.pop()!
      onStack.delete(member)
      group.push(member)
    } while (member !== node)
    // A file that imports itself is a circle too.
    if (group.length > 1 || graph.get(node)?.has(node)) found.push(group.sort())
  }
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) connect(node)
  return found
}

const sources = (): Map<string, string> => new Map(files(SRC).map((file) => [relative(SRC, file), readFileSync(file, "utf8")]))

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

  it("no file of src/ imports one that imports it back (type imports included)", () => {
    expect(circles(fileEdges(sources()))).toEqual([])
  })

  it("the file-level check sees type imports, lazy imports and multi-line imports", () => {
    const texts = new Map([
      ["a/A.ts", 'import type { B } from "../b/B.ts"\n'],
      ["b/B.ts", 'import {\n  type C,\n  c\n} from "./C.ts"\n'],
      ["b/C.ts", 'export const load = () => import("../a/A.ts")\n'],
      ["d/D.ts", 'import "./E.ts"\n'],
      ["d/E.ts", 'export type { D } from "./D.ts"\n'],
      ["f/F.ts", 'import * as Effect from "effect/Effect"\nimport { a } from "../a/A.ts"\n']
    ])
    expect(circles(fileEdges(texts))).toEqual([["a/A.ts", "b/B.ts", "b/C.ts"], ["d/D.ts", "d/E.ts"]])
  })

  it("no source file of src/ is over 450 lines: a module that grows past it is split by concern", () => {
    const long = files(SRC)
      .map((file) => [relative(SRC, file), readFileSync(file, "utf8").split("\n").length - 1] as const)
      .filter(([, lines]) => lines > MAX_LINES)
    expect(long).toEqual([])
  })

  it("only the entry points re-export (src/index.ts, src/acp/index.ts): no module is a shim for another's names", () => {
    const entries = new Set(["index.ts", join("acp", "index.ts")])
    const REEXPORT = /^export\s+(?:type\s+)?(?:\*|\{[^}]*\})(?:\s+as\s+\w+)?\s+from\s+["'][^"']+["']/gm
    const shims = [...sources()].filter(([file]) => !entries.has(file)).flatMap(([file, text]) => [...text.matchAll(REEXPORT)].map((m) => `${file}: ${m[0].replace(/\s+/g, " ")}`))
    expect(shims).toEqual([])
  })

  it("the runtime's core does not import the ACP wire model", () => {
    const core = new Set(["log", "tools", "providers", "runtime", "mcp", "session", "secrets", "Vocabulary.ts"])
    const offenders = [...edges()].filter(([from, to]) => core.has(from) && to.has("acp")).map(([from]) => from)
    expect(offenders).toEqual([])
  })
})
