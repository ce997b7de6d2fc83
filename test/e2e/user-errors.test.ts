/**
 * End to end: a user's mistake on the command line — a missing or non-directory `--cwd`, a
 * home that is not a directory or cannot be written, an unreadable or invalid `--script`, a bad
 * `--mode`, an unknown `--provider`, an unknown session id, an option the command would ignore
 * — is one line on stderr (`skein: …`, no stack trace) and exit 2, for every command, before
 * any work; `skein doctor` refuses what `skein run` refuses, in the same words. A failure that
 * is not the user's (a damaged log, a session another process holds) stays exit 1.
 */
import { spawn } from "node:child_process"
import { chmodSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { NODE, SKEIN, useAgents } from "../support/AgentProcess.ts"

const root = realpathSync(mkdtempSync(join(tmpdir(), "skein-usage-")))
afterAll(() => {
  chmodSync(join(root, "locked"), 0o700)
  rmSync(root, { recursive: true, force: true })
})
const home = join(root, "home")
const file = join(root, "a-file")
writeFileSync(file, "not a directory\n")
const script = join(root, "script.json")
writeFileSync(script, JSON.stringify({ turns: [{ calls: [[{ text: "ok" }]] }] }))
const badJson = join(root, "bad.json")
writeFileSync(badJson, "{ not json")
const badScript = join(root, "bad-script.json")
writeFileSync(badScript, JSON.stringify({ turns: "none" }))
// A home that cannot be created: under a directory without write permission, or, for root
// (who may write anywhere), under /sys.
mkdirSync(join(root, "locked"), { mode: 0o500 })
const unwritable = process.getuid?.() === 0 ? "/sys/skein-no-home" : join(root, "locked", "home")

const env = (): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !/^(OPENAI_|ANTHROPIC_|SKEIN_)/.test(key)) out[key] = value
  }
  return { ...out, SKEIN_NO_CODE_CACHE: "1" }
}

/** Runs skein with an empty stdin to its end (killed after 20 s, a hang): its status and output. */
const skein = (args: ReadonlyArray<string>, extraEnv: Record<string, string> = {}) =>
  new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(NODE, [SKEIN, ...args], { cwd: root, env: { ...env(), ...extraEnv }, stdio: ["pipe", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    child.stdin.end()
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000)
    child.on("error", (error) => {
      clearTimeout(timer)
      reject(error)
    })
    child.on("close", (status) => {
      clearTimeout(timer)
      resolve({ status, stdout, stderr })
    })
  })

const ok = ["--home", home, "--script", script]
const cases: ReadonlyArray<readonly [string, ReadonlyArray<string>, RegExp, Record<string, string>?]> = [
  ["run: a missing --cwd", ["run", ...ok, "--cwd", join(root, "nope"), "hi"], /--cwd .*nope does not exist/],
  ["run: a --cwd that is a file", ["run", ...ok, "--cwd", file, "hi"], /--cwd .*a-file is not a directory/],
  ["run: a --home that is a file", ["run", "--home", file, "--script", script, "hi"], /a-file is not a directory: it cannot be the home directory/],
  ["run: SKEIN_HOME that cannot be created", ["run", "--script", script, "hi"], /Cannot create .* for the home directory/, { SKEIN_HOME: unwritable }],
  ["run: an unreadable --script", ["run", "--home", home, "--script", join(root, "missing.json"), "hi"], /Cannot read the script file/],
  ["run: a --script that is not JSON", ["run", "--home", home, "--script", badJson, "hi"], /bad\.json is not valid JSON/],
  ["run: a --script that is not a script", ["run", "--home", home, "--script", badScript, "hi"], /bad-script\.json/],
  ["run: a bad --mode", ["run", ...ok, "--mode", "yolo", "hi"], /Unknown mode "yolo"/],
  ["run: an unknown --provider", ["run", "--home", home, "--provider", "nope", "hi"], /Unknown provider "nope"/],
  ["run: an unknown --resume id", ["run", ...ok, "--resume", "0badc0de", "hi"], /No session 0badc0de in /],
  ["acp: a --home that is a file", ["acp", "--home", file, "--script", script], /a-file is not a directory/],
  ["acp: a home that cannot be created", ["acp", "--home", unwritable, "--script", script], /Cannot create .* for the home directory/],
  ["acp: an unreadable --script", ["acp", "--home", home, "--script", join(root, "missing.json")], /Cannot read the script file/],
  ["acp: a --script that is not JSON", ["acp", "--home", home, "--script", badJson], /is not valid JSON/],
  ["acp: a bad --mode", ["acp", ...ok, "--mode", "yolo"], /Unknown mode "yolo"/],
  ["acp: an unknown --provider", ["acp", "--home", home, "--provider", "nope"], /Unknown provider "nope"/],
  ["sessions: a --home that is a file", ["sessions", "--home", file], /a-file is not a directory/],
  ["sessions: a --mode it would ignore", ["sessions", "--home", home, "--mode", "plan"], /^skein: skein sessions list does not use --mode: it reads saved sessions/],
  ["sessions show: a --json it would ignore", ["sessions", "show", "0badc0de", "--home", home, "--json"], /skein sessions show does not use --json: it is an option of skein sessions list/],
  ["sessions show: an unknown id", ["sessions", "show", "0badc0de", "--home", home], /No session 0badc0de in /],
  ["sessions show: not an id", ["sessions", "show", "no such!", "--home", home], /Not a session id/],
  ["sessions rm: an unknown id", ["sessions", "rm", "0badc0de", "--home", home], /No session 0badc0de in /],
  ["sessions rm: a home that cannot be created", ["sessions", "rm", "0badc0de", "--home", unwritable], /Cannot create/],
  ["replay: an unknown id", ["replay", "0badc0de", "--home", home], /No session 0badc0de in /],
  ["replay: a missing log file", ["replay", join(root, "gone.ndjson")], /No such file: .*gone\.ndjson/],
  ["replay: a --home that is a file", ["replay", "0badc0de", "--home", file], /a-file is not a directory/],
  ["replay --rerun: a --script it would ignore", ["replay", "0badc0de", "--home", home, "--rerun", "--script", script], /skein replay --rerun does not use --script: a re-run answers every model call from the log/],
  ["replay: a --json it would ignore", ["replay", "0badc0de", "--home", home, "--json"], /skein replay does not use --json: it goes with --rerun/],
  ["run: a --local-fs it would ignore", ["run", ...ok, "--local-fs", "hi"], /skein run does not use --local-fs/],
  ["acp: a --token-file without --connect", ["acp", ...ok, "--token-file", file], /skein acp does not use --token-file: it goes with --connect/],
  ["acp --connect: a --script the server would ignore", ["acp", "--connect", `unix:${join(root, "none.sock")}`, "--script", script], /skein acp --connect does not use --script/],
  ["serve: a --token-file a unix socket would ignore", ["serve", "--home", home, "--token-file", file], /skein serve on a unix socket does not use --token-file/],
  ["serve: --max-line-bytes", ["serve", "--home", home, "--max-line-bytes", "4096"], /does not use --max-line-bytes: it is an option of skein acp/],
  ["doctor: --local-terminal", ["doctor", "--home", home, "--local-terminal"], /skein doctor does not use --local-terminal: it is an option of skein acp/],
  ["doctor: --script with another --provider", ["doctor", "--home", home, "--provider", "openai-chat", "--script", script], /--script selects the scripted provider; it cannot be combined with --provider openai-chat/],
  ["replay --rerun: a --rerun-home that is a file", ["replay", "0badc0de", "--home", home, "--rerun", "--rerun-home", file], /re-run's home/],
  ["doctor: a --home that is a file", ["doctor", "--home", file], /a-file is not a directory/],
  ["doctor: an unreadable --script", ["doctor", "--home", home, "--script", join(root, "missing.json")], /Cannot read the script file/],
  ["doctor: a --script that is not JSON", ["doctor", "--home", home, "--script", badJson], /is not valid JSON/],
  ["doctor: a bad --mode", ["doctor", "--home", home, "--mode", "yolo"], /Unknown mode "yolo"/],
  ["doctor: an unknown --provider", ["doctor", "--home", home, "--provider", "nope"], /Unknown provider "nope"/],
  ["doctor --mcp: an unknown session", ["doctor", "--home", home, "--mcp", "0badc0de"], /No session 0badc0de in /]
]

describe("e2e: user errors", () => {
  // Each case is a process of its own, refused before any work: they run a few at a time.
  it.concurrent.each(cases.map(([name, args, message, extraEnv]) => ({ name, args, message, extraEnv })))("$name: one line, exit 2", async ({ args, message, extraEnv }) => {
    const r = await skein(args, extraEnv)
    expect({ status: r.status, stdout: r.stdout }).toEqual({ status: 2, stdout: "" })
    expect(r.stderr).toMatch(/^skein: [^\n]+\n$/)
    expect(r.stderr).toMatch(message)
  })

  // A home skein run refuses (one that cannot be created; one that exists but cannot be written,
  // or for root, whom permissions do not stop, /proc, where no folder can be made).
  const readOnly = join(root, "read-only-home")
  mkdirSync(readOnly, { mode: 0o500 })
  it.each([unwritable, process.getuid?.() === 0 ? "/proc" : readOnly])("doctor refuses the home %s that run refuses, in the same words, and creates nothing", async (dir) => {
    const run = await skein(["run", "--home", dir, "--script", script, "hi"])
    const doctor = await skein(["doctor", "--home", dir, "--script", script])
    expect({ status: run.status, stdout: run.stdout }).toEqual({ status: 2, stdout: "" })
    expect(run.stderr).toMatch(/^skein: Cannot (create|write to) [^\n]+\n$/)
    expect({ status: doctor.status, stdout: doctor.stdout, stderr: doctor.stderr }).toEqual({ status: 2, stdout: "", stderr: run.stderr })
  })

  const agents = useAgents()

  it("a failure that is not the user's stays exit 1, in one line", async () => {
    // A damaged log.
    const sessions = join(home, "sessions")
    mkdirSync(sessions, { recursive: true })
    const id = "0bad10e5-0000-4000-8000-000000000000"
    writeFileSync(join(sessions, `${id}.ndjson`), `${JSON.stringify({ type: "session", v: 1, id, cwd: root, created: 1 })}\n{ torn\n{"seq":2}\n`)
    const show = await skein(["sessions", "show", id, "--home", home])
    expect(show.status).toBe(1)
    expect(show.stderr).toMatch(/^skein: [^\n]+\n$/)

    // A session another Skein process holds.
    const agent = await agents.ready({ script: { turns: [{ calls: [[{ text: "ok" }]] }] } })
    const sessionId = await agent.newSession()
    const resume = await skein(["run", "--home", agent.home, "--script", agent.scriptPath, "--resume", sessionId, "hi"])
    expect(resume.status).toBe(1)
    expect(resume.stderr).toMatch(/^skein: [^\n]*another Skein process[^\n]*\n$/)
  })
})
