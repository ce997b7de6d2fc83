// The plain-Node floor of `npm run bench`: the least a Node process must do to answer ACP
// `initialize` and `session/new` over stdio. No imports, no dependencies, no validation.
// Reads LF-delimited JSON-RPC from stdin and writes one response line per request.
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

const answer = (message) => {
  if (message === null || typeof message !== "object" || message.id === undefined) return
  const reply =
    message.method === "initialize"
      ? { jsonrpc: "2.0", id: message.id, result: initializeResult }
      : message.method === "session/new"
      ? { jsonrpc: "2.0", id: message.id, result: { sessionId: "floor-session" } }
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
