/**
 * What `skein acp` evaluates before it answers `session/new`, as the CLI bundle is made: every
 * module reached from the entry, the runtime and the providers' HTTP client through static
 * imports (esbuild evaluates a module reached only through `import()` when that import runs).
 * The ACP schemas that only a turn's client calls or an external agent decode (the client's and
 * the agent's answers, the updates) are not among them, nor the checkpoints' shadow repository
 * and `/rewind`, nor the telemetry exporter; scripts/build.mjs refuses a build that breaks this,
 * with the same rules (scripts/startup-modules.mjs).
 */
import { build } from "esbuild"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { ACP_START, broken, NEVER_AT_START, NOT_BEFORE_SESSION, staticallyReached } from "../../scripts/startup-modules.mjs"

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "..")

/** The sources' import graph as esbuild bundles the CLI (nothing written). */
const metafile = async () => {
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: ["src/cli/main.ts"],
    bundle: true,
    write: false,
    metafile: true,
    platform: "node",
    format: "cjs",
    target: "node22",
    logLevel: "silent"
  })
  return result.metafile
}

describe("skein acp start-up, as bundled", () => {
  it("evaluates neither the ACP schemas of answers and session updates, nor the checkpoints' repository, nor the telemetry exporter before session/new", async () => {
    const meta = await metafile()
    const reached = staticallyReached(meta, ACP_START)
    // The reach is real: what session/new needs is there.
    expect(reached).toContain("src/acp/Session.ts")
    expect(reached).toContain("src/acp/Initialize.ts")
    expect(reached).toContain("src/server/ClientBridge.ts")
    expect(reached).toContain("src/agents/External.ts")
    expect(reached).toContain("src/checkpoints/Checkpoints.ts")
    expect(reached).toContain("src/checkpoints/RewindRequest.ts")
    expect(broken(reached, [...NEVER_AT_START, ...NOT_BEFORE_SESSION])).toEqual([])
    // And they are in the bundle, for the first client call or external agent.
    for (const file of ["src/acp/Client.ts", "src/acp/Answers.ts", "src/acp/Config.ts", "src/acp/Update.ts", "src/checkpoints/Shadow.ts", "src/checkpoints/Rewind.ts"]) expect(Object.keys(meta.inputs)).toContain(file)
  })

  it("the rules see a module reached through a static import, and not one reached only through import()", () => {
    const inputs = (imports: Record<string, ReadonlyArray<{ path: string; kind: string }>>) => ({
      inputs: Object.fromEntries(Object.entries(imports).map(([file, list]) => [file, { imports: list }]))
    })
    const lazy = inputs({ "src/cli/main.ts": [{ path: "src/acp/Update.ts", kind: "dynamic-import" }] })
    const eager = inputs({ "src/cli/main.ts": [{ path: "src/x.ts", kind: "import-statement" }], "src/x.ts": [{ path: "src/acp/Update.ts", kind: "import-statement" }] })
    expect(broken(staticallyReached(lazy, ["src/cli/main.ts"]), NOT_BEFORE_SESSION)).toEqual([])
    expect(broken(staticallyReached(eager, ["src/cli/main.ts"]), NOT_BEFORE_SESSION).map((b) => b.inputs)).toEqual([["src/acp/Update.ts"]])
    const checkpoints = inputs({ "src/Local.ts": [{ path: "src/checkpoints/Checkpoints.ts", kind: "import-statement" }], "src/checkpoints/Checkpoints.ts": [{ path: "src/checkpoints/Shadow.ts", kind: "import-statement" }] })
    expect(broken(staticallyReached(checkpoints, ["src/Local.ts"]), NOT_BEFORE_SESSION).map((b) => b.inputs)).toEqual([["src/checkpoints/Shadow.ts"]])
  })
})
