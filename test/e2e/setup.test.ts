/**
 * End to end: `skein setup`, typed at in a pseudo-terminal as a person would, against a local
 * OpenAI-compatible server (test/support/CompatServer.ts): the questions, the key typed
 * without echo, the model from the server's list, the one check request, a failed check and
 * its retry, leaving without saving; the `config.json` it writes (0600, merged with what was
 * there) and that Skein then works with it. Also `skein run` with nothing configured, which
 * offers the set-up at a terminal and refuses elsewhere, and `skein acp setup` (the form a
 * client that appends a terminal method's arguments runs).
 */
import { spawn, spawnSync } from "node:child_process"
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { NODE, SKEIN } from "../support/AgentProcess.ts"
import * as CompatServer from "../support/CompatServer.ts"
import { ptyAvailable, type Pty, spawnPty } from "../support/Pty.ts"

const KEY = "sk-local-4f9b2c7e8d1a6035"

const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** No provider keys or Skein settings from the machine. */
const cleanEnv = (): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !/^(OPENAI_|ANTHROPIC_|SKEIN_)/.test(key)) env[key] = value
  }
  return { ...env, NO_COLOR: "1", SKEIN_NO_CODE_CACHE: "1" }
}

/** Runs a command to its end without blocking this process (whose server it may call). */
const runAsync = (args: ReadonlyArray<string>, cwd: string) =>
  new Promise<{ readonly status: number | null; readonly stdout: string; readonly stderr: string }>((resolve) => {
    const child = spawn(NODE, [SKEIN, ...args], { cwd, env: cleanEnv(), stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c))
    child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c))
    child.on("close", (status) => resolve({ status, stdout, stderr }))
  })

const fixture = async (options: { readonly key?: string } = {}) => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "skein-setup-")))
  const home = join(root, "home")
  const cwd = join(root, "ws")
  mkdirSync(home)
  mkdirSync(cwd)
  const server = await CompatServer.start({ models: ["big-coder", "tiny-coder"], answer: "Hello from the local server.", ...options })
  cleanups.push(() => rmSync(root, { recursive: true, force: true }), () => server.close())
  const term = (...args: Array<string>) => {
    const t = spawnPty([NODE, SKEIN, ...args, "--home", home], { cwd, env: cleanEnv() })
    cleanups.push(() => t.child.kill("SIGKILL"))
    return t
  }
  const config = () => JSON.parse(readFileSync(join(home, "config.json"), "utf8"))
  return { root, home, cwd, server, term, config }
}

/** Answers the questions up to the key for the local server at `url` (named `local`), typing `key` hidden. */
const toTheKey = async (t: Pty, url: string, key: string) => {
  await t.waitFor("Which provider?")
  await t.waitFor("Choose 1-3 [1]: ")
  t.type("3\r")
  await t.waitFor(`Base URL [http://127.0.0.1:11434/v1]: `)
  t.type(`${url}\r`)
  await t.waitFor("A name for it in config.json [local]: ")
  t.type("\r")
  await t.waitFor("The API key?")
  await t.waitFor("Choose 1-3 [3]: ")
  t.type("1\r")
  await t.waitFor("API key: ")
  t.type(`${key}\r`)
}

describe.skipIf(!ptyAvailable)("e2e: skein setup at a terminal", () => {
  it("against a local server: the key typed unseen, a model from its list, one check, then config.json (0600, merged) that Skein answers with", async () => {
    const { home, cwd, server, term, config } = await fixture({ key: KEY })
    // What was there stays: another provider, settings Skein does not know; a loose mode gets tightened.
    const before = { sandbox: "auto", idleTimeoutMs: 90000, providers: { other: { dialect: "openai-chat", baseUrl: "http://10.0.0.9/v1", models: ["m"] } } }
    writeFileSync(join(home, "config.json"), JSON.stringify(before))
    chmodSync(join(home, "config.json"), 0o644)

    const t = term("setup")
    await toTheKey(t, server.url, KEY)
    await t.waitFor("Listing the models at")
    await t.waitFor("1) big-coder")
    await t.waitFor("2) tiny-coder")
    await t.waitFor("Model (a number, an id, or part of a name) [big-coder]: ")
    t.type("2\r")
    await t.waitFor("Checking local with tiny-coder")
    await t.waitFor("✓ It answered.")
    await t.waitFor(/Saved .*config\.json/)
    expect(await t.exit).toBe(0)

    // The key was never echoed, and nothing printed it.
    expect(t.raw()).not.toContain(KEY)
    expect(statSync(join(home, "config.json")).mode & 0o777).toBe(0o600)
    expect(config()).toEqual({
      ...before,
      provider: "local",
      model: "tiny-coder",
      providers: { ...before.providers, local: { dialect: "openai-chat", baseUrl: server.url, apiKey: KEY } }
    })
    // The list, then one tiny request to the chosen model, with the key.
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual(["GET /v1/models", "POST /v1/chat/completions"])
    expect(server.requests.every((r) => r.headers.authorization === `Bearer ${KEY}`)).toBe(true)
    expect(server.requests[1]!.body).toMatchObject({ model: "tiny-coder", max_tokens: 16, stream: true })

    // Skein works with what was saved.
    const ran = await runAsync(["run", "--home", home, "Say hello."], cwd)
    expect({ status: ran.status, stdout: ran.stdout }).toEqual({ status: 0, stdout: "Hello from the local server.\n" })
    expect(server.requests.at(-1)!.body).toMatchObject({ model: "tiny-coder" })
  })

  it("a check that fails says why and offers a retry; the retry that works saves", async () => {
    const { home, server, term, config } = await fixture()
    server.refuse(1, 500)
    const t = term("setup")
    await toTheKey(t, server.url, KEY)
    await t.waitFor("Model (a number, an id, or part of a name) [big-coder]: ")
    t.type("\r")
    await t.waitFor("✗ ")
    await t.waitFor("[r] try again, [k] change the key, [m] change the model, [s] save anyway, [q] quit without saving [r]: ")
    expect(t.text()).toMatch(/✗ .*(HTTP 500|server)/i)
    expect(existsSync(join(home, "config.json"))).toBe(false)
    t.type("r\r")
    await t.waitFor("✓ It answered.")
    expect(await t.exit).toBe(0)
    expect(config()).toMatchObject({ provider: "local", model: "big-coder" })
    expect(server.requests.filter((r) => r.path === "/v1/chat/completions")).toHaveLength(2)
  })

  it("a wrong key: the check names the refusal; a model typed by hand when the list cannot be had; quitting saves nothing", async () => {
    const { home, server, term } = await fixture({ key: KEY })
    const t = term("setup")
    await toTheKey(t, server.url, "sk-wrong-000000000000")
    await t.waitFor("Could not list them")
    await t.waitFor("Model id: ")
    t.type("tiny-coder\r")
    await t.waitFor("✗ ")
    await t.waitFor("[q] quit without saving [r]: ")
    expect(t.text()).toMatch(/✗ .*(key|401)/i)
    expect(t.raw()).not.toContain("sk-wrong-000000000000")
    t.type("q\r")
    await t.waitFor("Set-up cancelled: nothing was saved.")
    expect(await t.exit).toBe(1)
    expect(existsSync(join(home, "config.json"))).toBe(false)
  })

  it("Ctrl-C at a question leaves with 130 and writes nothing; so does `skein acp setup`, the form some editors run", async () => {
    const { home, term } = await fixture()
    for (const args of [["setup"], ["acp", "setup"]]) {
      const t = term(...args)
      await t.waitFor("Choose 1-3 [1]: ")
      t.type("\x03")
      await t.waitFor("Set-up cancelled: nothing was saved.")
      expect(await t.exit).toBe(130)
    }
    expect(existsSync(join(home, "config.json"))).toBe(false)
  })

  it("a config.json that is a link is changed where it points, and the link stays", async () => {
    const { root, home, server, term } = await fixture()
    const real = join(root, "dotfiles-config.json")
    writeFileSync(real, JSON.stringify({ sandbox: "off" }))
    symlinkSync(real, join(home, "config.json"))
    const t = term("setup")
    await toTheKey(t, server.url, KEY)
    await t.waitFor("[big-coder]: ")
    t.type("\r")
    expect(await t.exit).toBe(0)
    expect(JSON.parse(readFileSync(real, "utf8"))).toMatchObject({ sandbox: "off", provider: "local", model: "big-coder" })
    expect(statSync(real).mode & 0o777).toBe(0o600)
    expect(readFileSync(join(home, "config.json"), "utf8")).toBe(readFileSync(real, "utf8"))
  })

  it("`skein run` with nothing configured offers the set-up at a terminal, then runs the turn with it", async () => {
    const { server, term } = await fixture()
    const t = term("run", "Say hello.")
    await t.waitFor("Skein has no model provider configured")
    await t.waitFor("Set up a provider now? [Y/n] ")
    t.type("\r")
    await toTheKey(t, server.url, KEY)
    await t.waitFor("[big-coder]: ")
    t.type("\r")
    await t.waitFor("✓ It answered.")
    await t.waitFor("Hello from the local server.")
    expect(await t.exit).toBe(0)
  })
})

describe("e2e: skein setup and run without a terminal", () => {
  it("setup refuses to start, saying it needs a terminal; run says to run skein setup; neither writes anything", async () => {
    const { home, cwd } = await fixture()
    const setup = spawnSync(NODE, [SKEIN, "setup", "--home", home], { cwd, env: cleanEnv(), input: "1\n", encoding: "utf8" })
    expect(setup.status).toBe(2)
    expect(setup.stderr).toContain("skein setup asks questions: run it in a terminal")
    const run = spawnSync(NODE, [SKEIN, "run", "--home", home, "hi"], { cwd, env: cleanEnv(), encoding: "utf8" })
    expect(run.status).toBe(2)
    expect(run.stderr).toContain("Run `skein setup` in a terminal to choose a provider.")
    expect(existsSync(join(home, "config.json"))).toBe(false)
  })

  it.skipIf(!ptyAvailable)("an invalid config.json is refused before any question, and left as it was", async () => {
    const { home, term } = await fixture()
    writeFileSync(join(home, "config.json"), "{ not json")
    const t = term("setup")
    expect(await t.exit).toBe(2)
    expect(t.text()).toContain("is not valid JSON")
    expect(t.text()).not.toContain("Which provider?")
    expect(readFileSync(join(home, "config.json"), "utf8")).toBe("{ not json")

    // One that cannot be read at all (a directory): the same, with the reason.
    rmSync(join(home, "config.json"))
    mkdirSync(join(home, "config.json"))
    const dir = term("setup")
    expect(await dir.exit).toBe(2)
    expect(dir.text()).toMatch(/Cannot read .*config\.json \(EISDIR\)/)
  })
})
