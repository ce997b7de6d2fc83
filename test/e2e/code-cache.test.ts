/**
 * The launcher (dist/skein.mjs) and its V8 code cache: written once by a run that served
 * something, reused afterwards, rewritten when V8 rejects it, never read from a directory
 * another user could write, and never a reason to fail or to print on stdout.
 */
import { spawn, spawnSync } from "node:child_process"
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { NODE, SKEIN } from "../support/AgentProcess.ts"

const temporaries: Array<string> = []
afterEach(() => {
  for (const dir of temporaries.splice(0)) rmSync(dir, { recursive: true, force: true })
})
const tempDir = (prefix: string) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix))
  temporaries.push(dir)
  return dir
}

interface Run {
  readonly code: number | null
  readonly stdout: Array<string>
  readonly stderr: string
}

const launcherBuild = () => /const BUILD = "([^"]+)"/.exec(readFileSync(SKEIN, "utf8"))![1]!

/** `skein acp` answering `initialize` (unless `serve` is false), then stdin closes. */
const acp = (env: Record<string, string>, serve = true): Promise<Run> =>
  new Promise((resolve, reject) => {
    const home = tempDir("skein-cc-home-")
    const child = spawn(NODE, [SKEIN, "acp", "--home", home], {
      env: { ...process.env, SKEIN_NO_CODE_CACHE: "", ...env },
      stdio: ["pipe", "pipe", "pipe"]
    })
    let out = ""
    let err = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk
      if (out.includes("\n")) child.stdin.end()
    })
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (err += chunk))
    child.on("error", reject)
    child.on("close", (code) => resolve({ code, stdout: out.split("\n").filter((l) => l.length > 0), stderr: err }))
    if (serve) {
      child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1 } }) + "\n")
    } else {
      child.stdin.end()
    }
  })

const expectInitialized = (run: Run) => {
  expect(run.code).toBe(0)
  expect(run.stdout).toHaveLength(1)
  const message = JSON.parse(run.stdout[0]!)
  expect(message).toMatchObject({ jsonrpc: "2.0", id: 1, result: { protocolVersion: 1 } })
}

const caches = (dir: string) => readdirSync(dir).filter((name) => name.endsWith(".cache")).sort()

describe("code cache", () => {
  it("is written by the first run that serves, then reused as it is", async () => {
    const dir = path.join(tempDir("skein-cc-"), "cache")
    expectInitialized(await acp({ SKEIN_CODE_CACHE_DIR: dir }))
    const [name] = caches(dir)
    expect(caches(dir)).toEqual([`${launcherBuild()}-${process.version}-${process.arch}-acp.cache`])
    expect(statSync(dir).mode & 0o777).toBe(0o700)
    const first = statSync(path.join(dir, name!))
    expect(first.mode & 0o777).toBe(0o600)
    expect(first.size).toBeGreaterThan(100_000)

    const again = await acp({ SKEIN_CODE_CACHE_DIR: dir })
    expectInitialized(again)
    expect(again.stderr).toBe("")
    const second = statSync(path.join(dir, name!))
    expect([second.ino, second.mtimeMs]).toEqual([first.ino, first.mtimeMs])
  })

  it("is taken shortly after start-up (the runtime built once initialize is answered), while the agent keeps running", async () => {
    const root = tempDir("skein-cc-")
    const dir = path.join(root, "cache")
    const child = spawn(NODE, [SKEIN, "acp", "--home", path.join(root, "home")], {
      env: { ...process.env, SKEIN_NO_CODE_CACHE: "", SKEIN_CODE_CACHE_DIR: dir },
      stdio: ["pipe", "pipe", "ignore"]
    })
    const exited = new Promise((resolve) => child.on("close", resolve))
    try {
      let out = ""
      const answered = (id: number) =>
        new Promise<void>((resolve) => {
          const check = () => out.includes(`"id":${id},`) && resolve()
          child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
            out += chunk
            check()
          })
          check()
        })
      child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1 } }) + "\n")
      await answered(1)
      expect(existsSync(dir) ? caches(dir) : []).toEqual([])
      child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: root, mcpServers: [] } }) + "\n")
      await answered(2)
      const deadline = Date.now() + 10_000
      while (caches(dir).length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
      expect(caches(dir)).toHaveLength(1)
      expect(child.exitCode).toBeNull()
      const written = statSync(path.join(dir, caches(dir)[0]!)).mtimeMs
      child.stdin.end()
      expect(await exited).toBe(0)
      // Not written a second time at exit.
      expect(statSync(path.join(dir, caches(dir)[0]!)).mtimeMs).toBe(written)
    } finally {
      child.kill("SIGKILL")
    }
  })

  it("is filled by the build with a session and one turn, so a first prompt finds the turn's code compiled", async () => {
    const started = path.join(tempDir("skein-cc-"), "cache")
    expectInitialized(await acp({ SKEIN_CODE_CACHE_DIR: started }))
    const built = path.join(tempDir("skein-cc-"), "cache")
    // @ts-expect-error: a plain ES module of the build, without types
    const { warmCodeCache } = await import("../../scripts/warm-code-cache.mjs")
    expect(await warmCodeCache({ env: { ...process.env, SKEIN_NO_CODE_CACHE: "", SKEIN_CODE_CACHE_DIR: built } })).toBeUndefined()
    expect(caches(built)).toEqual(caches(started))
    // Every function that answering `initialize` compiled, and those of a session and a turn.
    expect(statSync(path.join(built, caches(built)[0]!)).size).toBeGreaterThan(statSync(path.join(started, caches(started)[0]!)).size + 50_000)
  })

  it("taken after the young generation's cap set a V8 flag, is still used by the next start", async () => {
    const root = tempDir("skein-cc-")
    const dir = path.join(root, "cache")
    const script = path.join(root, "script.json")
    writeFileSync(script, JSON.stringify({ turns: [{ calls: [[{ text: "Hello." }]] }] }))
    const probe = path.join(import.meta.dirname, "..", "fixtures", "process", "young-generation.cjs")
    const child = spawn(NODE, ["--require", probe, SKEIN, "acp", "--home", path.join(root, "home"), "--script", script], {
      cwd: root,
      // Taken at exit, so after the prompt that installs the cap.
      env: { ...process.env, SKEIN_NO_CODE_CACHE: "", SKEIN_CODE_CACHE_DIR: dir, SKEIN_CODE_CACHE_AT_EXIT: "1" },
      stdio: ["pipe", "pipe", "pipe"]
    })
    const exited = new Promise((resolve) => child.on("close", resolve))
    try {
      let out = ""
      let err = ""
      const seen = (what: () => boolean) =>
        new Promise<void>((resolve) => {
          const check = () => what() && resolve()
          child.stdout.on("data", check)
          child.stderr.on("data", check)
          check()
        })
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk))
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => (err += chunk))
      const send = (id: number, method: string, params: unknown) => child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n")
      send(1, "initialize", { protocolVersion: 1 })
      await seen(() => out.includes(`"id":1,`))
      send(2, "session/new", { cwd: root, mcpServers: [] })
      await seen(() => out.includes(`"id":2,`))
      const sessionId = JSON.parse(out.split("\n").find((line) => line.includes(`"id":2,`))!).result.sessionId
      send(3, "session/prompt", { sessionId, prompt: [{ type: "text", text: "hi" }] })
      await seen(() => out.includes(`"id":3,`))
      // The cap is installed soon after the prompt, and finds the young generation past it.
      await seen(() => err.includes("young-generation-probe flag --semi-space-growth-factor=1"))
      child.stdin.end()
      expect(await exited).toBe(0)
    } finally {
      child.kill("SIGKILL")
    }
    expect(caches(dir)).toHaveLength(1)
    const doctor = spawnSync(NODE, [SKEIN, "doctor", "--home", path.join(root, "home")], {
      env: { ...process.env, SKEIN_NO_CODE_CACHE: "", SKEIN_CODE_CACHE_DIR: dir },
      encoding: "utf8"
    })
    expect(doctor.stdout).toContain(`${path.join(dir, caches(dir)[0]!)}: used`)
  })

  it("keeps one for `skein run` beside the one for `skein acp`", async () => {
    const root = tempDir("skein-cc-")
    const dir = path.join(root, "cache")
    const script = path.join(root, "script.json")
    writeFileSync(script, JSON.stringify({ turns: [{ calls: [[{ text: "Hello." }]] }] }))
    const env = { ...process.env, SKEIN_NO_CODE_CACHE: "", SKEIN_CODE_CACHE_DIR: dir }
    const run = spawnSync(NODE, [SKEIN, "run", "--home", path.join(root, "home"), "--script", script, "hi"], { cwd: root, env, encoding: "utf8" })
    expect(run.status).toBe(0)
    expect(run.stdout).toContain("Hello.")
    expectInitialized(await acp({ SKEIN_CODE_CACHE_DIR: dir }))
    expect(caches(dir).map((name) => name.replace(/^.*-/, ""))).toEqual(["acp.cache", "run.cache"])
  })

  it("is not written by a run that served nothing, nor by other commands", async () => {
    const dir = path.join(tempDir("skein-cc-"), "cache")
    const idle = await acp({ SKEIN_CODE_CACHE_DIR: dir }, false)
    expect(idle.code).toBe(0)
    expect(idle.stdout).toEqual([])
    const version = spawnSync(NODE, [SKEIN, "--version"], { env: { ...process.env, SKEIN_CODE_CACHE_DIR: dir }, encoding: "utf8" })
    expect(version.status).toBe(0)
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/)
    expect(caches(dir)).toEqual([])
  })

  it("replaces a damaged cache, which costs nothing but time", async () => {
    const dir = path.join(tempDir("skein-cc-"), "cache")
    expectInitialized(await acp({ SKEIN_CODE_CACHE_DIR: dir }))
    const file = path.join(dir, caches(dir)[0]!)
    const good = readFileSync(file)
    const damaged = Buffer.from(good)
    // V8 would abort on some of these bytes: only the launcher's own checksum stands in the way.
    for (let i = 4096; i < damaged.length; i += 997) damaged[i] = damaged[i]! ^ 0x5a
    writeFileSync(file, damaged)

    const run = await acp({ SKEIN_CODE_CACHE_DIR: dir })
    expectInitialized(run)
    expect(run.stderr).toBe("")
    const rewritten = readFileSync(file)
    expect(rewritten.equals(damaged)).toBe(false)
    expect(rewritten.length).toBeGreaterThan(100_000)
  })

  it("is reported by `skein doctor`", async () => {
    const root = tempDir("skein-cc-")
    const dir = path.join(root, "cache")
    const doctor = (env: Record<string, string> = {}) =>
      spawnSync(NODE, [SKEIN, "doctor", "--home", path.join(root, "home")], {
        env: { ...process.env, SKEIN_NO_CODE_CACHE: "", SKEIN_CODE_CACHE_DIR: dir, ...env },
        encoding: "utf8"
      }).stdout
    const file = path.join(dir, `${launcherBuild()}-${process.version}-${process.arch}-acp.cache`)
    expect(doctor()).toContain(`Code cache   ${file}: not used`)
    expectInitialized(await acp({ SKEIN_CODE_CACHE_DIR: dir }))
    expect(doctor()).toContain(`Code cache   ${file}: used`)
    expect(doctor({ SKEIN_NO_CODE_CACHE: "1" })).toContain("Code cache   off (SKEIN_NO_CODE_CACHE)")
  })

  it.skipIf(process.platform === "win32")("ignores a directory others can write to", async () => {
    const dir = path.join(tempDir("skein-cc-"), "shared")
    mkdirSync(dir)
    chmodSync(dir, 0o777)
    expectInitialized(await acp({ SKEIN_CODE_CACHE_DIR: dir }))
    expect(caches(dir)).toEqual([])
  })

  it("is off with SKEIN_NO_CODE_CACHE=1", async () => {
    const dir = path.join(tempDir("skein-cc-"), "cache")
    expectInitialized(await acp({ SKEIN_CODE_CACHE_DIR: dir, SKEIN_NO_CODE_CACHE: "1" }))
    expect(readdirSync(path.dirname(dir))).toEqual([])
  })

  it("drops the caches of other builds after a week unused", async () => {
    const dir = path.join(tempDir("skein-cc-"), "cache")
    mkdirSync(dir, { mode: 0o700 })
    const old = path.join(dir, "skein-0.0.1-0000000000000000-v24.0.0-x64-acp.cache")
    const recent = path.join(dir, "skein-0.0.2-1111111111111111-v24.0.0-x64-acp.cache")
    writeFileSync(old, "old")
    writeFileSync(recent, "recent")
    const eightDaysAgo = new Date(Date.now() - 8 * 24 * 3600 * 1000)
    utimesSync(old, eightDaysAgo, eightDaysAgo)
    expectInitialized(await acp({ SKEIN_CODE_CACHE_DIR: dir }))
    const names = caches(dir)
    expect(names).toContain(path.basename(recent))
    expect(names).not.toContain(path.basename(old))
    expect(names).toHaveLength(2)
  })
})
