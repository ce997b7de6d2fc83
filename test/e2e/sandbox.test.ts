/**
 * The sandbox end to end: the built agent driven by the official ACP client, commands run in
 * the real bubblewrap. Sandboxed commands run without a question in default mode and cannot
 * write outside; `sandbox: false` asks, saying so; `initialize` states the guarantees; where
 * user namespaces are taken away, `auto` falls back to asking (with one notice) and
 * `required` refuses; and the same holds for an unprivileged user.
 */
import { execFileSync, spawnSync } from "node:child_process"
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { expectClean, NODE, SKEIN, useAgents } from "../support/AgentProcess.ts"
import * as Bwrap from "../support/Bwrap.ts"
import { survivors, uniqueArg } from "../support/Escapes.ts"
import * as Visible from "../support/Visible.ts"

const agents = useAgents()

/** Directories outside every workspace (not under /tmp: a sandbox has its own /tmp). */
const scratch: Array<string> = []
afterEach(() => {
  for (const dir of scratch.splice(0)) rmSync(dir, { recursive: true, force: true })
})
const outsideDir = () => {
  const dir = Visible.makeDir("skein-e2e-outside-")
  scratch.push(dir)
  return dir
}

const bashTurn = (...commands: ReadonlyArray<string | Record<string, unknown>>) => ({
  turns: [{
    calls: [
      commands.map((command, i) => ({ tool: "bash", args: typeof command === "string" ? { command } : command, id: `b${i + 1}` })),
      [{ text: "done" }]
    ]
  }]
})

const results = (agent: { readLog: (id: string) => Array<any> }, sessionId: string) =>
  agent.readLog(sessionId).filter((e: any) => e.type === "tool_result").map((e: any) => e.data)

const select = (optionId: string) => () => ({ outcome: { outcome: "selected" as const, optionId } })

Bwrap.describeWithBwrap("e2e: the sandbox", () => {
  it("initialize states the guarantees in _meta.skein.sandbox", async () => {
    const agent = agents.start({ script: { turns: [] } })
    const init = await agent.initialize()
    expect((init._meta as any)?.skein?.sandbox).toEqual({
      mode: "custom",
      mechanism: "bubblewrap",
      guarantees: { fsIsolation: "workspace", netIsolation: "denyAll", processCaps: true },
      setting: "auto",
      fallback: "ask"
    })
    const off = agents.start({ script: { turns: [] }, args: ["--sandbox", "off"] })
    expect(((await off.initialize())._meta as any)?.skein?.sandbox).toEqual({
      mode: "host",
      guarantees: { fsIsolation: "none", netIsolation: "none", processCaps: false },
      setting: "off"
    })
    expectClean(agent)
  })

  it("default mode: a sandboxed command asks nothing, writes inside, cannot write outside, and the model is told why", async () => {
    const outside = outsideDir()
    const agent = await agents.ready({
      script: bashTurn(`echo in > inside.txt && echo ok; echo out > ${outside}/escape.txt`),
      permission: () => {
        throw new Error("no question expected")
      }
    })
    const sessionId = await agent.newSession()
    expect((await agent.prompt(sessionId, "go")).stopReason).toBe("end_turn")
    expect(agent.permissionRequests).toEqual([])
    expect(readFileSync(path.join(agent.cwd, "inside.txt"), "utf8")).toBe("in\n")
    expect(existsSync(path.join(outside, "escape.txt"))).toBe(false)
    const [result] = results(agent, sessionId)
    expect(result.content).toContain("Read-only file system")
    expect(result.content).toContain("[sandbox]")
    expect(result.content).toContain("\"sandbox\": false")
    expectClean(agent)
  })

  it("sandbox: false asks, says it runs outside the sandbox, offers no 'always'; allowed, it runs outside", async () => {
    const outside = outsideDir()
    const agent = await agents.ready({
      script: bashTurn({ command: `echo out > ${outside}/written.txt`, sandbox: false, reason: "write the release notes outside the workspace" }),
      permission: select("allow_once")
    })
    const sessionId = await agent.newSession()
    await agent.prompt(sessionId, "go")
    expect(agent.permissionRequests).toHaveLength(1)
    const request = agent.permissionRequests[0]!
    expect(request.toolCall.title).toContain("OUTSIDE the sandbox")
    expect(request.toolCall.title).toContain("write the release notes outside the workspace")
    expect(request.options.map((o) => o.optionId)).toEqual(["allow_once", "reject_once"])
    expect(readFileSync(path.join(outside, "written.txt"), "utf8")).toBe("out\n")
    expectClean(agent)
  })

  it("sandbox: false asks even in bypassPermissions; refused, nothing runs; without a reason it is not even asked", async () => {
    const outside = outsideDir()
    const agent = await agents.ready({
      script: bashTurn(
        { command: `echo out > ${outside}/refused.txt`, sandbox: false, reason: "needs my ssh key" },
        { command: `echo out > ${outside}/no-reason.txt`, sandbox: false }
      ),
      args: ["--mode", "bypassPermissions"],
      permission: select("reject_once")
    })
    const sessionId = await agent.newSession()
    await agent.prompt(sessionId, "go")
    expect(agent.permissionRequests.map((r) => r.toolCall.toolCallId)).toEqual(["b1"])
    expect(existsSync(path.join(outside, "refused.txt"))).toBe(false)
    expect(existsSync(path.join(outside, "no-reason.txt"))).toBe(false)
    const [first, second] = results(agent, sessionId)
    expect(first.content).toContain("denied")
    expect(second.content).toContain("give a `reason`")
    expectClean(agent)
  })

  it("bypassPermissions does not lift the sandbox: writes outside are still refused", async () => {
    const outside = outsideDir()
    const agent = await agents.ready({ script: bashTurn(`echo out > ${outside}/escape.txt; echo out > ~/.skein-escape`), args: ["--mode", "bypassPermissions"] })
    const sessionId = await agent.newSession()
    await agent.prompt(sessionId, "go")
    expect(agent.permissionRequests).toEqual([])
    expect(existsSync(path.join(outside, "escape.txt"))).toBe(false)
    expect(results(agent, sessionId)[0].content).toContain("Read-only file system")
  })

  it("a descriptor Skein was started with (an editor's, open on a file outside) does not reach a sandboxed command", async () => {
    const outside = outsideDir()
    const target = path.join(outside, "held.txt")
    writeFileSync(target, "")
    // The editor's side: Skein starts with fd 20 open for writing on a file outside the workspace.
    const wrapper = ["/bin/bash", "-c", "exec 20>>\"$0\"; exec \"$@\"", target]
    const agent = await agents.ready({ script: bashTurn("echo leaked >&20; ls -l /proc/$$/fd; true"), wrapper })
    const sessionId = await agent.newSession()
    await agent.prompt(sessionId, "go")
    expect(readFileSync(target, "utf8")).toBe("")
    const [result] = results(agent, sessionId)
    expect(result.content).not.toMatch(/ 20 -> /)
    expect(result.content).not.toContain(target)
    expect(result.content).not.toMatch(/user:\[|net:\[/)
  })

  it("plan mode runs read-only commands sandboxed, and nothing else", async () => {
    const agent = await agents.ready({ script: bashTurn("ls", "touch made.txt"), files: { "a.txt": "x" }, args: ["--mode", "plan"] })
    const sessionId = await agent.newSession()
    await agent.prompt(sessionId, "go")
    const [ls, touch] = results(agent, sessionId)
    expect(ls.ok).toBe(true)
    expect(ls.content).toContain("a.txt")
    expect(touch.ok).toBe(false)
    expect(touch.content).toContain("Plan mode is read-only")
    expect(existsSync(path.join(agent.cwd, "made.txt"))).toBe(false)
    expect(agent.permissionRequests).toEqual([])
  })
})

/** Processes of this machine whose environment holds `needle` (the forwarder's proxy socket names its Skein's runtime directory). */
const withEnvironment = (needle: string): Array<number> => {
  const found: Array<number> = []
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/environ`, "latin1").includes(needle)) found.push(Number(entry))
    } catch {
      // Gone, or not ours.
    }
  }
  return found
}

const waitFor = async (done: () => boolean, what: string, ms = 20_000) => {
  const start = Date.now()
  while (!done()) {
    if (Date.now() - start > ms) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

Bwrap.describeWithBwrap("e2e: nothing sandboxed outlives Skein", () => {
  const stops: ReadonlyArray<{ readonly name: string; readonly stop: (agent: ReturnType<typeof agents.start>) => void }> = [
    { name: "stdin EOF", stop: (agent) => agent.closeStdin() },
    { name: "SIGTERM", stop: (agent) => agent.child.kill("SIGTERM") },
    { name: "kill -9", stop: (agent) => agent.child.kill("SIGKILL") }
  ]
  for (const { name, stop } of stops) {
    it(`${name}: the running command, its daemons and the session's proxy forwarder are gone`, async () => {
      const arg = uniqueArg()
      const home = outsideDir()
      // Hosts to reach: the session's network namespace then has a forwarder to the proxy.
      writeFileSync(path.join(home, "config.json"), JSON.stringify({ sandbox: { network: { allow: ["127.0.0.2"] } } }))
      const command = `(setsid sleep ${arg} &); (nohup sleep ${arg} > /dev/null 2>&1 &); echo started > started.txt; sleep ${arg}`
      const agent = await agents.ready({ script: bashTurn(command), args: ["--home", home] })
      const sessionId = await agent.newSession()
      void agent.prompt(sessionId, "go").catch(() => undefined)
      await waitFor(() => existsSync(path.join(agent.cwd, "started.txt")) && survivors(arg).length === 3, "the command and its daemons")
      const skein = agent.child.pid!
      const forwarders = () => withEnvironment(`SKEIN_PROXY_SOCKET=`).filter((pid) => readFileSync(`/proc/${pid}/environ`, "latin1").includes(`.${skein}-`))
      expect(forwarders().length).toBeGreaterThan(0)
      stop(agent)
      await agent.waitExit(10_000)
      await waitFor(() => survivors(arg).length === 0 && forwarders().length === 0, "every process to be gone", 5_000)
    })
  }
})

/** Skein run inside a bwrap that forbids user namespaces: a kernel where none can be made. */
const NO_USERNS = ["bwrap", "--unshare-user", "--disable-userns", "--dev-bind", "/", "/", "--"]

Bwrap.describeWithBwrap("e2e: where no sandbox can be made", () => {
  it("auto asks for commands as before, and says so once per session", async () => {
    const agent = await agents.ready({ script: { turns: [bashTurn("touch a").turns[0]!, bashTurn("touch b").turns[0]!] }, wrapper: NO_USERNS, permission: select("allow_once") })
    const sessionId = await agent.newSession()
    await agent.prompt(sessionId, "one")
    await agent.prompt(sessionId, "two")
    expect(agent.permissionRequests).toHaveLength(2)
    const notices = agent.readLog(sessionId).filter((e: any) => e.type === "notice" && e.data.source === "sandbox")
    expect(notices).toHaveLength(1)
    expect(notices[0].data.text).toContain("without a sandbox")
    expect(existsSync(path.join(agent.cwd, "b"))).toBe(true)
    expectClean(agent)
  })

  it("required refuses every command with the reason, and asks nothing", async () => {
    const agent = await agents.ready({ script: bashTurn("touch a", { command: "touch b", sandbox: false, reason: "please" }), wrapper: NO_USERNS, args: ["--sandbox", "required"] })
    const sessionId = await agent.newSession()
    await agent.prompt(sessionId, "go")
    expect(agent.permissionRequests).toEqual([])
    const [first, second] = results(agent, sessionId)
    expect(first.ok).toBe(false)
    expect(first.content).toContain("The sandbox is required")
    expect(second.content).toContain("The sandbox is required")
    expect(existsSync(path.join(agent.cwd, "a"))).toBe(false)
    expect(existsSync(path.join(agent.cwd, "b"))).toBe(false)
  })
})

/** A throwaway unprivileged user (made once; root only). */
const USER = "skein-sbx-test"
const unprivileged = (() => {
  if (process.getuid?.() !== 0) return "not root: cannot make a throwaway user"
  if (spawnSync("id", [USER]).status === 0) return undefined
  const made = spawnSync("useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER])
  return made.status === 0 ? undefined : `useradd failed: ${made.stderr?.toString().trim()}`
})()

Bwrap.describeWithBwrap("e2e: the sandbox of an unprivileged user", () => {
  it.skipIf(unprivileged !== undefined)(`skein run as a normal user: commands run sandboxed without asking, and cannot write outside or read credentials${unprivileged !== undefined ? ` (${unprivileged})` : ""}`, () => {
    const base = outsideDir()
    const uid = Number(execFileSync("id", ["-u", USER], { encoding: "utf8" }))
    const gid = Number(execFileSync("id", ["-g", USER], { encoding: "utf8" }))
    const home = path.join(base, "home")
    const ws = path.join(base, "ws")
    const out = path.join(base, "out")
    for (const dir of [home, ws, out, path.join(home, ".ssh"), path.join(home, ".skein")]) mkdirSync(dir, { recursive: true })
    writeFileSync(path.join(home, ".ssh", "id_ed25519"), "PRIVATE KEY\n")
    const script = path.join(base, "script.json")
    writeFileSync(script, JSON.stringify(bashTurn(`id -u > uid.txt; echo in > inside.txt; echo out > ${out}/escape.txt; cat ~/.ssh/id_ed25519 > key.txt; true`)))
    for (const p of [base, home, ws, out, path.join(home, ".ssh"), path.join(home, ".ssh", "id_ed25519"), path.join(home, ".skein"), script]) chownSync(p, uid, gid)
    chmodSync(base, 0o755)
    const run = spawnSync("setpriv", [`--reuid=${uid}`, `--regid=${gid}`, "--clear-groups", "--", Visible.node(), Visible.skein(), "run", "--home", path.join(home, ".skein"), "--script", script, "--cwd", ws, "go"], {
      env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: home },
      encoding: "utf8",
      timeout: 60_000
    })
    expect(run.status, run.stderr).toBe(0)
    expect(readFileSync(path.join(ws, "uid.txt"), "utf8").trim()).toBe(String(uid))
    expect(readFileSync(path.join(ws, "inside.txt"), "utf8")).toBe("in\n")
    expect(existsSync(path.join(out, "escape.txt"))).toBe(false)
    expect(readFileSync(path.join(ws, "key.txt"), "utf8")).toBe("")
  })
})

describe("e2e: the sandbox setting", () => {
  it("an unknown --sandbox or SKEIN_SANDBOX value is a usage error", () => {
    const flag = spawnSync(NODE, [SKEIN, "doctor", "--sandbox", "maybe"], { encoding: "utf8" })
    expect(flag.stdout + flag.stderr).toContain("maybe")
    const env = spawnSync(NODE, [SKEIN, "acp", "--script", "/nonexistent"], { encoding: "utf8", env: { ...process.env, SKEIN_SANDBOX: "yes" }, input: "" })
    expect(env.status).toBe(2)
    expect(env.stderr).toContain("SKEIN_SANDBOX must be auto, required or off")
  })
})
