/**
 * End to end, at a real terminal (a pseudo-terminal): what `skein run` does with keys — a
 * bracketed paste is one prompt, the status line's clock moves through a silent command,
 * local commands cost no model call, "always" is offered only for what it covers, typing
 * during a turn is queued and Esc interrupts, history survives a restart, and `-r` picks a
 * session.
 */
import { spawnSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
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

const setup = (turns: ReadonlyArray<unknown>) => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "skein-keys-")))
  roots.push(root)
  const home = join(root, "home")
  const cwd = join(root, "ws")
  mkdirSync(cwd)
  const script = join(root, "script.json")
  writeFileSync(script, JSON.stringify({ turns }))
  const term = (...args: Array<string>) => {
    const t = spawnPty([NODE, SKEIN, "run", "--home", home, "--script", script, ...args], { cwd, env: cleanEnv() })
    terms.push(t)
    return t
  }
  const logs = () => {
    const dir = join(home, "sessions")
    const out: Record<string, Array<{ type: string; turn: number | null; data: any }>> = {}
    for (const name of existsSync(dir) ? readdirSync(dir) : []) {
      if (!name.endsWith(".ndjson")) continue
      out[name.slice(0, -".ndjson".length)] = readFileSync(join(dir, name), "utf8").trim().split("\n").slice(1).map((l) => JSON.parse(l))
    }
    return out
  }
  const prompts = () => Object.values(logs()).flat().filter((e) => e.type === "turn_start").map((e) => e.data.content[0].text as string)
  return { home, cwd, script, term, logs, prompts }
}

const prompt = (t: Pty) => t.waitFor("ctrl-d: leave")
const question = (t: Pty) => t.waitFor("esc or ctrl-c rejects")
const leave = async (t: Pty) => {
  await prompt(t)
  t.type("\x04")
  return await t.exit
}

describe.skipIf(!ptyAvailable)("e2e: skein run's keys at a terminal", () => {
  it("a bracketed paste of 50 lines is one prompt; Ctrl-J and \\ + Enter add lines", async () => {
    const { term, prompts } = setup([{ calls: [[{ text: "Got the trace." }]] }, { calls: [[{ text: "Got three lines." }]] }])
    const t = term()
    await prompt(t)
    const lines = Array.from({ length: 50 }, (_, i) => `at frame ${i + 1} (file.ts:${i + 1})`)
    t.type(`\x1b[200~${lines.join("\r")}\x1b[201~`)
    t.type("\r")
    await t.waitFor("Got the trace.")
    await prompt(t)
    t.type("one\ntwo\\\rthree\r")
    await t.waitFor("Got three lines.")
    expect(await leave(t)).toBe(0)
    expect(prompts()).toEqual([lines.join("\n"), "one\ntwo\nthree"])
  })

  it("the status line's clock moves through a silent command, with the hint that Esc interrupts", async () => {
    // The command prints nothing until the test lets it end (once the clock has moved twice).
    const { term, cwd } = setup([{ calls: [[{ text: "Waiting on it.\n" }, { tool: "bash", args: { command: "sh hold" } }], [{ text: "Slept." }]] }])
    writeFileSync(join(cwd, "hold"), "until [ -e go ]; do sleep 0.05; done\n")
    const t = term("--mode", "bypassPermissions")
    await prompt(t)
    t.type("sleep\r")
    await t.waitFor("running `sh hold` · 1s · esc to interrupt")
    await t.waitFor("running `sh hold` · 2s · esc to interrupt")
    writeFileSync(join(cwd, "go"), "")
    await t.waitFor("Slept.")
    expect(await leave(t)).toBe(0)
  })

  it("/help, /mode and /context are answered without a model call (the script has no turns)", async () => {
    const { term, logs } = setup([])
    const t = term()
    await prompt(t)
    t.type("/help\r")
    const help = await t.waitFor("Keys:")
    expect(help).toContain("/compact")
    await prompt(t)
    t.type("/mode plan\r")
    await t.waitFor("[mode: plan]")
    await prompt(t)
    t.type("/context\r")
    await t.waitFor("no model call has reported usage")
    await prompt(t)
    t.type("/exit\r")
    expect(await t.exit).toBe(0)
    const events = Object.values(logs()).flat()
    expect(events.filter((e) => e.type === "turn_start" || e.type === "model_response")).toEqual([])
    expect(events.filter((e) => e.type === "mode_changed").map((e) => e.data.mode)).toEqual(["plan"])
  })

  it("offers \"always\" only for a command its rule covers, and then the rule covers it", async () => {
    const bash = (command: string) => [{ tool: "bash", args: { command } }]
    const { term, cwd } = setup([
      { calls: [bash("echo hi > a.txt && ls"), [{ text: "Chained." }]] },
      { calls: [bash("touch b.txt"), [{ text: "Touched b." }]] },
      { calls: [bash("touch c.txt"), [{ text: "Touched c." }]] }
    ])
    // Without the sandbox: commands are asked for (sandboxed, none is).
    const t = term("--sandbox", "off")
    await prompt(t)
    t.type("chain\r")
    const chained = await question(t)
    expect(chained).toContain("y  Allow once")
    expect(chained).not.toContain("Always")
    t.type("y")
    await t.waitFor("Chained.")
    await prompt(t)
    t.type("touch b\r")
    expect(await question(t)).toContain("a  Always allow `touch`")
    t.type("a")
    await t.waitFor("Touched b.")
    await prompt(t)
    t.type("touch c\r")
    expect(await t.waitFor("Touched c.")).not.toContain("Allow")
    expect(await leave(t)).toBe(0)
    expect(["a.txt", "b.txt", "c.txt"].map((f) => existsSync(join(cwd, f)))).toEqual([true, true, true])
  })

  it("Enter during a turn queues the text; Esc interrupts the turn and the queued text comes back to the prompt", async () => {
    const { term, logs } = setup([
      { calls: [[{ text: "Working\n" }, { sleep_ms: 60_000 }, { text: "never" }]] },
      { calls: [[{ text: "Picked up the queued one." }]] }
    ])
    const t = term()
    await prompt(t)
    t.type("slow\r")
    await t.waitFor("Working")
    t.type("and then this\r")
    await t.waitFor("queued: and then this")
    t.type("\x1b")
    await t.waitFor("[cancelled]")
    await t.waitFor("> and then this")
    t.type("\r")
    await t.waitFor("Picked up the queued one.")
    expect(await leave(t)).toBe(0)
    const events = Object.values(logs()).flat()
    expect(events.filter((e) => e.type === "turn_end").map((e) => e.data.stopReason)).toEqual(["cancelled", "end_turn"])
    expect(events.filter((e) => e.type === "turn_start").map((e) => e.data.content[0].text)).toEqual(["slow", "and then this"])
  })

  it("history survives a restart: ↑ brings back the last run's prompt", async () => {
    const { term, prompts, home } = setup([{ calls: [[{ text: "First." }]] }, { calls: [[{ text: "Again." }]] }])
    const first = term()
    await prompt(first)
    first.type("remember this prompt\r")
    await first.waitFor("First.")
    expect(await leave(first)).toBe(0)
    expect(readdirSync(join(home, "history")).length).toBe(1)

    const second = term()
    await prompt(second)
    second.type("\x1b[A")
    await second.waitFor("> remember this prompt")
    second.type("\r")
    await second.waitFor("First.") // a new session: the script starts again
    expect(await leave(second)).toBe(0)
    expect(prompts()).toEqual(["remember this prompt", "remember this prompt"])
  })

  it("-r without an id picks one of this folder's sessions with the arrow keys and resumes it", async () => {
    const { term, script, home, cwd, logs } = setup([{ calls: [[{ text: "One." }]] }, { calls: [[{ text: "Two." }]] }])
    const once = (text: string) => {
      const r = spawnSync(NODE, [SKEIN, "run", "--home", home, "--script", script, text], { cwd, env: cleanEnv(), encoding: "utf8" })
      expect(r.status).toBe(0)
      return r.stderr.match(/session (\S+)/)![1]!
    }
    const older = once("the older session")
    once("the newer session")
    const t = term("-r")
    const picker = await t.waitFor("esc leaves")
    expect(picker.indexOf("the newer session")).toBeLessThan(picker.indexOf("the older session"))
    expect(picker).toMatch(/the older session\s+just now · 1 turn/)
    t.type("\x1b[B\r")
    await t.waitFor(`Resumed session ${older}`)
    await prompt(t)
    t.type("more\r")
    await t.waitFor("Two.")
    expect(await leave(t)).toBe(0)
    expect(logs()[older]!.filter((e) => e.type === "turn_start").map((e) => e.data.content[0].text)).toEqual(["the older session", "more"])
  })
})
