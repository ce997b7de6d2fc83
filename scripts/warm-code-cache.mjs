// Fills the launcher's V8 code cache for the build in dist/ and this Node (adr/0008): one
// `skein acp` in a temporary home that answers `initialize`, opens a session and runs one
// scripted turn, then exits and writes the cache. So the first start a user makes is a warm
// one, and its first prompt finds the turn's code (the session, the turn loop, the log, the
// translation to ACP) compiled too. `scripts/build.mjs` runs it; so does `npm run bench`, for
// its own cache directory. A failure only means that the first real start writes the cache.
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")

/** Resolves with undefined when the cache was written, else with what went wrong. */
export const warmCodeCache = ({ env = process.env } = {}) =>
  new Promise((resolve) => {
    const home = mkdtempSync(join(tmpdir(), "skein-build-warm-"))
    const script = join(home, "script.json")
    writeFileSync(script, JSON.stringify({ turns: [{ calls: [[{ text: "ready" }]] }] }))
    const done = (problem) => {
      clearTimeout(timer)
      rmSync(home, { recursive: true, force: true })
      resolve(problem)
    }
    const child = spawn(process.execPath, [join(root, "dist", "skein.mjs"), "acp", "--home", home, "--script", script], {
      cwd: home,
      env,
      stdio: ["pipe", "pipe", "ignore"]
    })
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000)
    const send = (id, method, params) => child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n")
    let out = ""
    let step = 1
    let failed
    child.stdout.setEncoding("utf8").on("data", (chunk) => {
      out += chunk
      for (let line; (line = out.indexOf("\n")) >= 0;) {
        const message = JSON.parse(out.slice(0, line))
        out = out.slice(line + 1)
        if (message.id !== step) continue
        if (message.error !== undefined) {
          failed = `request ${step} failed: ${message.error.message}`
          child.stdin.end()
        } else if (step === 1) {
          send(++step, "session/new", { cwd: home, mcpServers: [] })
        } else if (step === 2) {
          send(++step, "session/prompt", { sessionId: message.result.sessionId, prompt: [{ type: "text", text: "ready?" }] })
        } else {
          step++
          child.stdin.end()
        }
      }
    })
    child.on("error", (error) => done(error.message))
    child.on("exit", (code, signal) =>
      done(failed ?? (code !== 0 ? `skein acp exited with ${signal ?? code}` : step !== 4 ? "skein acp stopped early" : undefined)))
    send(1, "initialize", { protocolVersion: 1 })
  })
