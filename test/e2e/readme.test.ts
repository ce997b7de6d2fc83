/**
 * End to end: the README's programs are the files `examples/*.ts`, shown verbatim (a block that
 * drifts from its file fails here), and each runs as written: from this checkout (the package
 * resolves to its own built `dist/`, as it does for a program that depends on it), with a
 * temporary HOME and TMPDIR, so what they write is seen and nothing reaches a real home; the
 * embedding example also against a real `skein serve` of the built binary. The script shown in
 * "The scripted provider" is a valid script. (test/e2e/package.test.ts type-checks the examples
 * against the packed package, as a project that depends on it does.)
 */
import { spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import { afterAll, describe, expect, it } from "vitest"
import * as Scripted from "../../src/providers/Scripted.ts"
// @ts-expect-error: a plain ES module of the repository's scripts, without types
import { blocks } from "../../scripts/readme-examples.mjs"
import { NODE, REPO_ROOT } from "../support/AgentProcess.ts"
import { useServers } from "../support/Serve.ts"

const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8")
const shown: ReadonlyArray<{ readonly file: string; readonly code: string }> = blocks(readme)
const files = readdirSync(join(REPO_ROOT, "examples")).filter((name) => name.endsWith(".ts")).map((name) => `examples/${name}`).sort()

const root = realpathSync(mkdtempSync(join(tmpdir(), "skein-readme-")))
afterAll(() => rmSync(root, { recursive: true, force: true }))

/** Runs an example with Node, in `cwd`, with its own HOME and TMPDIR; its exit code and output. */
const example = (file: string, cwd: string, env: Record<string, string> = {}) => {
  const home = join(root, `home-${Math.random().toString(36).slice(2)}`)
  const temp = join(home, "tmp")
  mkdirSync(temp, { recursive: true })
  return new Promise<{ code: number | null; stdout: string; stderr: string; home: string; temp: string }>((resolve) => {
    const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("SKEIN_")))
    const child = spawn(NODE, [join(REPO_ROOT, file)], {
      cwd,
      env: { ...inherited, HOME: home, TMPDIR: temp, ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    child.once("exit", (code) => resolve({ code, stdout, stderr, home, temp }))
  })
}

/** The temporary homes an example made (`skein-example-*` in its TMPDIR), each with its session logs. */
const homesIn = (temp: string) =>
  readdirSync(temp).filter((name) => name.startsWith("skein-example-")).map((name) =>
    readdirSync(join(temp, name, "sessions")).filter((file) => file.endsWith(".ndjson"))
  )

describe("e2e: the README's programs", () => {
  it("every ts block is a file of examples/, shown as it is, and every example is shown", () => {
    const fences = [...readme.matchAll(/^```(ts|typescript)$/gm)].length
    expect(shown.length).toBe(fences)
    expect(shown.map((b) => b.file).sort()).toEqual(files)
    for (const block of shown) expect({ file: block.file, code: block.code }).toEqual({ file: block.file, code: readFileSync(join(REPO_ROOT, block.file), "utf8") })
  })

  it("the embedding example runs in this process, in a temporary home: nothing written to HOME", async () => {
    const cwd = join(root, "ws-local")
    mkdirSync(cwd)
    const ran = await example("examples/embedding.ts", cwd)
    expect({ code: ran.code, stdout: ran.stdout, stderr: ran.stderr }).toEqual({ code: 0, stdout: "It says hello.\n[end_turn]\n", stderr: "" })
    expect(readdirSync(ran.home)).toEqual(["tmp"])
    expect(homesIn(ran.temp).map((logs) => logs.length)).toEqual([1])
  })

  const { serve } = useServers()

  it("the same example runs against a real skein serve: only the layer changed", async () => {
    const server = await serve({ turns: [{ expect: "notes\\.txt", calls: [[{ text: "The server says hello." }]] }] }, undefined)
    const socket = join(server.home, "skein.sock")
    const ran = await example("examples/embedding.ts", server.cwd, { SKEIN_URL: `unix:${socket}` })
    expect({ code: ran.code, stdout: ran.stdout, stderr: ran.stderr }).toEqual({ code: 0, stdout: "The server says hello.\n[end_turn]\n", stderr: "" })
    // The session is the server's; the program made no home of its own.
    expect(readdirSync(join(server.home, "sessions")).filter((f) => f.endsWith(".ndjson"))).toHaveLength(1)
    expect(homesIn(ran.temp)).toEqual([])
  })

  it("the sessions example lists, loads, goes on with, re-runs and deletes a session of its own", async () => {
    const cwd = join(root, "ws-sessions")
    mkdirSync(cwd)
    const ran = await example("examples/sessions.ts", cwd)
    expect({ code: ran.code, stderr: ran.stderr }).toEqual({ code: 0, stderr: "" })
    expect(ran.stdout).toMatch(/^Session [0-9a-f-]{36}\n {2}cwd {6}/)
    expect(ran.stdout).toContain("> Start\nStarted.\n[end_turn]\n")
    expect(ran.stdout.trimEnd().split("\n").at(-1)).toBe("The re-run of 2 turns behaves as logged.")
    expect(readdirSync(ran.home)).toEqual(["tmp"])
    // Its session was deleted; the re-run's own log stays in the home it named.
    const [home] = readdirSync(ran.temp).filter((name) => name.startsWith("skein-example-"))
    expect(readdirSync(join(ran.temp, home!, "sessions")).filter((f) => f.endsWith(".ndjson"))).toEqual([])
    expect(existsSync(join(ran.temp, home!, "rerun", "sessions"))).toBe(true)
  })

  it("the script shown for the scripted provider is a valid script", () => {
    const section = readme.slice(readme.indexOf("## The scripted provider"))
    const json = /^```json\n([\s\S]*?)^```$/m.exec(section)![1]!
    writeFileSync(join(root, "shown-script.json"), json)
    const script = Effect.runSync(Scripted.parse(json))
    expect(script.turns[0]!.calls).toHaveLength(2)
  })
})
