/**
 * End to end: `skein sessions list|show|rm` for people at a terminal, over sessions written by
 * `skein run` and by a live `skein acp`.
 */
import { spawnSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { NODE, SKEIN, useAgents } from "../support/AgentProcess.ts"

const agents = useAgents()
const roots: Array<string> = []
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true })
})

const setup = () => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "skein-cli-sessions-")))
  roots.push(root)
  const home = join(root, "home")
  const cwd = join(root, "ws")
  mkdirSync(cwd)
  writeFileSync(join(cwd, "notes.txt"), "hello\n")
  const script = join(root, "script.json")
  writeFileSync(script, JSON.stringify({ turns: [{ calls: [[{ text: "Reading." }, { tool: "read", args: { path: "notes.txt" } }], [{ text: "It says hello." }]] }] }))
  const skein = (...args: Array<string>) => spawnSync(NODE, [SKEIN, ...args, "--home", home], { cwd, encoding: "utf8", timeout: 20_000 })
  return { root, home, cwd, script, skein }
}

describe("e2e: skein sessions", () => {
  it("lists sessions with their titles, shows one by id prefix, removes it", () => {
    const { cwd, script, skein, home } = setup()
    expect(skein("sessions").stdout).toContain(`No sessions in ${join(home, "sessions")}`)
    expect(skein("run", "--script", script, "Summarise the notes").status).toBe(0)
    const list = skein("sessions", "list")
    expect(list.status).toBe(0)
    const [first, second] = list.stdout.split("\n")
    const id = first!.split(" ")[0]!
    expect(id).toMatch(/^[0-9a-f-]{36}$/)
    expect(first).toContain(cwd)
    expect(second).toBe("    Summarise the notes")

    const json = skein("sessions", "--json", "--cwd", cwd)
    expect(JSON.parse(json.stdout.trim())).toMatchObject({ id, cwd, title: "Summarise the notes" })
    expect(skein("sessions", "--json", "--cwd", "/elsewhere").stdout).toBe("")

    const show = skein("sessions", "show", id.slice(0, 8))
    expect(show.status).toBe(0)
    expect(show.stdout).toContain(`log      ${join(home, "sessions", `${id}.ndjson`)}`)
    expect(show.stdout).toContain("6 events, 1 turns")
    expect(show.stdout).toContain("> Summarise the notes")
    expect(show.stdout).toContain("  ✓ Read notes.txt\n    1\thello")

    const rm = skein("sessions", "rm", id)
    expect(rm.status).toBe(0)
    expect(rm.stdout).toBe(`Removed session ${id}\n`)
    expect(existsSync(join(home, "sessions", `${id}.ndjson`))).toBe(false)
    const again = skein("sessions", "rm", id)
    expect(again.status).toBe(2)
    expect(again.stderr).toContain(`skein: No session ${id}`)
    expect(skein("sessions", "frobnicate").status).toBe(2)
    expect(skein("sessions", "show").status).toBe(2)
  })

  it("`skein run --json` and `skein sessions --json` print NDJSON whose lines readline keeps whole (U+2028/U+2029 escaped)", () => {
    const { root, cwd, skein } = setup()
    const odd = "one\u2028two\u2029three 😀"
    const script = join(root, "odd.json")
    writeFileSync(script, JSON.stringify({ turns: [{ calls: [[{ text: `Said ${odd}` }]] }] }))
    const run = skein("run", "--json", "--script", script, `Say ${odd}`)
    expect(run.status).toBe(0)
    const list = skein("sessions", "--json", "--cwd", cwd)
    for (const out of [run.stdout, list.stdout]) {
      // How Node's readline (and many NDJSON readers) splits lines: U+2028/U+2029 included.
      const lines = out.split(/\r?\n|\r|\u2028|\u2029/).filter((line) => line !== "")
      expect(lines.length).toBeGreaterThan(0)
      for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow()
    }
    const events = run.stdout.trimEnd().split("\n").map((line) => JSON.parse(line) as { type: string; data: { text?: string } })
    expect(events.filter((e) => e.type === "text_delta").map((e) => e.data.text)).toEqual([`Said ${odd}`])
    // (A title is one line: its line and paragraph separators become spaces.)
    expect(JSON.parse(list.stdout)).toMatchObject({ title: "Say one two three 😀" })
  })

  it("refuses to remove a session a live agent has open, but shows it", async () => {
    const agent = await agents.ready({ script: { turns: [{ calls: [[{ text: "ok" }]] }] } })
    const sessionId = await agent.newSession()
    await agent.prompt(sessionId, "Keep me open")
    const skein = (...args: Array<string>) => spawnSync(NODE, [SKEIN, ...args, "--home", agent.home], { encoding: "utf8", timeout: 20_000 })
    const rm = skein("sessions", "rm", sessionId)
    expect(rm.status).toBe(1)
    expect(rm.stderr).toContain(`is open in another Skein process (pid ${agent.child.pid}`)
    expect(existsSync(join(agent.home, "sessions", `${sessionId}.ndjson`))).toBe(true)
    const show = skein("sessions", "show", sessionId)
    expect(show.status).toBe(0)
    expect(show.stdout).toContain("> Keep me open")
    expect(show.stdout).not.toContain("interrupted")
  })
})
