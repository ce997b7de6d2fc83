// The plain-Node floor of `npm run bench`: the least a Node process must do to answer ACP
// `initialize` and `session/new` over stdio. No imports, no dependencies, no validation.
// Reads LF-delimited JSON-RPC from stdin and writes one response line per request.
// `session/prompt` is answered with N `agent_message_chunk` updates (text "x"), written
// straight to stdout, then `end_turn`; N is a prompt text `deltas:N`, else $BENCH_DELTAS, else 1.
// That is the ceiling of the bench's reader, not a baseline an agent is held to.
// `session/list` and `session/load` read $BENCH_HOME/sessions/<id>.ndjson the plainest way
// (synchronous fs, JSON.parse, no checks), with Skein's page size and replay shapes: the floor of
// scripts/bench-sessions-floor.mjs. node:fs is imported only when they are first used.
const initializeResult = {
  protocolVersion: 1,
  agentCapabilities: {
    loadSession: false,
    promptCapabilities: { image: false, audio: false, embeddedContext: false },
    mcpCapabilities: { http: false, sse: false },
    sessionCapabilities: {}
  },
  authMethods: [],
  agentInfo: { name: "floor", title: "Floor", version: "0.0.0" }
}

const defaultDeltas = Number.parseInt(process.env.BENCH_DELTAS ?? "", 10) || 1
let sessions = 0

const prompt = (message) => {
  const params = message.params ?? {}
  const block = Array.isArray(params.prompt) ? params.prompt.find((b) => b && b.type === "text") : undefined
  const m = block === undefined ? null : /^deltas:(\d+)$/.exec(String(block.text).trim())
  const n = m === null ? defaultDeltas : Number(m[1])
  const update = JSON.stringify({
    jsonrpc: "2.0",
    method: "session/update",
    params: { sessionId: params.sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "x" } } }
  }) + "\n"
  for (let i = 0; i < n; i++) process.stdout.write(update)
  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: message.id, result: { stopReason: "end_turn" } }) + "\n")
}

const reply = (id, result) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id, result }) + "\n")
const notify = (sessionId, update) => JSON.stringify({ jsonrpc: "2.0", method: "session/update", params: { sessionId, update } }) + "\n"
const PAGE = 50
let fs
const sessionsDir = () => `${process.env.BENCH_HOME}/sessions`

/** Like Skein's Listing: readdir, a stat per log, newest first, the head of each log on the page. */
const list = (message) => {
  const dir = sessionsDir()
  const params = message.params ?? {}
  const after = typeof params.cursor === "string" ? JSON.parse(Buffer.from(params.cursor, "base64url").toString("utf8")) : undefined
  const before = (a, b) => (a.updatedAt !== b.updatedAt ? a.updatedAt > b.updatedAt : a.id < b.id)
  const candidates = fs.readdirSync(dir)
    .filter((n) => n.endsWith(".ndjson"))
    .map((n) => ({ id: n.slice(0, -7), updatedAt: fs.statSync(`${dir}/${n}`).mtimeMs }))
    .filter((c) => after === undefined || before({ updatedAt: after[0], id: after[1] }, c))
    .sort((a, b) => (before(a, b) ? -1 : before(b, a) ? 1 : 0))
  const sessions = []
  const buffer = Buffer.alloc(16 * 1024)
  let next = 0
  while (sessions.length < PAGE && next < candidates.length) {
    const c = candidates[next++]
    const fd = fs.openSync(`${dir}/${c.id}.ndjson`, "r")
    const n = fs.readSync(fd, buffer, 0, buffer.length, 0)
    fs.closeSync(fd)
    const lines = buffer.toString("utf8", 0, n).split("\n")
    const header = JSON.parse(lines[0])
    if (params.cwd != null && header.cwd !== params.cwd) continue
    let title
    for (let i = 1; i < lines.length - 1; i++) {
      const e = JSON.parse(lines[i])
      if (e.type === "turn_start") {
        title = e.data.content.map((b) => b.text ?? "").join("\n").replace(/\s+/g, " ").trim().slice(0, 80)
        break
      }
    }
    sessions.push({ sessionId: c.id, cwd: header.cwd, ...(title ? { title } : {}), updatedAt: new Date(c.updatedAt).toISOString() })
  }
  const last = candidates[next - 1]
  const nextCursor = next < candidates.length && last ? Buffer.from(JSON.stringify([last.updatedAt, last.id])).toString("base64url") : undefined
  reply(message.id, { sessions, ...(nextCursor ? { nextCursor } : {}) })
}

/** Like Skein's session/load: every logged event replayed as updates, then the response. */
const load = (message) => {
  const { sessionId } = message.params
  const lines = fs.readFileSync(`${sessionsDir()}/${sessionId}.ndjson`, "utf8").split("\n")
  let out = []
  const text = (t) => ({ type: "text", text: t })
  for (let i = 1; i < lines.length; i++) {
    if (lines[i] === "") continue
    const e = JSON.parse(lines[i])
    const d = e.data
    switch (e.type) {
      case "turn_start":
        for (const b of d.content) out.push(notify(sessionId, { sessionUpdate: "user_message_chunk", content: text(b.text ?? "") }))
        break
      case "model_response":
        for (const p of d.parts) {
          if (p.type === "thinking" && p.text) out.push(notify(sessionId, { sessionUpdate: "agent_thought_chunk", content: text(p.text) }))
          if (p.type === "text" && p.text) out.push(notify(sessionId, { sessionUpdate: "agent_message_chunk", content: text(p.text) }))
        }
        break
      case "tool_call":
        out.push(notify(sessionId, { sessionUpdate: "tool_call", toolCallId: d.id, title: d.title, kind: d.kind, status: "in_progress", rawInput: d.args, ...(d.locations ? { locations: d.locations } : {}) }))
        break
      case "tool_result":
        out.push(notify(sessionId, { sessionUpdate: "tool_call_update", toolCallId: d.id, status: d.ok ? "completed" : "failed", content: [{ type: "content", content: text(d.content) }], rawOutput: { ok: d.ok, content: d.content } }))
        break
    }
    if (out.length >= 1024) {
      process.stdout.write(out.join(""))
      out = []
    }
  }
  if (out.length > 0) process.stdout.write(out.join(""))
  reply(message.id, {})
}

const answer = (message) => {
  if (message === null || typeof message !== "object" || message.id === undefined) return
  if (message.method === "session/prompt") return prompt(message)
  if (message.method === "session/list" || message.method === "session/load") {
    import("node:fs").then((m) => {
      fs = m.default
      message.method === "session/list" ? list(message) : load(message)
    })
    return
  }
  const reply =
    message.method === "initialize"
      ? { jsonrpc: "2.0", id: message.id, result: initializeResult }
      : message.method === "session/new"
      ? { jsonrpc: "2.0", id: message.id, result: { sessionId: `floor-session-${++sessions}` } }
      : { jsonrpc: "2.0", id: message.id, error: { code: -32601, message: `Method not found: ${message.method}` } }
  process.stdout.write(JSON.stringify(reply) + "\n")
}

let buffer = ""
process.stdin.setEncoding("utf8")
process.stdin.on("data", (chunk) => {
  buffer += chunk
  let newline
  while ((newline = buffer.indexOf("\n")) >= 0) {
    const line = buffer.slice(0, newline)
    buffer = buffer.slice(newline + 1)
    if (line.trim().length === 0) continue
    let message
    try {
      message = JSON.parse(line)
    } catch {
      process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } }) + "\n")
      continue
    }
    answer(message)
  }
})
process.stdin.on("end", () => process.exit(0))
