/**
 * End to end: `skein run` at a real terminal (a pseudo-terminal), typed at as a person would:
 * the interactive loop, permission questions answered at the keyboard, Ctrl-C at a question,
 * during a turn and at the prompt, `--continue` and `--resume`; and `skein run PROMPT` at a
 * terminal and with stdin piped.
 */
import { spawn, spawnSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { NODE, REPO_ROOT, SKEIN } from "../support/AgentProcess.ts"
import { ptyAvailable, type Pty, spawnPty } from "../support/Pty.ts"

const roots: Array<string> = []
const terms: Array<Pty> = []
afterEach(() => {
  for (const term of terms.splice(0)) term.child.kill("SIGKILL")
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true })
})

/** No provider keys from the machine: only what a test sets. */
const cleanEnv = (): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !/^(OPENAI_|ANTHROPIC_|SKEIN_)/.test(key)) env[key] = value
  }
  return { ...env, NO_COLOR: "1", SKEIN_NO_CODE_CACHE: "1" }
}

const setup = (turns: ReadonlyArray<unknown>, agents?: Record<string, { turns: ReadonlyArray<unknown> }>) => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "skein-tty-")))
  roots.push(root)
  const home = join(root, "home")
  const cwd = join(root, "ws")
  mkdirSync(cwd)
  const script = join(root, "script.json")
  writeFileSync(script, JSON.stringify({ turns, ...(agents !== undefined ? { agents } : {}) }))
  const term = (...args: Array<string>) => {
    const t = spawnPty([NODE, SKEIN, "run", "--home", home, "--script", script, ...args], { cwd, env: cleanEnv() })
    terms.push(t)
    return t
  }
  /** Every logged event of every session, by session id. */
  const logs = () => {
    const dir = join(home, "sessions")
    const out: Record<string, Array<{ type: string; turn: number | null; data: any }>> = {}
    for (const name of existsSync(dir) ? readdirSync(dir) : []) {
      if (!name.endsWith(".ndjson")) continue
      const lines = readFileSync(join(dir, name), "utf8").trim().split("\n").map((l) => JSON.parse(l))
      out[name.slice(0, -".ndjson".length)] = lines.slice(1)
    }
    return out
  }
  return { root, home, cwd, script, term, logs }
}

/** Waits for the prompt: its hint, shown under an empty prompt. */
const prompt = (t: Pty) => t.waitFor("ctrl-d: leave")
/** Waits for a permission question's menu. */
const question = (t: Pty) => t.waitFor("esc or ctrl-c rejects")

const write = (path: string, content: string) => [{ tool: "write", args: { path, content } }]
const answer = (text: string) => [{ text }]

describe.skipIf(!ptyAvailable)("e2e: skein run at a terminal", () => {
  it("keeps one session across prompts; y allows once, a remembers a rule; Ctrl-D leaves with 0", async () => {
    const { term, logs, cwd } = setup([
      { calls: [[{ text: "Writing." }, ...write("a.txt", "one\n")], answer("Wrote a.")] },
      { calls: [[...write("b.txt", "two\n")], answer("Wrote b.")] },
      { calls: [[...write("c.txt", "three\n")], answer("Wrote c.")] }
    ])
    const t = term()
    await prompt(t)
    t.type("write a\r")
    // The question comes after what led to it, and shows the proposed file and the keys.
    const asked = await question(t)
    expect(asked.indexOf("Writing.")).toBeLessThan(asked.indexOf("→ Write a.txt"))
    expect(asked).toContain("? Allow Write a.txt?")
    expect(asked).toContain("+one")
    expect(asked).toContain("N  Always reject")
    t.type("y")
    await t.waitFor("Wrote a.")
    expect(readFileSync(join(cwd, "a.txt"), "utf8")).toBe("one\n")

    await prompt(t)
    t.type("write b\r")
    await question(t)
    t.type("a")
    await t.waitFor("Wrote b.")
    // The rule answers the next edit: no question.
    await prompt(t)
    t.type("write c\r")
    const third = await t.waitFor("Wrote c.")
    expect(third).not.toContain("Allow")
    await prompt(t)
    t.type("\x04")
    const id = (await t.waitFor(/Session (\S+) /)).match(/Session (\S+) /)![1]!
    expect(await t.exit).toBe(0)

    const events = logs()[id]!
    expect(Object.keys(logs())).toEqual([id])
    expect(events.filter((e) => e.type === "turn_start").length).toBe(3)
    expect(events.filter((e) => e.type === "permission").map((e) => e.data.outcome)).toEqual(["allow_once", "allow_always"])
    expect(events.find((e) => e.data.outcome === "allow_always")!.data.rule).toMatchObject({ decision: "allow", kind: "path" })
    expect(readFileSync(join(cwd, "c.txt"), "utf8")).toBe("three\n")
  })

  it("Ctrl-C at a question rejects the call, stops the turn and returns to the prompt", async () => {
    const { term, logs, cwd } = setup([{ calls: [[...write("x.txt", "x")], answer("unreached")] }, { calls: [answer("Next one.")] }])
    const t = term()
    await prompt(t)
    t.type("write x\r")
    await question(t)
    t.type("\x03")
    await t.waitFor("Rejected; stopping the turn.")
    await prompt(t)
    t.type("go on\r")
    await t.waitFor("Next one.")
    await prompt(t)
    t.type("\x04")
    const id = (await t.waitFor(/Session (\S+) /)).match(/Session (\S+) /)![1]!
    expect(await t.exit).toBe(0)
    expect(existsSync(join(cwd, "x.txt"))).toBe(false)
    const events = logs()[id]!
    // Denied: the turn was cancelled with its question open.
    expect(events.filter((e) => e.type === "permission").map((e) => e.data.outcome)).not.toContain("allow_once")
    expect(events.filter((e) => e.type === "tool_result").map((e) => e.data.ok)).toEqual([false])
    expect(events.filter((e) => e.type === "turn_end").map((e) => e.data.stopReason)).toEqual(["cancelled", "end_turn"])
  })

  it("Ctrl-C during a turn cancels the turn, not the program; Ctrl-C at an empty prompt leaves with 0", async () => {
    const { term, logs } = setup([
      { calls: [[{ text: "Thinking hard" }, { sleep_ms: 60_000 }, { text: "never" }]] },
      { calls: [answer("Still here.")] }
    ])
    const t = term()
    await prompt(t)
    t.type("slow\r")
    await t.waitFor("Thinking hard")
    t.type("\x03")
    await t.waitFor("[cancelled]")
    await prompt(t)
    t.type("again\r")
    await t.waitFor("Still here.")
    await prompt(t)
    t.type("half a lin")
    t.type("\x03") // clears the line, does not leave
    await prompt(t)
    t.type("\x03")
    const id = (await t.waitFor(/Session (\S+) /)).match(/Session (\S+) /)![1]!
    expect(await t.exit).toBe(0)
    const ends = logs()[id]!.filter((e) => e.type === "turn_end").map((e) => e.data.stopReason)
    expect(ends).toEqual(["cancelled", "end_turn"])
  })

  it("streams a command's output while it runs, then its status; shows the diff of an edit", async () => {
    const { term, cwd } = setup([
      {
        calls: [
          // printf, so that the words looked for are in the output and not in the command.
          [{ tool: "bash", args: { command: "printf 'out%s\\n' put-one; while [ ! -f go ]; do sleep 0.05; done; printf 'out%s\\n' put-two; exit 3" } }],
          [{ tool: "edit", args: { path: "f.txt", edits: [{ oldText: "beta", newText: "BETA" }] } }],
          answer("Done.")
        ]
      }
    ])
    writeFileSync(join(cwd, "f.txt"), "alpha\nbeta\ngamma\n")
    const t = term("--mode", "bypassPermissions")
    await prompt(t)
    t.type("go\r")
    await t.waitFor("output-one")
    // The command is still waiting for the file: its output came while it ran.
    expect(t.text()).not.toContain("output-two")
    writeFileSync(join(cwd, "go"), "")
    const rest = await t.waitFor("Done.")
    expect(rest).toMatch(/output-two\n[\s\S]*✗ \[exit code 3\]/)
    expect(rest).toMatch(/→ Edit f.txt[\s\S]*@@ -1,3 \+1,3 @@\n\s+alpha\n\s+-beta\n\s+\+BETA\n\s+gamma/)
    await prompt(t)
    t.type("\x04")
    expect(await t.exit).toBe(0)
  })

  it("--continue takes the newest session of this directory, --resume the one named", async () => {
    const { term, logs, home, script, cwd } = setup([
      { calls: [answer("First answer.")] },
      { calls: [answer("Second answer.")] },
      { calls: [answer("Third answer.")] }
    ])
    const once = (prompt: string, dir: string) => {
      const r = spawnSync(NODE, [SKEIN, "run", "--home", home, "--script", script, prompt], { cwd: dir, env: cleanEnv(), encoding: "utf8" })
      expect(r.status).toBe(0)
      return r.stderr.match(/session (\S+)/)![1]!
    }
    const older = once("the older one", cwd)
    const newer = once("the newer one", cwd)
    const elsewhere = join(cwd, "sub")
    mkdirSync(elsewhere)
    once("somewhere else", elsewhere)

    const c = term("--continue")
    const summary = await prompt(c)
    expect(summary).toContain(`Resumed session ${newer} (1 turn, ${cwd})`)
    expect(summary).toContain("> the newer one")
    expect(summary).toContain("First answer.")
    c.type("more please\r")
    await c.waitFor("Second answer.")
    await prompt(c)
    c.type("\x04")
    expect(await c.exit).toBe(0)
    expect(logs()[newer]!.filter((e) => e.type === "turn_start").map((e) => e.data.content[0].text)).toEqual(["the newer one", "more please"])

    const r = term("--resume", older.slice(0, 8))
    expect(await prompt(r)).toContain(`Resumed session ${older} (1 turn`)
    r.type("back to you\r")
    await r.waitFor("Second answer.")
    await prompt(r)
    r.type("\x04")
    expect(await r.exit).toBe(0)
    expect(logs()[older]!.filter((e) => e.type === "turn_start").length).toBe(2)
  })

  it("`skein run PROMPT` at a terminal asks there: y writes the file, and the answer is logged", async () => {
    const { term, logs, cwd } = setup([{ calls: [[...write("p.txt", "p\n")], answer("Written.")] }])
    const t = term("write p")
    await question(t)
    t.type("x") // not an answer: nothing happens
    t.type("y")
    await t.waitFor("Written.")
    const id = (await t.waitFor(/session (\S+)/)).match(/session (\S+)/)![1]!
    expect(await t.exit).toBe(0)
    expect(readFileSync(join(cwd, "p.txt"), "utf8")).toBe("p\n")
    expect(logs()[id]!.find((e) => e.type === "permission")!.data.outcome).toBe("allow_once")
  })

  it("shows a spinner on the terminal while the model thinks, erased before the answer; none with --json", async () => {
    const { term } = setup([{ calls: [[{ sleep_ms: 600 }, { text: "Hello there." }]] }])
    const t = term("hi")
    await t.waitFor("Hello there.")
    expect(await t.exit).toBe(0)
    expect(t.text()).toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] thinking · 0s · esc to interrupt/)
    // Erased (back to the line's start, the rest of the screen cleared) right before the answer.
    const raw = t.raw()
    const before = raw.slice(0, raw.indexOf("Hello there."))
    expect(before.slice(before.lastIndexOf("esc to interrupt"))).toMatch(/^esc to interrupt(\x1b\[\?25h)?\r\x1b\[J$/)
    const j = term("--json", "hi")
    await j.waitFor("turn_end")
    expect(await j.exit).toBe(0)
    expect(j.text()).not.toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/)
  })
})

describe("e2e: skein run without a terminal", () => {
  it("with the prompt piped, asks nothing: a call that needs permission is denied and logged as unanswerable", () => {
    const { home, script, cwd, logs } = setup([{ calls: [[...write("n.txt", "n")], answer("Could not.")] }])
    const r = spawnSync(NODE, [SKEIN, "run", "--home", home, "--script", script], { cwd, env: cleanEnv(), input: "write n\n", encoding: "utf8" })
    expect(r.status).toBe(0)
    expect(r.stdout).toBe("Could not.\n")
    expect(r.stderr).toContain("→ Write n.txt")
    expect(r.stderr).not.toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/)
    expect(existsSync(join(cwd, "n.txt"))).toBe(false)
    const events = Object.values(logs())[0]!
    expect(events.find((e) => e.type === "permission")!.data.outcome).toBe("unanswerable")
  })

  it("stops cleanly when its reader goes away (`skein run … | head`)", async () => {
    // A line every 50 ms for 20 s: the first write after the reader left fails.
    const lines = Array.from({ length: 400 }, () => [{ text: "line\n" }, { sleep_ms: 50 }]).flat()
    const { home, script, cwd, logs } = setup([{ calls: [lines] }])
    const child = spawn(NODE, [SKEIN, "run", "--home", home, "--script", script, "hi"], { cwd, env: cleanEnv() })
    let stderr = ""
    child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c))
    child.stdout.once("data", () => child.stdout.destroy())
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve))
    expect(stderr).not.toMatch(/EPIPE|Unhandled|    at /)
    expect(stderr).toMatch(/Session \S+ \(continue it with/)
    expect(code).toBe(130)
    expect(Object.values(logs())[0]!.at(-1)).toMatchObject({ type: "turn_end", data: { stopReason: "cancelled" } })
  })

  it("a turn that fails exits 1 with its error on stderr, not [end_turn]", () => {
    const { home, script, cwd } = setup([{ calls: [[{ fail: "the model is down", retryable: false }]] }])
    const r = spawnSync(NODE, [SKEIN, "run", "--home", home, "--script", script, "hi"], { cwd, env: cleanEnv(), encoding: "utf8" })
    expect(r.status).toBe(1)
    expect(r.stdout).toBe("")
    expect(r.stderr).toContain("the model is down")
    expect(r.stderr).not.toContain("[end_turn]")
  })

  it("with no model provider configured, exits 2 with what to do instead of answering", () => {
    const { home, cwd } = setup([])
    const r = spawnSync(NODE, [SKEIN, "run", "--home", home, "hi"], { cwd, env: cleanEnv(), encoding: "utf8" })
    expect(r.status).toBe(2)
    expect(r.stdout).toBe("")
    expect(r.stderr).toContain("skein: Skein has no model provider configured")
    expect(r.stderr).toContain("Run `skein setup` in a terminal to choose a provider.")
    expect(existsSync(join(home, "sessions")) ? readdirSync(join(home, "sessions")) : []).toEqual([])
  })

  it("after a turn, shows the context used and the cost when the model's window and price are known", async () => {
    const sse = readFileSync(join(REPO_ROOT, "test/fixtures/sse/openai-chat/text.sse"), "utf8")
    const server = http.createServer((req, res) => {
      req.resume()
      req.on("end", () => {
        res.writeHead(200, { "content-type": "text/event-stream" })
        res.end(sse)
      })
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    try {
      const { home, cwd } = setup([])
      mkdirSync(home)
      const port = (server.address() as AddressInfo).port
      writeFileSync(join(home, "config.json"), JSON.stringify({
        provider: "local",
        model: "llama3",
        providers: {
          local: {
            dialect: "openai-chat",
            baseUrl: `http://127.0.0.1:${port}/v1`,
            models: [{ id: "llama3", contextWindow: 8000, price: { input: 3, output: 15 } }]
          }
        }
      }))
      const child = spawn(NODE, [SKEIN, "run", "--home", home, "hi"], { cwd, env: cleanEnv() })
      let stdout = ""
      let stderr = ""
      child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c))
      child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c))
      const code = await new Promise<number | null>((resolve) => child.on("close", resolve))
      expect(code).toBe(0)
      expect(stdout).toBe("Hello world\n")
      expect(stderr).toMatch(/\[end_turn\] context \d+% \(\d+ of 8\.0k\) · \$0\.\d{4} session /)
    } finally {
      server.close()
    }
  })

  it("a subagent's question is asked at the keyboard, named after it, and answered on it", async () => {
    const { term, logs, cwd } = setup(
      [{ calls: [[{ tool: "spawn_agent", args: { task: "write the file" }, id: "s1" }], [{ tool: "wait_agent", args: {}, id: "w1" }], answer("The child wrote it.")] }],
      { general: { turns: [{ calls: [write("k.txt", "kid\n"), answer("wrote k")] }] } }
    )
    const t = term("delegate")
    const asked = await question(t)
    expect(asked).toContain("subagent general started: write the file")
    expect(asked).toContain("? Allow general: Write k.txt?")
    t.type("y")
    await t.waitFor("The child wrote it.")
    expect(await t.exit).toBe(0)
    expect(readFileSync(join(cwd, "k.txt"), "utf8")).toBe("kid\n")
    const child = Object.values(logs()).find((events) => events.some((e) => e.type === "permission"))!
    expect(child.filter((e) => e.type === "permission").map((e) => e.data.outcome)).toEqual(["allow_once"])
  })
})
