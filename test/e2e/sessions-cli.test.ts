/**
 * End to end: `skein sessions` and `skein replay` as a person uses them — a fork is marked in
 * the list, `show` and `replay` print the diff an edit made, and `rm` takes no slip of a
 * prefix: at least 4 characters, a question at a terminal (--yes skips it), and without a
 * terminal the whole id or --yes.
 */
import { spawnSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { NODE, SKEIN } from "../support/AgentProcess.ts"
import { ptyAvailable, type Pty, spawnPty } from "../support/Pty.ts"

const roots: Array<string> = []
const terms: Array<Pty> = []
afterEach(() => {
  for (const term of terms.splice(0)) term.child.kill("SIGKILL")
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true })
})

const cleanEnv = (): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !/^(OPENAI_|ANTHROPIC_|SKEIN_)/.test(key)) env[key] = value
  }
  return { ...env, NO_COLOR: "1", SKEIN_NO_CODE_CACHE: "1" }
}

const setup = () => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "skein-sessions-")))
  roots.push(root)
  const home = join(root, "home")
  const cwd = join(root, "ws")
  mkdirSync(cwd)
  const script = join(root, "script.json")
  writeFileSync(script, JSON.stringify({
    turns: [{ calls: [[{ tool: "write", args: { path: "notes.txt", content: "alpha\nbeta\n" } }], [{ text: "Wrote it." }]] }]
  }))
  const skein = (...args: Array<string>) => spawnSync(NODE, [SKEIN, ...args, "--home", home], { cwd, env: cleanEnv(), encoding: "utf8" })
  const session = () => {
    const r = spawnSync(NODE, [SKEIN, "run", "--home", home, "--script", script, "--mode", "bypassPermissions", "write the notes"], { cwd, env: cleanEnv(), encoding: "utf8" })
    expect(r.status).toBe(0)
    return r.stderr.match(/session (\S+)/)![1]!
  }
  const ids = () => readdirSync(join(home, "sessions")).filter((n) => n.endsWith(".ndjson")).map((n) => n.slice(0, -".ndjson".length))
  return { home, cwd, skein, session, ids }
}

describe("e2e: skein sessions and replay", () => {
  it("show and replay print the diff an edit made, not a placeholder", () => {
    const { skein, session } = setup()
    const id = session()
    for (const r of [skein("sessions", "show", id), skein("replay", id)]) {
      expect(r.status).toBe(0)
      expect(r.stdout).not.toContain("(diff of")
      expect(r.stdout).toMatch(/→ Write notes\.txt[\s\S]*new file \S*notes\.txt\n\s+@@ -0,0 \+1,2 @@\n\s+\+alpha\n\s+\+beta/)
    }
  })

  it("marks a fork in the list with the session it came from", () => {
    const { skein, session } = setup()
    const id = session()
    const fork = skein("sessions", "fork", id)
    expect(fork.status).toBe(0)
    const forkId = fork.stdout.trim()
    const list = skein("sessions", "list")
    expect(list.stdout).toContain(`${forkId}`)
    expect(list.stdout).toMatch(new RegExp(`${forkId}.*\\(fork of ${id}\\)`))
    expect(list.stdout).not.toMatch(new RegExp(`${id}.*\\(fork of`))
  })

  it("rm without a terminal: refuses a short prefix, and a prefix without --yes; takes the whole id or --yes", () => {
    const { skein, session, ids } = setup()
    const id = session()
    const short = skein("sessions", "rm", id.slice(0, 2))
    expect(short.status).toBe(2)
    expect(short.stderr).toContain("at least 4 characters")
    const prefix = skein("sessions", "rm", id.slice(0, 6))
    expect(prefix.status).toBe(2)
    expect(prefix.stderr).toContain("--yes")
    expect(ids()).toEqual([id])
    expect(skein("sessions", "rm", id.slice(0, 6), "--yes").status).toBe(0)
    expect(ids()).toEqual([])
    const other = session()
    expect(skein("sessions", "rm", other).status).toBe(0)
    expect(ids()).toEqual([])
  })

  it.skipIf(!ptyAvailable)("rm at a terminal asks first: n keeps the session, y removes it", async () => {
    const { home, cwd, session, ids } = setup()
    const id = session()
    const ask = () => {
      const t = spawnPty([NODE, SKEIN, "sessions", "rm", id.slice(0, 8), "--home", home], { cwd, env: cleanEnv() })
      terms.push(t)
      return t
    }
    const no = ask()
    await no.waitFor(`Remove session ${id} ("write the notes")? [y/N]`)
    no.type("n\r")
    expect(await no.exit).toBe(1)
    expect(ids()).toEqual([id])
    const yes = ask()
    await yes.waitFor("[y/N]")
    yes.type("y\r")
    expect(await yes.exit).toBe(0)
    expect(existsSync(join(home, "sessions", `${id}.ndjson`))).toBe(false)
  })
})
