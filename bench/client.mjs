// The raw ACP client of `npm run bench`: spawns an agent on Node and reads its stdout as bytes.
//
// It is the same reader for every agent, and it is cheap on purpose, so that the client is never
// what a figure measures: a `session/update` line is recognised by a byte search for
// `"method":"session/update"` near its start and only counted (an `agent_message_chunk` is
// recognised the same way, and the length of its text taken by a byte search too, so that an
// agent that merges deltas is measured by the text it delivers); every other line is parsed as
// JSON (responses, requests).
import { spawn } from "node:child_process"
import { readFileSync } from "node:fs"

const NL = 0x0a
const UPDATE = Buffer.from('"method":"session/update"')
const CHUNK = Buffer.from('"sessionUpdate":"agent_message_chunk"')
const TEXT = Buffer.from('"text":"')
const QUOTE = 0x22
const BACKSLASH = 0x5c
/** How far into a line the update marker may start (`{"jsonrpc":"2.0",` comes first, in some order). */
const MARK_WINDOW = 64

export const jsonLine = (message) => JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n"

export const now = () => process.hrtime.bigint()
export const msSince = (t0, t1 = now()) => Number(t1 - t0) / 1e6

/** The length of the first `"text"` string of a line (parsed only when it holds an escape). */
const textLength = (buf, lineStart, from, end) => {
  const at = buf.indexOf(TEXT, from)
  if (at === -1 || at >= end) return 0
  const start = at + TEXT.length
  const close = buf.indexOf(QUOTE, start)
  if (close === -1 || close >= end) return 0
  const raw = buf.subarray(start, close)
  if (raw.indexOf(BACKSLASH) === -1) return raw.toString("utf8").length
  const update = JSON.parse(buf.toString("utf8", lineStart, end))
  return String(update.params?.update?.content?.text ?? "").length
}

export class Agent {
  /**
   * @param {string} name for messages
   * @param {string[]} args arguments after the Node executable
   * @param {{ cwd: string, env?: Record<string,string>, nodeArgs?: string[] }} options
   */
  constructor(name, args, options) {
    this.name = name
    this.t0 = now()
    this.child = spawn(process.execPath, [...(options.nodeArgs ?? []), ...args], {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ["pipe", "pipe", "pipe"]
    })
    this.pid = this.child.pid
    this.stderr = ""
    this.updates = 0
    this.chunks = 0
    /** Characters of text in the `agent_message_chunk` updates so far. */
    this.chunkText = 0
    /** Called with the arrival time of each `agent_message_chunk` line. */
    this.onChunk = undefined
    this.nextId = 1
    this.waiting = new Map()
    this.carry = undefined
    this.exited = new Promise((resolve) => this.child.on("exit", (code, signal) => resolve({ code, signal })))
    this.exitValue = undefined
    this.exited.then((e) => {
      this.exitValue = e
      for (const [, w] of this.waiting) w.reject(new Error(`${this.name} exited (${e.signal ?? `code ${e.code}`})${this.stderrTail()}`))
      this.waiting.clear()
    })
    this.child.on("error", (e) => {
      for (const [, w] of this.waiting) w.reject(e)
      this.waiting.clear()
    })
    this.child.stdin.on("error", () => {})
    this.child.stderr.setEncoding("utf8")
    this.child.stderr.on("data", (d) => {
      if (this.stderr.length < 100_000) this.stderr += d
    })
    this.child.stdout.on("data", (buf) => this.onData(buf))
  }

  stderrTail() {
    const s = this.stderr.trim()
    return s ? `\n${s.slice(-2000)}` : ""
  }

  onData(buf) {
    const t = now()
    if (this.carry !== undefined) {
      buf = Buffer.concat([this.carry, buf])
      this.carry = undefined
    }
    let start = 0
    let nl
    while ((nl = buf.indexOf(NL, start)) !== -1) {
      this.onLine(buf, start, nl, t)
      start = nl + 1
    }
    if (start < buf.length) this.carry = Buffer.from(buf.subarray(start))
  }

  onLine(buf, start, end, t) {
    const mark = buf.indexOf(UPDATE, start)
    if (mark !== -1 && mark < end && mark - start < MARK_WINDOW) {
      this.updates++
      const c = buf.indexOf(CHUNK, start)
      if (c !== -1 && c < end) {
        this.chunks++
        this.chunkText += textLength(buf, start, c, end)
        if (this.onChunk !== undefined) this.onChunk(t)
      }
      return
    }
    const text = buf.toString("utf8", start, end)
    let message
    try {
      message = JSON.parse(text)
    } catch {
      this.fail(new Error(`${this.name}: not JSON on stdout: ${text.slice(0, 200)}`))
      return
    }
    if (message.method !== undefined && message.id !== undefined) {
      // A request from the agent (e.g. permission): the bench never causes one.
      this.send({ id: message.id, error: { code: -32601, message: "not supported by the bench client" } })
      return
    }
    if (message.id === undefined) return // another notification
    const w = this.waiting.get(message.id)
    if (w === undefined) return
    this.waiting.delete(message.id)
    if (message.error !== undefined) w.reject(new Error(`${this.name}: ${w.method} failed: ${JSON.stringify(message.error)}${this.stderrTail()}`))
    else w.resolve({ result: message.result, t, updates: this.updates, chunks: this.chunks, chunkText: this.chunkText })
  }

  fail(error) {
    for (const [, w] of this.waiting) w.reject(error)
    this.waiting.clear()
  }

  send(message) {
    this.child.stdin.write(jsonLine(message))
  }

  /** Sends a request; resolves with { result, t (arrival), sent (write time), updates, chunks, chunkText }. */
  request(method, params, timeoutMs = 60_000) {
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      if (this.exitValue !== undefined) return reject(new Error(`${this.name} has exited${this.stderrTail()}`))
      const timer = setTimeout(() => {
        this.waiting.delete(id)
        reject(new Error(`${this.name}: ${method} got no answer within ${timeoutMs / 1000} s${this.stderrTail()}`))
      }, timeoutMs)
      const sent = now()
      this.waiting.set(id, {
        method,
        resolve: (v) => {
          clearTimeout(timer)
          resolve({ ...v, sent })
        },
        reject: (e) => {
          clearTimeout(timer)
          reject(e)
        }
      })
      this.child.stdin.write(jsonLine({ id, method, params }))
    })
  }

  initialize() {
    return this.request("initialize", {
      protocolVersion: 1,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
      clientInfo: { name: "skein-bench", version: "1" }
    })
  }

  async newSession(cwd) {
    const r = await this.request("session/new", { cwd, mcpServers: [] })
    return r.result.sessionId
  }

  prompt(sessionId, text, timeoutMs) {
    return this.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] }, timeoutMs)
  }

  /** VmRSS of the agent process in KB, from /proc (Linux). */
  rssKB() {
    const status = readFileSync(`/proc/${this.pid}/status`, "utf8")
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)
    if (m === null) throw new Error("no VmRSS in /proc/<pid>/status")
    return Number(m[1])
  }

  /**
   * The main thread's time on CPU and waiting for a CPU (runnable), in ms, from
   * /proc/<pid>/schedstat (Linux; null elsewhere). On-CPU time hardly depends on how busy the
   * machine is, unlike wall-clock time.
   */
  schedMs() {
    try {
      const [run, wait] = readFileSync(`/proc/${this.pid}/schedstat`, "utf8").split(" ").map(Number)
      return { cpu: run / 1e6, wait: wait / 1e6 }
    } catch {
      return null
    }
  }

  /** User + system CPU time of the whole process (every thread), in ms, from /proc/<pid>/stat (10 ms ticks). */
  cpuMs() {
    try {
      const f = readFileSync(`/proc/${this.pid}/stat`, "utf8").split(") ")[1].split(" ")
      return (Number(f[11]) + Number(f[12])) * 10
    } catch {
      return null
    }
  }

  /** Closes stdin and waits for the exit; kills after `graceMs`. */
  async close(graceMs = 5_000) {
    this.child.stdin.end()
    const timer = setTimeout(() => this.child.kill("SIGKILL"), graceMs)
    const exit = await this.exited
    clearTimeout(timer)
    return exit
  }

  kill() {
    if (this.exitValue === undefined) this.child.kill("SIGKILL")
  }
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
