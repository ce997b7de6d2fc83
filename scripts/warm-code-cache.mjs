// Fills the launcher's V8 code cache for the build in dist/ and this Node (adr/0008): one
// `skein acp` in a temporary home that starts the way a user's does, with a provider the registry
// resolves (`openai-chat`, at a model server of this script's own on 127.0.0.1), answers
// `initialize`, opens a session and runs one turn, then exits and writes the cache. So the first
// start a user makes is a warm one: what it runs before `session/new` answers (the provider's
// resolution included) and its first prompt (the session, the turn loop, the log, the HTTP
// provider, the translation to ACP) find their code compiled. The cache is written at exit
// (SKEIN_CODE_CACHE_AT_EXIT), so it holds all of this however slow the machine is.
// `scripts/build.mjs` runs it; so does `npm run bench`, for its own cache directory. Nothing
// leaves the host: the provider settings and proxies of the environment are not passed on.
// A failure only means that the first real start writes the cache.
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import http from "node:http"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")

/** A Chat Completions stream: one short answer. */
const chunk = (delta, finish = null) =>
  `data: ${JSON.stringify({ id: "warm", object: "chat.completion.chunk", created: 0, model: "warm", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
const ANSWER = chunk({ role: "assistant", content: "ready" }) + chunk({}, "stop") + "data: [DONE]\n\n"

/** What the run is given of `env`: no provider, Skein or proxy settings but the code cache's. */
const runEnv = (env, baseUrl) => {
  const out = {}
  for (const [name, value] of Object.entries(env)) {
    if (/^(SKEIN|OPENAI|ANTHROPIC)_/.test(name) && name !== "SKEIN_CODE_CACHE_DIR" && name !== "SKEIN_NO_CODE_CACHE") continue
    if (/^(https?|all|no)_proxy$/i.test(name) || name === "NODE_USE_ENV_PROXY") continue
    out[name] = value
  }
  return { ...out, OPENAI_BASE_URL: baseUrl, OPENAI_API_KEY: "skein-code-cache-warm-up", SKEIN_CODE_CACHE_AT_EXIT: "1" }
}

// Preloaded into the run: at each answer it writes to stderr the Schemas built so far of those
// built at their first use (src/Lazy.ts), for `startSchemas`.
const SCHEMAS_PROBE = `data:text/javascript,${encodeURIComponent(`
const write = process.stdout.write.bind(process.stdout)
process.stdout.write = (chunk, ...rest) => {
  const m = /"id":(\\d+),"result"/.exec(typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8"))
  if (m !== null) process.stderr.write("skein-warm-schemas " + m[1] + " " + JSON.stringify([...(globalThis[Symbol.for("skein.lazySchemas")] ?? [])]) + "\\n")
  return write(chunk, ...rest)
}`)}`

/**
 * Resolves with undefined when the cache was written, else with what went wrong. `startSchemas`,
 * when given, is called with the Schemas built at first use that the run had built when it
 * answered `session/new` (scripts/startup-modules.mjs says which it may build).
 */
export const warmCodeCache = ({ env = process.env, startSchemas } = {}) =>
  new Promise((resolve) => {
    const home = mkdtempSync(join(tmpdir(), "skein-build-warm-"))
    let requests = 0
    const server = http.createServer((req, res) => {
      req.resume()
      req.on("end", () => {
        requests++
        res.writeHead(200, { "content-type": "text/event-stream" })
        res.end(ANSWER)
      })
    })
    let timer
    const done = (problem) => {
      clearTimeout(timer)
      server.closeAllConnections()
      server.close()
      rmSync(home, { recursive: true, force: true })
      resolve(problem)
    }
    server.on("error", (error) => done(`no model server for the warm-up run: ${error.message}`))
    server.listen(0, "127.0.0.1", () => {
      const baseUrl = `http://127.0.0.1:${server.address().port}/v1`
      const probe = startSchemas === undefined ? [] : ["--import", SCHEMAS_PROBE]
      const child = spawn(process.execPath, [...probe, join(root, "dist", "skein.mjs"), "acp", "--home", home, "--provider", "openai-chat", "--model", "warm"], {
        cwd: home,
        env: runEnv(env, baseUrl),
        stdio: ["pipe", "pipe", startSchemas === undefined ? "ignore" : "pipe"]
      })
      let errors = ""
      child.stderr?.setEncoding("utf8").on("data", (data) => {
        errors = (errors + data).slice(-1_000_000)
      })
      timer = setTimeout(() => child.kill("SIGKILL"), 30_000)
      const send = (id, method, params) => child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n")
      let out = ""
      let step = 1
      let failed
      child.stdout.setEncoding("utf8").on("data", (data) => {
        out += data
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
            if (message.result?.stopReason !== "end_turn") failed = `the turn ended ${JSON.stringify(message.result)}`
            step++
            child.stdin.end()
          }
        }
      })
      child.on("error", (error) => done(error.message))
      child.on("exit", (code, signal) => {
        const atSession = /^skein-warm-schemas 2 (.*)$/m.exec(errors)
        if (startSchemas !== undefined && atSession !== null) startSchemas(JSON.parse(atSession[1]))
        done(
          failed ??
            (code !== 0
              ? `skein acp exited with ${signal ?? code}`
              : step !== 4
              ? "skein acp stopped early"
              : requests === 0
              ? "the turn reached no model"
              : undefined)
        )
      })
      send(1, "initialize", { protocolVersion: 1 })
    })
  })
